"""Human labels: a person says whether a retrieved passage is useful for the question, or whether a statement of an
attributed answer is supported by the passages it cites, and how far those labels agree with the automatic ones.

The labels live in one SQLite file (default ``annotations.sqlite`` in the runs folder; SQLite ``application_id``
:data:`rageval.store.ANNOTATIONS`, "RAGN", so it is never listed as a run). Each row is one act of labelling:
the run's name, the item (a passage: query id + passage id; or a statement: attribution scenario, query id, answer
id and statement number), the decision (``status`` "labelled" with ``label`` 1 useful / supported or 0 not; or
"unsure" or "skipped", with no label), the annotator's name, the UTC time and an optional note. Every label is
committed the moment it is saved, so killing the app loses nothing; labelling an item again adds a row (the history
is kept) and the latest row of each (annotator, item) is the one that counts.

Schema history: v1 stored labels 0/1 only and no samples; older files are still read (a v1 row is "labelled") and
are upgraded in place, in one transaction, on the first write. v2 adds ``status`` and the shared sample queues
(``samples``, ``sample_items``: a seeded random sample of a run's retrieved passages, :func:`sample_passages`, that
every annotator of the run works through). v3 adds the annotation queues of :mod:`rageval.queues` (assigned,
overlapping work; a queue's labels are rows of ``labels`` linked to the queue) and puts the file in WAL mode, so
that many annotators label at once: readers never wait, and each write is one short transaction. v4 adds the
run's annotation guideline (``guidelines``: its history, the latest of a run and kind counts; a default per task
type, :data:`DEFAULT_GUIDELINES`, until one is set) and keeps with each label the guideline it was given under
(``labels.guideline``: the run's, else the default the caller showed; a queue's label, the queue's own).

Agreement is Cohen's kappa (:func:`cohen_kappa`) between one person's labels and each automatic label method of the
run (eRAG ``erag:*``, the LLM judges, ``contains_answer``, ``gold``; for statements the NLI verdicts of the
attribution run, :data:`STATEMENT_METHODS`), or between two annotators, over the items both labelled 0/1 ("unsure"
and "skipped" are left out); with more than two annotators, Fleiss' kappa (:func:`fleiss_kappa`) and Krippendorff's
alpha (:func:`krippendorff_alpha`) over all of them (:func:`multi_annotator_agreement`).

A statement that cites no passage is not judged, by the person or by the NLI methods: the question is "is it
supported by the passages it cites?", and the NLI verdicts stored for such a statement (0, AutoAIS' convention for
its answer-level mean) are left out of the statement labels (:func:`statement_method_labels`).

Exports: every row as CSV (:func:`labels_csv`), and passage labels as qrels rows (:func:`qrels_frame`: one
annotator's latest labels, or the majority across annotators) for :func:`rageval.trec.qrels_text`.
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
ANNOTATIONS_FILE = "annotations.sqlite"
KINDS = ("passage", "statement")
#: The columns that identify an item of each kind (within a run).
ITEM_COLUMNS = {"passage": ("query_id", "passage_id"),
                "statement": ("scenario", "query_id", "answer_id", "statement")}
#: Every column of a label row, in table order (what :meth:`AnnotationStore.labels` and the CSV export hold).
LABEL_COLUMNS = ("id", "run", "kind", "query_id", "passage_id", "scenario", "answer_id", "statement", "label",
                 "status", "annotator", "labelled_at", "note", "guideline")
#: The run's guideline when none is set (:meth:`AnnotationStore.guideline`), by item kind and the run's task type
#: (:func:`task_type`). Multi-hop questions need two passages: "this passage alone lets the model answer" makes
#: almost every comparison paragraph "not useful" (kappa with eRAG about 0.07 on HotpotQA, issue 41).
SINGLE_HOP, MULTI_HOP = "single-hop", "multi-hop"
DEFAULT_GUIDELINES = {
    ("passage", SINGLE_HOP): "Useful means: this passage alone lets someone answer the question correctly (it states "
                             "a gold answer or an equivalent one). On topic without the answer is not useful. Mark "
                             "unsure when you cannot tell, and say why in the note.",
    ("passage", MULTI_HOP): "Useful means: this passage states a fact the answer needs: the bridge to the entity asked "
                            "about, or one side of a comparison, even when another passage is needed too. A passage "
                            "that contributes no needed fact is not useful. Mark unsure when you cannot tell, and "
                            "say why in the note.",
    ("statement", SINGLE_HOP): "Supported means: the passages the statement cites, read together, state what it says.",
    ("statement", MULTI_HOP): "Supported means: the passages the statement cites, read together, state what it says.",
}
#: Datasets whose questions need several passages (HotpotQA, 2WikiMultiHopQA, MuSiQue).
MULTI_HOP_DATASETS = ("hotpotqa", "2wikimultihopqa", "musique")
#: A decision's status: a 0/1 label, or none (unsure; skipped). Only "labelled" rows enter kappa and qrels.
LABELLED, UNSURE, SKIPPED = "labelled", "unsure", "skipped"
STATUSES = (LABELLED, UNSURE, SKIPPED)
#: A graded automatic label (eRAG under token F1, ROUGE-L or BERTScore, in [0, 1]) counts as useful from here on;
#: 0/1 labels are unaffected.
USEFUL_THRESHOLD = 0.5
#: The automatic verdicts on a statement stored in an attribution run's ``statements`` table (its column -> the
#: method name used here): AutoAIS_cit (one cited passage entails it), ALCE citation recall (its cited passages
#: jointly entail it), and HAGRID's own annotators' sentence label.
STATEMENT_METHODS = {"supported": "nli:autoais", "alce_recall": "nli:alce", "human_attributable": "hagrid:human"}
#: The statement methods that judge a statement by the passages it cites: not judged on a statement citing none.
CITATION_METHODS = ("nli:autoais", "nli:alce")
DEFAULT_SAMPLE_SIZE = 50

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


def annotations_path(runs_folder: str | os.PathLike) -> Path:
    """The default annotation file of a runs folder: ``<folder>/annotations.sqlite``."""
    return Path(runs_folder) / ANNOTATIONS_FILE


#: Names the annotation file instead of the runs folder's (the dashboard and the commands read it).
ANNOTATIONS_ENV = "RAGEVAL_ANNOTATIONS"


def default_annotations_file() -> Path:
    """The annotation file the dashboard and ``rageval annotations`` / ``rageval trust`` use:
    ``$RAGEVAL_ANNOTATIONS``, else ``annotations.sqlite`` in the user's runs folder."""
    from rageval.paths import user_runs_dir

    explicit = os.environ.get(ANNOTATIONS_ENV)
    return Path(explicit) if explicit else annotations_path(user_runs_dir())


