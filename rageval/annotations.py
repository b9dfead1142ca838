"""Human labels: a person says whether a retrieved passage is useful for the question, or whether a statement of an
attributed answer is supported by the passages it cites, and how far those labels agree with the automatic ones.

The labels live in one SQLite file (default ``annotations.sqlite`` in the runs folder; SQLite ``application_id``
:data:`rageval.store.ANNOTATIONS`, "RAGN", so it is never listed as a run). Each row is one act of labelling:
the run's name, the item (a passage: query id + passage id; or a statement: attribution scenario, query id, answer
id and statement number), the label (1 useful / supported, 0 not), the annotator's name, the UTC time and an
optional note. Every label is committed the moment it is saved, so killing the app loses nothing; labelling an item
again adds a row (the history is kept) and the latest row of each (annotator, item) is the one that counts.

Agreement is Cohen's kappa (:func:`cohen_kappa`) between one person's labels and each automatic label method of the
run (eRAG ``erag:*``, ``llm_relevance``, ``contains_answer``, ``gold``; for statements the NLI verdicts of the
attribution run, :data:`STATEMENT_METHODS`), or between two annotators, over the items both labelled.

Exports: every row as CSV (:func:`labels_csv`), and passage labels as TREC qrels (:func:`qrels_text`; one
annotator's latest labels, or the majority across annotators, :func:`qrels_frame`).
"""

from __future__ import annotations

import math
import os
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import pandas as pd

from rageval.store.files import (
    ANNOTATIONS,
    check_shape,
    open_for_write,
    open_readonly,
    reading,
    schema_shape,
    stamp,
)

SCHEMA_VERSION = ANNOTATIONS.version
ANNOTATIONS_FILE = "annotations.sqlite"
KINDS = ("passage", "statement")
#: The columns that identify an item of each kind (within a run).
ITEM_COLUMNS = {"passage": ("query_id", "passage_id"),
                "statement": ("scenario", "query_id", "answer_id", "statement")}
#: Every column of a label row, in table order (what :meth:`AnnotationStore.labels` and the CSV export hold).
LABEL_COLUMNS = ("id", "run", "kind", "query_id", "passage_id", "scenario", "answer_id", "statement", "label",
                 "annotator", "labelled_at", "note")
#: A graded automatic label (eRAG under token F1, ROUGE-L or BERTScore, in [0, 1]) counts as useful from here on;
#: 0/1 labels are unaffected.
USEFUL_THRESHOLD = 0.5
#: The automatic verdicts on a statement stored in an attribution run's ``statements`` table (its column -> the
#: method name used here): AutoAIS_cit (one cited passage entails it), ALCE citation recall (its cited passages
#: jointly entail it), and HAGRID's own annotators' sentence label.
STATEMENT_METHODS = {"supported": "nli:autoais", "alce_recall": "nli:alce", "human_attributable": "hagrid:human"}

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE labels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('passage', 'statement')),
    query_id TEXT NOT NULL,
    passage_id TEXT NOT NULL DEFAULT '',
    scenario TEXT NOT NULL DEFAULT '',
    answer_id TEXT NOT NULL DEFAULT '',
    statement INTEGER,
    label INTEGER NOT NULL CHECK (label IN (0, 1)),
    annotator TEXT NOT NULL CHECK (length(trim(annotator)) > 0),
    labelled_at TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '');
