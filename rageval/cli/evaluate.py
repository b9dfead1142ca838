"""``rageval evaluate``: your questions, corpus, candidates (a run file or a retriever) and model -> one run file
with eRAG labels, E2E answers, the baselines and LLM-retEval (:mod:`rageval.pipeline`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval.cli.common import MEASURE_SYNTAX, add_model_arguments, stage_progress
from rageval.labelmethods import DEFAULT_JUDGES, judges
from rageval.pipeline.sources import RETRIEVERS


def _config(args: argparse.Namespace):
    from rageval.pipeline.config import build_config, read_config_file

    file_values = read_config_file(args.config) if args.config else {}
    flags = {name: getattr(args, name, None) for name in vars(args)}
    for name in ("queries", "corpus", "run", "qrels", "prompt_template", "out", "cache", "labels"):
        if flags.get(name) is not None:
            flags[name] = str(flags[name])
    flags["em_early_stop"] = True if args.em_early_stop else None
    return build_config(file_values, flags)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from rageval.pipeline import run as pipeline

    config = _config(args)
    if args.dry_run:
        report = pipeline.dry_run(config)
        print("\n".join(report.lines()))
        return 0
    path = pipeline.evaluate(config, progress=stage_progress(), command="rageval " + " ".join(sys.argv[1:]))
    print(f"wrote {path}")
    from rageval.cli.runs import print_summary

    print_summary(path)
    return 0


def add_parsers(sub) -> None:
    evaluate = sub.add_parser(
        "evaluate", help="your questions + corpus + run file or retriever + model -> one run file with eRAG, E2E, "
                         "baselines and LLM-retEval",
        description="Evaluate the retrieval of your own RAG system. The corpus gives the passage texts; the candidate "
                    "lists come from your run file (--run) or from retrieval over the corpus (--retriever). Files may "
                    "be rageval's JSONL or BEIR's files as they are. Flags override --config values.")
    data = evaluate.add_argument_group("your data")
    data.add_argument("--queries", type=Path, help="questions JSONL (query_id, text, answers, optional "
                                                   "gold_passage_ids) or BEIR queries.jsonl")
    data.add_argument("--corpus", type=Path, help="passages JSONL (passage_id, title, text) or BEIR corpus.jsonl")
    data.add_argument("--run", type=Path, help="your candidate lists: a TREC run file, or the one-JSONL upload form")
    data.add_argument("--retriever", choices=RETRIEVERS, help="retrieve the candidates from the corpus instead")
    data.add_argument("--qrels", type=Path, help="TREC qrels or BEIR qrels/<split>.tsv: positives are gold passages")
    data.add_argument("--answers-field", help="the questions' field holding the answers (also looked up in BEIR's "
                                              "metadata; default: answers)")
    data.add_argument("--dataset", help="a name for the question set (default: the questions file's name)")
    what = evaluate.add_argument_group("what to compute")
    what.add_argument("--k", help="E2E cutoffs, comma list (default 1,5,10); the largest is the eRAG depth")
    what.add_argument("--methods", help="all (default) or a comma list of erag, e2e, baselines, reteval")
    what.add_argument("--metric", help="answer metric of the E2E scores: em (default), f1, accuracy, rougeL, bertscore")
    what.add_argument("--label-metrics", help="answer metrics of the eRAG labels (default: all five)")
    what.add_argument("--measures", help="IR measures to store beyond the default set (P, R, AP, RR, nDCG, Hit at "
                                         "each k, and Rprec), in " + MEASURE_SYNTAX)
    for kind in judges():  # one switch per built-in LLM judge, named as the judge (the config's name too)
        if kind.source != "built-in":
            continue
        if kind.name in DEFAULT_JUDGES:
            what.add_argument(f"--no-{kind.name.replace('_', '-')}", dest=kind.name, action="store_const",
                              const=False, help=f"skip the {kind.display} baseline ({kind.description})")
        else:
            what.add_argument(f"--{kind.name.replace('_', '-')}", dest=kind.name, action="store_const", const=True,
                              help=f"also {kind.display}: {kind.description} (label method {kind.name})")
    what.add_argument("--labels", metavar="FILE.toml|JUDGE",
                      help="your own LLM judge as a TOML file (name, description, prompt, [parse]; see "
                           "`rageval methods`), or a judge an installed package registers: one more label method, "
                           "one LLM call a passage")
    what.add_argument("--judges", help="LLM-retEval judges, comma list of llm, em, token_f1, cosine (default: all)")
    what.add_argument("--semi-gold-samples", type=int, help="semi-gold answers per question (default 3)")
    model = evaluate.add_argument_group("the RAG LLM")
    add_model_arguments(model, defaults=False)
    model.add_argument("--max-new-tokens", type=int, help="answer length in tokens (default 16)")
    model.add_argument("--em-early-stop", action="store_true",
                       help="stop each eRAG answer once its exact match is sure to be 0 (needs --label-metrics em "
                            "and --metric em): the same erag:em labels in fewer decode steps, stopped answers "
                            "stored marked '[stopped early: ...]'")
    model.add_argument("--prompt-template", type=Path, help="the QA prompt as a TOML/JSON file (name, version, "
                                                            "instruction, examples); default: rageval's few-shot")
    out = evaluate.add_argument_group("output")
    out.add_argument("--config", type=Path, help="a TOML file with any of these settings (flags win)")
    out.add_argument("--out", type=Path, help="the run file (default: <dataset>-<retriever>-<model>.sqlite in the "
                                              "user runs folder, $RAGEVAL_RUNS_DIR)")
    out.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    out.add_argument("--dry-run", action="store_true", help="print what would be computed and how many LLM calls it "
                                                            "takes (and how many are cached); loads no model")
    evaluate.set_defaults(handler=cmd_evaluate)
