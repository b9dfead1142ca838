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

Storage: tables of the annotation file (:mod:`rageval.store.queues`, schema v3), kept by
:class:`rageval.store.queues.QueueTables`: a queue label is an ordinary row of ``labels`` plus its link to the queue
item, written in one transaction; adjudications are kept apart and no annotator's label is ever changed.
:class:`QueueStore` is those tables plus the domain: it draws and assigns a queue (:meth:`QueueStore.create_queue`)
and reads its progress, agreement, disagreements, item labels, design and export.

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
from datetime import datetime
from typing import TYPE_CHECKING

from rageval.agreement import agreement_between_annotators, fleiss_kappa, krippendorff_alpha
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
from rageval.store.annotations import ITEM_COLUMNS, LABELLED, SKIPPED, UNSURE, normalise_annotator
from rageval.store.queues import QueueTables

if TYPE_CHECKING:
    import pandas as pd

#: A decision not taken yet (beside :data:`rageval.store.annotations.STATUSES`).
PENDING = "pending"
#: The columns of :meth:`QueueStore.export_csv`, in order.
EXPORT_COLUMNS = ("queue", "queue_name", "run", "kind", "plan", "design", "seed", "position", "query_id",
                  "passage_id", "scenario", "answer_id", "statement", "stratum", "stratum_population",
                  "stratum_sampled", "inclusion_weight", "annotator", "status", "label", "note", "labelled_at",
                  "adjudicated_label", "adjudicated_by", "adjudicated_at", "adjudication_note")


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

class QueueStore(QueueTables):
    """The annotation queues kept in the annotation file at ``path`` (:class:`~rageval.store.queues.QueueTables`:
    every write is one short transaction; any number of processes may use the file at once), drawn, assigned and
    read here."""

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
        return self.save_queue(name, run, kind, plan.plan, plan.settings(), plan.seed, overlap,
                               len(canonical_items(population, kind)), guidelines, created_by, items, strata, people,
                               created_at)

    # reading --------------------------------------------------------------------------------------------------
    def queues(self, run: str | None = None) -> list[Queue]:
        """Every queue (of one run), oldest first."""
        return [_queue(row, people) for row, people in self.queue_rows(run)]

    def queue(self, queue_id: int) -> Queue:
        found = [q for q in self.queues() if q.id == int(queue_id)]
        if not found:
            raise ValueError(f"{self.path}: no queue {queue_id}")
        return found[0]

    def queues_of(self, annotator: str, run: str | None = None) -> list[Queue]:
        """The queues with items assigned to ``annotator`` (of one run), oldest first."""
        name = normalise_annotator(annotator)
        return [q for q in self.queues(run) if name in q.annotators]

    def items(self, queue_id: int) -> pd.DataFrame:
        """position, item columns, stratum and inclusion weight of a queue's items, in labelling order."""
        frame = self.item_rows(queue_id, self.queue(queue_id).kind)
        weights = self.strata(queue_id).set_index("stratum")["weight"]
        return frame.assign(inclusion_weight=frame["stratum"].map(weights).astype(float))

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
