"""``rageval queue``: annotation queues from a terminal (:mod:`rageval.queues`), and their work out to and back from
the tools annotators use (:mod:`rageval.trust.queue_files`: CSV, Label Studio, Argilla)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _store_path(args: argparse.Namespace) -> Path:
    from rageval.annotations import default_annotations_file

    return Path(args.annotations or default_annotations_file())


def _write(text: str, out: Path | None) -> None:
    if out is None:
        print(text, end="")
    else:
        out.write_text(text, encoding="utf-8")


def cmd_create(args: argparse.Namespace) -> int:
    from rageval.errors import RagevalError
    from rageval.queue_plans import QueuePlan
    from rageval.store import RUN
    from rageval.store.files import describe_missing
    from rageval.trust.queue_files import create_run_queue

    describe_missing(Path(args.run), RUN)
    try:
        plan = QueuePlan(args.plan, args.size, seed=args.seed, stratify_by=args.by or "", allocation=args.allocation)
    except ValueError as error:
        raise RagevalError(str(error)) from error
    people = [name for name in (args.annotators or "").split(",") if name.strip()]
    queue_id = create_run_queue(_store_path(args), args.run, args.name or f"{args.plan} queue", plan, args.overlap,
                                people, args.created_by, args.guidelines or "")
    print(f"queue {queue_id}: {plan.describe()}, {args.size:,} items of run {Path(args.run).stem}, each to "
          f"{args.overlap} of {', '.join(p.strip() for p in people)}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rageval.trust.queue_files import queue_status

    status = queue_status(_store_path(args), args.queue)
    if args.json:
        print(json.dumps(status, indent=1))
        return 0
    totals = status["totals"]
    print(f"queue {status['queue']} '{status['name']}' · run {status['run']} · {status['plan']} · {status['items']:,} "
          f"of {status['population']:,} items, each to {status['overlap']} annotator(s)")
    print(f"done {totals['done']:,} of {totals['assignments']:,} assignments; {totals['complete']:,} items complete")
    for row in status["progress"]:
        print(f"  {row['annotator']}: {row['done']:,} of {row['assigned']:,} done ({row['labelled']:,} labelled, "
              f"{row['unsure']:,} unsure, {row['skipped']:,} skipped, {row['pending']:,} pending)")
    agreement = status["agreement"]
    print(f"agreement: Fleiss' kappa {agreement['fleiss_kappa']} over {agreement['fleiss_items']:,} items; "
          f"Krippendorff's alpha {agreement['krippendorff_alpha']} over {agreement['alpha_items']:,} items")
    labels = status["labels"]
    print(f"labels: {labels['adjudicated']:,} adjudicated, {labels['majority']:,} by majority, "
          f"{len(labels['unresolved']):,} unresolved (items {', '.join(map(str, labels['unresolved'])) or 'none'})")
    print(f"rule: {labels['rule']}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from rageval.trust.queue_files import export_queue

    _write(export_queue(_store_path(args), args.queue, args.format, args.run), args.out)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from rageval.trust.queue_files import import_queue

    result = import_queue(_store_path(args), args.queue, args.file, args.format)
    who = ", ".join(f"{name} {count:,}" for name, count in sorted(result.annotators.items()))
    print(f"imported {result.decisions:,} decisions into queue {result.queue_id} of {result.store} ({who})")
    return 0


def cmd_adjudicate(args: argparse.Namespace) -> int:
    from rageval.trust.queue_files import adjudicate_from_file

    count = adjudicate_from_file(_store_path(args), args.queue, args.from_file, args.adjudicator)
    print(f"stored {count:,} adjudications of queue {args.queue} by {args.adjudicator}")
    return 0


def add_parsers(sub) -> None:
    from rageval.queue_plans import ALLOCATIONS, PLANS, PROPORTIONAL
    from rageval.trust.queue_files import FORMATS

    queue = sub.add_parser("queue", help="annotation queues: create, status, export / import (csv, label-studio, "
                                         "argilla), adjudicate")
    actions = queue.add_subparsers(dest="queue_action", required=True)

    def store_option(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--annotations", type=Path, help="the annotation file (default: $RAGEVAL_ANNOTATIONS, "
                                                             "else annotations.sqlite in the runs folder)")

    create = actions.add_parser("create", help="draw a queue of RUN's passages and assign each to K annotators")
    create.add_argument("run", type=Path, help="the run file")
    create.add_argument("--size", type=int, required=True, help="how many passages")
    create.add_argument("--plan", choices=PLANS, default="uniform")
    create.add_argument("--by", help="the label method a stratified plan splits by (e.g. erag:em)")
    create.add_argument("--allocation", choices=ALLOCATIONS, default=PROPORTIONAL)
    create.add_argument("--seed", type=int, default=0)
    create.add_argument("--overlap", type=int, default=1, help="annotators per item (K)")
    create.add_argument("--annotators", required=True, help="comma-separated names (a,b,c)")
    create.add_argument("--name", help="the queue's name")
    create.add_argument("--guidelines", help="what annotators are asked")
    create.add_argument("--created-by", default="cli", help="who creates it (default: cli)")
    store_option(create)
    create.set_defaults(handler=cmd_create)

    status = actions.add_parser("status", help="progress, agreement and how the items' labels stand")
    status.add_argument("queue", type=int)
    status.add_argument("--json", action="store_true")
    store_option(status)
    status.set_defaults(handler=cmd_status)

    export = actions.add_parser("export", help="the queue's assignments for an annotation tool")
    export.add_argument("queue", type=int)
    export.add_argument("--format", choices=FORMATS, default="csv")
    export.add_argument("--out", type=Path, help="the file to write (default: standard output)")
    export.add_argument("--run", type=Path, help="the run file with the texts (default: found by the run's name)")
    store_option(export)
    export.set_defaults(handler=cmd_export)

    imported = actions.add_parser("import", help="the decisions of FILE (an export filled in, or the tool's "
                                                 "export) into the queue; all or nothing")
    imported.add_argument("queue", type=int)
    imported.add_argument("file", type=Path)
    imported.add_argument("--format", choices=FORMATS, default="csv")
    store_option(imported)
    imported.set_defaults(handler=cmd_import)

    adjudicate = actions.add_parser("adjudicate", help="adjudicated labels from a CSV (position,label[,note])")
    adjudicate.add_argument("queue", type=int)
    adjudicate.add_argument("--from", dest="from_file", type=Path, required=True)
    adjudicate.add_argument("--adjudicator", default="cli", help="who adjudicates (default: cli)")
    store_option(adjudicate)
    adjudicate.set_defaults(handler=cmd_adjudicate)
