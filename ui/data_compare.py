"""Cached loaders of the compare-runs page (``app_pages/6_Compare_runs.py``), on top of :mod:`ui.data`'s tables.

Keyed like every loader of the data layer by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`), the pair of
runs by both keys. No widgets.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from rageval.compare import E2E_METHOD, Comparison, compare_scores, e2e_k, e2e_measure
from ui import data

_TTL_S = 3600


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_score_options(path: str, mtime_ns: int) -> dict[str, list[str]]:
    """What a run can be scored on (:func:`rageval.compare.score_options`'s form): its label methods with their
    measures (measure order), and ``e2e`` with ``E2E@k`` for every k with E2E outputs; no value is read."""
    names = data.load_measure_names(path, mtime_ns)
    options = {method: list(group["measure"]) for method, group in names.groupby("method", sort=True)}
    ks = data.load_e2e_ks(path, mtime_ns)
    if ks:
        options[E2E_METHOD] = [e2e_measure(k) for k in ks]
    return options


def load_scores(path: str, mtime_ns: int, method: str, measure: str) -> pd.Series:
    """Per-query finite values of one score of a run (:func:`rageval.compare.per_query_scores`' Series), read
    alone: that measure's rows, or the E2E scores at that k."""
    if method == E2E_METHOD:
        k = e2e_k(measure)
        table = data.load_e2e_scores(path, mtime_ns, k).table
        return pd.Series(table["score"].to_numpy(float), index=pd.Index(table["query_id"], name="query_id"),
                         name=e2e_measure(k))
    table = data.load_measure_values(path, mtime_ns, method, measure)
    return pd.Series(table["value"].to_numpy(float), index=pd.Index(table["query_id"], name="query_id"), name=measure)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Testing the paired difference…")
def load_comparison(path_a: str, mtime_a: int, path_b: str, mtime_b: int, method: str, measure: str,
                    n_permutations: int, seed: int) -> Comparison:
    """:func:`rageval.compare.compare_scores` of run A against run B on one score."""
    return compare_scores(load_scores(path_a, mtime_a, method, measure), load_scores(path_b, mtime_b, method, measure),
                          n_permutations, seed)


def load_question_texts(path: str, mtime_ns: int, query_ids: Sequence[str]) -> dict[str, str]:
    """Question text by query id, of ``query_ids`` only (what the page shows; :func:`ui.data.load_question_texts`)."""
    return data.load_question_texts(path, mtime_ns, tuple(dict.fromkeys(map(str, query_ids))))


def load_dropped_scores(path: str, mtime_ns: int, method: str, measure: str) -> int:
    """How many per-query values of one score the run stores that are missing or not finite numbers (left out of
    the comparison: :func:`ui.data.keep_finite`)."""
    if method == E2E_METHOD:
        k = e2e_k(measure)
        return data.dropped_count(data.load_e2e_scores(path, mtime_ns, k).dropped, k=k)
    stored = len(data.load_measure_values_stored(path, mtime_ns, method, measure))  # both cached: no second read
    return stored - len(data.load_measure_values(path, mtime_ns, method, measure))
