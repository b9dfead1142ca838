"""Cached loaders of the home page (``app_pages/0_Home.py``): the findings of one run and the leaderboard of all runs.

Everything is read with SQLite aggregates (:mod:`rageval.store.aggregates`) and computed by :mod:`rageval.findings`,
keyed like every loader by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`). Correlations are read as stored in
the run by ``rageval evaluate``; only a run of at most :data:`SMALL_RUN_QUERIES` queries without them has them
computed (the Correlations page's own table, :func:`ui.data.load_correlations`), so a 100,000-query run never
bootstraps at page load. No widgets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rageval import findings
from rageval.correlations import ConstantSides, best_measures
from rageval.stats.intervals import intervals_from_moments, share_from_counts
from rageval.store import RunReader, aggregates
from ui import data
from ui.data_correlations import load_constant_sides

_TTL_S = 3600
#: Runs up to this many queries without stored correlations get them computed (a few tenths of a second at 300).
SMALL_RUN_QUERIES = 2_000


@dataclass(frozen=True)
class GoldAnswer:
    """The 2 x 2 of a run at k and where its gold passages came from: ``source`` is ``gold_passage_ids`` (the
    queries' own list) or the label method whose positive labels stand in; None when the run has neither."""

    table: findings.GoldAnswerTable
    source: str | None


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_gold_answer(path: str, mtime_ns: int, k: int, threshold: float = findings.RIGHT_THRESHOLD) -> GoldAnswer:
    """:func:`rageval.findings.compute_gold_answer_table` of the run at ``k``."""
    def read(reader: RunReader) -> GoldAnswer:
        source, method = aggregates.gold_source(reader)
        retrieval = aggregates.read_gold_retrieval(reader, k, method)
        return GoldAnswer(findings.compute_gold_answer_table(retrieval, k, threshold,
                                                             own_lists=reader.answers_are_imported()), source)

    return data._read(path, mtime_ns, read)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_cell_links(path: str, mtime_ns: int, k: int) -> dict[tuple[bool, bool], dict[str, str]]:
    """(gold retrieved, answer right) -> the query parameters of the inspector link walking that cell's queries
    (:func:`ui.worklist.cell_params`), encoded once per run version (70,000 positions take ~0.1 s)."""
    from ui.worklist import cell_params

    table = load_gold_answer(path, mtime_ns, k).table
    return {(gold, right): cell_params(table, gold, right, Path(path).stem) for gold in (True, False)
            for right in (True, False)}


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_label_warnings(path: str, mtime_ns: int, k: int, answer_constant: bool = False
                        ) -> tuple[str, list[findings.LabelWarning]]:
    """(the measure looked at, ``P@k``; :func:`rageval.findings.label_method_warnings` of every label method;
    ``answer_constant``: the E2E score at k is the same for every query, :func:`load_constant_answer`)."""
    from ui.format import method_name

    measure = f"P@{k}"
    spread = data._read(path, mtime_ns, lambda reader: aggregates.read_measure_spread(
        reader, aggregates.read_label_methods(reader), measure))
    return measure, findings.label_method_warnings(spread, measure, name=method_name,
                                                   answer_constant=answer_constant)


def load_constant_answer(path: str, mtime_ns: int, k: int) -> ConstantSides | None:
    """:func:`rageval.correlations.constant_sides` at ``k`` when the run's E2E score at k is the same for every query
    (then no correlation at k is defined, and the findings say why and where it varies); None when it varies (read
    from the E2E scores at k alone, so a large run reads nothing more)."""
    scores = data.load_e2e_scores(path, mtime_ns, k).table["score"]
    if scores.empty or scores.nunique() > 1:
        return None
    return load_constant_sides(path, mtime_ns, k)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_label_share(path: str, mtime_ns: int, method: str) -> tuple[int, int]:
    """(labels, labels above 0) of one label method (:func:`rageval.store.aggregates.read_label_share`)."""
    return data._read(path, mtime_ns, lambda reader: aggregates.read_label_share(reader, method))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_failure_counts(path: str, mtime_ns: int) -> pd.DataFrame:
    """:func:`rageval.store.aggregates.read_failure_counts` of the run."""
    return data._read(path, mtime_ns, aggregates.read_failure_counts)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_stored_correlations(path: str, mtime_ns: int, k: int) -> pd.DataFrame:
    """The correlations ``rageval evaluate`` stored in the run at ``k`` (empty when it stored none)."""
    return data._read(path, mtime_ns, lambda reader: reader.correlations(k))


@dataclass(frozen=True)
class HomeCorrelations:
    """The correlations the findings use: ``table`` (method, measure, n, tau, tau_low, tau_high), or None for a
    large run that stores none; ``stored`` whether ``rageval evaluate`` wrote it into the run (the whole table),
    else the best eRAG row and its reference computed now (:func:`rageval.findings.key_correlations`)."""

    table: pd.DataFrame | None
    stored: bool


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_home_correlations(path: str, mtime_ns: int, k: int) -> HomeCorrelations:
    """The run's stored correlations at ``k``; without them, for a run of at most :data:`SMALL_RUN_QUERIES` queries,
    :func:`rageval.findings.key_correlations` (two pairs bootstrapped, the numbers the Correlations page shows for
    them); for a larger run, none (never a bootstrap at page load)."""
    stored = load_stored_correlations(path, mtime_ns, k)
    if not stored.empty:
        return HomeCorrelations(stored, True)
    if data.load_counts(path, mtime_ns)["queries"] > SMALL_RUN_QUERIES:
        return HomeCorrelations(None, False)
    measures, e2e = data._read(path, mtime_ns, lambda reader: aggregates.read_measures_at(reader, k))
    with data.checked(path):
        return HomeCorrelations(findings.key_correlations(measures, e2e, k), False)


# --- the leaderboard ----------------------------------------------------------------------------------------

@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_leaderboard_row(path: str, mtime_ns: int) -> dict[str, Any]:
    """One run in a row: run, dataset, retriever, model, k (its main k), queries, metric (the E2E metric's name),
    e2e / e2e_low / e2e_high / e2e_n (the mean E2E score at k with its 95% interval: Wilson for 0/1 scores, else
    Student-t), interval ("Wilson" / "Student-t"), the eRAG method and measure whose Kendall's tau with the
    E2E score is highest (best_method, best_measure), tau / tau_low / tau_high, correlations ("stored": as
    ``rageval evaluate`` stored them; "computed": for a run of at most :data:`SMALL_RUN_QUERIES` queries,
    :func:`load_home_correlations`; or "not stored")."""
    settings = data.load_settings(path, mtime_ns)
    k = data.load_main_k(path, mtime_ns)
    queries = data.load_counts(path, mtime_ns)["queries"]
    row: dict[str, Any] = {
        "run": Path(path).stem, "dataset": str(settings.get("dataset", "–")),
        "retriever": str(settings.get("retriever", "–")), "model": str(settings.get("model_id", "–")), "k": k,
        "queries": queries, "metric": str(settings.get("e2e_metric") or settings.get("label_metric") or "em"),
        "e2e": math.nan, "e2e_low": math.nan, "e2e_high": math.nan, "e2e_n": 0, "interval": "",
        "best_method": "", "best_measure": "", "tau": math.nan, "tau_low": math.nan, "tau_high": math.nan,
        "tau_n": 0,
        "correlations": "",
    }
    if k is None:
        return row
    moments = data._read(path, mtime_ns, lambda reader: aggregates.read_e2e_moments(reader, k))
    n = moments["n"]
    if n:
        if moments["n_binary"] == n:
            interval = share_from_counts(round(moments["mean"] * n), n)
            row.update(e2e=interval.mean, e2e_low=interval.low, e2e_high=interval.high, interval="Wilson")
        else:
            t = intervals_from_moments(pd.DataFrame([moments])).iloc[0]
            row.update(e2e=t["mean"], e2e_low=t["low"], e2e_high=t["high"], interval="Student-t")
        row["e2e_n"] = n
    correlations = load_home_correlations(path, mtime_ns, k)
    row["correlations"] = ("not stored" if correlations.table is None else
                           "stored" if correlations.stored else "computed")
    top: Any = None
    if correlations.table is not None:
        best = best_measures(correlations.table, k)
        best = best[best["method"].str.startswith("erag:").astype(bool)]
        top = best.iloc[0] if len(best) else None
    if top is not None:
        row.update(best_method=top["method"], best_measure=top["measure"], tau=float(top["tau"]),
                   tau_low=float(top["tau_low"]), tau_high=float(top["tau_high"]), tau_n=int(top["n"]))
    return row


def load_leaderboard(run_keys: tuple[tuple[str, int], ...]) -> tuple[pd.DataFrame, list[str]]:
    """(one row per run that reads, :func:`load_leaderboard_row`; ``"file: reason"`` for each that does not):
    each run is read on its own (:func:`ui.data.readable_runs`), so one damaged file is named, not fatal."""
    rows, problems = data.readable_runs(run_keys, load_leaderboard_row)
    return pd.DataFrame(list(rows.values())), list(problems.values())
