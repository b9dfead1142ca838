"""The ``rageval`` command line (also ``python -m rageval``): one thin module per command group, each with
``add_parsers(sub)``; a handler reads its arguments, makes one engine call and prints the result.

    rageval evaluate ...            your questions + corpus + run or retriever + model -> one run file (every method)
    rageval evaluate-citations F    your attributed answers -> statements, entailment, AutoAIS, ALCE
    rageval info RUN [--json]       what a run file holds
    rageval export RUN ...          labels / verdicts / failure cases as CSV or qrels
    rageval upload --name NAME ...  your own run (TREC files or JSONL with answers) -> a run file
    rageval rescore start RUN ...   label a run's passages again with another model (background job, resumable)
    rageval build-corpus | build-index | erag | eval-retrieval | train-reranker | subquery-retrieval |
            demo-runs | cost-report | results          the shipped data, demo runs and docs/results.md
    rageval train-nli | attribution                   the NLI model and the HAGRID attributed-answer runs
    rageval ium                                       Iterative Utility Maximization with four agents
"""

from __future__ import annotations

import argparse
import sys

from rageval import __version__
from rageval.errors import RagevalError


def build_parser() -> argparse.ArgumentParser:
    from rageval.attribution.cli import add_parsers as attribution_parsers
    from rageval.cli import evaluate, runs, shipped
    from rageval.ium.cli import add_parsers as ium_parsers
    from rageval.jobs import add_parsers as rescore_parsers
    from rageval.upload import add_parsers as upload_parsers

    parser = argparse.ArgumentParser(prog="rageval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rageval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_parsers in (evaluate.add_parsers, runs.add_parsers, upload_parsers, rescore_parsers, shipped.add_parsers,
                        attribution_parsers, ium_parsers):
        add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; an error of the user's input (a bad or broken file, a wrong argument: a
    :class:`RagevalError`, or a file the system cannot read or write) is one line on stderr and exit status 2."""
    args = build_parser().parse_args(argv)
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
