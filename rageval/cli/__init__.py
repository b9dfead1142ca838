"""The ``rageval`` command line (also ``python -m rageval``): one thin module per command group, each with
``add_parsers(sub)``; a handler reads its arguments, makes one engine call and prints the result.

    rageval evaluate ...            your questions + corpus + run or retriever + model -> one run file (every method)
    rageval evaluate-citations F    your attributed answers -> statements, entailment, AutoAIS, ALCE
    rageval info RUN [--json]       what a run file holds
    rageval export RUN ...          labels / verdicts / failure cases as CSV or qrels; every table as Parquet;
                                    the labels as Phoenix document evaluations (--format phoenix)
    rageval report RUN --html F     the Findings page as one self-contained HTML file (no network, no server)
    rageval import FORMAT FILE...   your traces (OpenInference, Langfuse, LangSmith, RAGAS, TREC RAG) -> a run file
    rageval upload --name NAME ...  your own run (TREC files or JSONL with answers) -> a run file
    rageval rescore start RUN ...   label a run's passages again with another model (background job, resumable)
    rageval serve [--team T.toml]   the dashboard: 127.0.0.1 for you, or for a team (sign-in, roles, audit log)
    rageval team check T.toml --claims C.json   the identity, role and team.toml entry for a person's claims
    rageval audit verify [RUNS_DIR]   the team audit log's hash chain; exit 1 naming the first bad entry
    rageval serve-model --model M   an OpenAI-compatible server over M on this machine (or 'fake': instant answers)
    rageval build-corpus | build-index | erag | eval-retrieval | train-reranker | subquery-retrieval |
            demo-runs | cost-report | results          the shipped data, demo runs and docs/results.md
    rageval train-nli | attribution                   the NLI model and the HAGRID attributed-answer runs
    rageval nli-score F --out O | nli-eval F          your own pairs scored by any checker; a checker evaluated
    rageval ium [--runs RUN ...]                      Iterative Utility Maximization: four agents, or one per run
    rageval annotations import RUN FILE               human labels (TREC qrels or CSV) into the annotation file
    rageval annotations sample RUN --size N --out F   a uniform (or stratified) sample to label elsewhere
    rageval trust RUN [--json]                        PPI estimates with human labels, calibration of each method
    rageval queue create|status|export|import|adjudicate   annotation queues from a terminal and other tools
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NamedTuple

from rageval.errors import RagevalError
from rageval.version import __version__


class Command(NamedTuple):
    """Where a command is defined (the module whose ``add_parsers`` adds it) and its line in ``rageval --help``."""

    module: str
    help: str


#: Every command, in ``rageval --help`` order. Only the module of the command being run is imported: the others,
#: and the libraries they import (pandas, numpy, torch), cost nothing, so ``rageval --help`` and ``rageval info``
#: start in a fraction of a second (``benchmarks/bench_startup.py``; ``tests/cli/test_cli_startup.py`` keeps this table
#: equal to what the modules define).
COMMANDS: dict[str, Command] = {
    "evaluate": Command("rageval.cli.evaluate", "your questions + corpus + run file or retriever + model -> one run "
                                                "file with eRAG, E2E, baselines and LLM-retEval"),
    "info": Command("rageval.cli.runs", "print what a run file holds (--json: machine-readable)"),
    "export": Command("rageval.cli.runs", "write a run's labels, verdicts or failure cases as CSV, one label "
                                          "method as TREC qrels, every table as Parquet, or the labels as Phoenix "
                                          "document evaluations"),
    "methods": Command("rageval.cli.methods", "list every label method with its properties (--json: "
                                              "machine-readable)"),
    "report": Command("rageval.cli.report", "the Findings page's story (2x2, sentences with intervals, correlation "
                                            "chart, leaderboard, failure cases) as one self-contained HTML file"),
    "upload": Command("rageval.cli.upload", "validate your own run (TREC run + qrels + queries/passages JSONL, or "
                                            "one JSONL with answers; docs/upload_format.md) into a run file"),
    "import": Command("rageval.cli.trace_import", "your traces (OpenInference/Phoenix spans, Langfuse, LangSmith, "
                                                  "RAGAS, TREC RAG) -> a run file; their answers kept, both retrieval "
                                                  "stages kept, what is missing counted"),
    "rescore": Command("rageval.cli.rescore", "label a run's passages again with another model, in the background; "
                                              "labels saved as produced, resumable"),
    "serve": Command("rageval.cli.serve", "serve the dashboard: on 127.0.0.1 for you, or with --team team.toml for a "
                                          "team (sign-in through an OpenID Connect provider, roles, audit log)"),
    "team": Command("rageval.cli.team", "check a team.toml: which role a person's ID-token claims get, and from "
                                        "which entry"),
    "audit": Command("rageval.cli.team", "verify the team audit log's hash chain: exit 1 naming the first entry "
                                         "that does not verify"),
    "serve-model": Command("rageval.cli.serve_model", "serve a model (or 'fake') over an OpenAI-compatible HTTP API "
                                                      "on this machine, for trying --backend openai without vLLM"),
    "build-corpus": Command("rageval.cli.corpus", "build the deduplicated corpus and print its sizes"),
    "build-index": Command("rageval.cli.corpus", "build the BM25 index over the corpus (cached)"),
    "erag": Command("rageval.cli.erag", "eRAG labels + E2E answers for an NQ-open slice into a run file"),
    "eval-retrieval": Command("rageval.cli.retrieval", "Recall/nDCG/MRR of retrieval systems against gold "
                                                       "passages; one run file per system"),
    "train-reranker": Command("rageval.cli.retrieval", "train (once, cached) the MiniLM cross-encoder NQ reranker; "
                                                       "optionally compare BM25 with BM25 -> rerank on held-out "
                                                       "queries"),
    "subquery-retrieval": Command("rageval.cli.retrieval", "LLM sub-queries -> BM25 per sub-query -> fusion; "
                                                           "Recall@10/nDCG@10 vs BM25 and the MAX oracle"),
    "demo-runs": Command("rageval.cli.shipped", "build the shipped demo runs (eRAG with every label method and a k "
                                                "sweep, LLM-retEval) into data/runs through the LLM-call cache"),
    "cost-report": Command("rageval.cli.shipped", "eRAG vs E2E wall time and peak memory (fresh process each)"),
    "results": Command("rageval.cli.shipped", "regenerate docs/results.md from the demo runs"),
    "train-nli": Command("rageval.cli.attribution", "the NLI checker: load the shipped model, or train it "
                                                    "(resumable, cached by recipe and data digest); --ship writes it "
                                                    "for the repository, --report rebuilds the transfer report"),
    "attribution": Command("rageval.cli.attribution", "HAGRID attributed answers: scenarios G / RTG-gold / "
                                                      "RTG-vanilla / RTG-monot5 / RTG-query-gen / GTR and the gold "
                                                      "answers, NLI-scored, into a run file; --rescore RUN "
                                                      "re-scores one with another checker"),
    "evaluate-citations": Command("rageval.cli.attribution", "AutoAIS and ALCE citation metrics (and ROUGE-L/BLEU "
                                                             "against gold answers) of your own attributed answers "
                                                             "(JSONL, docs/citations_format.md), into an attribution "
                                                             "run file"),
    "nli-score": Command("rageval.cli.nli_pairs", "score your own (premise, hypothesis) pairs (JSONL) with any "
                                                  "checker: each row back with p_supported, supported and "
                                                  "checker"),
    "nli-eval": Command("rageval.cli.nli_pairs", "evaluate a checker on your labelled pairs (JSONL): "
                                                 "accuracy, balanced accuracy, F1, ROC-AUC per source, pair "
                                                 "and claim level"),
    "annotations": Command("rageval.cli.trust", "import human passage labels (TREC qrels or CSV: query_id, "
                                                "passage_id, label[, annotator]) into the annotation file"),
    "trust": Command("rageval.cli.trust", "how far a run's automatic labels can be trusted: PPI / PPI++ estimates "
                                          "with human labels, human-only intervals, calibration (--json)"),
    "queue": Command("rageval.cli.queue", "annotation queues: create, status, export / import (csv, label-studio, "
                                          "argilla), adjudicate"),
    "ium": Command("rageval.cli.ium", "Iterative Utility Maximization: 4 agents (NQ / HotpotQA x Gemma / SmolLM2), "
                                      "offline + online IUM and the baselines, into a run file; --runs: one agent "
                                      "per eRAG run file of yours"),
}


def command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs: its first argument that is not an option (the top level has no option taking a
    value), or None."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``command``: its module's commands fully defined, every other command by its name and help
    line only. ``command=None`` (or one not in :data:`COMMANDS`): help lines only, so ``rageval --help`` imports
    no command module; ``command="*"``: every command fully defined (every module imported)."""
    parser = argparse.ArgumentParser(prog="rageval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rageval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = {c.module for c in COMMANDS.values()} if command == "*" else (
        {COMMANDS[command].module} if command in COMMANDS else set())
    for name, entry in COMMANDS.items():
        if name in sub.choices:
            continue
        if entry.module in wanted:  # a module adds all its commands, which follow each other in the table
            importlib.import_module(entry.module).add_parsers(sub)
        else:
            sub.add_parser(name, help=entry.help, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; an error of the user's input (a bad or broken file, a wrong argument: a
    :class:`RagevalError`, or a file the system cannot read or write) is one line on stderr and exit status 2."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_name(argv)).parse_args(argv)
    try:
        return args.handler(args)
    except RagevalError as error:
        print(f"rageval: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a path mistake no command foresaw: one line naming the file, never a traceback
        print(f"rageval: error: {describe_os_error(error)}", file=sys.stderr)
        return 2


def describe_os_error(error: OSError) -> str:
    """``FILE: reason`` for a file-system error (``FILE -> OTHER: reason`` for a rename or link)."""
    reason = error.strerror or str(error)
    if error.filename is None:
        return reason
    names = str(error.filename) + (f" -> {error.filename2}" if error.filename2 is not None else "")
    return f"{names}: {reason[0].lower() + reason[1:] if reason else reason}"


if __name__ == "__main__":
    sys.exit(main())
