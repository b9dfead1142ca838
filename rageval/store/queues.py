"""The annotation queues' tables of the annotation file (:class:`rageval.store.annotations.AnnotationFile`,
schema v3: ``queues``, ``queue_strata``, ``queue_items``, ``queue_assignments``, ``queue_labels``,
``adjudications``): :class:`QueueTables` stores a queue already drawn and assigned, the labels given in it and the
adjudications, and reads them back as frames. How a queue is drawn, what its labels mean and how they agree:
:mod:`rageval.queue_plans` and :mod:`rageval.queues`.

A label given in a queue is an ordinary row of ``labels`` (so the Annotate page's agreement views count it) plus a
``queue_labels`` row linking it to its queue item, both written in one short transaction. Adjudicated labels are
rows of ``adjudications`` (who, when, a note); no annotator's label is ever changed. Relabelling appends a row; the
latest row of each (annotator, item) counts, as everywhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rageval.store.annotations import ITEM_COLUMNS, LABELLED, SKIPPED, UNSURE, AnnotationFile, normalise_annotator

if TYPE_CHECKING:
    import pandas as pd

#: The guideline a queue label is stored with: the queue's own, else its run's latest (``?``: the queue id).
QUEUE_GUIDELINE_SQL = (
    "(SELECT COALESCE(NULLIF(q.guidelines, ''), (SELECT g.text FROM guidelines g WHERE g.run = q.run AND "
    "g.kind = q.kind ORDER BY g.id DESC LIMIT 1), '') FROM queues q WHERE q.id = ?)")


class QueueTables:
    """The annotation queues kept in the annotation file at ``path`` (:class:`AnnotationFile`: every write is one
    short transaction; any number of processes may use the file at once). The domain's face, which draws queues and
    reads their progress, agreement and labels: :class:`rageval.queues.QueueStore`."""

    def __init__(self, path: str | os.PathLike):
        self.annotations = AnnotationFile(path)
        self.path = self.annotations.path

    def _has_queues(self) -> bool:
        return self.path.exists() and self.annotations.version() >= 3

    # writing --------------------------------------------------------------------------------------------------
    def save_queue(self, name: str, run: str, kind: str, plan: str, settings: dict, seed: int, overlap: int,
                   population: int, guidelines: str, created_by: str, items: pd.DataFrame,
                   strata: dict[str, tuple[int, int]], assignments: Sequence[Sequence[str]],
                   created_at: datetime | None = None) -> int:
        """Store a queue drawn by ``plan`` (its ``settings``, ``seed``) from ``population`` items of ``run`` in one
        transaction; return its id. ``items``: position, item columns of ``kind``, stratum (the labelling order);
        ``strata``: each stratum's (population, sampled); ``assignments``: the annotators of each item, by position
        (:meth:`rageval.queues.QueueStore.create_queue` draws them and checks the names)."""
        moment = (created_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
        columns = list(ITEM_COLUMNS[kind])
        with self.annotations.write_transaction() as connection:
            cursor = connection.execute(
                "INSERT INTO queues (name, run, kind, plan, settings, size, overlap, seed, population, guidelines, "
                "created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, run, kind, plan, json.dumps(settings, sort_keys=True), len(items), int(overlap), int(seed),
                 population, str(guidelines or ""), created_by, moment))
            queue_id = int(cursor.lastrowid or 0)
            connection.executemany("INSERT INTO queue_strata VALUES (?, ?, ?, ?)",
                                   [(queue_id, s, p, n) for s, (p, n) in strata.items()])
            connection.executemany(
                f"INSERT INTO queue_items (queue_id, position, {', '.join(columns)}, stratum) "
                f"VALUES (?, ?, {', '.join('?' for _ in columns)}, ?)",
                [(queue_id, int(row.position), *(_stored(getattr(row, c)) for c in columns), row.stratum)
                 for row in items.itertuples()])
            connection.executemany("INSERT INTO queue_assignments VALUES (?, ?, ?)",
                                   [(queue_id, position, person) for position, chosen in enumerate(assignments)
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

    def queue_rows(self, run: str | None = None) -> list[tuple[pd.Series, tuple[str, ...]]]:
        """Every queue's row (of one run), oldest first, each with its annotators (sorted); none without queues."""
        if not self._has_queues():
            return []
        where, params = (" WHERE run = ?", [run]) if run is not None else ("", [])
        rows = self._read(f"SELECT * FROM queues{where} ORDER BY id", params)
        people = self._read("SELECT DISTINCT queue_id, annotator FROM queue_assignments ORDER BY annotator")
        return [(row, tuple(people.loc[people["queue_id"] == row["id"], "annotator"])) for _, row in rows.iterrows()]

    def changes(self) -> int:
        """A count that changes with every queue created and every adjudication (the dashboard's cache key beside
        the newest label id); 0 without queues."""
        if not self.queue_rows():
            return 0
        with self.annotations.read_connection() as connection:
            return int(connection.execute("SELECT (SELECT COALESCE(MAX(id), 0) FROM queues) * 1000003 + "
                                          "(SELECT COALESCE(MAX(id), 0) FROM adjudications)").fetchone()[0])

    def strata(self, queue_id: int) -> pd.DataFrame:
        """stratum, population, sampled, weight (population / sampled) of a queue, by name."""
        frame = self._read("SELECT stratum, population, sampled FROM queue_strata WHERE queue_id = ? ORDER BY stratum",
                           [int(queue_id)])
        return frame.assign(weight=frame["population"] / frame["sampled"])

    def item_rows(self, queue_id: int, kind: str) -> pd.DataFrame:
        """position, item columns of ``kind`` and stratum of a queue's items, in labelling order."""
        columns = list(ITEM_COLUMNS[kind])
        return self._read(f"SELECT position, {', '.join(columns)}, stratum FROM queue_items WHERE queue_id = ? "
                          "ORDER BY position", [int(queue_id)])

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

    def adjudications(self, queue_id: int) -> pd.DataFrame:
        """Every adjudication of the queue (history, oldest first): id, position, label, adjudicator,
        adjudicated_at, note."""
        return self._read("SELECT id, position, label, adjudicator, adjudicated_at, note FROM adjudications "
                          "WHERE queue_id = ? ORDER BY id", [int(queue_id)])


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
