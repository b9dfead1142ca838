"""Cached loaders of the compare-runs page (``app_pages/6_Compare_runs.py``), on top of :mod:`ui.data`'s tables.

Keyed like every loader of the data layer by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`), the pair of
runs by both keys. No widgets.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rageval.compare import E2E_METHOD, Comparison, compare_scores, e2e_k, per_query_scores, score_options
from ui import data

_TTL_S = 3600


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_score_options(path: str, mtime_ns: int) -> dict[str, list[str]]:
    """:func:`rageval.compare.score_options` of a run: its label methods with their measures, and ``e2e``."""
    return score_options(data.load_measure_table(path, mtime_ns), data.load_e2e_table(path, mtime_ns))


def load_scores(path: str, mtime_ns: int, method: str, measure: str) -> pd.Series:
    """Per-query values of one score of a run (:func:`rageval.compare.per_query_scores`)."""
    return per_query_scores(data.load_measure_table(path, mtime_ns), data.load_e2e_table(path, mtime_ns),
                            method, measure)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner="Testing the paired difference…")
def load_comparison(path_a: str, mtime_a: int, path_b: str, mtime_b: int, method: str, measure: str,
                    n_permutations: int, seed: int) -> Comparison:
    """:func:`rageval.compare.compare_scores` of run A against run B on one score."""
    return compare_scores(load_scores(path_a, mtime_a, method, measure), load_scores(path_b, mtime_b, method, measure),
                          n_permutations, seed)


def load_question_texts(path: str, mtime_ns: int) -> dict[str, str]:
    """Question text by query id."""
    queries = data.load_query_table(path, mtime_ns)
    return dict(zip(queries["query_id"], queries["text"]))


def load_dropped_scores(path: str, mtime_ns: int, method: str, measure: str) -> int:
    """How many per-query values of one score the run stores that are missing or not finite numbers (left out of
    the comparison: :func:`ui.data.keep_finite`)."""
    if method == E2E_METHOD:
        return data.dropped_count(data.load_finite_e2e(path, mtime_ns).dropped, k=e2e_k(measure))
    return data.dropped_count(data.load_finite_measures(path, mtime_ns).dropped, method=method, measure=measure)