def task_type(settings: dict) -> str:
    """:data:`MULTI_HOP` for a run over a multi-hop dataset (its ``dataset`` setting), else :data:`SINGLE_HOP`."""
    dataset = str(settings.get("dataset") or "").lower()
    return MULTI_HOP if any(name in dataset for name in MULTI_HOP_DATASETS) else SINGLE_HOP


def default_guideline(kind: str, task: str = SINGLE_HOP) -> str:
    """The guideline of ``kind`` items for a run of ``task`` type when its team set none."""
    return DEFAULT_GUIDELINES[(kind, task if task in (SINGLE_HOP, MULTI_HOP) else SINGLE_HOP)]


#: The guideline a new label row is stored with: the run's latest (``?`` run, kind), else the caller's default.
_GUIDELINE_SQL = ("COALESCE((SELECT text FROM guidelines WHERE run = ? AND kind = ? ORDER BY id DESC LIMIT 1), ?)")


def normalise_annotator(name: str) -> str:
    """The annotator's name as stored: surrounding blanks removed, inner runs of blanks made one space, and an email
    (a name with an ``@``) in lower case, as a signed-in person's identity is (:mod:`rageval.team.config`), so a
    queue made from the command line with ``Ann@Example.org`` is the queue that person sees."""
    name = " ".join(str(name).split())
    return name.lower() if "@" in name else name


