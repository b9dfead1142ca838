"""``rageval report RUN --html OUT.html``: the Findings page's story as one self-contained HTML file
(:mod:`rageval.html_report`), for stakeholders who will not sign in to the dashboard."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_report(args: argparse.Namespace) -> int:
    from rageval.html_report import write_html_report

    path = write_html_report(args.run, args.html, others=args.with_runs or (), all_runs=args.all_runs)
    print(f"wrote {path}")
    return 0


def add_parsers(sub) -> None:
    report = sub.add_parser(
        "report", help="the Findings page's story (2x2, sentences with intervals, correlation chart, leaderboard, "
                       "failure cases) as one self-contained HTML file",
        description="Write one HTML file that opens in any browser without a network or a server: the findings of "
                    "RUN as the dashboard's Findings page shows them, every number with what produced it and its "
                    "interval. RUN is a run file, or a run's name in your runs folder or the shipped runs.")
    report.add_argument("run", help="a run file (.sqlite) or a run's name (as in the dashboard's ?run=)")
    report.add_argument("--html", type=Path, required=True, help="the HTML file to write")
    others = report.add_mutually_exclusive_group()
    others.add_argument("--with-runs", nargs="+", metavar="RUN",
                        help="also these runs in the report's leaderboard (by default it holds RUN only: the file "
                             "goes to people outside the team)")
    others.add_argument("--all-runs", action="store_true",
                        help="also every other run the dashboard lists (your runs folder and the shipped runs)")
    report.set_defaults(handler=cmd_report)
