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
from rageval.report import measure_sort_key
from rageval.report import k_sweep_from_frames as compute_k_sweep
from rageval.store import E2EOutput, RunReader, list_runs
from rageval.types import Query

RUNS_DIR_ENV = "RAGEVAL_RUNS_DIR"
_TTL_S = 3600
#: Bootstrap resamples behind the dashboard's correlation intervals: 300 keeps a 300-query run's table under ~10 s
#: on 2 CPU cores (docs/results.md uses 1,000).
DASHBOARD_RESAMPLES = 300

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


def compute_measure_summary(measure_table: pd.DataFrame) -> pd.DataFrame:
    """Mean of each (label method, measure) over queries: one row per method, one column per measure
    (in the order P, R, AP, RR, nDCG, Hit, Rprec, then any other), plus ``n``, the number of queries."""
    if measure_table.empty:
        return pd.DataFrame(columns=["n"])
    means = measure_table.pivot_table(index="method", columns="measure", values="value", aggfunc="mean")
    means = means[sorted(means.columns, key=measure_sort_key)]
    means.columns.name = None
    means["n"] = measure_table.groupby("method")["query_id"].nunique()
    return means


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Bootstrapping correlations…")
def load_correlation_table(path: str, mtime_ns: int, cutoff: int,
                           n_resamples: int = DASHBOARD_RESAMPLES) -> pd.DataFrame:
    """Kendall's tau-b and Spearman's rho (bootstrap CIs) of every label method's measures at ``cutoff``
    (and R-precision) against the per-query E2E score at the same k: eRAG's Table 1 on this run."""
    from rageval.report import correlation_table_at_k

    measures = _read(path, mtime_ns, RunReader.measure_table)
    e2e = _read(path, mtime_ns, RunReader.e2e_table)
    return correlation_table_at_k(measures, e2e, cutoff, n_resamples, with_rprec=True).drop(columns="family")


# --- the k sweep ---------------------------------------------------------------------------------------

@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_e2e_ks(path: str, mtime_ns: int) -> list[int]:
    return _read(path, mtime_ns, RunReader.e2e_ks)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_main_k(path: str, mtime_ns: int) -> int | None:
    return _read(path, mtime_ns, RunReader.main_k)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Computing the k sweep…")
def load_k_sweep(path: str, mtime_ns: int) -> pd.DataFrame:
    """:func:`compute_k_sweep` on the run, best families chosen at its main k."""
    measures = _read(path, mtime_ns, RunReader.measure_table)
    e2e = _read(path, mtime_ns, RunReader.e2e_table)
    main_k = _read(path, mtime_ns, RunReader.main_k)
    return compute_k_sweep(measures, e2e, main_k)


# --- one query's outputs and evidence -------------------------------------------------------------------

@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_e2e_table(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, RunReader.e2e_table)


def load_query_e2e_outputs(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's E2E outputs at every k: columns k, output, score (EM), ascending k."""
    table = load_e2e_table(path, mtime_ns)
    return table[table["query_id"] == query_id].drop(columns="query_id").sort_values("k").reset_index(drop=True)


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_label_evidence(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's label evidence (e.g. the LLM's replies to the relevance prompt): method, passage_id, evidence."""
    return _read(path, mtime_ns, lambda reader: reader.label_evidence(query_id)).drop(columns="query_id")


# --- LLM-retEval ----------------------------------------------------------------------------------------

@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_semi_gold_outputs(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, RunReader.semi_gold_outputs)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_verdicts(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, RunReader.verdicts)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_failure_cases(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, RunReader.failure_cases)


def _rows_of(table: pd.DataFrame, query_id: str) -> pd.DataFrame:
    return table[table["query_id"] == query_id].drop(columns="query_id").reset_index(drop=True)


def load_query_semi_gold(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's semi-gold samples: sample, output."""
    return _rows_of(load_semi_gold_outputs(path, mtime_ns), query_id).sort_values("sample")


def load_query_verdicts(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's verdicts: judge, reference, k, verdict, evidence (by k, judge, reference)."""
    return _rows_of(load_verdicts(path, mtime_ns), query_id).sort_values(["k", "judge", "reference"])


def load_query_failure_cases(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's failure cases: judge, k, category, reason (by k, judge, category)."""
    return _rows_of(load_failure_cases(path, mtime_ns), query_id).sort_values(["k", "judge", "category"])


def read_gold_table(reader: RunReader) -> pd.DataFrame:
    """Every query with its gold answers and gold passage ids (lists), in run order: the ``queries`` input
    of :func:`rageval.reteval.reteval_table`."""
    rows = []
    for query_id in reader.query_table()["query_id"]:
        query = reader.query(query_id)
        rows.append({"query_id": query.query_id, "text": query.text, "answers": list(query.answers),
                     "gold_passage_ids": list(query.gold_passage_ids)})
    return pd.DataFrame(rows, columns=["query_id", "text", "answers", "gold_passage_ids"])


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_gold_table(path: str, mtime_ns: int) -> pd.DataFrame:
    return _read(path, mtime_ns, read_gold_table)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Computing the LLM-retEval table…")
def load_reteval_table(path: str, mtime_ns: int, judge: str) -> pd.DataFrame:
    """:func:`rageval.reteval.reteval_table` (the paper's Tables 1-2) of one judge on this run."""
    from rageval.reteval import reteval_table

    rankings = _read(path, mtime_ns, lambda reader: {q: list(r.passage_ids) for q, r in reader.rankings().items()})
    return reteval_table(load_gold_table(path, mtime_ns), rankings, load_verdicts(path, mtime_ns),
                         load_failure_cases(path, mtime_ns), load_e2e_table(path, mtime_ns), judge)


def load_failure_case_table(path: str, mtime_ns: int, judge: str) -> pd.DataFrame:
    """One judge's failure cases with the question text: query_id, text, k, category, reason (by k, category,
    run order of the queries)."""
    cases = load_failure_cases(path, mtime_ns)
    cases = cases[cases["judge"] == judge].drop(columns="judge")
    queries = load_gold_table(path, mtime_ns)[["query_id", "text"]].reset_index(names="_order")
    table = cases.merge(queries, on="query_id", how="left").sort_values(["k", "category", "_order"])
    return table[["query_id", "text", "k", "category", "reason"]].reset_index(drop=True)