class AnnotationStore:
    """The annotation file at ``path``: labels are appended and committed one by one.

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
        file first if need be. For the modules that keep their tables in this file (:mod:`rageval.queues`)."""
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

    def guideline(self, run: str, kind: str, task: str = SINGLE_HOP) -> str:
        """The guideline of ``run``'s ``kind`` items: the latest one set, else the default for its ``task`` type
        (:func:`default_guideline`)."""
        if self.path.exists():
            with self._connect() as connection:
                if int(connection.execute("PRAGMA user_version").fetchone()[0]) >= 4:
                    row = connection.execute("SELECT text FROM guidelines WHERE run = ? AND kind = ? ORDER BY id DESC "
                                             "LIMIT 1", (run, kind)).fetchone()
                    if row is not None:
                        return str(row[0])
        return default_guideline(kind, task)

    def revision(self) -> int:
        """The id of the newest label (0 when there is none): changes with every save, a cache key."""
        if not self.path.exists():
            return 0
        with self._connect() as connection:
            return int(connection.execute("SELECT COALESCE(MAX(id), 0) FROM labels").fetchone()[0])

    def create_sample(self, run: str, population: pd.DataFrame, size: int, seed: int, created_by: str,
                      created_at: datetime | None = None) -> int:
        """Draw :func:`sample_passages` of ``population`` (a run's retrieved passages: query_id, passage_id, rank,
        in run order) and store it as the run's newest sample; return its id."""
        created_by = normalise_annotator(created_by)
        if not created_by:
            raise ValueError("an annotator name is required to draw a sample")
        if not run:
            raise ValueError("the run's name is required to draw a sample")
        items = sample_passages(population, size, seed)
        moment = (created_at or datetime.now(UTC)).astimezone(UTC)
        if not self.path.exists():
            self._create()
        with self._connect(write=True) as connection:
            cursor = connection.execute(
                "INSERT INTO samples (run, kind, size, seed, population, created_by, created_at) "
                "VALUES (?, 'passage', ?, ?, ?, ?, ?)",
                (run, len(items), int(seed), len(population), created_by, moment.isoformat(timespec="seconds")))
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
    :func:`sample_passages`; ``items``: position, query_id, passage_id in the order they are labelled."""

    id: int
    run: str
    kind: str
    size: int
    seed: int
    population: int
    created_by: str
    created_at: str
    items: pd.DataFrame


def sample_passages(population: pd.DataFrame, size: int, seed: int) -> pd.DataFrame:
    """A seeded random sample of ``size`` retrieved passages (all of them if fewer) of ``population`` (query_id,
    passage_id, rank; one row per retrieved passage, any order), as position, query_id, passage_id.

    The rows are put in a canonical order (query id, rank, passage id) and permuted by
    ``numpy.random.default_rng(seed)``; the first ``size`` are the sample, so the same population and seed give the
    same sample and a larger size a superset. They are listed query by query (queries in the order the permutation
    first reached them, passages by rank), so an annotator finishes a query's items together.
    """
    import numpy as np

    if size < 1:
        raise ValueError(f"a sample needs at least 1 item, got {size}")
    canonical = (population[["query_id", "passage_id", "rank"]].drop_duplicates(["query_id", "passage_id"])
                 .sort_values(["query_id", "rank", "passage_id"], kind="stable").reset_index(drop=True))
    order = np.random.default_rng(int(seed)).permutation(len(canonical))[:size]
    chosen = canonical.iloc[order].reset_index(drop=True)
    first_reached = {q: i for i, q in reversed(list(enumerate(chosen["query_id"])))}
    chosen = chosen.assign(_query_order=chosen["query_id"].map(first_reached))
    chosen = chosen.sort_values(["_query_order", "rank", "passage_id"], kind="stable").reset_index(drop=True)
    return pd.DataFrame({"position": range(len(chosen)), "query_id": chosen["query_id"].astype(object),
                         "passage_id": chosen["passage_id"].astype(object)})


def sample_status(sample: pd.DataFrame, latest: pd.DataFrame) -> pd.DataFrame:
    """The sample's items (position, query_id, passage_id) with one annotator's current decision on each:
    ``status`` (:data:`STATUSES`, or "pending"), ``label`` (Int64, missing unless labelled) and ``note``."""
    mine = latest.loc[latest["kind"] == "passage", ["query_id", "passage_id", "label", "status", "note"]]
    merged = sample.merge(mine, on=["query_id", "passage_id"], how="left")
    return merged.assign(status=merged["status"].fillna("pending"), note=merged["note"].fillna(""),
                         label=merged["label"].astype("Int64")).sort_values("position").reset_index(drop=True)


def empty_labels() -> pd.DataFrame:
    return _typed(pd.DataFrame({column: [] for column in LABEL_COLUMNS}))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    text = ["run", "kind", "query_id", "passage_id", "scenario", "answer_id", "status", "annotator", "labelled_at",
            "note", "guideline"]
    return frame.astype({"id": "int64", "label": "Int64", "statement": "Int64", **dict.fromkeys(text, "object")})


def labelled_only(latest: pd.DataFrame) -> pd.DataFrame:
    """The rows with a 0/1 label (status "labelled"), ``label`` as int64: what kappa and qrels count."""
    rows = latest[latest["status"] == LABELLED]
    return rows.assign(label=rows["label"].astype("int64"))


# --- the labels that count ---------------------------------------------------------------------------------

def latest_labels(history: pd.DataFrame, kind: str, annotator: str | None = None) -> pd.DataFrame:
    """The label that counts for each (run, annotator, item) of ``kind``: the latest (highest id) row, with
    ``times_labelled``, how many rows the annotator saved for it. Optionally of one annotator."""
    columns = ["run", "annotator", *ITEM_COLUMNS[kind]]
    rows = history[history["kind"] == kind]
    if annotator is not None:
        rows = rows[rows["annotator"] == normalise_annotator(annotator)]
    rows = rows.sort_values("id")
    counts = rows.groupby(columns, sort=False).size().rename("times_labelled").reset_index()
    latest = rows.drop_duplicates(subset=columns, keep="last")
    return latest.merge(counts, on=columns, how="left").sort_values("id").reset_index(drop=True)


# --- agreement (the rest: rageval/agreement.py) ---------------------------------------------------------

def _with_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``frame`` that hold a 0/1 label (all of them when it has no ``status`` column)."""
    return labelled_only(frame) if "status" in frame.columns else frame


