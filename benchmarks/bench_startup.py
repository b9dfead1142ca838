"""CPU time of starting the ``rageval`` command, against the floor of starting Python at all.

    python benchmarks/bench_startup.py                       # this checkout, 7 runs each
    python benchmarks/bench_startup.py --before /work/main   # and another checkout (e.g. before a change)

Each command runs in a fresh interpreter (``python -m rageval ...``, the checkout first on ``PYTHONPATH``); its CPU
time is the child's user + system time (``resource.getrusage(RUSAGE_CHILDREN)``), the median over ``--repeat``
runs, so another process on the machine changes it much less than wall time. Output goes to /dev/null. Ratios are
to ``python -c pass``. The run file is the shipped NQ demo run (``--run`` for another).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RUN = ROOT / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"


def cpu_seconds(command: list[str], checkout: Path) -> tuple[float, float]:
    """(CPU s, wall s) of one run of ``command`` with ``checkout`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def measure(command: list[str], checkout: Path, repeat: int) -> tuple[float, float]:
    runs = [cpu_seconds(command, checkout) for _ in range(repeat)]
    return statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--run", type=Path, default=DEFAULT_RUN, help="the run file `rageval info` reads")
    parser.add_argument("--before", type=Path, help="another checkout to time the same commands in")
    args = parser.parse_args()
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "rageval --help": [python, "-m", "rageval", "--help"],
        "rageval info RUN": [python, "-m", "rageval", "info", str(args.run.resolve())],
        "rageval info RUN --json": [python, "-m", "rageval", "info", str(args.run.resolve()), "--json"],
    }
    checkouts = {"this checkout": ROOT}
    if args.before:
        checkouts = {"before": args.before.resolve(), "after": ROOT}
    print(f"median of {args.repeat} runs, load average {os.getloadavg()[0]:.1f}; ratio = CPU / python -c pass")
    print(f"{'':<16}{'command':<26}{'CPU s':>8}{'wall s':>8}{'ratio':>8}")
    for name, checkout in checkouts.items():
        floor = None
        for label, command in commands.items():
            cpu, wall = measure(command, checkout, args.repeat)
            floor = floor or cpu
            print(f"{name:<16}{label:<26}{cpu:>8.3f}{wall:>8.3f}{cpu / floor:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
