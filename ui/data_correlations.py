"""Cached loaders of the correlations page (``app_pages/5_Correlations.py``), on top of :mod:`ui.data`'s tables.

Keyed like every loader of the data layer by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`). No widgets.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rageval.correlations import ConstantSides, constant_sides_from_spread
from rageval.store import aggregates
from ui import data

_TTL_S = 3600
POINT_COLUMNS = ["query_id", "question", "value", "e2e"]


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_scatter_points(path: str, mtime_ns: int, method: str, measure: str, k: int,
                        questions_up_to: int | None = None) -> pd.DataFrame:
    """One row per query with both ``method``'s ``measure`` and an E2E score at ``k``, in run order: query_id,
    question, value (the measure), e2e (the E2E score). Reads that measure's and that k's values only, and the
    questions only when there are at most ``questions_up_to`` such queries (the points a scatter draws with their
    question; a bigger run's page draws a grid of counts and reads its table's questions alone,
    :func:`ui.data.load_question_texts`): else ``question`` is empty."""
    values = data.load_measure_values(path, mtime_ns, method, measure)
    downstream = data.load_e2e_scores(path, mtime_ns, k).table
    queries = pd.DataFrame({"query_id": list(data.load_query_order(path, mtime_ns))})
    # A file another tool wrote may hold a query id twice: the first value counts, as rageval.compare's does.
    values = values.drop_duplicates("query_id")[["query_id", "value"]]
    downstream = downstream.drop_duplicates("query_id").rename(columns={"score": "e2e"})
    kept = queries.merge(values, on="query_id", how="inner", sort=False).merge(downstream, on="query_id",
                                                                              how="inner", sort=False)
    ids = kept["query_id"].to_list()
    if questions_up_to is None or len(ids) <= questions_up_to:
        texts = data.load_question_texts(path, mtime_ns, tuple(ids))
        questions = [texts.get(q, "") for q in ids]
    else:
        questions = [""] * len(ids)
    return pd.DataFrame({"query_id": ids, "question": questions, "value": kept["value"].to_numpy(float),
                         "e2e": kept["e2e"].to_numpy(float)}, columns=POINT_COLUMNS)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_constant_sides(path: str, mtime_ns: int, k: int) -> ConstantSides:
    """:func:`rageval.correlations.constant_sides` of the run at ``k``: whether its E2E score or a measure at cutoff
    k is constant, and the ks where both vary. Reads the E2E scores at every k of the E2E answers and each
    measure's smallest and largest value there (a page asks only when a coefficient at k is undefined)."""
    ks = data.load_e2e_ks(path, mtime_ns)
    e2e = pd.concat([pd.DataFrame(columns=["query_id", "score", "k"]),
                     *(data.load_e2e_scores(path, mtime_ns, at).table.assign(k=at) for at in ks)], ignore_index=True)
    # Each measure's spread over the scored queries, aggregated by SQLite (reading every measure value at every k
    # into pandas took 108 s at 100,000 queries; issue 42).
    spreads = {at: data._read(path, mtime_ns, lambda reader, at=at: aggregates.read_scored_spread(reader, at))
               for at in ks}
    return constant_sides_from_spread(spreads, e2e, k)
