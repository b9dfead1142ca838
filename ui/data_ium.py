"""Cached loaders of IUM run files (kind "RAGI", ``rageval ium``; the Agents/IUM page, ``app_pages/4_Agents_IUM.py``):
the run's settings and tables, and the summaries, intervals and curves drawn from its outcomes. Keyed like every
loader of the data layer by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`); the files are found by
:func:`ui.data.find_ium_runs`. No widgets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rageval.store import IUM
from ui import data

_TTL_S = 3600


@st.cache_data(ttl=_TTL_S, max_entries=4, show_spinner=False)
def load_ium_run(path: str, mtime_ns: int) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """(settings, tables) of an IUM run file (:func:`rageval.store.ium.read_ium_run`)."""
    from rageval.store.ium import read_ium_run

    with data.checked(path, IUM):
        return read_ium_run(Path(path))


def load_ium_settings(path: str, mtime_ns: int) -> dict[str, Any]:
    return load_ium_run(path, mtime_ns)[0]


def load_ium_table(path: str, mtime_ns: int, name: str) -> pd.DataFrame:
    """One table of an IUM run (agents, queries, served, outcomes, feedback, online_trained_on, significance,
    personalisation); empty when the run does not have it."""
    return load_ium_run(path, mtime_ns)[1].get(name, pd.DataFrame())


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_ium_summary(path: str, mtime_ns: int) -> pd.DataFrame:
    """:func:`rageval.ium.experiment.summary_table`: mean downstream score per agent (rows, then ``macro
    average``, the mean over agents) and main method (columns)."""
    from rageval.ium.experiment import summary_table

    outcomes = load_ium_table(path, mtime_ns, "outcomes")
    with data.checked(path, IUM):
        return summary_table(outcomes)


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_ium_macro_intervals(path: str, mtime_ns: int) -> pd.DataFrame:
    """:func:`rageval.ium.experiment.macro_interval_table`: each main method's macro average with its 95%
    bootstrap interval and its difference from the first stage (BM25 for the four shipped agents)."""
    from rageval.ium.experiment import macro_interval_table

    outcomes = load_ium_table(path, mtime_ns, "outcomes")
    agents = load_ium_table(path, mtime_ns, "agents")
    if outcomes.empty or agents.empty:
        return pd.DataFrame()
    with data.checked(path, IUM):
        return macro_interval_table(outcomes, agents)


def load_ium_test_counts(path: str, mtime_ns: int) -> dict[str, int]:
    """The number of test queries each agent answered (what each agent's mean is over)."""
    outcomes = load_ium_table(path, mtime_ns, "outcomes")
    if outcomes.empty:
        return {}
    with data.checked(path, IUM):
        return {agent: int(n) for agent, n in outcomes.groupby("agent")["query_id"].nunique().items()}


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_ium_iteration_curves(path: str, mtime_ns: int) -> pd.DataFrame:
    """Macro-average downstream score after each offline iteration t (rows), personalised and not (columns;
    :func:`rageval.ium.experiment.iteration_curve`)."""
    from rageval.ium.experiment import iteration_curve

    outcomes = load_ium_table(path, mtime_ns, "outcomes")
    with data.checked(path, IUM):
        return pd.DataFrame({"personalised": iteration_curve(outcomes, "offline-IUM"),
                             "non-personalised": iteration_curve(outcomes, "offline-IUM-nonpersonalised")})


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_ium_batch_curve(path: str, mtime_ns: int) -> pd.Series:
    """Macro-average downstream score of online IUM per batch size b
    (:func:`rageval.ium.experiment.batch_size_curve`)."""
    from rageval.ium.experiment import batch_size_curve

    outcomes = load_ium_table(path, mtime_ns, "outcomes")
    with data.checked(path, IUM):
        return batch_size_curve(outcomes)


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_ium_personalisation(path: str, mtime_ns: int) -> pd.DataFrame:
    """:func:`rageval.ium.experiment.personalisation_summary` of the run (empty when it has no such table)."""
    from rageval.ium.experiment import personalisation_summary

    table = load_ium_table(path, mtime_ns, "personalisation")
    if table.empty:
        return pd.DataFrame(columns=["method", "agent_a", "agent_b", "kendall_tau", "jaccard", "n"])
    with data.checked(path, IUM):
        return personalisation_summary(table, load_ium_table(path, mtime_ns, "agents"))
