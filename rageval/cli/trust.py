"""``rageval annotations import`` and ``rageval trust``: human labels from other tools into the annotation file,
and how far a run's automatic labels can be trusted (PPI estimates, calibration; :mod:`rageval.trust`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _store(args: argparse.Namespace):
    from rageval.annotations import AnnotationStore, default_annotations_file

    return AnnotationStore(args.annotations or default_annotations_file())


def cmd_import(args: argparse.Namespace) -> int:
    from rageval.store import RUN
    from rageval.store.files import describe_missing
    from rageval.trust.imports import import_labels

    describe_missing(Path(args.run), RUN)
    result = import_labels(args.run, args.file, _store(args), args.annotator, args.format, args.relevant_from)
    who = ", ".join(f"{name} {count:,}" for name, count in sorted(result.annotators.items()))
    print(f"imported {result.labels:,} labels ({result.relevant:,} relevant) of run {result.run} into "
          f"{result.store} ({who})")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from rageval.store import RUN
    from rageval.store.files import describe_missing
    from rageval.trust.queue_files import draw_sample

    describe_missing(Path(args.run), RUN)
    drawn = draw_sample(_store(args).path, args.run, args.size, args.plan, args.by or "", args.seed, args.created_by,
                        args.annotator or "")
    args.out.write_text(drawn.csv_text, encoding="utf-8")
    print(f"{drawn.what}: {drawn.items:,} items written to {args.out}; fill in the label column (1, 0) and bring "
          f"it back with: {drawn.import_hint}")
    return 0


def cmd_trust(args: argparse.Namespace) -> int:
    from rageval.store import RUN
    from rageval.store.files import describe_missing
    from rageval.trust.report import trust_report
    from rageval.trust.report_text import format_report

    describe_missing(Path(args.run), RUN)
    report = trust_report(args.run, _store(args), annotator=args.annotator, k=args.k,
                          methods=args.method or None, plan_size=args.plan, plan_method=args.plan_method,
                          queue_id=args.queue, basis=args.basis or "")
    print(json.dumps(report.as_dict(), indent=1) if args.json else format_report(report))
    return 0


def add_parsers(sub) -> None:
    annotations = sub.add_parser("annotations", help="import human passage labels (TREC qrels or CSV: query_id, "
                                                     "passage_id, label[, annotator]) into the annotation file")
    actions = annotations.add_subparsers(dest="annotations_action", required=True)
    imported = actions.add_parser("import", help="add the labels of FILE for RUN's passages (one transaction)")
    imported.add_argument("run", type=Path, help="the run file the labels are of")
    imported.add_argument("file", type=Path, help="TREC qrels, or CSV with a header query_id,passage_id,label"
                                                  "[,annotator]")
    imported.add_argument("--annotator", help="who labelled (required unless the CSV has an annotator column)")
    imported.add_argument("--format", choices=("qrels", "csv"), help="default: csv for *.csv, qrels otherwise")
    imported.add_argument("--relevant-from", type=int, default=1,
                          help="a label at least this counts as relevant (default 1; 2 for TREC's highly relevant)")
    imported.add_argument("--annotations", type=Path, help="the annotation file (default: $RAGEVAL_ANNOTATIONS, "
                                                           "else annotations.sqlite in the runs folder)")
    imported.set_defaults(handler=cmd_import)
    sample = actions.add_parser("sample", help="draw a random sample of RUN's passages that rageval stores (so its "
                                               "labels give unbiased estimates) and write it as a CSV to label")
    sample.add_argument("run", type=Path, help="the run file")
    sample.add_argument("--size", type=int, required=True, help="how many passages")
    sample.add_argument("--plan", choices=("uniform", "stratified"), default="uniform",
                        help="uniform: the run's shared sample; stratified (--by METHOD): a queue of one annotator")
    sample.add_argument("--by", metavar="METHOD", help="the label method a stratified sample splits by")
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--annotator", help="who labels a stratified sample (its queue's one annotator)")
    sample.add_argument("--created-by", default="cli", help="who draws it (default: cli)")
    sample.add_argument("--out", type=Path, required=True, help="the CSV to write")
    sample.add_argument("--annotations", type=Path, help="the annotation file (default: $RAGEVAL_ANNOTATIONS, "
                                                         "else annotations.sqlite in the runs folder)")
    sample.set_defaults(handler=cmd_sample)

    trust = sub.add_parser("trust", help="how far a run's automatic labels can be trusted: PPI / PPI++ estimates "
                                         "with human labels, human-only intervals, calibration (--json)")
    trust.add_argument("run", type=Path)
    trust.add_argument("--json", action="store_true", help="one JSON object: methods, design, run, k")
    trust.add_argument("--queue", type=int, metavar="N", help="weigh the labels by annotation queue N's sampling "
                                                              "plan (default: the run's newest passage queue with a "
                                                              "label, else its shared sample)")
    trust.add_argument("--basis", metavar="queue:N|sample",
                       help="the design the estimates rest on: queue N, or the shared sample even when a queue "
                            "exists (default: the newest queue with a label, else the shared sample)")
    trust.add_argument("--annotator", help="one annotator's labels (default: the majority of all annotators)")
    trust.add_argument("--k", type=int, help="the cutoff (default: the run's main k)")
    trust.add_argument("--method", action="append", help="a label method (repeatable; default: every method)")
    trust.add_argument("--plan", type=int, default=20, metavar="N",
                       help="list the next N passages to label (Neyman allocation; 0: none; default 20)")
    trust.add_argument("--plan-method", help="the method whose interval the plan narrows (default: eRAG under the "
                                             "run's label metric)")
    trust.add_argument("--annotations", type=Path, help="the annotation file (default: $RAGEVAL_ANNOTATIONS, "
                                                        "else annotations.sqlite in the runs folder)")
    trust.set_defaults(handler=cmd_trust)
