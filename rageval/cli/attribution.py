"""``rageval train-nli``, ``rageval attribution`` and ``rageval evaluate-citations``: the entailment model
(:mod:`rageval.attribution.nli_training`), the HAGRID attributed-answer runs (:mod:`rageval.attribution.experiment`,
:mod:`rageval.attribution.rescore`), and the citation metrics of a user's own attributed answers
(:mod:`rageval.attribution.user_answers`)."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import time
from pathlib import Path

from rageval.cli.nli_pairs import add_checker_arguments, checker_loader
from rageval.paths import DATA_DIR, RUNS_DIR

NLI_REPORT = RUNS_DIR / "nli" / "nli_test_report.json"


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _bar(description: str, unit: str):
    from tqdm import tqdm

    bar = tqdm(desc=description, unit=unit, file=sys.stderr, dynamic_ncols=True)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return bar, update


def cmd_train_nli(args: argparse.Namespace) -> int:
    from rageval.attribution import nli_training as training
    from rageval.attribution.nli_report import LOSO_SOURCES, transfer_report, transfer_report_table, write_report

    config = training.LEGACY_NLI_CONFIG if args.recipe == "legacy" else training.NliTrainingConfig()
    config = dataclasses.replace(config, seed=args.seed, **({"epochs": args.epochs} if args.epochs else {}))
    started = time.perf_counter()
    bar, update = _bar("training steps", "step")
    with bar:
        model = training.load_or_train_nli(config, args.data_dir, update, retrain=args.retrain)
    print(f"{model.model_id}: threshold {model.threshold:.3f} ({time.perf_counter() - started:.0f} s)")
    if args.ship:
        log = training.cached_training_log(config, args.data_dir)
        print(f"shipped: {training.ship_nli_model(model, config, args.data_dir, log)}")
    if args.report:
        bar, update = _bar("training steps", "step")
        with bar:
            report = transfer_report(args.data_dir, pairs_per_source=args.pairs_per_source or None,
                                     loso_sources=() if args.no_loso else LOSO_SOURCES,
                                     legacy=not args.no_legacy, log=_log, progress=update)
        print(f"wrote {write_report(report, args.report)}")
        print("\n".join(transfer_report_table(report)))
    return 0


def add_parsers(sub) -> None:
    nli = sub.add_parser("train-nli", help="the NLI checker: load the shipped model, or train it (resumable, cached "
                                           "by recipe and data digest); --ship writes it for the repository, "
                                           "--report rebuilds the transfer report")
    nli.add_argument("--recipe", choices=("shipped", "legacy"), default="shipped",
                     help="'shipped': long-premise sources, calibrated threshold; 'legacy': the issue-5 model")
    nli.add_argument("--epochs", type=int, default=0, help="override the recipe's epochs (another model id)")
    nli.add_argument("--seed", type=int, default=0)
    nli.add_argument("--retrain", action="store_true", help="train even if the model is shipped or cached")
    nli.add_argument("--ship", action="store_true", help="write the trained parameters (fp16), recipe and data "
                                                         "digest to data/models/nli/<model id>/")
    nli.add_argument("--report", type=Path, help=f"build the transfer report (in-distribution, zero-shot, "
                                                 f"leave-one-source-out, HAGRID human) into this file, e.g. "
                                                 f"{NLI_REPORT}")
    nli.add_argument("--pairs-per-source", type=int, default=800, help="test pairs sampled per source (0: all)")
    nli.add_argument("--no-loso", action="store_true", help="skip the leave-one-source-out models")
    nli.add_argument("--no-legacy", action="store_true", help="skip the issue-5 model")
    nli.add_argument("--data-dir", type=Path, default=DATA_DIR)
    nli.set_defaults(handler=cmd_train_nli)
    add_attribution_parser(sub)
    add_evaluate_citations_parser(sub)


def cmd_attribution(args: argparse.Namespace) -> int:
    if args.rescore:
        return cmd_rescore(args)
    from rageval.attribution.experiment import AttributionPlan, build_hagrid_attribution_run

    plan = AttributionPlan(num_queries=args.num_queries, first_query=args.first_query, k=args.k, depth=args.depth,
                           nli_backend=args.checker)
    path = build_hagrid_attribution_run(plan, args.out or RUNS_DIR / "attribution" / plan.file_name,
                                        checker_loader(args), data_dir=args.data_dir, batch_size=args.batch_size,
                                        dtype=args.dtype or None, cache_path=args.cache, log=_log,
                                        command="rageval " + " ".join(sys.argv[1:]))
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from rageval.attribution.rescore import rescore_attribution_run
    from rageval.store.attribution import attribution_summary

    # Rebuilt from the parsed arguments (not sys.argv: main() may be called with its own argv).
    command = shlex.join(["rageval", "attribution", "--rescore", str(args.rescore), "--checker", args.checker,
                          *(["--threshold", str(args.threshold)] if args.threshold is not None else []),
                          *(["--out", str(args.out)] if args.out else [])])
    path = rescore_attribution_run(args.rescore, checker_loader(args), args.out, data_dir=args.data_dir,
                                   command=command, log=_log)
    summary = attribution_summary(path)
    print(f"wrote {path}: {summary['answers']} answers, {summary['statements']} statements re-scored")
    for scenario, metrics in summary["scenarios"].items():
        shown = ", ".join(f"{name} {metrics[name]:.4f}" for name in ("autoais_cit", "alce_recall", "alce_precision")
                          if name in metrics)
        print(f"  {scenario:<14} {shown or 'no citations (correctness only)'}")
    return 0


def add_attribution_parser(sub) -> None:
    run = sub.add_parser("attribution", help="HAGRID attributed answers: scenarios G / RTG-gold / RTG-vanilla / "
                                             "RTG-monot5 / RTG-query-gen / GTR and the gold answers, NLI-scored, "
                                             "into a run file; --rescore RUN re-scores one with another checker")
    run.add_argument("--num-queries", type=int, default=100, help="HAGRID dev queries with generated scenarios")
    run.add_argument("--first-query", type=int, default=0)
    run.add_argument("--k", type=int, default=2, help="retrieved passages given to the generator")
    run.add_argument("--depth", type=int, default=10, help="passages retrieved per (sub-)query")
    run.add_argument("--batch-size", type=int, default=8)
    run.add_argument("--dtype", default="bfloat16", help="generator precision ('' for the device default)")
    run.add_argument("--cache", type=Path, help="LLM-call cache file (default: the user cache)")
    run.add_argument("--out", type=Path, help="run file (default: data/runs/attribution/<plan name>.sqlite; with "
                                              "--rescore: RUN itself, replaced atomically, unless RUN is a shipped "
                                              "run under data/, which only an explicit --out rebuilds)")
    run.add_argument("--rescore", type=Path, metavar="RUN",
                     help="re-score an existing HAGRID run with --checker (entailment, citation metrics, human "
                          "agreement), generating nothing: answers, citations, retrieval and sub-queries are kept; "
                          "the build flags above are not used")
    run.add_argument("--data-dir", type=Path, default=DATA_DIR)
    add_checker_arguments(run)
    run.set_defaults(handler=cmd_attribution)


def cmd_evaluate_citations(args: argparse.Namespace) -> int:
    from rageval.attribution.user_answers import evaluate_citations
    from rageval.store.attribution import attribution_summary

    # Rebuilt from the parsed arguments (not sys.argv: main() may be called with its own argv).
    command = shlex.join(["rageval", "evaluate-citations", str(args.answers), "--out", str(args.out), "--checker",
                          args.checker, *(["--threshold", str(args.threshold)] if args.threshold is not None else []),
                          "--scenario", args.scenario, *(["--no-bertscore"] if args.no_bertscore else [])])
    path = evaluate_citations(args.answers, args.out, checker_loader(args), bertscore=not args.no_bertscore,
                              scenario=args.scenario, command=command, log=_log)
    summary = attribution_summary(path)
    print(f"wrote {path}: {summary['answers']} answers, {summary['statements']} statements, {summary['pairs']} "
          f"statement x passage pairs, {summary['invalid_citations']} invalid citations")
    for metric, value in summary["metrics"].items():
        print(f"  {metric:<20} {value:.4f}")
    return 0


def add_evaluate_citations_parser(sub) -> None:
    run = sub.add_parser("evaluate-citations", help="AutoAIS and ALCE citation metrics (and ROUGE-L/BLEU against "
                                                    "gold answers) of your own attributed answers (JSONL, "
                                                    "docs/citations_format.md), into an attribution run file")
    run.add_argument("answers", type=Path, help="JSONL: query_id, question, answer with [n] citations, passages")
    run.add_argument("--out", type=Path, required=True,
                     help="run file to write (the dashboard lists <runs folder>/attribution/*.sqlite)")
    run.add_argument("--scenario", default="user", help="the name the run stores these answers under")
    run.add_argument("--no-bertscore", action="store_true", help="skip BERTScore against the gold answers")
    add_checker_arguments(run)
    run.set_defaults(handler=cmd_evaluate_citations)