CREATE INDEX labels_by_run ON labels (run, kind, annotator);
"""
_SHAPE = schema_shape(_SCHEMA)


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


def normalise_annotator(name: str) -> str:
    """The annotator's name as stored: surrounding blanks removed, inner runs of blanks made one space."""
    return " ".join(str(name).split())


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
        """StoreError unless the file is an annotation file this rageval reads, its tables of the shape it writes."""
        connection = open_readonly(self.path, ANNOTATIONS)
        try:
            check_shape(connection, self.path, ANNOTATIONS, _SHAPE, tuple(_SHAPE))
        finally:
            connection.close()

    def _create(self) -> None:
        """Build the empty file in a hidden sibling and link it into place (never over an existing file)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp_name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        os.close(handle)
        try:
            connection = sqlite3.connect(temp_name)
            try:
                stamp(connection, ANNOTATIONS)
                connection.executescript(_SCHEMA)
                connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                connection.commit()
            finally:
                connection.close()
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp_name, 0o666 & ~umask)  # mkstemp makes the file private; this one is an ordinary file
            try:
                os.link(temp_name, self.path)  # atomic, and fails if another process created the file first
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links: rename, unless someone was quicker
                if not self.path.exists():
                    os.replace(temp_name, self.path)
        finally:
            Path(temp_name).unlink(missing_ok=True)
        self._check()

    @contextmanager
    def _connect(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection to the file, its kind checked (read-only unless ``write``); a failure while it is used is
        a StoreError naming the file."""
        connection = open_for_write(self.path, ANNOTATIONS, timeout_s=30) if write else open_readonly(
            self.path, ANNOTATIONS)
        try:
            with reading(self.path, ANNOTATIONS):
                yield connection
        finally:
            connection.close()

    def save_label(self, run: str, item: PassageItem | StatementItem, label: int, annotator: str,
                   note: str = "", labelled_at: datetime | None = None) -> int:
        """Append one label and commit it; return its row id (ids grow, so the highest id is the latest label).

        ``label`` is 1 (useful / supported) or 0 (not); ``annotator`` must name someone; ``labelled_at`` defaults
        to now and is stored as ISO 8601 UTC.
        """
        annotator = normalise_annotator(annotator)
        if not annotator:
            raise ValueError("an annotator name is required to save a label")
        if label not in (0, 1):
            raise ValueError(f"label must be 1 (useful / supported) or 0 (not), got {label!r}")
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
                "INSERT INTO labels (run, kind, query_id, passage_id, scenario, answer_id, statement, label, "
                "annotator, labelled_at, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run, item.kind, *values, int(label), annotator, moment.isoformat(timespec="microseconds"),
                 note or ""))
            connection.commit()
            assert cursor.lastrowid is not None  # an INSERT sets it
            return int(cursor.lastrowid)

    def labels(self, run: str | None = None, kind: str | None = None) -> pd.DataFrame:
        """Every label row (the full history), oldest first; optionally of one run and one kind. An absent file
        reads as no labels."""
        if not self.path.exists():
            return empty_labels()
        conditions, params = [], []
        for column, value in (("run", run), ("kind", kind)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        with self._connect() as connection:
            frame = pd.read_sql_query(f"SELECT {', '.join(LABEL_COLUMNS)} FROM labels{where} ORDER BY id",
                                      connection, params=params)
            return _typed(frame)

    def revision(self) -> int:
        """The id of the newest label (0 when there is none): changes with every save, a cache key."""
        if not self.path.exists():
            return 0
        with self._connect() as connection:
            return int(connection.execute("SELECT COALESCE(MAX(id), 0) FROM labels").fetchone()[0])


def empty_labels() -> pd.DataFrame:
    return _typed(pd.DataFrame({column: [] for column in LABEL_COLUMNS}))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    text = ["run", "kind", "query_id", "passage_id", "scenario", "answer_id", "annotator", "labelled_at", "note"]
    return frame.astype({"id": "int64", "label": "int64", "statement": "Int64", **dict.fromkeys(text, "object")})


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


# --- agreement --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa of two raters over ``n`` items, with the 2x2 confusion counts (first rater's label, second's)."""

    n: int
    kappa: float
    observed: float  # p_o
    expected: float  # p_e
    both_yes: int
    first_only: int  # first says 1, second 0
    second_only: int  # first says 0, second 1
    both_no: int
    reason: str = ""  # why kappa is undefined (NaN); empty when it is defined


def cohen_kappa(first: Sequence[int], second: Sequence[int]) -> Kappa:
    """Cohen's kappa (Cohen 1960, "A coefficient of agreement for nominal scales") of two binary raters.

    With the confusion counts a = both 1, b = first 1 and second 0, c = first 0 and second 1, d = both 0 over
    n = a + b + c + d items::

        p_o = (a + d) / n                                   observed agreement
        p_e = ((a + b)(a + c) + (c + d)(b + d)) / n^2       agreement expected by chance from each rater's shares
        kappa = (p_o - p_e) / (1 - p_e)

    kappa is 1 for perfect agreement and 0 for chance agreement. It is undefined (NaN, with ``reason``) when there
    is no item (n = 0) or when p_e = 1, i.e. both raters gave every item the same single label (0/0).
    """
    if len(first) != len(second):
        raise ValueError(f"cohen_kappa: {len(first)} labels against {len(second)}")
    bad = next((value for value in (*first, *second) if value not in (0, 1)), None)
    if bad is not None:  # checked before int(): int(0.7) would silently read a 0.7 as 0
        raise ValueError(f"cohen_kappa: labels must be 0 or 1, got {bad!r}")
    pairs = [(int(x), int(y)) for x, y in zip(first, second)]
    a = sum(1 for x, y in pairs if x == 1 and y == 1)
    b = sum(1 for x, y in pairs if x == 1 and y == 0)
    c = sum(1 for x, y in pairs if x == 0 and y == 1)
    d = sum(1 for x, y in pairs if x == 0 and y == 0)
    n = a + b + c + d
    if n == 0:
        return Kappa(0, math.nan, math.nan, math.nan, 0, 0, 0, 0, "no item labelled by both")
    observed = (a + d) / n
    expected = ((a + b) * (a + c) + (c + d) * (b + d)) / n ** 2
    if expected == 1:
        word = "1 (useful / supported)" if a else "0 (not)"
        return Kappa(n, math.nan, observed, expected, a, b, c, d,
                     f"both gave all {n} items the label {word}: chance agreement is 1, so kappa is 0/0")
    return Kappa(n, (observed - expected) / (1 - expected), observed, expected, a, b, c, d)


AGREEMENT_COLUMNS = ("n", "kappa", "observed", "expected", "both_useful", "person_only", "method_only", "both_not",
                     "reason")


def _kappa_row(kappa: Kappa) -> dict:
    return {"n": kappa.n, "kappa": kappa.kappa, "observed": kappa.observed, "expected": kappa.expected,
            "both_useful": kappa.both_yes, "person_only": kappa.first_only, "method_only": kappa.second_only,
            "both_not": kappa.both_no, "reason": kappa.reason}


def _paired(person: pd.DataFrame, method_labels: pd.DataFrame, kind: str, threshold: float) -> pd.DataFrame:
    """Items labelled by the person and by a method: item columns, method, label (person), value and
    method_label (value >= threshold).

    Passage labels are qrels: a passage a method did not label, in a query it labelled, counts as 0 (trec_eval's
    reading, and how a run stores ``gold``: only its positive rows); queries a method never labelled are left out.
    """
    items = list(ITEM_COLUMNS[kind])
    mine = person[[*items, "label"]]
    theirs = method_labels[["method", *items, "value"]].dropna(subset=["value"])
    if kind == "passage":
        judged = theirs[["method", "query_id"]].drop_duplicates()
        candidates = mine[items].merge(judged, on="query_id")
        theirs = candidates.merge(theirs, on=["method", *items], how="left").fillna({"value": 0.0})
    paired = mine.merge(theirs, on=items, how="inner")
    return paired.assign(method_label=(paired["value"].astype(float) >= threshold).astype(int))


def agreement_with_methods(person: pd.DataFrame, method_labels: pd.DataFrame, kind: str = "passage",
                           threshold: float = USEFUL_THRESHOLD) -> pd.DataFrame:
    """Cohen's kappa between one person's labels and each automatic label method, over the items both labelled.

    ``person``: the person's current labels (:func:`latest_labels` of one annotator and run: item columns and
    ``label``); ``method_labels``: long format, ``method``, item columns, ``value`` (a run's ``labels`` table, or
    :func:`statement_method_labels`). A method value counts as 1 when ``>= threshold`` (graded eRAG labels); a
    passage a method left unlabelled in a query it labelled counts as 0 (qrels).
    Returns one row per method (every method of ``method_labels``, n = 0 for those sharing no item) with
    :data:`AGREEMENT_COLUMNS`; ``person_only`` counts items the person called useful and the method not.
    """
    paired = _paired(person, method_labels, kind, threshold)
    rows = []
    for method in sorted(method_labels["method"].unique()):
        of_method = paired[paired["method"] == method]
        rows.append({"method": method, **_kappa_row(cohen_kappa(of_method["label"], of_method["method_label"]))})
    return pd.DataFrame(rows, columns=["method", *AGREEMENT_COLUMNS])


def disagreements(person: pd.DataFrame, method_labels: pd.DataFrame, kind: str = "passage",
                  threshold: float = USEFUL_THRESHOLD) -> pd.DataFrame:
    """The items where the person's label and a method's (binarised at ``threshold``) differ, one row per (item,
    method): item columns, method, label (the person's), value (the method's stored value), method_label."""
    paired = _paired(person, method_labels, kind, threshold)
    differing = paired[paired["label"] != paired["method_label"]]
    return differing.sort_values([*ITEM_COLUMNS[kind], "method"]).reset_index(drop=True)


def agreement_between_annotators(latest: pd.DataFrame, kind: str = "passage") -> pd.DataFrame:
    """Cohen's kappa of every pair of annotators (alphabetical) over the items both labelled; ``latest`` is
    :func:`latest_labels` of one run. Columns annotator_a, annotator_b and :data:`AGREEMENT_COLUMNS`, where
    ``person_only`` counts items annotator_a called useful and annotator_b not (``method_only`` the reverse)."""
    items = list(ITEM_COLUMNS[kind])
    names = sorted(latest["annotator"].unique())
    rows = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            a = latest.loc[latest["annotator"] == first, [*items, "label"]]
            b = latest.loc[latest["annotator"] == second, [*items, "label"]]
            both = a.merge(b, on=items, suffixes=("_a", "_b"))
            rows.append({"annotator_a": first, "annotator_b": second,
                         **_kappa_row(cohen_kappa(both["label_a"], both["label_b"]))})
    return pd.DataFrame(rows, columns=["annotator_a", "annotator_b", *AGREEMENT_COLUMNS])


def statement_method_labels(statements: pd.DataFrame) -> pd.DataFrame:
    """An attribution run's ``statements`` table as long-format method labels: ``method`` (the names of
    :data:`STATEMENT_METHODS`), scenario, query_id, answer_id, statement, value. Unjudged statements (NULL: no
    citation, a scenario without citations, no human label) are left out."""
    items = list(ITEM_COLUMNS["statement"])
    present = [column for column in STATEMENT_METHODS if column in statements.columns]
    long = statements[[*items, *present]].melt(id_vars=items, value_vars=present, var_name="method",
                                               value_name="value").dropna(subset=["value"])
    long = long.assign(method=long["method"].map(STATEMENT_METHODS), value=long["value"].astype(float))
    return long[["method", *items, "value"]].reset_index(drop=True)


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
    rows = latest[latest["kind"] == "passage"]
    if annotator is not None:
        rows = rows[rows["annotator"] == normalise_annotator(annotator)]
    if rows.empty:
        return pd.DataFrame({"query_id": [], "passage_id": [], "label": []}).astype({"label": "int64"})
    votes = rows.groupby(["query_id", "passage_id"])["label"].agg(["sum", "count"]).reset_index()
    label = (2 * votes["sum"] > votes["count"]).astype(int)
    return (pd.DataFrame({"query_id": votes["query_id"], "passage_id": votes["passage_id"], "label": label})
            .sort_values(["query_id", "passage_id"]).reset_index(drop=True))


def qrels_text(qrels: pd.DataFrame) -> str:
    """TREC qrels lines ``query_id 0 passage_id label`` (what trec_eval and pytrec_eval read)."""
    lines = []
    for row in qrels.itertuples(index=False):
        for column, value in (("query_id", row.query_id), ("passage_id", row.passage_id)):
            if not value or any(ch.isspace() for ch in str(value)):
                raise ValueError(f"cannot write {column} {value!r} to a qrels file: ids must be non-empty and "
                                 "contain no whitespace")
        lines.append(f"{row.query_id} 0 {row.passage_id} {int(row.label)}\n")
    return "".join(lines)
