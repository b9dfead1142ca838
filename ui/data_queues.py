"""The annotation queues' data layer (:mod:`rageval.queues`): the queues of the annotation file, their progress,
agreement and disagreements, each run's items and automatic labels to draw a queue from, and the callbacks that
write (create a queue, label an item of one's queue, adjudicate).

Queue tables are keyed by ``(file, revision)`` like the annotation page's (:func:`ui.data_annotate.annotation_key`)
plus the number of queues and adjudications (:func:`queue_key`), so a label, a new queue or an adjudication shows on
the rerun that follows the click. Every write checks the role on the server first (:func:`ui.auth.check`) and
takes the identity from :func:`ui.auth.current_identity`, never from the browser alone.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import streamlit as st

from rageval import agreement as agree
from rageval import queue_plans as plans
from rageval import queues as q
from rageval.errors import RagevalError, StoreError
from rageval.store.annotations import ITEM_COLUMNS, normalise_annotator
from rageval.team import audit as audit_log
from rageval.team import roles
from rageval.team.config import normalise_identity
from ui import auth, data, data_attribution
from ui import data_annotate as annotate_data

_TTL_S = 3600
MESSAGE_STATE = "queues.message"
ERROR_STATE = "queues.error"
WARNING_STATE = "queues.warning"  # team mode: annotators no team.toml entry lets label
#: The item of the annotator's queue on screen (a position of the queue), in the session.
QUEUE_POSITION_STATE = "annotate.queue_position"


def queue_key(path: Path) -> tuple[str, int, int]:
    """The cache key of the queues of the annotation file: resolved path, newest label id, and a count that changes
    with every queue created and every adjudication. Raises StoreError for a file that is not an annotation file."""
    resolved, revision = annotate_data.annotation_key(path)
    return resolved, revision, q.QueueStore(path).changes()


def _store(path: str) -> q.QueueStore:
    return q.QueueStore(path)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_queues(path: str, revision: int, changes: int, run: str | None = None) -> list[q.Queue]:
    """Every queue of the annotation file (of one run), oldest first; a damaged file stops the page."""
    try:
        return _store(path).queues(run)
    except StoreError as error:
        data.unreadable(error)


def load_my_queues(path: str, revision: int, changes: int, annotator: str) -> list[q.Queue]:
    """The queues with items assigned to ``annotator``."""
    name = normalise_annotator(annotator)
    return [queue for queue in load_queues(path, revision, changes) if name in queue.annotators]


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_queue_view(path: str, revision: int, changes: int, queue_id: int) -> dict:
    """What the Queues page shows of one queue: strata, items, progress per annotator and in all, agreement,
    disagreements, current adjudications and the CSV export."""
    try:
        store = _store(path)
        return {"strata": store.strata(queue_id), "items": store.items(queue_id), "progress": store.progress(queue_id),
                "totals": store.queue_progress(queue_id), "agreement": store.agreement(queue_id),
                "disagreements": store.disagreements(queue_id), "csv": store.export_csv(queue_id)}
    except StoreError as error:
        data.unreadable(error)


@st.cache_data(ttl=_TTL_S, max_entries=32, show_spinner=False)
def load_queue_totals(path: str, revision: int, changes: int) -> dict[int, dict[str, int]]:
    """Every queue's totals (:meth:`rageval.queues.QueueStore.queue_progress`), by queue id."""
    try:
        store = _store(path)
        return {queue.id: store.queue_progress(queue.id) for queue in store.queues()}
    except StoreError as error:
        data.unreadable(error)


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_my_status(path: str, revision: int, changes: int, queue_id: int, annotator: str) -> pd.DataFrame:
    """The annotator's assigned items of one queue, each with its item columns and current decision."""
    try:
        store = _store(path)
        return store.status(queue_id, annotator).merge(store.items(queue_id), on="position", how="left")
    except StoreError as error:
        data.unreadable(error)


def load_next_item(path: str, queue_id: int, annotator: str) -> int | None:
    """The annotator's next item (:meth:`rageval.queues.QueueStore.next_item`; one small query, not cached)."""
    try:
        return _store(path).next_item(queue_id, annotator)
    except StoreError as error:
        data.unreadable(error)


def run_file(run: str, kind: str) -> Path | None:
    """The file of the run named ``run`` (a file stem) of ``kind``: an eRAG run for passages, an attributed-answer
    run for statements; None when no such run is found."""
    if kind == "passage":
        return data.find_all_runs().runs.get(run)
    return next((path for path in data.find_attribution_runs() if path.stem == run), None)


def runs_of_kind(kind: str) -> dict[str, Path]:
    """The runs a queue of ``kind`` can be drawn from, by name, newest first."""
    if kind == "passage":
        return dict(data.find_all_runs().runs)
    return {path.stem: path for path in data.find_attribution_runs()}


