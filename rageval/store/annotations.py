"""The annotation file's SQLite (default ``annotations.sqlite`` in the runs folder; SQLite ``application_id``
:data:`rageval.store.ANNOTATIONS`, "RAGN", so it is never listed as a run): :class:`AnnotationFile` writes and reads
its labels, guidelines and shared samples; :mod:`rageval.store.queues` keeps the annotation queues in the same file.
What the labels mean, how a sample is drawn and which label counts: :mod:`rageval.annotations`.

Each row of ``labels`` is one act of labelling: the run's name, the item (a passage: query id + passage id; or a
statement: attribution scenario, query id, answer id and statement number), the decision (``status`` "labelled"
with ``label`` 1 useful / supported or 0 not; or "unsure" or "skipped", with no label), the annotator's name, the UTC
time and an optional note. Every label is committed the moment it is saved, so killing the app loses nothing;
labelling an item again adds a row (the history is kept) and the latest row of each (annotator, item) is the one
that counts.

Schema history: v1 stored labels 0/1 only and no samples; older files are still read (a v1 row is "labelled") and
are upgraded in place, in one transaction, on the first write. v2 adds ``status`` and the shared sample queues
(``samples``, ``sample_items``: a seeded random sample of a run's retrieved passages,
:func:`rageval.annotations.sample_passages`, that every annotator of the run works through). v3 adds the annotation
queues of :mod:`rageval.queues` (assigned, overlapping work; a queue's labels are rows of ``labels`` linked to the
queue) and puts the file in WAL mode, so that many annotators label at once: readers never wait, and each write is
one short transaction. v4 adds the run's annotation guideline (``guidelines``: its history, the latest of a run and
kind counts; a default per task type, :data:`rageval.annotations.DEFAULT_GUIDELINES`, until one is set) and keeps
with each label the guideline it was given under (``labels.guideline``: the run's, else the default the caller
showed; a queue's label, the queue's own).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import pandas as pd

from rageval.store.files import (
    check_shape,
    open_for_write,
    open_readonly,
    reading,
    schema_shape,
    stamp,
    write_sqlite_atomically,
)
from rageval.store.schemas import ANNOTATIONS, ANNOTATIONS_SCHEMA, ANNOTATIONS_SCHEMAS, upgrade_annotation_file

SCHEMA_VERSION = ANNOTATIONS.version
#: How long a write waits for the writers before it (seconds): far more than a queue of 50 short transactions takes.
BUSY_TIMEOUT_S = 30.0
KINDS = ("passage", "statement")
#: The columns that identify an item of each kind (within a run).
ITEM_COLUMNS = {"passage": ("query_id", "passage_id"),
                "statement": ("scenario", "query_id", "answer_id", "statement")}
#: Every column of a label row, in table order (what :meth:`AnnotationFile.labels` and the CSV export hold).
LABEL_COLUMNS = ("id", "run", "kind", "query_id", "passage_id", "scenario", "answer_id", "statement", "label",
                 "status", "annotator", "labelled_at", "note", "guideline")
#: A decision's status: a 0/1 label, or none (unsure; skipped). Only "labelled" rows enter kappa and qrels.
LABELLED, UNSURE, SKIPPED = "labelled", "unsure", "skipped"
STATUSES = (LABELLED, UNSURE, SKIPPED)

_SHAPES = {version: schema_shape(schema) for version, schema in ANNOTATIONS_SCHEMAS.items()}


@dataclass(frozen=True)
class PassageItem:
    """A retrieved passage of a query: labelled useful (1) or not (0) for answering it."""

    query_id: str
    passage_id: str
    kind: ClassVar[str] = "passage"


@dataclass(frozen=True)
class StatementItem:
    """One statement of an attributed answer: labelled supported (1) or not (0) by the passages it cites."""

    scenario: str
    query_id: str
    answer_id: str
    statement: int
    kind: ClassVar[str] = "statement"


#: The guideline a new label row is stored with: the run's latest (``?`` run, kind), else the caller's default.
_GUIDELINE_SQL = ("COALESCE((SELECT text FROM guidelines WHERE run = ? AND kind = ? ORDER BY id DESC LIMIT 1), ?)")


def normalise_annotator(name: str) -> str:
    """The annotator's name as stored: surrounding blanks removed, inner runs of blanks made one space, and an email
    (a name with an ``@``) in lower case, as a signed-in person's identity is (:mod:`rageval.team.config`), so a
    queue made from the command line with ``Ann@Example.org`` is the queue that person sees."""
    name = " ".join(str(name).split())
    return name.lower() if "@" in name else name


class AnnotationFile:
    """The annotation file at ``path``: labels are appended and committed one by one (the domain's face, which also
    draws samples and falls back on the default guideline: :class:`rageval.annotations.AnnotationStore`).

    Each call opens its own short-lived connection, so one store can be used from any thread (Streamlit serves
    sessions from several) and by several processes at once (SQLite locks the file; writers wait up to 30 s).
    The file is created on the first save, fully formed (schema and ``application_id``) before it appears.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if self.path.exists() or self.path.is_symlink():  # a dangling link is an error, not "no labels yet"
            self._check()

    def _check(self) -> None:
        """StoreError unless the file is an annotation file this rageval reads, its tables of the shape its version's
        writer wrote (v1 or v2)."""
        connection = open_readonly(self.path, ANNOTATIONS, shared=True)
        try:
            version = int(connection.execute("PRAGMA user_version").fetchone()[0])
            shape = _SHAPES[version]
            check_shape(connection, self.path, ANNOTATIONS, shape, ("meta", "labels"))
        finally:
            connection.close()

    def version(self) -> int:
        """The file's schema version (:data:`SCHEMA_VERSION` for a file not created yet)."""
        if not self.path.exists():
            return SCHEMA_VERSION
        with self._connect() as connection:
            return int(connection.execute("PRAGMA user_version").fetchone()[0])

    def _create(self) -> None:
        """Build the empty file in a hidden sibling and link it into place (never over an existing file)."""
        def fill(connection: sqlite3.Connection) -> None:
            connection.execute("PRAGMA journal_mode = WAL")  # kept in the file's header: readers never wait
            stamp(connection, ANNOTATIONS)
            connection.executescript(ANNOTATIONS_SCHEMA)
            connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

        write_sqlite_atomically(self.path, fill, overwrite=False)
        self._check()

    @contextmanager
    def _connect(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection to the file, its kind checked (read-only unless ``write``; a write connection to an older file
        upgrades it first, and puts it in WAL mode); a failure while it is used is a StoreError naming the file.

        WAL mode: readers never wait for a writer and a writer never waits for readers; writers queue (each write is
        one short transaction, and a writer waits up to :data:`BUSY_TIMEOUT_S` for the one before it)."""
        connection = open_for_write(self.path, ANNOTATIONS, timeout_s=BUSY_TIMEOUT_S) if write else open_readonly(
            self.path, ANNOTATIONS, shared=True)
        try:
            with reading(self.path, ANNOTATIONS):
                if write:
                    if str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                        connection.execute("PRAGMA journal_mode = WAL")  # a file written before v3
                    upgrade_annotation_file(connection)
                yield connection
        finally:
            connection.close()

    @contextmanager
    def write_transaction(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction (``BEGIN IMMEDIATE``: it holds the write lock from its first statement, so
        what it reads cannot change before it writes), committed on leaving, rolled back on an error. Creates the
        file first if need be. For the modules that keep their tables in this file (:mod:`rageval.store.queues`)."""
        if not self.path.exists():
            self._create()
        with self._connect(write=True) as connection:
            connection.isolation_level = None
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

    @contextmanager
    def read_connection(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection to the file (which must exist), for the modules that keep tables in it."""
        with self._connect() as connection:
            yield connection

    def save_label(self, run: str, item: PassageItem | StatementItem, label: int | str, annotator: str,
                   note: str = "", labelled_at: datetime | None = None, guideline: str = "") -> int:
        """Append one decision and commit it; return its row id (ids grow, so the highest id is the latest).

        ``label`` is 1 (useful / supported), 0 (not), or :data:`UNSURE` / :data:`SKIPPED` (stored with that status
        and no label); ``annotator`` must name someone; ``labelled_at`` defaults to now, stored as ISO 8601 UTC.
        The row keeps the guideline it was given under: the run's (:meth:`set_guideline`), else ``guideline`` (the
        default the caller showed).
        """
        annotator = normalise_annotator(annotator)
        if not annotator:
            raise ValueError("an annotator name is required to save a label")
        if isinstance(label, str):
            if label not in (UNSURE, SKIPPED):
                raise ValueError(f"label must be 1 (useful / supported), 0 (not), {UNSURE!r} or {SKIPPED!r}, "
                                 f"got {label!r}")
            status, value = label, None
        elif label in (0, 1) and not isinstance(label, float):
            status, value = LABELLED, int(label)
        else:
            raise ValueError(f"label must be 1 (useful / supported), 0 (not), {UNSURE!r} or {SKIPPED!r}, "
                             f"got {label!r}")
        if not run:
            raise ValueError("the run's name is required to save a label")
        moment = (labelled_at or datetime.now(UTC)).astimezone(UTC)
        values: tuple[str, str, str, str, int | None]
        if isinstance(item, PassageItem):
            values = (item.query_id, item.passage_id, "", "", None)
        elif isinstance(item, StatementItem):
            values = (item.query_id, "", item.scenario, item.answer_id, int(item.statement))
        else:
            raise TypeError(f"expected a PassageItem or a StatementItem, got {type(item).__name__}")
        if not self.path.exists():
            self._create()
        with self._connect(write=True) as connection:
            cursor = connection.execute(
                "INSERT INTO labels (run, kind, query_id, passage_id, scenario, answer_id, statement, label, status, "
                "annotator, labelled_at, note, guideline) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {_GUIDELINE_SQL})",
                (run, item.kind, *values, value, status, annotator, moment.isoformat(timespec="microseconds"),
                 note or "", run, item.kind, guideline or ""))
            connection.commit()
            assert cursor.lastrowid is not None  # an INSERT sets it
            return int(cursor.lastrowid)

    def save_passage_labels(self, run: str, rows: Sequence[tuple[str, str, int, str]], note: str = "",
                            labelled_at: datetime | None = None, guideline: str = "") -> int:
        """Append many passage labels ``(query_id, passage_id, label 0/1, annotator)`` in one transaction (all of
        them or, on any error, none), each an ordinary row as :meth:`save_label` writes it; return how many."""
        if not run:
            raise ValueError("the run's name is required to save a label")
        moment = (labelled_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")
        values = []
        for query_id, passage_id, label, annotator in rows:
            name = normalise_annotator(annotator)
            if not name:
                raise ValueError("an annotator name is required to save a label")
            if label not in (0, 1) or isinstance(label, float):
                raise ValueError(f"label must be 1 (useful) or 0 (not), got {label!r}")
            values.append((run, "passage", str(query_id), str(passage_id), "", "", None, int(label), LABELLED, name,
                           moment, note or "", run, "passage", guideline or ""))
        if not values:
            return 0
        if not self.path.exists():
            self._create()
        with self._connect(write=True) as connection:
            connection.executemany(
                "INSERT INTO labels (run, kind, query_id, passage_id, scenario, answer_id, statement, label, status, "
                "annotator, labelled_at, note, guideline) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {_GUIDELINE_SQL})",
                values)
            connection.commit()
        return len(values)

    def labels(self, run: str | None = None, kind: str | None = None) -> pd.DataFrame:
        """Every label row (the full history), oldest first; optionally of one run and one kind. An absent file
        reads as no labels; a v1 file's rows read as "labelled"."""
        if not self.path.exists():
            return empty_labels()
        conditions, params = [], []
        for column, value in (("run", run), ("kind", kind)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        with self._connect() as connection:
            version = int(connection.execute("PRAGMA user_version").fetchone()[0])
            columns = ", ".join(f"'{LABELLED}' AS status" if version < 2 and c == "status" else
                                "'' AS guideline" if version < 4 and c == "guideline" else c for c in LABEL_COLUMNS)
            frame = pd.read_sql_query(f"SELECT {columns} FROM labels{where} ORDER BY id", connection, params=params)
            return _typed(frame)

    def set_guideline(self, run: str, kind: str, text: str, set_by: str, set_at: datetime | None = None) -> int:
        """Make ``text`` the guideline of ``run``'s ``kind`` items (a new row: the history is kept); labels given
        from now on are stored with it. Returns its id."""
        text, set_by = str(text or "").strip(), normalise_annotator(set_by)
        if kind not in KINDS:
            raise ValueError(f"unknown item kind {kind!r}; expected one of {', '.join(KINDS)}")
        if not text:
            raise ValueError("a guideline needs some text")
        if not set_by:
            raise ValueError("who sets the guideline is required")
        moment = (set_at or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
        with self.write_transaction() as connection:
            cursor = connection.execute(
                "INSERT INTO guidelines (run, kind, text, set_by, set_at) VALUES (?, ?, ?, ?, ?)",
                (run, kind, text, set_by, moment))
            return int(cursor.lastrowid or 0)

    def latest_guideline(self, run: str, kind: str) -> str | None:
        """The latest guideline set for ``run``'s ``kind`` items, None when none was set (or the file has none)."""
        if self.path.exists():
            with self._connect() as connection:
                if int(connection.execute("PRAGMA user_version").fetchone()[0]) >= 4:
                    row = connection.execute("SELECT text FROM guidelines WHERE run = ? AND kind = ? ORDER BY id DESC "
                                             "LIMIT 1", (run, kind)).fetchone()
                    if row is not None:
                        return str(row[0])
        return None

    def revision(self) -> int:
        """The id of the newest label (0 when there is none): changes with every save, a cache key."""
        if not self.path.exists():
            return 0
        with self._connect() as connection:
            return int(connection.execute("SELECT COALESCE(MAX(id), 0) FROM labels").fetchone()[0])

    def save_sample(self, run: str, items: pd.DataFrame, seed: int, population: int, created_by: str,
                    created_at: datetime | None = None) -> int:
        """Store a drawn sample (``items``: position, query_id, passage_id; drawn with ``seed`` from ``population``
        retrieved passages, by :meth:`rageval.annotations.AnnotationStore.create_sample`) as the run's newest; return
        its id."""
        moment = (created_at or datetime.now(UTC)).astimezone(UTC)
        if not self.path.exists():
            self._create()
        with self._connect(write=True) as connection:
            cursor = connection.execute(
                "INSERT INTO samples (run, kind, size, seed, population, created_by, created_at) "
                "VALUES (?, 'passage', ?, ?, ?, ?, ?)",
                (run, len(items), int(seed), population, created_by, moment.isoformat(timespec="seconds")))
            sample_id = int(cursor.lastrowid or 0)
            connection.executemany("INSERT INTO sample_items VALUES (?, ?, ?, ?)", [
                (sample_id, int(p), str(q), str(d))
                for p, q, d in zip(items["position"], items["query_id"], items["passage_id"])])
            connection.commit()
            return sample_id

    def latest_sample(self, run: str, kind: str = "passage") -> Sample | None:
        """The run's newest sample (every annotator works through it), None if none was drawn."""
        if not self.path.exists():
            return None
        with self._connect() as connection:
            if int(connection.execute("PRAGMA user_version").fetchone()[0]) < 2:
                return None
            row = connection.execute(
                "SELECT id, size, seed, population, created_by, created_at FROM samples WHERE run = ? AND kind = ? "
                "ORDER BY id DESC LIMIT 1", (run, kind)).fetchone()
            if row is None:
                return None
            items = pd.read_sql_query("SELECT position, query_id, passage_id FROM sample_items WHERE sample_id = ? "
                                      "ORDER BY position", connection, params=(row[0],))
            return Sample(int(row[0]), run, kind, int(row[1]), int(row[2]), int(row[3]), str(row[4]), str(row[5]),
                          items.astype({"position": "int64", "query_id": "object", "passage_id": "object"}))


@dataclass(frozen=True)
class Sample:
    """A run's shared sample queue: ``size`` items drawn with ``seed`` from ``population`` retrieved passages by
    :func:`rageval.annotations.sample_passages`; ``items``: position, query_id, passage_id in the order they are
    labelled."""

    id: int
    run: str
    kind: str
    size: int
    seed: int
    population: int
    created_by: str
    created_at: str
    items: pd.DataFrame


def empty_labels() -> pd.DataFrame:
    return _typed(pd.DataFrame({column: [] for column in LABEL_COLUMNS}))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    text = ["run", "kind", "query_id", "passage_id", "scenario", "answer_id", "status", "annotator", "labelled_at",
            "note", "guideline"]
    return frame.astype({"id": "int64", "label": "Int64", "statement": "Int64", **dict.fromkeys(text, "object")})
