"""Cached loaders of the correlations page (``app_pages/5_Correlations.py``), on top of :mod:`ui.data`'s tables.

Keyed like every loader of the data layer by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`). No widgets.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rageval.compare import e2e_scores, measure_scores
from ui import data

_TTL_S = 3600
POINT_COLUMNS = ["query_id", "question", "value", "e2e"]


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_scatter_points(path: str, mtime_ns: int, method: str, measure: str, k: int) -> pd.DataFrame:
    """One row per query with both ``method``'s ``measure`` and an E2E score at ``k``, in run order: query_id,
    question, value (the measure), e2e (the E2E score)."""
    values = measure_scores(data.load_measure_table(path, mtime_ns), method, measure)
    downstream = e2e_scores(data.load_e2e_table(path, mtime_ns), k)
    queries = data.load_query_table(path, mtime_ns)
    kept = queries[queries["query_id"].isin(values.index) & queries["query_id"].isin(downstream.index)]
    return pd.DataFrame({"query_id": kept["query_id"].to_list(), "question": kept["text"].to_list(),
                         "value": values.loc[kept["query_id"]].to_numpy(float),
                         "e2e": downstream.loc[kept["query_id"]].to_numpy(float)}, columns=POINT_COLUMNS)