@st.cache_data(ttl=_TTL_S, max_entries=8, show_spinner=False)
def load_population(run_path: str, mtime_ns: int, kind: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the run's items of ``kind``, its automatic labels in long format): passages are every retrieved passage
    (query_id, passage_id, rank) with every label method's labels; statements are those citing a passage with the
    NLI verdicts (:func:`rageval.agreement.statement_method_labels`)."""
    if kind == "passage":
        population = data._read(run_path, mtime_ns, lambda reader: annotate_data.ranked_items(reader.rankings()))
        return population, data.load_labels(run_path, mtime_ns)
    statements = data_attribution.load_all_attribution_statements(run_path, mtime_ns)
    cited = statements[statements["citations"] != "[]"]
    return (cited[list(ITEM_COLUMNS["statement"])].reset_index(drop=True),
            agree.statement_method_labels(statements))


def _fail(message: str) -> None:
    st.session_state[ERROR_STATE] = message
    st.session_state.pop(MESSAGE_STATE, None)


def _plan_from(keys: dict[str, str]) -> plans.QueuePlan:
    state = st.session_state
    return plans.QueuePlan(plan=state[keys["plan"]], size=int(state[keys["size"]]), seed=int(state[keys["seed"]]),
                       stratify_by=str(state.get(keys["stratify_by"]) or ""),
                       allocation=str(state.get(keys["allocation"]) or plans.PROPORTIONAL),
                       oversample=float(state.get(keys["oversample"]) or plans.DEFAULT_OVERSAMPLE))


def create_queue(path: str, run_path: str, kind: str, typed_name: str, keys: dict[str, str]) -> None:
    """The create form's ``on_click``: draw and store the queue from the form's widgets (``keys``: field -> widget
    key), and audit it. An admin only (checked here, on the server); a failure is left in the session."""
    try:
        identity = auth.check(roles.MANAGE_QUEUES)
    except auth.NotAllowed as refused:
        _fail(f"The queue was not created: {refused}")
        return
    who = auth.current_identity(typed_name).user_id or identity.user_id
    state = st.session_state
    try:
        annotators = [normalise_annotator(line) for line in str(state[keys["annotators"]]).splitlines()]
        unknown = []
        if auth.team_mode():  # identities are the provider's: emails in lower case (issue 39 item 7)
            annotators = [normalise_identity(name) for name in annotators]
            unknown = auth.team_config().names_without_a_role([a for a in annotators if a], roles.LABEL)
        plan = _plan_from(keys)
        run = Path(run_path)
        population, method_labels = load_population(run_path, run.stat().st_mtime_ns, kind)
        queue_id = q.QueueStore(path).create_queue(
            state[keys["name"]], run.stem, kind, population, method_labels, plan, int(state[keys["overlap"]]),
            [a for a in annotators if a], str(state[keys["guidelines"]] or ""), who)
    except (OSError, sqlite3.Error, RagevalError, ValueError) as error:
        _fail(f"The queue was not created: {error}")
        return
    queue = q.QueueStore(path).queue(queue_id)
    auth.audit(audit_log.QUEUE_CREATE, {"queue": queue_id, "name": queue.name, "run": queue.run, "kind": kind,
                                 "plan": plan.plan, "settings": plan.settings(), "size": queue.size,
                                 "overlap": queue.overlap, "annotators": list(queue.annotators)})
    state.pop(ERROR_STATE, None)
    state.pop(WARNING_STATE, None)
    if unknown:
        state[WARNING_STATE] = (f"{', '.join(unknown)}: no email or @domain entry of team.toml gives "
                                f"{'this person' if len(unknown) == 1 else 'these people'} a role that labels, so "
                                "unless a group: entry does, they will not see this queue. Check the spelling, or "
                                "add them to team.toml (rageval team check).")
    state[MESSAGE_STATE] = (f"Queue {queue_id} '{queue.name}' created: {queue.size} items of {queue.run}, each to "
                            f"{queue.overlap} of {len(queue.annotators)} annotators.")
    state["queues.queue"] = queue_id


def adjudicate(path: str, queue_id: int, typed_name: str, position: int, note_key: str, label: int) -> None:
    """An adjudicate button's ``on_click``: store the adjudicated label apart (no annotator's label changes) and
    audit it. An admin only (checked here, on the server, before anything is stored)."""
    try:
        identity = auth.check(roles.ADJUDICATE)
    except auth.NotAllowed as refused:
        _fail(f"The adjudication was not saved: {refused}")
        return
    who = auth.current_identity(typed_name).user_id or identity.user_id
    note = str(st.session_state.get(note_key) or "")
    try:
        q.QueueStore(path).adjudicate(queue_id, position, label, who, note=note)
    except (OSError, sqlite3.Error, RagevalError, ValueError) as error:
        _fail(f"The adjudication was not saved: {error}")
        return
    auth.audit(audit_log.ADJUDICATE, {"queue": queue_id, "position": position, "label": label, "note": note})
    st.session_state.pop(ERROR_STATE, None)


def label_queue_item(path: str, queue_id: int, annotator: str, position: int, note_key: str,
                     label: int | str) -> None:
    """A label button's (or hotkey's) ``on_click`` in "My queue": save the decision on the item on screen, as the
    session's identity, then show the annotator's next item. A click on an item no longer on screen (a key pressed
    twice before the page redrew) is dropped."""
    if st.session_state.get(QUEUE_POSITION_STATE) not in (None, position):
        return
    try:
        identity = auth.check(roles.LABEL)
    except auth.NotAllowed as refused:
        st.session_state[annotate_data.SAVE_ERROR_STATE] = f"{path}: the label was not saved ({refused})"
        return
    who = auth.current_identity(annotator).user_id or identity.user_id
    note = str(st.session_state.get(note_key) or "")
    try:
        q.QueueStore(path).save_label(queue_id, position, who, label, note=note)
    except (OSError, sqlite3.Error, RagevalError, ValueError) as error:
        st.session_state[annotate_data.SAVE_ERROR_STATE] = f"{path}: the label was not saved ({error})"
        return
    st.session_state.pop(annotate_data.SAVE_ERROR_STATE, None)
    st.session_state.pop(QUEUE_POSITION_STATE, None)  # the next item opens


def show_queue_item(position: int) -> None:
    """Previous / Next in "My queue": show the item at ``position``."""
    st.session_state[QUEUE_POSITION_STATE] = int(position)