# --- export -----------------------------------------------------------------------------------------------

def labels_csv(history: pd.DataFrame) -> str:
    """Every label row as CSV, all columns of :data:`LABEL_COLUMNS` plus ``current`` (1 for the row that counts
    for its annotator and item, 0 for a label later replaced), oldest first."""
    history = history.sort_values("id")
    current = pd.Series(0, index=history.index)
    for kind in KINDS:
        rows = history[history["kind"] == kind]
        keep = rows.drop_duplicates(subset=["run", "annotator", *ITEM_COLUMNS[kind]], keep="last").index
        current[keep] = 1
    return history.assign(current=current).to_csv(index=False, lineterminator="\n")


def qrels_frame(latest: pd.DataFrame, annotator: str | None = None) -> pd.DataFrame:
    """Passage labels as qrels rows (query_id, passage_id, label), sorted by query and passage.

    With ``annotator``: that person's current label of each passage. Without: the majority across annotators of
    their current labels, a passage is useful (1) only when more than half of the annotators who labelled it
    said so; a tie counts as not useful (0), so a qrels 1 always has a majority behind it.
    """
    rows = _with_labels(latest[latest["kind"] == "passage"])
    if annotator is not None:
        rows = rows[rows["annotator"] == normalise_annotator(annotator)]
    if rows.empty:
        return pd.DataFrame({"query_id": [], "passage_id": [], "label": []}).astype({"label": "int64"})
    votes = rows.groupby(["query_id", "passage_id"])["label"].agg(["sum", "count"]).reset_index()
    label = (2 * votes["sum"] > votes["count"]).astype(int)
    return (pd.DataFrame({"query_id": votes["query_id"], "passage_id": votes["passage_id"], "label": label})
            .sort_values(["query_id", "passage_id"]).reset_index(drop=True))

