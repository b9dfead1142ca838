"""The bad-input table: runs ``tests/ui/test_bad_inputs.py`` with ``$RAGEVAL_BAD_INPUTS_REPORT`` set and prints, per
input kind, how many inputs there were, what became of them and how many tracebacks were seen.

    python -m tests.bad_inputs.report            # about 2 minutes on 2 cores
    python -m tests.bad_inputs.report --markdown # the table as Markdown

A failing test (a traceback, a missing error, a file created) counts as a traceback in its row and the exit status
is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KIND_NAMES = {"run": "run file", "attribution": "attribution run file", "ium": "IUM run file",
              "annotations": "annotation file", "jobs": "jobs database", "llm_cache": "LLM cache"}


def table(rows: list[dict], failed: int) -> list[tuple[str, int, str, int]]:
    """(input kind, count, results, tracebacks) per kind, in the order first seen."""
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_kind[KIND_NAMES.get(row["kind"], row["kind"])].append(row)
    lines = []
    for kind, found in by_kind.items():
        results = Counter(row["result"] for row in found)
        words = ", ".join(f"{n} {result}" for result, n in sorted(results.items()))
        lines.append((kind, len(found), words, sum(row["tracebacks"] for row in found)))
    if failed:
        lines.append(("failed tests", failed, "see the pytest output", failed))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.jsonl"
        env = {**os.environ, "RAGEVAL_BAD_INPUTS_REPORT": str(report), "CI": "true", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "tests/ui/test_bad_inputs.py"], cwd=REPO, env=env, capture_output=True, text=True)
        rows = [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    failed = sum(1 for line in done.stdout.splitlines() if line.startswith("FAILED"))
    lines = table(rows, failed)
    if args.markdown:
        print("| input kind | count | result | tracebacks |\n|---|---:|---|---:|")
        for kind, count, words, tracebacks in lines:
            print(f"| {kind} | {count} | {words} | {tracebacks} |")
    else:
        for kind, count, words, tracebacks in lines:
            print(f"{kind:<24} {count:>5}  {words:<45} {tracebacks} tracebacks")
    print(f"total: {len(rows)} inputs; pytest: {done.stdout.strip().splitlines()[-1]}")
    return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
