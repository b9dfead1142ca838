"""Annotation queues: a sample of a run's items (retrieved passages, or statements of attributed answers), drawn by a
known plan, each item assigned to N distinct annotators, with progress, agreement on the overlapped items and
adjudication of the disagreements.

An admin creates a queue (:meth:`QueueStore.create_queue`) with a sampling plan (:class:`QueuePlan`):

- ``uniform``: a seeded uniform random sample of ``size`` items (one stratum);
- ``stratified``: the items split by one automatic label method's label (``<method>=1``, ``<method>=0``, and
  ``<method> unlabelled`` for the items of a query the method never judged), ``size`` allocated ``equal`` (the same
  number per stratum) or ``proportional`` (to the stratum's size), drawn uniformly within each stratum;
- ``disagreement``: the items split by how far the run's label methods disagree on them (stratum ``d`` holds the
  items where ``d`` methods dissent from the majority; ``d = 0``: all agree), the sample allocated in proportion
  to ``population x (1 + (oversample - 1) d)``: an item where one method dissents is ``oversample`` times as
  likely to be drawn as one where all agree. It is a stratified design in which every stratum keeps a positive
  sampling rate (at least one item each), so estimates weighted by ``population / sampled`` stay unbiased.

Allocation (:func:`allocate`): each stratum's target share is capped at its population (the rest goes to the
others), rounded by largest remainders, and every non-empty stratum gets at least one item. The design is read back
as a :class:`rageval.stats.design.SamplingDesign` (:func:`queue_sampling_design`): for each stratum its population
(the run's items in it) and the items drawn (an item labelled by three people is one sampled item).

Assignment (:func:`assign_annotators`): deterministic and balanced. Item by item, the N annotators with the fewest
items so far are chosen (so every annotator ends with ``floor`` or ``ceil`` of ``size x N / annotators`` items), ties
broken first by how often the candidate already shares an item with the ones chosen for this item (so every pair of
annotators shares items, which pairwise kappa needs), then by a seeded order. No annotator gets an item twice.

Storage: tables of the annotation file (:mod:`rageval.annotations`, schema v3: ``queues``, ``queue_strata``,
``queue_items``, ``queue_assignments``, ``queue_labels``, ``adjudications``). A label given in a queue is an ordinary
row of ``labels`` (so the Annotate page's agreement views count it) plus a ``queue_labels`` row linking it to its
queue item, both written in one short transaction. Adjudicated labels are rows of ``adjudications`` (who, when, a
note); no annotator's label is ever changed. Relabelling appends a row; the latest row of each (annotator, item)
counts, as everywhere.

The label of a queue item (:data:`QUEUE_LABEL_RULE`, :meth:`QueueStore.item_labels`): its adjudicated label when it
has one; otherwise the majority of the 0/1 labels of the annotators the item is assigned to (labels of anyone else,
imported or given outside the queue, do not vote); a tie is unresolved: listed, never counted as 0.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rageval.agreement import agreement_between_annotators, fleiss_kappa, krippendorff_alpha
from rageval.annotations import ITEM_COLUMNS, LABELLED, SKIPPED, UNSURE, AnnotationStore, normalise_annotator
from rageval.queue_plans import (
    DEFAULT_OVERSAMPLE,
    PROPORTIONAL,
    UNIFORM_PLAN,
    QueuePlan,
    assign_annotators,
    canonical_items,
    draw_items,
)
from rageval.stats.design import STRATIFIED, UNIFORM, SamplingDesign, Stratum

if TYPE_CHECKING:
    import pandas as pd

#: A decision not taken yet (beside :data:`rageval.annotations.STATUSES`).
PENDING = "pending"
#: The columns of :meth:`QueueStore.export_csv`, in order.
EXPORT_COLUMNS = ("queue", "queue_name", "run", "kind", "plan", "design", "seed", "position", "query_id",
                  "passage_id", "scenario", "answer_id", "statement", "stratum", "stratum_population",
                  "stratum_sampled", "inclusion_weight", "annotator", "status", "label", "note", "labelled_at",
                  "adjudicated_label", "adjudicated_by", "adjudicated_at", "adjudication_note")


#: The guideline a queue label is stored with: the queue's own, else its run's latest (``?``: the queue id).
QUEUE_GUIDELINE_SQL = (
    "(SELECT COALESCE(NULLIF(q.guidelines, ''), (SELECT g.text FROM guidelines g WHERE g.run = q.run AND "
    "g.kind = q.kind ORDER BY g.id DESC LIMIT 1), '') FROM queues q WHERE q.id = ?)")


@dataclass(frozen=True)
class Queue:
    """A stored queue: its plan, ``size`` items drawn from ``population``, each to ``overlap`` annotators."""

    id: int
    name: str
    run: str
    kind: str
    plan: QueuePlan
    overlap: int
    population: int
    guidelines: str
    created_by: str
    created_at: str
    annotators: tuple[str, ...] = field(default=())

    @property
    def size(self) -> int:
        return self.plan.size

    @property
    def source(self) -> str:
        each = f"{self.overlap} annotator{'s' if self.overlap != 1 else ''} each"
        return f"queue {self.id} '{self.name}' ({self.plan.describe()}; {self.size:,} items, {each})"


# --- agreement ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QueueAgreement:
    """Agreement on a queue's overlapped items (0/1 labels only: unsure and skipped left out): Cohen's kappa of
    each pair of annotators over the items both labelled (``pairs``, :func:`rageval.annotations.
    agreement_between_annotators`' columns), Fleiss' kappa over the ``fleiss_items`` items labelled 0/1 by all
    ``overlap`` of their annotators (Fleiss' kappa allows different raters per item, the same number), and
    Krippendorff's alpha (nominal) over the ``alpha_items`` items with at least two labels (``alpha_values``)."""

    overlap: int
    annotators: int
    pairs: pd.DataFrame
    fleiss_items: int
    fleiss: float
    alpha_items: int
    alpha_values: int
    alpha: float


def compute_agreement(latest: pd.DataFrame, kind: str, overlap: int) -> QueueAgreement:
    """:class:`QueueAgreement` from a queue's current decisions (:meth:`QueueStore.latest_decisions`)."""
    columns = list(ITEM_COLUMNS[kind])
    labelled = latest[latest["status"] == LABELLED]
    labelled = labelled.assign(label=labelled["label"].astype("int64"))
    pairs = agreement_between_annotators(labelled[["annotator", *columns, "label", "status"]], kind)
    names = sorted(labelled["annotator"].unique())
    if labelled.empty:
        return QueueAgreement(overlap, 0, pairs, 0, math.nan, 0, 0, math.nan)
    per_item = labelled.groupby("position")["label"].agg(["sum", "count"])
    full = per_item[per_item["count"] == overlap]
    counts = [[int(c - s), int(s)] for s, c in zip(full["sum"], full["count"])]
    fleiss = fleiss_kappa(counts) if counts and overlap >= 2 else math.nan
    wide = labelled.pivot_table(index="position", columns="annotator", values="label", aggfunc="last")
    pairable = wide[wide.notna().sum(axis=1) >= 2]
    alpha = krippendorff_alpha(pairable.to_numpy(dtype=float).T) if len(pairable) else math.nan
    return QueueAgreement(overlap, len(names), pairs, len(full), fleiss, len(pairable),
                          int(pairable.notna().sum().sum()), alpha)


#: How a queue item's label is decided (said by ``rageval trust`` and the Annotate page).
QUEUE_LABEL_RULE = ("an adjudicated label is the item's label; otherwise the majority of the 0/1 labels of the "
                    "queue's own annotators of the item; a tie is unresolved (listed, not counted)")
#: How an item's label was reached (:func:`resolve_item_labels`' ``basis``).
ADJUDICATED, MAJORITY, TIE = "adjudicated", "majority", "tie"


def resolve_item_labels(latest: pd.DataFrame, assignments: pd.DataFrame, adjudications: pd.DataFrame
                        ) -> pd.DataFrame:
    """The label of each queue item under :data:`QUEUE_LABEL_RULE`: from the current decisions
    (:meth:`QueueStore.latest_decisions`), only of the annotators the item is assigned to (a label given elsewhere,
    or imported, is not the queue's), and the current adjudications (:meth:`QueueStore.current_adjudications`).
    One row per item with a 0/1 label or an adjudication: position, ones, zeros (the assigned annotators' votes),
    label (Int64; NA for a tie), basis (:data:`ADJUDICATED`, :data:`MAJORITY` or :data:`TIE`) and labelled_at (the
    adjudication's time, else the latest vote's)."""
    import pandas as pd

    mine = latest.merge(assignments[["position", "annotator"]], on=["position", "annotator"], how="inner")
    mine = mine[mine["status"] == LABELLED]
    votes = mine.assign(label=mine["label"].astype("int64")).groupby("position").agg(
        ones=("label", "sum"), count=("label", "size"), labelled_at=("labelled_at", "max"))
    votes = votes.assign(zeros=votes["count"] - votes["ones"]).drop(columns="count")
    adjudicated = adjudications.set_index("position") if len(adjudications) else None
    positions = sorted(set(votes.index) | (set(adjudicated.index) if adjudicated is not None else set()))
    rows = []
    for position in positions:
        label: int | None
        ones = int(votes["ones"].get(position, 0))
        zeros = int(votes["zeros"].get(position, 0))
        if adjudicated is not None and position in adjudicated.index:
            label, basis = int(adjudicated.at[position, "label"]), ADJUDICATED
            moment = str(adjudicated.at[position, "adjudicated_at"])
        else:
            label, basis = (None, TIE) if ones == zeros else (int(ones > zeros), MAJORITY)
            moment = str(votes.at[position, "labelled_at"])
        rows.append({"position": int(position), "ones": ones, "zeros": zeros, "label": label, "basis": basis,
                     "labelled_at": moment})
    frame = pd.DataFrame(rows, columns=["position", "ones", "zeros", "label", "basis", "labelled_at"])
    return frame.astype({"position": "int64", "ones": "int64", "zeros": "int64", "label": "Int64"})


def decision_of(status: str, label) -> str:
    """``1``, ``0``, ``unsure`` or ``skipped``: one annotator's decision as a word."""
    return str(int(label)) if status == LABELLED else str(status)


# --- the store ----------------------------------------------------------------------------------------------------

class QueueStore:
    """The annotation queues kept in the annotation file at ``path`` (:class:`rageval.annotations.AnnotationStore`:
    every write is one short transaction; any number of processes may use the file at once)."""

    def __init__(self, path: str | os.PathLike):
        self.annotations = AnnotationStore(path)
        self.path = self.annotations.path

    def _has_queues(self) -> bool:
        return self.path.exists() and self.annotations.version() >= 3

    # writing --------------------------------------------------------------------------------------------------
    def create_queue(self, name: str, run: str, kind: str, population: pd.DataFrame, method_labels: pd.DataFrame,
                     plan: QueuePlan, overlap: int, annotators: Sequence[str], guidelines: str, created_by: str,
                     created_at: datetime | None = None) -> int:
        """Draw the queue's items (:func:`draw_items`), assign each to ``overlap`` of ``annotators``
        (:func:`assign_annotators`) and store it all in one transaction; return the queue's id.

        ``population``: the run's items of ``kind`` (item columns; for passages also ``rank``); ``method_labels``:
        its automatic labels in long format (method, item columns, value)."""
        name = " ".join(str(name).split())
        created_by = normalise_annotator(created_by)
        if not name:
            raise ValueError("a queue needs a name")
        if not run:
            raise ValueError("the run's name is required to create a queue")
        if not created_by:
            raise ValueError("the queue's creator is required")
        items, strata = draw_items(population, method_labels, plan, kind)
        people = assign_annotators(len(items), annotators, overlap, plan.seed)
        moment = (created_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
        columns = list(ITEM_COLUMNS[kind])
        with self.annotations.write_transaction() as connection:
            cursor = connection.execute(
                "INSERT INTO queues (name, run, kind, plan, settings, size, overlap, seed, population, guidelines, "
                "created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, run, kind, plan.plan, json.dumps(plan.settings(), sort_keys=True), len(items), int(overlap),
                 int(plan.seed), len(canonical_items(population, kind)), str(guidelines or ""), created_by, moment))
            queue_id = int(cursor.lastrowid or 0)
            connection.executemany("INSERT INTO queue_strata VALUES (?, ?, ?, ?)",
                                   [(queue_id, s, p, n) for s, (p, n) in strata.items()])
            connection.executemany(
                f"INSERT INTO queue_items (queue_id, position, {', '.join(columns)}, stratum) "
                f"VALUES (?, ?, {', '.join('?' for _ in columns)}, ?)",
                [(queue_id, int(row.position), *(_stored(getattr(row, c)) for c in columns), row.stratum)
                 for row in items.itertuples()])
            connection.executemany("INSERT INTO queue_assignments VALUES (?, ?, ?)",
                                   [(queue_id, position, person) for position, chosen in enumerate(people)
                                    for person in chosen])
        return queue_id

    def save_label(self, queue_id: int, position: int, annotator: str, label: int | str, note: str = "",
                   labelled_at: datetime | None = None) -> int:
        """Append one decision (1, 0, ``"unsure"`` or ``"skipped"``) of ``annotator`` on the queue item at
        ``position``: an ordinary label row plus its link to the queue, in one transaction; return the label's id.
        A ValueError unless the item is assigned to the annotator."""
        annotator = normalise_annotator(annotator)
        status, value = _decision(label)
        moment = (labelled_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")
        if not self._has_queues():
            raise ValueError(f"{self.path}: no queue {queue_id}")
        problem, label_id = "", 0
        with self.annotations.write_transaction() as connection:  # the check and the write: one transaction
            row = connection.execute(
                "SELECT q.run, q.kind, i.query_id, i.passage_id, i.scenario, i.answer_id, i.statement "
                "FROM queues q JOIN queue_items i ON i.queue_id = q.id WHERE q.id = ? AND i.position = ?",
                (int(queue_id), int(position))).fetchone()
            if row is None:
                problem = f"queue {queue_id} has no item {position}"
            elif connection.execute("SELECT 1 FROM queue_assignments WHERE queue_id = ? AND position = ? AND "
                                    "annotator = ?", (int(queue_id), int(position), annotator)).fetchone() is None:
                problem = f"item {position} of queue {queue_id} is not assigned to {annotator or 'anyone'}"
            else:
                cursor = connection.execute(
                    "INSERT INTO labels (run, kind, query_id, passage_id, scenario, answer_id, statement, label, "
                    f"status, annotator, labelled_at, note, guideline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    f"{QUEUE_GUIDELINE_SQL})", (*row, value, status, annotator, moment, note or "", int(queue_id)))
                label_id = int(cursor.lastrowid or 0)
                connection.execute("INSERT INTO queue_labels VALUES (?, ?, ?)",
                                   (label_id, int(queue_id), int(position)))
        if problem:
            raise ValueError(problem)
        return label_id

    def save_labels(self, queue_id: int, decisions: Sequence[tuple[int, str, int | str, str]],
                    labelled_at: datetime | None = None) -> list[int]:
        """Append many decisions (position, annotator, 1 / 0 / ``"unsure"`` / ``"skipped"``, note) in one
        transaction: every one is checked first (the item exists and is assigned to the annotator), and a ValueError
        naming the first bad one (``decision N: ...``, N counted from 0) writes nothing. Returns the label ids."""
        moment = (labelled_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")
        if not self._has_queues():
            raise ValueError(f"{self.path}: no queue {queue_id}")
        checked = [(int(position), normalise_annotator(annotator), *_decision(label), note or "")
                   for position, annotator, label, note in decisions]
        ids: list[int] = []
        problem = ""
        with self.annotations.write_transaction() as connection:
            items = {int(row[0]): row[1:] for row in connection.execute(
                "SELECT i.position, q.run, q.kind, i.query_id, i.passage_id, i.scenario, i.answer_id, i.statement "
                "FROM queues q JOIN queue_items i ON i.queue_id = q.id WHERE q.id = ?", (int(queue_id),))}
            assigned = set(connection.execute("SELECT position, annotator FROM queue_assignments WHERE queue_id = ?",
                                              (int(queue_id),)).fetchall())
            for index, (position, annotator, _, _, _) in enumerate(checked):
                if position not in items:
                    problem = f"decision {index}: queue {queue_id} has no item {position}"
                elif (position, annotator) not in assigned:
                    problem = (f"decision {index}: item {position} of queue {queue_id} is not assigned to "
                               f"{annotator or 'anyone'}")
                if problem:
                    break
            if not problem:
                for position, annotator, status, value, note in checked:
                    cursor = connection.execute(
                        "INSERT INTO labels (run, kind, query_id, passage_id, scenario, answer_id, statement, label, "
                        f"status, annotator, labelled_at, note, guideline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                        f"{QUEUE_GUIDELINE_SQL})", (*items[position], value, status, annotator, moment, note,
                                                    int(queue_id)))
                    ids.append(int(cursor.lastrowid or 0))
                    connection.execute("INSERT INTO queue_labels VALUES (?, ?, ?)", (ids[-1], int(queue_id), position))
        if problem:
            raise ValueError(problem)
        return ids

    def adjudicate_many(self, queue_id: int, rows: Sequence[tuple[int, int, str]], adjudicator: str,
                        adjudicated_at: datetime | None = None) -> int:
        """Store many adjudications (position, label 0/1, note) by ``adjudicator`` in one transaction; a ValueError
        naming the first bad one (``adjudication N: ...``) writes nothing. Returns how many were stored."""
        adjudicator = normalise_annotator(adjudicator)
        if not adjudicator:
            raise ValueError("the adjudicator's name is required")
        if not self._has_queues():
            raise ValueError(f"{self.path}: no queue {queue_id}")
        moment = (adjudicated_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")
        problem = ""
        with self.annotations.write_transaction() as connection:
            positions = {int(r[0]) for r in connection.execute("SELECT position FROM queue_items WHERE queue_id = ?",
                                                                (int(queue_id),))}
            for index, (position, label, _) in enumerate(rows):
                if label not in (0, 1) or isinstance(label, (bool, float)):
                    problem = f"adjudication {index}: an adjudicated label is 1 or 0, got {label!r}"
                elif int(position) not in positions:
                    problem = f"adjudication {index}: queue {queue_id} has no item {position}"
                if problem:
                    break
            if not problem:
                connection.executemany(
                    "INSERT INTO adjudications (queue_id, position, label, adjudicator, adjudicated_at, note) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(int(queue_id), int(p), int(v), adjudicator, moment, n or "") for p, v, n in rows])
        if problem:
            raise ValueError(problem)
        return len(rows)

    def adjudicate(self, queue_id: int, position: int, label: int, adjudicator: str, note: str = "",
                   adjudicated_at: datetime | None = None) -> int:
        """Store the adjudicated label (0 or 1) of a queue item, apart from the annotators' labels (which stay as
        they are); the latest adjudication of an item counts. Returns its id."""
        adjudicator = normalise_annotator(adjudicator)
        if not adjudicator:
            raise ValueError("the adjudicator's name is required")
        if label not in (0, 1) or isinstance(label, (bool, float)):
            raise ValueError(f"an adjudicated label is 1 (useful / supported) or 0 (not), got {label!r}")
        if not self._has_queues():
            raise ValueError(f"{self.path}: no queue {queue_id}")
        moment = (adjudicated_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")
        adjudication_id = 0
        with self.annotations.write_transaction() as connection:
            if connection.execute("SELECT 1 FROM queue_items WHERE queue_id = ? AND position = ?",
                                  (int(queue_id), int(position))).fetchone() is not None:
                cursor = connection.execute(
                    "INSERT INTO adjudications (queue_id, position, label, adjudicator, adjudicated_at, note) "
                    "VALUES (?, ?, ?, ?, ?, ?)", (int(queue_id), int(position), int(label), adjudicator, moment,
                                                  note or ""))
                adjudication_id = int(cursor.lastrowid or 0)
        if not adjudication_id:
            raise ValueError(f"queue {queue_id} has no item {position}")
        return adjudication_id

    # reading --------------------------------------------------------------------------------------------------
    def _read(self, sql: str, params: Sequence = ()) -> pd.DataFrame:
        import pandas as pd

        with self.annotations.read_connection() as connection:
            return pd.read_sql_query(sql, connection, params=list(params))

    def queues(self, run: str | None = None) -> list[Queue]:
        """Every queue (of one run), oldest first."""
        if not self._has_queues():
            return []
        where, params = (" WHERE run = ?", [run]) if run is not None else ("", [])
        rows = self._read(f"SELECT * FROM queues{where} ORDER BY id", params)
        people = self._read("SELECT DISTINCT queue_id, annotator FROM queue_assignments ORDER BY annotator")
        return [_queue(row, tuple(people.loc[people["queue_id"] == row["id"], "annotator"]))
                for _, row in rows.iterrows()]

    def changes(self) -> int:
        """A count that changes with every queue created and every adjudication (the dashboard's cache key beside
        the newest label id); 0 without queues."""
        if not self.queues():
            return 0
        with self.annotations.read_connection() as connection:
            return int(connection.execute("SELECT (SELECT COALESCE(MAX(id), 0) FROM queues) * 1000003 + "
                                          "(SELECT COALESCE(MAX(id), 0) FROM adjudications)").fetchone()[0])

    def queue(self, queue_id: int) -> Queue:
        found = [q for q in self.queues() if q.id == int(queue_id)]
        if not found:
            raise ValueError(f"{self.path}: no queue {queue_id}")
        return found[0]

    def queues_of(self, annotator: str, run: str | None = None) -> list[Queue]:
        """The queues with items assigned to ``annotator`` (of one run), oldest first."""
        name = normalise_annotator(annotator)
        return [q for q in self.queues(run) if name in q.annotators]

    def strata(self, queue_id: int) -> pd.DataFrame:
        """stratum, population, sampled, weight (population / sampled) of a queue, by name."""
        frame = self._read("SELECT stratum, population, sampled FROM queue_strata WHERE queue_id = ? ORDER BY stratum",
                           [int(queue_id)])
        return frame.assign(weight=frame["population"] / frame["sampled"])

    def items(self, queue_id: int) -> pd.DataFrame:
        """position, item columns, stratum and inclusion weight of a queue's items, in labelling order."""
        kind = self.queue(queue_id).kind
        columns = list(ITEM_COLUMNS[kind])
        frame = self._read(f"SELECT position, {', '.join(columns)}, stratum FROM queue_items WHERE queue_id = ? "
                           "ORDER BY position", [int(queue_id)])
        weights = self.strata(queue_id).set_index("stratum")["weight"]
        return frame.assign(inclusion_weight=frame["stratum"].map(weights).astype(float))

    def assignments(self, queue_id: int) -> pd.DataFrame:
        """position, annotator: who labels what."""
        return self._read("SELECT position, annotator FROM queue_assignments WHERE queue_id = ? "
                          "ORDER BY position, annotator", [int(queue_id)])

    def decisions(self, queue_id: int) -> pd.DataFrame:
        """Every decision given in the queue (the full history, oldest first): label id, position, annotator,
        label (Int64), status, note, labelled_at."""
        frame = self._read(
            "SELECT l.id, ql.position, l.annotator, l.label, l.status, l.note, l.labelled_at FROM queue_labels ql "
            "JOIN labels l ON l.id = ql.label_id WHERE ql.queue_id = ? ORDER BY l.id", [int(queue_id)])
        return frame.astype({"label": "Int64", "position": "int64", "id": "int64"})

    def latest_decisions(self, queue_id: int) -> pd.DataFrame:
        """The decision that counts (the latest) of each (item, annotator), with the item's columns and stratum."""
        history = self.decisions(queue_id)
        latest = history.drop_duplicates(["position", "annotator"], keep="last")
        items = self.items(queue_id)
        return latest.merge(items, on="position", how="left").sort_values(["position", "annotator"]).reset_index(
            drop=True)

    def status(self, queue_id: int, annotator: str | None = None) -> pd.DataFrame:
        """Every assignment (of one annotator) with its current decision: position, annotator, status
        (:data:`PENDING` when none), label, note."""
        assigned = self.assignments(queue_id)
        if annotator is not None:
            assigned = assigned[assigned["annotator"] == normalise_annotator(annotator)]
        latest = self.latest_decisions(queue_id)[["position", "annotator", "status", "label", "note"]]
        merged = assigned.merge(latest, on=["position", "annotator"], how="left")
        return merged.assign(status=merged["status"].fillna(PENDING), note=merged["note"].fillna(""),
                             label=merged["label"].astype("Int64")).reset_index(drop=True)

    def next_item(self, queue_id: int, annotator: str) -> int | None:
        """The position of ``annotator``'s next item: the first assigned one not decided yet, then (when all are)
        the first skipped one; None when every assigned item is labelled or marked unsure."""
        if not self._has_queues():
            return None
        with self.annotations.read_connection() as connection:  # one query: it runs after every label
            rows = connection.execute(
                "SELECT a.position, (SELECT l.status FROM queue_labels ql JOIN labels l ON l.id = ql.label_id "
                "WHERE ql.queue_id = a.queue_id AND ql.position = a.position AND l.annotator = a.annotator "
                "ORDER BY l.id DESC LIMIT 1) FROM queue_assignments a WHERE a.queue_id = ? AND a.annotator = ? "
                "ORDER BY a.position", (int(queue_id), normalise_annotator(annotator))).fetchall()
        for wanted in (None, SKIPPED):
            found = next((int(position) for position, status in rows if status == wanted), None)
            if found is not None:
                return found
        return None

    def progress(self, queue_id: int) -> pd.DataFrame:
        """One row per annotator: assigned, labelled, unsure, skipped, pending, done (labelled or unsure)."""
        import pandas as pd

        status = self.status(queue_id)
        rows = []
        for name, mine in status.groupby("annotator", sort=True):
            counts = {s: int((mine["status"] == s).sum()) for s in (LABELLED, UNSURE, SKIPPED, PENDING)}
            rows.append({"annotator": name, "assigned": len(mine), **counts,
                         "done": counts[LABELLED] + counts[UNSURE]})
        return pd.DataFrame(rows, columns=["annotator", "assigned", LABELLED, UNSURE, SKIPPED, PENDING, "done"])

    def queue_progress(self, queue_id: int) -> dict[str, int]:
        """The queue's totals: items, assignments, decisions done (labelled or unsure), items complete (every one
        of their annotators done)."""
        status = self.status(queue_id)
        done = status["status"].isin([LABELLED, UNSURE])
        complete = done.groupby(status["position"]).all()
        return {"items": int(status["position"].nunique()), "assignments": len(status), "done": int(done.sum()),
                "complete": int(complete.sum())}

    def agreement(self, queue_id: int) -> QueueAgreement:
        """Agreement of the queue's annotators on its overlapped items (:func:`compute_agreement`)."""
        queue = self.queue(queue_id)
        return compute_agreement(self.latest_decisions(queue_id), queue.kind, queue.overlap)

    def adjudications(self, queue_id: int) -> pd.DataFrame:
        """Every adjudication of the queue (history, oldest first): id, position, label, adjudicator,
        adjudicated_at, note."""
        return self._read("SELECT id, position, label, adjudicator, adjudicated_at, note FROM adjudications "
                          "WHERE queue_id = ? ORDER BY id", [int(queue_id)])

    def current_adjudications(self, queue_id: int) -> pd.DataFrame:
        """The adjudication that counts (the latest) of each adjudicated item."""
        return self.adjudications(queue_id).drop_duplicates("position", keep="last").reset_index(drop=True)

    def item_labels(self, queue_id: int) -> pd.DataFrame:
        """Each queue item's label under :data:`QUEUE_LABEL_RULE` (:func:`resolve_item_labels`) with its item
        columns and stratum, in queue order; ties included (label NA, basis :data:`TIE`)."""
        resolved = resolve_item_labels(self.latest_decisions(queue_id), self.assignments(queue_id),
                                       self.current_adjudications(queue_id))
        return self.items(queue_id).merge(resolved, on="position", how="inner").reset_index(drop=True)

    def disagreements(self, queue_id: int) -> pd.DataFrame:
        """The items whose annotators decided differently (among 1, 0 and unsure; skipped counts as no decision),
        one row per (item, annotator): position, item columns, stratum, annotator, decision, label, note,
        labelled_at, and the item's current adjudication (adjudicated_label, adjudicated_by, adjudicated_at,
        adjudication_note; empty when none)."""
        latest = self.latest_decisions(queue_id)
        decided = latest[latest["status"].isin([LABELLED, UNSURE])]
        decided = decided.assign(decision=[decision_of(s, v) for s, v in zip(decided["status"], decided["label"])])
        differing = decided.groupby("position")["decision"].transform("nunique") > 1
        rows = decided[differing]
        adjudicated = self.current_adjudications(queue_id).rename(columns={
            "label": "adjudicated_label", "adjudicator": "adjudicated_by", "note": "adjudication_note"})
        rows = rows.merge(adjudicated[["position", "adjudicated_label", "adjudicated_by", "adjudicated_at",
                                       "adjudication_note"]], on="position", how="left")
        rows = rows.assign(adjudicated_label=rows["adjudicated_label"].astype("Int64"))
        kind = self.queue(queue_id).kind
        return rows[["position", *ITEM_COLUMNS[kind], "stratum", "annotator", "decision", "label", "note",
                     "labelled_at", "adjudicated_label", "adjudicated_by", "adjudicated_at", "adjudication_note"]
                    ].sort_values(["position", "annotator"]).reset_index(drop=True)

    def sampling_design(self, queue_id: int) -> SamplingDesign:
        """The queue's draw as a :class:`~rageval.stats.design.SamplingDesign`: uniform (one stratum) or stratified
        (stratified and disagreement plans), each stratum's population and items drawn, each item's stratum (item
        key: the tuple of its item columns)."""
        queue = self.queue(queue_id)
        strata = self.strata(queue_id)
        items = self.items(queue_id)
        columns = list(ITEM_COLUMNS[queue.kind])
        keys = [tuple(_plain(v) for v in key) for key in zip(*(items[c] for c in columns))]
        return SamplingDesign(
            plan=UNIFORM if queue.plan.plan == UNIFORM_PLAN else STRATIFIED,
            strata=tuple(Stratum(str(s), int(p), int(n)) for s, p, n in
                         zip(strata["stratum"], strata["population"], strata["sampled"])),
            item_strata=dict(zip(keys, items["stratum"])), source=queue.source)

    def export_frame(self, queue_id: int) -> pd.DataFrame:
        """One row per (item, annotator) decision that counts (:data:`EXPORT_COLUMNS`): the queue, its plan (the
        queue's plan and the design's: uniform or stratified) and seed, the item, its stratum with the stratum's
        population and items drawn and the inclusion weight (population / sampled), the annotator's id, decision,
        note and time, and the item's adjudicated label (empty when none)."""
        queue = self.queue(queue_id)
        latest = self.latest_decisions(queue_id)
        strata = self.strata(queue_id).set_index("stratum")
        adjudicated = self.current_adjudications(queue_id).set_index("position")
        frame = latest.assign(
            queue=queue.id, queue_name=queue.name, run=queue.run, kind=queue.kind, plan=queue.plan.plan,
            design=UNIFORM if queue.plan.plan == UNIFORM_PLAN else STRATIFIED, seed=queue.plan.seed,
            stratum_population=latest["stratum"].map(strata["population"]),
            stratum_sampled=latest["stratum"].map(strata["sampled"]),
            adjudicated_label=latest["position"].map(adjudicated["label"]).astype("Int64"),
            adjudicated_by=latest["position"].map(adjudicated["adjudicator"]),
            adjudicated_at=latest["position"].map(adjudicated["adjudicated_at"]),
            adjudication_note=latest["position"].map(adjudicated["note"]))
        for column in ITEM_COLUMNS["passage"] + ITEM_COLUMNS["statement"]:
            if column not in frame.columns:
                frame[column] = None
        return frame[list(EXPORT_COLUMNS)].reset_index(drop=True)

    def export_csv(self, queue_id: int) -> str:
        """:meth:`export_frame` as CSV."""
        return self.export_frame(queue_id).to_csv(index=False, lineterminator="\n")


def queue_sampling_design(path: str | os.PathLike, queue_id: int) -> SamplingDesign:
    """The sampling design of queue ``queue_id`` of the annotation file ``path`` (:meth:`QueueStore.
    sampling_design`): what a weighted estimate from its labels needs."""
    return QueueStore(path).sampling_design(queue_id)


def _decision(label: int | str) -> tuple[str, int | None]:
    if isinstance(label, str):
        if label not in (UNSURE, SKIPPED):
            raise ValueError(f"label must be 1, 0, {UNSURE!r} or {SKIPPED!r}, got {label!r}")
        return label, None
    if label in (0, 1) and not isinstance(label, (bool, float)):
        return LABELLED, int(label)
    raise ValueError(f"label must be 1, 0, {UNSURE!r} or {SKIPPED!r}, got {label!r}")


def _stored(value):
    """A value as its column stores it (numpy scalars as Python ones)."""
    return value.item() if hasattr(value, "item") else value


def _plain(value):
    return int(value) if hasattr(value, "item") and not isinstance(value, str) else value


def _queue(row, annotators: tuple[str, ...]) -> Queue:
    settings = json.loads(row["settings"])
    plan = QueuePlan(plan=row["plan"], size=int(row["size"]), seed=int(row["seed"]),
                     stratify_by=str(settings.get("stratify_by", "")),
                     allocation=str(settings.get("allocation", PROPORTIONAL)),
                     oversample=float(settings.get("oversample", DEFAULT_OVERSAMPLE)))
    return Queue(int(row["id"]), str(row["name"]), str(row["run"]), str(row["kind"]), plan, int(row["overlap"]),
                 int(row["population"]), str(row["guidelines"]), str(row["created_by"]), str(row["created_at"]),
                 annotators)
