"""The annotation page's data layer: the annotation file (:mod:`rageval.annotations`) and the agreement tables.

Like :mod:`ui.data`, which it builds on, it is the only other place with ``st.cache_data`` and creates no
widgets. Annotation tables are keyed by ``(file, revision)``, the id of the newest label
(:meth:`~rageval.annotations.AnnotationStore.revision`): every save changes the key, so a label shows on the rerun
that follows the click, while the run's own tables stay keyed by ``(path, mtime_ns)``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pandas as pd
import streamlit as st

from rageval import annotations as ann
from rageval.errors import RagevalError, StoreError
from ui import data

_TTL_S = 3600
ANNOTATIONS_ENV = "RAGEVAL_ANNOTATIONS"
SAVE_ERROR_STATE = "annotate.save_error"


def annotation_file() -> Path:
    """The annotation file: ``$RAGEVAL_ANNOTATIONS``, else ``<runs folder>/annotations.sqlite``."""
    explicit = os.environ.get(ANNOTATIONS_ENV)
    return Path(explicit) if explicit else ann.annotations_path(data.runs_dir())


def annotation_key(path: Path) -> tuple[str, int]:
    """The cache key of the annotation file: its resolved path and the id of its newest label (0 if none).
    Raises :class:`~rageval.errors.StoreError` when the file exists but is not an annotation file."""
    return str(path.resolve()), ann.AnnotationStore(path).revision()


def save_label(path: str, run: str, annotator: str, item: ann.PassageItem | ann.StatementItem, label: int) -> None:
    """Append one label to the annotation file (committed at once); a button's ``on_click``. A label that cannot be
    written (read-only folder, locked or foreign file) leaves the reason in the session for the page to show."""
    try:
        ann.AnnotationStore(path).save_label(run, item, label, annotator)
        st.session_state.pop(SAVE_ERROR_STATE, None)
    except (OSError, sqlite3.Error, RagevalError) as error:
        st.session_state[SAVE_ERROR_STATE] = f"{path}: the label was not saved ({error})"


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_history(path: str, revision: int, run: str, kind: str) -> pd.DataFrame:
    """Every label row of one run and kind (all annotators, the full history), oldest first; a damaged file stops
    the page with its error (:func:`ui.data.unreadable`)."""
    try:
        return ann.AnnotationStore(path).labels(run, kind)
    except StoreError as error:
        data.unreadable(error)


def load_latest(path: str, revision: int, run: str, kind: str, annotator: str | None = None) -> pd.DataFrame:
    """The labels that count (latest per annotator and item) of one run and kind; optionally one annotator's."""
    return ann.latest_labels(load_history(path, revision, run, kind), kind, annotator)


def passage_method_labels(run_path: Path) -> pd.DataFrame:
    """Every automatic label of an eRAG run: method, query_id, passage_id, value."""
    return data.load_labels(*data.run_key(run_path))


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_statement_method_labels(path: str, mtime_ns: int) -> pd.DataFrame:
    """The NLI verdicts (and HAGRID's human labels) of every statement of an attribution run, long format
    (:func:`rageval.annotations.statement_method_labels`)."""
    return ann.statement_method_labels(data.load_all_attribution_statements(path, mtime_ns))


def method_labels(run_path: Path, kind: str) -> pd.DataFrame:
    if kind == "passage":
        return passage_method_labels(run_path)
    return load_statement_method_labels(*data.run_key(run_path))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def _load_agreement(path: str, revision: int, run_path: str, mtime_ns: int, run: str, kind: str,
                    annotator: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    mine = load_latest(path, revision, run, kind, annotator)
    automatic = method_labels(Path(run_path), kind)
    return (ann.agreement_with_methods(mine, automatic, kind), ann.disagreements(mine, automatic, kind),
            ann.agreement_between_annotators(load_latest(path, revision, run, kind), kind))


def load_agreement(annotation_key: tuple[str, int], run_path: Path, kind: str,
                   annotator: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(kappa per automatic method, disagreements, kappa per pair of annotators) of one annotator on one run
    (:func:`rageval.annotations.agreement_with_methods`, :func:`~rageval.annotations.disagreements`,
    :func:`~rageval.annotations.agreement_between_annotators`)."""
    return _load_agreement(*annotation_key, *data.run_key(run_path), run_path.stem, kind, annotator)
