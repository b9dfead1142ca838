"""``rageval info`` and ``rageval export``: what a run file holds, and its labels / verdicts / failures out."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rageval.errors import RagevalError, StoreError


def print_summary(path: Path) -> None:
    """The human-readable summary: what produced the run, label shares, the LLM judges' unread answers, E2E score,
    mean measures. Every number is aggregated by SQLite, so this loads neither pandas nor the run's rows
    (``tests/cli/test_cli_startup.py``)."""
    from rageval.labelmethods import relevant_grade
    from rageval.store import RunReader

    with RunReader(path) as reader:
        settings = reader.settings()
        ks = reader.e2e_ks() if reader.answers_are_imported() else []
        k = f"k={ks[0]}-{ks[-1]} (each list's length)" if len(ks) > 1 else f"k={settings.get('k')}"
        print(f"{settings.get('dataset')} | {settings.get('retriever')} | {k} | "
              f"{settings.get('model_id')} | {settings.get('num_queries')} queries")
        for method, share, count in reader.label_shares():
            if (grade := relevant_grade(method)) is not None:  # graded levels: the share relevant, the mean grade
                relevant, _ = reader.label_share_from(method, grade)
                print(f"  share of labels >= {grade} ({method}): {_number(relevant):.3f} over {count} labels "
                      f"(mean grade {_number(share):.2f})")
            else:
                print(f"  share of labels = 1 ({method}): {_number(share):.3f} over {count} labels")
        for judge, model, unparsed, answers in reader.unparsed_counts():
            from rageval.finding import unparsed_finding

            if (finding := unparsed_finding(judge, model, unparsed, answers)) is not None:
                print(f"  {finding.text}")
        for judge, model, count, answers in reader.counted_as_no():
            from rageval.finding import counted_as_no_finding

            if (finding := counted_as_no_finding(judge, model, count, answers)) is not None:
                print(f"  {finding.text}")
        metric = settings.get('e2e_metric') or settings.get('label_metric')
        if reader.answers_are_imported():  # each query's own answer, at the length of its own list
            mean, scored, answers = reader.own_answer_mean()
            ks = reader.e2e_ks()
            at = f"k={ks[0]}" if len(ks) == 1 else f"k from {ks[0]} to {ks[-1]}"
            if scored:
                print(f"  E2E {metric}: {_number(mean):.3f} over {scored} queries (the system's own answers, each "
                      f"at the length of its list: {at})")
            if answers > scored:
                unscored = answers - scored
                print(f"  {unscored} answer{'s' if unscored != 1 else ''} imported, not scored (no gold answers)")
        else:
            mean, answered = reader.e2e_mean(reader.main_k())
            print(f"  E2E {metric}: {_number(mean):.3f} over {answered} queries")
        means = reader.measure_means()
        if means:
            print(measure_means_table(means))


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def measure_means_table(means: list[tuple[str, str, float | None]]) -> str:
    """``(method, measure, mean)`` rows as a method x measure table of means rounded to 3 decimals, laid out
    exactly as pandas prints one (``DataFrame.round(3).to_string()``: per column the fewest decimals that show
    every value, a sign place before numbers and their header, NaN where a method lacks a measure, cells
    right-aligned)."""
    methods = sorted({m for m, _, _ in means})
    measures = sorted({x for _, x, _ in means})
    values = {(m, x): _number(v) for m, x, v in means}

    def decimals(value: float) -> int:  # of a finite value rounded to 3 places, trailing zeros dropped
        return max(len(f"{round(value, 3):.3f}".rstrip("0").split(".")[1]), 1) if math.isfinite(value) else 1

    columns = []
    for measure in measures:
        column = [values.get((method, measure), float("nan")) for method in methods]
        places = max((decimals(v) for v in column), default=1)
        sign_place = "" if all(math.isnan(v) for v in column) else " "
        cells = ["NaN" if math.isnan(v) else f"{round(v, 3):.{places}f}" for v in column]
        cells = [cell if cell.startswith("-") else sign_place + cell for cell in cells]
        width = max(len(sign_place + measure), *(len(c) for c in cells))
        columns.append((measure.rjust(width), [c.rjust(width) for c in cells]))
    label_width = max(len("measure"), len("method"), *(len(m) for m in methods))
    lines = ["measure".ljust(label_width) + "".join(" " + header for header, _ in columns),
             "method".ljust(label_width) + "".join(" " + " " * len(header) for header, _ in columns)]
    lines += [method.ljust(label_width) + "".join(" " + cells[row] for _, cells in columns)
              for row, method in enumerate(methods)]
    return "\n".join(lines)


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
            print(EvaluateConfig.from_flat(config).to_toml(), end="")
        except (TypeError, ValueError) as error:
            raise StoreError(f"{args.run}: the stored config is not one this rageval reads ({error})") from error
    else:
        print_summary(args.run)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from rageval.export import export_run
    from rageval.paths import not_writable_file, not_writable_folder

    folder = args.format in ("parquet", "phoenix")
    reason = (not_writable_folder if folder else not_writable_file)(args.out)
    if reason:
        raise RagevalError(f"--out {args.out}: {reason}; expected a {'folder' if folder else 'file'} name")
    path = export_run(args.run, args.what, args.out, fmt=args.format, method=args.method)
    if folder:
        files = sorted(p.name for p in path.iterdir() if p.suffix == ".parquet")
        print(f"wrote {len(files)} Parquet files into {path}: {', '.join(files)}")
    else:
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

    export = sub.add_parser("export", help="write a run's labels, verdicts or failure cases as CSV, one label "
                                           "method as TREC qrels, every table as Parquet, or the labels as Phoenix "
                                           "document evaluations")
    export.add_argument("run", type=Path)
    export.add_argument("--what", choices=("labels", "verdicts", "failures"), default="labels")
    export.add_argument("--format", choices=("csv", "qrels", "parquet", "phoenix"), default="csv",
                        help="csv or qrels: --what into one file; parquet: every table of the run, one "
                             "<table>.parquet each, into the folder --out (pandas, DuckDB); phoenix: the labels of a "
                             "run imported from spans as Phoenix document evaluations, one evaluations-<id>.parquet "
                             "per label method, into the folder --out")
    export.add_argument("--method", help="label method (required for qrels; phoenix: only this one), e.g. erag:em")
    export.add_argument("--out", type=Path, required=True, help="a file (csv, qrels) or a folder (parquet, phoenix)")
    export.set_defaults(handler=cmd_export)
