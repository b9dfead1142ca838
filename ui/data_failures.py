"""Cached loaders of LLM-retEval and the Failure cases page (``app_pages/2_LLM_retEval.py``,
``app_pages/7_Failure_cases.py``): one query's semi-gold samples, verdicts and failure cases, a judge's tables, and
the failure cases of many runs read each on its own (:func:`ui.data.isolated`). Keyed like every loader of the data
layer by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`). No widgets.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rageval.errors import StoreError
from rageval.store import RunReader
from ui import data

_TTL_S = 3600


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_query_semi_gold(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's semi-gold samples: sample, output (read alone, not from the whole table)."""
    return data._read(path, mtime_ns, lambda reader: reader.query_semi_gold(query_id))


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_query_verdicts(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's verdicts: judge, reference, k, verdict, evidence (by k, judge, reference; read alone)."""
    return data._read(path, mtime_ns, lambda reader: reader.query_verdicts(query_id))


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_query_failure_cases(path: str, mtime_ns: int, query_id: str) -> pd.DataFrame:
    """The query's failure cases: judge, k, category, reason (by k, judge, category; read alone)."""
    return data._read(path, mtime_ns, lambda reader: reader.query_failure_cases(query_id))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Computing the LLM-retEval table…")
def load_reteval_table(path: str, mtime_ns: int, judge: str) -> pd.DataFrame:
    """:func:`rageval.reteval.reteval_table` (the paper's Tables 1-2) of one judge on this run."""
    from rageval.reteval.tables import read_reteval_table

    return data._read(path, mtime_ns, lambda reader: read_reteval_table(reader, judge))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_failure_case_table(path: str, mtime_ns: int, judge: str, k: int | None = None,
                            details: bool = True) -> pd.DataFrame:
    """One judge's failure cases (at ``k`` when given) with the question text: query_id, text, k, category, reason
    (by k, category, run order of the queries; :meth:`RunReader.failure_case_table`); without ``details``, only
    query_id, k, category."""
    return data._read(path, mtime_ns, lambda reader: reader.failure_case_table(judge, k, details=details))


@st.cache_data(ttl=_TTL_S, max_entries=256, show_spinner=False)
def load_failure_case_details(path: str, mtime_ns: int, judge: str, query_ids: tuple[str, ...]) -> pd.DataFrame:
    """The question and reason of one judge's failure cases on ``query_ids``: query_id, k, category, text, reason
    (:meth:`RunReader.failure_case_details`)."""
    return data._read(path, mtime_ns, lambda reader: reader.failure_case_details(judge, query_ids))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_judges(path: str, mtime_ns: int) -> list[str]:
    """The judges with LLM-retEval verdicts in this run (none: the run has no LLM-retEval)."""
    return data._read(path, mtime_ns, RunReader.judges)


def has_failure_cases(key: tuple[str, int]) -> bool:
    """A run the Failure cases page lists: it stores LLM-retEval failure cases."""
    return data.load_has_rows(*key, "failure_cases")


def load_failure_judges(run_keys: tuple[tuple[str, int], ...]) -> list[str]:
    """The judges of every run in ``run_keys`` with failure cases (sorted; runs that cannot be read left out)."""
    judges: set[str] = set()
    for key in run_keys:
        try:
            with data.isolated():
                if has_failure_cases(key):
                    judges.update(load_judges(*key))
        except (StoreError, OSError):
            continue  # listed by load_unreadable_runs
    return sorted(judges)


def load_failure_overview(run_keys: tuple[tuple[str, int], ...], judge: str) -> pd.DataFrame:
    """The failure cases of ``judge`` in every run of ``run_keys`` that has any, with what produced them: columns
    run, path, dataset, retriever, model, judge, query_id, k, category (no question or reason: a big run's are
    megabytes; :func:`with_failure_details` adds them to the rows shown). Each run's cases are one joined read
    (:func:`load_failure_case_table`, cached per run); runs without the LLM-retEval tables contribute nothing."""
    frames = []
    for path, mtime_ns in run_keys:
        try:
            with data.isolated():
                if not has_failure_cases((path, mtime_ns)):
                    continue
                cases = load_failure_case_table(path, mtime_ns, judge, details=False)
                settings = data.load_settings(path, mtime_ns)
        except (StoreError, OSError):
            continue  # listed by load_unreadable_runs; one bad file never hides the others
        if len(cases):
            frames.append(cases.assign(
                run=Path(path).stem, path=path, dataset=str(settings.get("dataset", "?")),
                retriever=str(settings.get("retriever", "?")), model=str(settings.get("model_id", "?")), judge=judge))
    columns = ["run", "path", "dataset", "retriever", "model", "judge", "query_id", "k", "category"]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


def with_failure_details(cases: pd.DataFrame, run_keys: tuple[tuple[str, int], ...]) -> pd.DataFrame:
    """``cases`` (rows of :func:`load_failure_overview`, a few hundred) with their question (``text``) and reason,
    read for those rows only, run by run; the rows and their order are kept."""
    mtimes = dict(run_keys)
    key = ["query_id", "k", "category"]
    parts = []
    for (path, judge), group in cases.reset_index(names="_position").groupby(["path", "judge"], sort=False):
        found = load_failure_case_details(path, mtimes[path], judge, tuple(dict.fromkeys(group["query_id"])))
        parts.append(group.merge(found.astype({"k": int}), how="left", on=key))
    if not parts:
        return cases.assign(text=pd.Series(dtype=object), reason=pd.Series(dtype=object))
    return pd.concat(parts).sort_values("_position").drop(columns="_position").reset_index(drop=True)


def read_failure_tables(path: str, mtime_ns: int) -> None:
    """Read what the Failure cases page reads of one run (whether it has cases, its judges, settings and
    questions), so that a run it cannot show is named up front; its cases are read per judge."""
    if has_failure_cases((path, mtime_ns)):
        load_judges(path, mtime_ns)
        data.load_settings(path, mtime_ns)
        data.load_questions(path, mtime_ns)  # a question that does not decode fails here, not under a listed case


def load_unreadable_runs(run_keys: tuple[tuple[str, int], ...]) -> list[str]:
    """``"file: reason"`` for each run of ``run_keys`` that cannot be read as the Failure-cases page reads it (the
    page warns about them and shows every other run)."""
    return list(data.readable_runs(run_keys, read_failure_tables)[1].values())
