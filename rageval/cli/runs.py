"""``rageval info`` and ``rageval export``: what a run file holds, and its labels / verdicts / failures out."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rageval.errors import RagevalError, StoreError


def print_summary(path: Path) -> None:
    """The human-readable summary: what produced the run, label shares, E2E score, mean measures."""
    from rageval.store import RunReader

    with RunReader(path) as reader:
        settings = reader.settings()
        print(f"{settings.get('dataset')} | {settings.get('retriever')} | k={settings.get('k')} | "
              f"{settings.get('model_id')} | {settings.get('num_queries')} queries")
        labels = reader.labels()
        for method, group in labels.groupby("method"):
            print(f"  share of labels = 1 ({method}): {group['value'].mean():.3f} over {len(group)} labels")
        queries = reader.query_table()
        print(f"  E2E {settings.get('e2e_metric') or settings.get('label_metric')}: {queries['e2e_score'].mean():.3f} "
              f"over {queries['e2e_score'].notna().sum()} queries")
        table = reader.measure_table()
        if not table.empty:
            wide = table.groupby(["method", "measure"])["value"].mean().unstack("measure")
            print(wide.round(3).to_string())


def cmd_info(args: argparse.Namespace) -> int:
    from rageval.pipeline.summary import run_summary
    from rageval.store import RUN, RunReader
    from rageval.store.files import describe_missing

    describe_missing(Path(args.run), RUN)  # no such file, a folder, a dangling link, empty: said in one line
    if args.json:
        print(json.dumps(run_summary(args.run), indent=1, sort_keys=True))
    elif args.config:
        from rageval.pipeline.config import EvaluateConfig

        with RunReader(args.run) as reader:
            config = reader.settings().get("config")
        if not config:
            raise RagevalError(f"{args.run}: this run was not made by rageval evaluate, so it stores no config")
        try:
            print(EvaluateConfig(**config).to_toml(), end="")
        except (TypeError, ValueError) as error:
            raise StoreError(f"{args.run}: the stored config is not one this rageval reads ({error})") from error
    else:
        print_summary(args.run)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from rageval.export import export_run
    from rageval.paths import not_writable_file

    reason = not_writable_file(args.out)
    if reason:
        raise RagevalError(f"--out {args.out}: {reason}; expected a file name")
    path = export_run(args.run, args.what, args.out, fmt=args.format, method=args.method)
    print(f"wrote {path}")
    return 0


def add_parsers(sub) -> None:
    info = sub.add_parser("info", help="print what a run file holds (--json: machine-readable)")
    info.add_argument("run", type=Path)
    shown = info.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="one JSON object: queries, labels, e2e, reteval, "
                                                           "failures, attribution")
    shown.add_argument("--config", action="store_true", help="the rageval evaluate config that made the run, as TOML "
                                                             "(rerun with rageval evaluate --config FILE)")
    info.set_defaults(handler=cmd_info)

    export = sub.add_parser("export", help="write a run's labels, verdicts or failure cases as CSV, or one label "
                                           "method as TREC qrels")
    export.add_argument("run", type=Path)
    export.add_argument("--what", choices=("labels", "verdicts", "failures"), default="labels")
    export.add_argument("--format", choices=("csv", "qrels"), default="csv")
    export.add_argument("--method", help="label method (required for qrels), e.g. erag:em")
    export.add_argument("--out", type=Path, required=True)
    export.set_defaults(handler=cmd_export)
