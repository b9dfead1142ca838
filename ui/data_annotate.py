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

from rageval import agreement as agree
from rageval import annotations as ann
from rageval.errors import RagevalError, StoreError
from rageval.store.annotations import PassageItem, Sample, StatementItem
from rageval.team import audit as audit_log
from rageval.team.roles import LABEL, MANAGE_QUEUES
from ui import auth, data, data_attribution

_TTL_S = 3600
ANNOTATIONS_ENV = "RAGEVAL_ANNOTATIONS"
SAVE_ERROR_STATE = "annotate.save_error"
#: The sample position (0 first) of the item on screen, in the session and as ``?item=`` (1 first).
POSITION_STATE = "annotate.position"
POSITION_PARAM = "item"


def annotation_file() -> Path:
    """The annotation file: ``$RAGEVAL_ANNOTATIONS``, else ``<runs folder>/annotations.sqlite``."""
    explicit = os.environ.get(ANNOTATIONS_ENV)
    return Path(explicit) if explicit else ann.annotations_path(data.runs_dir())


def annotation_key(path: Path) -> tuple[str, int]:
    """The cache key of the annotation file: its resolved path and the id of its newest label (0 if none).
    Raises :class:`~rageval.errors.StoreError` when the file exists but is not an annotation file."""
    return str(path.resolve()), ann.AnnotationStore(path).revision()


def save_label(path: str, run: str, annotator: str, item: PassageItem | StatementItem, label: int | str,
               note_key: str | None = None) -> bool:
    """Append one label (1, 0, ``"unsure"`` or ``"skipped"``) to the annotation file (committed at once), with the
    note typed in the widget ``note_key``; a button's ``on_click``. A label that cannot be written (read-only folder,
    locked or foreign file) leaves the reason in the session for the page to show, and returns False."""
    note = str(st.session_state.get(note_key) or "") if note_key else ""
    try:
        signed_in_as(annotator)
        ann.AnnotationStore(path).save_label(run, item, label, annotator, note=note,
                                             guideline=str(st.session_state.get(GUIDELINE_SHOWN_STATE) or ""))
        st.session_state.pop(SAVE_ERROR_STATE, None)
        return True
    except (OSError, sqlite3.Error, RagevalError, ValueError) as error:
        st.session_state[SAVE_ERROR_STATE] = f"{path}: the label was not saved ({error})"
        return False


#: The guideline the page shows (the run's, else the default for its task type): stored with each label saved.
GUIDELINE_SHOWN_STATE = "annotate.guideline_shown"


def load_guideline(path: Path, revision: int, run: str, kind: str, task: str) -> str:
    """The run's guideline for ``kind`` items (:meth:`rageval.annotations.AnnotationStore.guideline`)."""
    return ann.AnnotationStore(path).guideline(run, kind, task)


def save_guideline(path: str, run: str, kind: str, who: str, text_key: str) -> None:
    """Make the text typed in the widget ``text_key`` the run's guideline (a form's ``on_click``); team mode: a queue
    manager only. A failure leaves its reason in the session for the page to show."""
    try:
        auth.check(MANAGE_QUEUES)
        ann.AnnotationStore(path).set_guideline(run, kind, str(st.session_state.get(text_key) or ""), who)
        auth.audit(audit_log.GUIDELINE_SET, {"run": run, "kind": kind})
        st.session_state.pop(SAVE_ERROR_STATE, None)
    except (OSError, sqlite3.Error, RagevalError, ValueError) as error:
        st.session_state[SAVE_ERROR_STATE] = f"{path}: the guideline was not saved ({error})"


def signed_in_as(annotator: str) -> None:
    """Team mode, on the server before anything is written: the session may label, and ``annotator`` is its
    signed-in id (the page takes it from the sign-in; any other name, however it came, is refused). Local mode: the
    typed name, nothing to check."""
    identity = auth.check(LABEL)
    if identity.team_mode and annotator != identity.user_id:
        raise auth.NotAllowed(f"{identity.user_id} may label only as {identity.user_id}, not as {annotator!r}")


def go_to(position: int) -> None:
    """Show the sample item at ``position`` (0 first): session and ``?item=``; a button's ``on_click``."""
    st.session_state[POSITION_STATE] = int(position)
    if st.query_params.get(POSITION_PARAM) != str(int(position) + 1):
        st.query_params[POSITION_PARAM] = str(int(position) + 1)


def position_from_url() -> int | None:
    """The sample position ``?item=`` names (0 first), None when absent or not a positive number."""
    value = st.query_params.get(POSITION_PARAM, "")
    return int(value) - 1 if value.isdigit() and int(value) > 0 else None


