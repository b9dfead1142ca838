"""The dashboard's data layer: the only module that caches (``st.cache_resource`` / ``st.cache_data``).

Pages identify a run by ``(path, mtime_ns)`` (see :func:`run_key`): a run file rewritten in place gets a new
key, so no page ever shows stale tables. Open readers are shared resources (one SQLite connection per run
file, guarded by a lock because Streamlit serves sessions from several threads); tables are cached copies.
Nothing here creates widgets.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from rageval.paths import RUNS_DIR
from rageval.store import E2EOutput, RunReader, list_runs
from rageval.types import Query

RUNS_DIR_ENV = "RAGEVAL_RUNS_DIR"
_TTL_S = 3600
MEASURE_ORDER = ("P", "R", "AP", "MAP", "RR", "MRR", "nDCG", "Hit", "Rprec")

T = TypeVar("T")


def runs_dir() -> Path:
    """The folder the dashboard lists runs from: ``$RAGEVAL_RUNS_DIR``, else ``data/runs``."""
    return Path(os.environ.get(RUNS_DIR_ENV) or RUNS_DIR)


def find_runs(folder: Path) -> list[Path]:
    """Run files in ``folder``, newest first (not cached: a new run should appear on the next rerun)."""
    return list_runs(folder)


def run_key(path: Path) -> tuple[str, int]:
    """The cache key of a run file: its resolved path and modification time in nanoseconds."""
    return str(path.resolve()), path.stat().st_mtime_ns


@dataclass(frozen=True)
class _OpenRun:
    reader: RunReader
    lock: threading.Lock


@st.cache_resource(max_entries=8, show_spinner=False, on_release=lambda run: run.reader.close())
def _open_run(path: str, mtime_ns: int) -> _OpenRun:
    return _OpenRun(RunReader(path), threading.Lock())


def _read(path: str, mtime_ns: int, read: Callable[[RunReader], T]) -> T:
    run = _open_run(path, mtime_ns)
    with run.lock:
        return read(run.reader)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_settings(path: str, mtime_ns: int) -> dict[str, Any]:
    return _read(path, mtime_ns, RunReader.settings)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_counts(path: str, mtime_ns: int) -> dict[str, int]:
    return _read(path, mtime_ns, RunReader.counts)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_query_table(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, RunReader.query_table)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_measure_summary(path: str, mtime_ns: int) -> pd.DataFrame:
    return compute_measure_summary(_read(path, mtime_ns, RunReader.measure_table))


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_query(path: str, mtime_ns: int, query_id: str) -> Query:
    return _read(path, mtime_ns, lambda reader: reader.query(query_id))


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_ranking_table(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    return _read(path, mtime_ns, lambda reader: reader.ranking_table(query_id))


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_e2e_output(path: str, mtime_ns: int, query_id: str) -> E2EOutput | None:
    return _read(path, mtime_ns, lambda reader: reader.e2e_output(query_id))


def _measure_sort_key(name: str) -> tuple[int, int, str]:
    family, _, cutoff = name.partition("@")
    rank = MEASURE_ORDER.index(family) if family in MEASURE_ORDER else len(MEASURE_ORDER)
    return rank, int(cutoff) if cutoff.isdigit() else 0, name


def compute_measure_summary(measure_table: pd.DataFrame) -> pd.DataFrame:
    """Mean of each (label method, measure) over queries: one row per method, one column per measure
    (in the order P, R, AP, RR, nDCG, Hit, Rprec, then any other), plus ``n``, the number of queries."""
    if measure_table.empty:
        return pd.DataFrame(columns=["n"])
    means = measure_table.pivot_table(index="method", columns="measure", values="value", aggfunc="mean")
    means = means[sorted(means.columns, key=_measure_sort_key)]
    means.columns.name = None
    means["n"] = measure_table.groupby("method")["query_id"].nunique()
    return means


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Bootstrapping correlations…")
def load_correlation_table(path: str, mtime_ns: int, cutoff: int, n_resamples: int = 1000) -> pd.DataFrame:
    """Kendall's tau-b and Spearman's rho (bootstrap CIs) of every label method's measures at ``cutoff``
    (and R-precision) against the per-query E2E score: eRAG's Table 1 on this run."""
    from rageval.stats import compute_correlation_table

    measures = _read(path, mtime_ns, RunReader.measure_table)
    queries = _read(path, mtime_ns, RunReader.query_table).dropna(subset=["e2e_score"])
    wanted = measures["measure"].str.endswith(f"@{cutoff}") | (measures["measure"] == "Rprec")
    downstream = dict(zip(queries["query_id"], queries["e2e_score"]))
    return compute_correlation_table(measures[wanted], downstream, n_resamples=n_resamples)
