"""``rageval methods [--json] [--labels FILE.toml ...]``: every label method rageval knows, with its properties
(:mod:`rageval.labelmethods`: the built-ins, installed packages' (entry point group ``rageval.label_methods``) and
the judge files named)."""

from __future__ import annotations

import argparse
import json
import sys


def cmd_methods(args: argparse.Namespace) -> int:
    from rageval.labelmethods import ENTRY_POINT_ERRORS, describe_methods

    methods = describe_methods([str(path) for path in args.labels or ()])
    for message in ENTRY_POINT_ERRORS:
        print(f"rageval: {message}", file=sys.stderr)
    if args.json:
        print(json.dumps(methods, indent=1))
        return 0
    print(f"{'method':<16} {'scale':<14} {'list-bound':<10} {'LLM calls':>9}  needs / description")
    for m in methods:
        scale = m["scale"] + (f" {m['levels'][0]}-{m['levels'][-1]}>={m['relevant_from']}" if m["levels"] else "")
        print(f"{m['name']:<16} {scale:<14} {'yes' if m['list_bound'] else 'no':<10} {m['llm_calls_per_passage']:>9}"
              f"  {', '.join(m['needs']) or 'given'}: {m['description']}"
              + (f" [prompt {m['prompt']}]" if m["prompt"] else ""))
    return 0


def add_parsers(sub) -> None:
    parser = sub.add_parser("methods", help="list every label method with its properties (--json: machine-readable)",
                            description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON list: name, display, description, colour, "
                                                            "scale, levels, relevant_from, list_bound, needs, "
                                                            "llm_calls_per_passage, computed, source, prompt")
    parser.add_argument("--labels", type=str, action="append", metavar="FILE.toml",
                        help="also a judge file (repeatable): checked, and listed with the others")
    parser.set_defaults(handler=cmd_methods)
