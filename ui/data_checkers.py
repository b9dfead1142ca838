"""Cached loaders of the Citations page's "Checker quality" section: the checker-evaluation reports
(:mod:`rageval.attribution.checker_report`) shipped (``data/runs/nli/nli_test_report.json``) and written by
``rageval nli-eval --json`` into ``<runs folder>/nli/``. A file that is not such a report is named with why, never
fatal. No widgets.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rageval.attribution.checker_report import CheckerReport, read_checker_report
from rageval.errors import RagevalError
from ui import data

_TTL_S = 3600
NLI_SUBDIR = "nli"
SHIPPED_REPORT = "nli_test_report.json"


def checker_report_files() -> list[Path]:
    """The shipped report (when the shipped runs are listed) then every ``*.json`` in ``<runs folder>/nli/``, by
    name (not cached: a new file shows at the next rerun)."""
    files: list[Path] = []
    shipped = data.shipped_runs_dir()
    if shipped is not None and (shipped / NLI_SUBDIR / SHIPPED_REPORT).is_file():
        files.append(shipped / NLI_SUBDIR / SHIPPED_REPORT)
    folder = data.runs_dir() / NLI_SUBDIR
    if folder.is_dir():
        files.extend(sorted(p for p in folder.glob("*.json") if p.is_file() and p not in files))
    return files


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_checker_report(path: str, mtime_ns: int) -> tuple[CheckerReport | None, str | None]:
    """(the report, None), or (None, why it cannot be read) for a file that is not one."""
    try:
        return read_checker_report(path), None
    except RagevalError as error:
        return None, str(error)


def report_key(path: Path) -> tuple[str, int]:
    """``(path, mtime_ns)``: the cache key of :func:`load_checker_report` (a rewritten file is read again)."""
    try:
        return str(path), path.stat().st_mtime_ns
    except OSError:
        return str(path), 0