def decide(path: str, run: str, annotator: str, item: PassageItem, note_key: str, position: int,
           next_position: int | None, label: int | str) -> None:
    """Save the decision on the item on screen (sample ``position``, with its note) and, once saved, show
    ``next_position`` (the next item of the queue; None: none left, the page says so): the label buttons' and
    hotkeys' ``on_click``. A click on a button of an item no longer on screen (a key pressed twice before the page
    redrew: the old button's callback) is dropped, so it never relabels the item just labelled."""
    if st.session_state.get(POSITION_STATE) not in (None, position):
        return
    if not save_label(path, run, annotator, item, label, note_key):
        return
    if next_position is not None:
        go_to(next_position)
    else:
        st.session_state.pop(POSITION_STATE, None)
        if POSITION_PARAM in st.query_params:
            del st.query_params[POSITION_PARAM]


def draw_sample(path: str, run: str, run_path: str, mtime_ns: int, annotator: str, size_key: str,
                seed_key: str) -> None:
    """Draw the run's sample (size and seed from the form widgets ``size_key`` / ``seed_key``) into the annotation
    file and show its first item; a form's ``on_click``. A failure is left in the session like a failed label."""
    try:
        signed_in_as(annotator)
        population = data._read(run_path, mtime_ns, lambda reader: ranked_items(reader.rankings()))
        ann.AnnotationStore(path).create_sample(run, population, int(st.session_state[size_key]),
                                                int(st.session_state[seed_key]), annotator)
        st.session_state.pop(SAVE_ERROR_STATE, None)
        go_to(0)
    except (OSError, sqlite3.Error, RagevalError, ValueError) as error:
        st.session_state[SAVE_ERROR_STATE] = f"{path}: the sample was not saved ({error})"


def ranked_items(rankings: dict) -> pd.DataFrame:
    """query_id, passage_id, rank (1 first) of every retrieved passage of a run's rankings."""
    rows = [(query_id, passage_id, rank) for query_id, ranking in rankings.items()
            for rank, passage_id in enumerate(ranking.passage_ids, start=1)]
    return pd.DataFrame(rows, columns=["query_id", "passage_id", "rank"])


def load_sample(path: str, run: str) -> Sample | None:
    """The run's newest sample in the annotation file (a few rows, read on every run: drawing one changes no
    label, so no cache key would see it); a damaged file stops the page."""
    try:
        return ann.AnnotationStore(path).latest_sample(run)
    except StoreError as error:
        data.unreadable(error)


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
    (:func:`rageval.agreement.statement_method_labels`)."""
    return agree.statement_method_labels(data_attribution.load_all_attribution_statements(path, mtime_ns))


def method_labels(run_path: Path, kind: str) -> pd.DataFrame:
    if kind == "passage":
        return passage_method_labels(run_path)
    return load_statement_method_labels(*data.run_key(run_path))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def _load_agreement(path: str, revision: int, run_path: str, mtime_ns: int, run: str, kind: str,
                    annotator: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    mine = load_latest(path, revision, run, kind, annotator)
    automatic = method_labels(Path(run_path), kind)
    paired = agree.pair_labels(mine, automatic, kind)  # once for both tables
    return (agree.agreement_from_pairs(paired, automatic["method"].unique()),
            agree.disagreements_from_pairs(paired, kind),
            agree.agreement_between_annotators(load_latest(path, revision, run, kind), kind))


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_multi_rater(path: str, revision: int, run: str, kind: str) -> agree.MultiRater:
    """Fleiss' kappa and Krippendorff's alpha of every annotator of one run and kind
    (:func:`rageval.agreement.multi_annotator_agreement`)."""
    return agree.multi_annotator_agreement(load_latest(path, revision, run, kind), kind)


def load_item_method_labels(run_path: Path, items: pd.DataFrame) -> pd.DataFrame:
    """Each automatic method's label on some passages of a run (:func:`rageval.agreement.method_labels_of`)."""
    return agree.method_labels_of(items, passage_method_labels(run_path), "passage")


def load_agreement(annotation_key: tuple[str, int], run_path: Path, kind: str,
                   annotator: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(kappa per automatic method, disagreements, kappa per pair of annotators) of one annotator on one run
    (:func:`rageval.agreement.agreement_with_methods`, :func:`~rageval.agreement.disagreements`,
    :func:`~rageval.agreement.agreement_between_annotators`)."""
    return _load_agreement(*annotation_key, *data.run_key(run_path), run_path.stem, kind, annotator)
