"""Cached loaders of how far a run's automatic labels can be trusted (:mod:`rageval.trust`): the trust report,
the intervals by label count and the plan's next items, for the Annotate and Findings pages.

Keyed by the annotation file and its revision (:func:`ui.data_annotate.annotation_key`: every label changes it)
and the run's ``(path, mtime_ns)``. No widgets; a damaged annotation file stops the page with its error.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from rageval.annotations import AnnotationStore
from rageval.errors import StoreError
from rageval.trust import report as trust
from rageval.trust.inputs import TrustInputs
from ui import data

_TTL_S = 3600
#: How many items the Annotate page's plan proposes.
PLAN_SIZE = 20


@st.cache_data(ttl=_TTL_S, max_entries=16, show_spinner=False)
def load_inputs(annotation_path: str, revision: int, run_path: str, mtime_ns: int) -> TrustInputs | None:
    """The run's items, every method's labels and the people's labels (None when nobody labelled a passage of the
    run)."""
    try:
        store = AnnotationStore(annotation_path)
        if store.labels(Path(run_path).stem, "passage").empty:  # no label of this run: the run is not read
            return None
        inputs = trust.read_inputs(run_path, store)
    except StoreError as error:
        data.unreadable(error)
    return inputs if len(inputs.human) else None


@st.cache_data(ttl=_TTL_S, max_entries=16, show_spinner=False)
def load_basis(annotation_path: str, revision: int, run_path: str, mtime_ns: int, basis: str = ""
               ) -> trust.Basis | None:
    """What the run's numbers rest on (:func:`rageval.trust.report.report_basis`, the one choice ``rageval trust``
    makes too): its newest annotation queue (labels by the queue's rule), else its shared sample, else a
    convenience sample; or ``basis`` (a key of :func:`load_bases`); None without human labels."""
    inputs = load_inputs(annotation_path, revision, run_path, mtime_ns)
    if inputs is None:
        return None
    try:
        return trust.report_basis(AnnotationStore(annotation_path), run_path, inputs, basis=basis)
    except StoreError as error:
        data.unreadable(error)


@st.cache_data(ttl=_TTL_S, max_entries=16, show_spinner=False)
def load_report(annotation_path: str, revision: int, run_path: str, mtime_ns: int, basis: str = ""
                ) -> trust.TrustReport | None:
    """The run's :class:`~rageval.trust.report.TrustReport` on its basis (:func:`load_basis`), with the per-run
    agreement over the annotated runs of its folder; None without human labels."""
    chosen = load_basis(annotation_path, revision, run_path, mtime_ns, basis)
    if chosen is None:
        return None
    try:
        others = trust.other_annotated_runs(AnnotationStore(annotation_path), Path(run_path),
                                            list(chosen.inputs.auto.columns), chosen.inputs.k)
    except StoreError as error:
        data.unreadable(error)
    return trust.report_from_basis(chosen, other_runs=others)


@st.cache_data(ttl=_TTL_S, max_entries=16, show_spinner=False)
def load_bases(annotation_path: str, revision: int, run: str) -> dict[str, str]:
    """The designs the run's estimates can rest on (:func:`rageval.trust.report.available_bases`)."""
    try:
        return trust.available_bases(AnnotationStore(annotation_path), run)
    except StoreError as error:
        data.unreadable(error)


def load_home_report(run_path: str, mtime_ns: int) -> trust.TrustReport | None:
    """The report for the Findings page's sentence: None without human labels, and None (the page goes on
    without the sentence) when the annotation file cannot be read."""
    from ui import data_annotate

    path = data_annotate.annotation_file()
    if not path.exists():
        return None
    try:
        with data.isolated():
            return load_report(*data_annotate.annotation_key(path), run_path, mtime_ns)
    except StoreError:
        return None


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_narrowing(annotation_path: str, revision: int, run_path: str, mtime_ns: int, method: str,
                   measure: str, basis: str = "") -> pd.DataFrame:
    """The three intervals of ``method``'s ``measure`` from the first n labels of the sample, n growing
    (:func:`rageval.trust.report.interval_by_label_count`); empty without a random sample."""
    chosen = load_basis(annotation_path, revision, run_path, mtime_ns, basis)
    report = load_report(annotation_path, revision, run_path, mtime_ns, basis)
    if chosen is None or report is None or not report.supports_estimate:
        return pd.DataFrame(columns=["n", "estimator", "estimate", "low", "high"])
    return trust.interval_by_label_count(chosen.inputs, chosen.design or report.design, method, measure,
                                         population_strata=chosen.population_strata)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_plan(annotation_path: str, revision: int, run_path: str, mtime_ns: int, method: str,
              size: int = PLAN_SIZE, basis: str = "") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The plan's next ``size`` items for ``method`` (query_id, passage_id, rank, stratum) and its allocation per
    stratum (:func:`rageval.trust.report.next_plan`: the plan and seed of ``rageval trust --plan``); both empty
    without human labels."""
    chosen = load_basis(annotation_path, revision, run_path, mtime_ns, basis)
    if chosen is None:
        return pd.DataFrame(), pd.DataFrame()
    plan = trust.next_plan(chosen, method, size)
    return plan.items, plan.allocation
