"""Cached loaders of attributed-answer run files (kind "RAGA", ``rageval attribution``; the Citations page,
``app_pages/3_Citations.py``): settings, the metric table, answers with their statements, input passages, entailment
and agreement. Keyed like every loader of the data layer by ``(path, mtime_ns, ...)`` (:func:`ui.data.run_key`); the
files are found by :func:`ui.data.find_attribution_runs`. No widgets.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from rageval.store import ATTRIBUTION
from rageval.store.attribution import AttributionReader
from ui import data

_TTL_S = 3600


def _read_attribution(path: str, mtime_ns: int, read: Callable[[AttributionReader], data.T]) -> data.T:
    return data._read(path, mtime_ns, read, "attribution")


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_attribution_settings(path: str, mtime_ns: int) -> dict[str, Any]:
    return _read_attribution(path, mtime_ns, AttributionReader.settings)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_attribution_metric_table(path: str, mtime_ns: int) -> pd.DataFrame:
    """:func:`rageval.attribution.results_section.scenario_metric_table` of the run (Table 2: fractions, BLEU 0-100)."""
    from rageval.attribution.results_section import scenario_metric_table

    return scenario_metric_table(_read_attribution(path, mtime_ns, AttributionReader.metric_means))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_attribution_answers(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every answer with its question: scenario, query_id, answer_id, text, human_attributable,
    human_informative, question ("" for the gold answers of queries outside the run's sample), in run order."""
    answers = _read_attribution(path, mtime_ns, lambda reader: reader.frame("answers"))
    queries = _read_attribution(path, mtime_ns, lambda reader: reader.frame("queries"))
    with data.checked(path, ATTRIBUTION):
        questions = dict(zip(queries["query_id"], queries["text"]))
        return answers.assign(question=[questions.get(q, "") for q in answers["query_id"]])


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_attribution_statements(path: str, mtime_ns: int, scenario: str, query_id: str,
                                answer_id: str) -> pd.DataFrame:
    """One answer's statements in order: statement, text, raw, citations (a list of passage numbers),
    human_attributable, supported (AutoAIS_cit's verdict), alce_recall (ALCE's joint-premise verdict)."""
    frame = _read_attribution(path, mtime_ns, lambda reader: reader.frame(
        "statements", "scenario = ? AND query_id = ? AND answer_id = ?", (scenario, query_id, answer_id)))
    with data.checked(path, ATTRIBUTION):
        frame = frame.drop(columns=["scenario", "query_id", "answer_id"]).sort_values("statement")
        return frame.assign(citations=[[int(n) for n in json.loads(c)] for c in frame["citations"]]
                            ).reset_index(drop=True)


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_attribution_inputs(path: str, mtime_ns: int, scenario: str, query_id: str) -> pd.DataFrame:
    """The passages the generator saw for (scenario, query), by citation number: number, passage_id, title, text
    (its first part, :data:`PASSAGE_PAGE_SIZE`), text_size (:func:`load_attribution_input_page` reads the rest)."""
    return _read_attribution(path, mtime_ns, lambda reader: reader.input_passages(scenario, query_id,
                                                                                  data.PASSAGE_PAGE_SIZE))


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_attribution_input_page(path: str, mtime_ns: int, scenario: str, query_id: str, number: int,
                                page: int) -> str:
    """Part ``page`` (0 first) of one input passage's text, as :func:`load_passage_page`."""
    window = _read_attribution(path, mtime_ns, lambda reader: reader.input_passage_text(
        scenario, query_id, number, page * data.PASSAGE_PAGE_SIZE, data.PASSAGE_PAGE_SIZE))
    return window[0] if window else ""


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_entailment_matrix(path: str, mtime_ns: int, scenario: str, query_id: str, answer_id: str) -> pd.DataFrame:
    """p(passage ⊨ statement) of one answer: index statement number, columns passage number."""
    return _read_attribution(path, mtime_ns, lambda reader: reader.entailment_matrix(scenario, query_id, answer_id))


@st.cache_data(ttl=_TTL_S, max_entries=512, show_spinner=False)
def load_answer_metrics(path: str, mtime_ns: int, scenario: str, query_id: str, answer_id: str) -> dict[str, float]:
    """Every metric value stored for one answer."""
    frame = _read_attribution(path, mtime_ns, lambda reader: reader.frame(
        "answer_metrics", "scenario = ? AND query_id = ? AND answer_id = ?", (scenario, query_id, answer_id)))
    return dict(zip(frame["metric"], frame["value"].astype(float)))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_attribution_agreement(path: str, mtime_ns: int) -> pd.DataFrame:
    """Agreement of the automatic scores with HAGRID's human labels: level, score, n, pearson, spearman,
    accuracy, human_positive_rate, model_positive_rate."""
    return _read_attribution(path, mtime_ns, lambda reader: reader.frame("agreement"))


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_all_attribution_statements(path: str, mtime_ns: int) -> pd.DataFrame:
    """Every statement of an attributed-answer run (its ``statements`` table, all scenarios and answers)."""
    return _read_attribution(path, mtime_ns, lambda reader: reader.frame("statements"))
