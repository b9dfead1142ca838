"""Run files: one SQLite file per run (kind "RAGE", :data:`~rageval.store.files.RUN`), with a versioned schema.

A run file holds everything one evaluation produced and what produced it: the settings (dataset, retriever,
model, prompts, k, metric), the queries and passages it touched, each query's ranking, the per-document LLM
outputs, every label method's labels (eRAG, contains-answer, gold, LLM relevance: all stored as qrels-like
rows) with their evidence, the end-to-end (E2E) outputs at every k of the sweep, the per-query measure values,
the LLM-retEval facts: semi-gold answers, judge verdicts with evidence, failure cases with reasons, and the
correlation of every label method x measure with the E2E score at every k (eRAG's Table 1; what the Correlations
page shows).

Schema history: v1 had one E2E output per query; v2 keys E2E outputs by (query, k) and adds the tables
``label_evidence``, ``semi_gold_outputs``, ``verdicts`` and ``failure_cases``. v1 files are still read (the
missing tables read as empty). The ``correlations`` table came later within v2: an optional table, so the version
stays 2 (an older rageval reads these files and ignores it) and v2 files without it read as having none. The
``unparsed_answers`` table (an LLM judge's replies it could not read) came the same way.

Files are written atomically (a temporary file in the same folder, then ``os.replace``), so a reader never sees
half a run. A file with an unknown or newer schema fails with a message naming the file and both versions; one whose
tables are missing or of another shape fails on opening, and a read that fails past the header (undecodable text,
malformed JSON, a damaged page) is a :class:`~rageval.errors.StoreError` naming the file too.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rageval.errors import StoreError
from rageval.labelmethods import remember_stored_kinds
from rageval.store.files import (
    check_settings,
    check_shape,
    checked_reads,
    is_integer,
    is_number,
    is_string,
    json_object,
    list_of,
    object_of,
    open_readonly,
    reading,
    remembered_summary,
    schema_shape,
    sqlite_application_id,
    stamp,
    write_sqlite_atomically,
)
from rageval.store.records import (
    Correlation,
    DocOutput,
    E2EOutput,
    FailureCase,
    Label,
    LabelEvidence,
    MeasureValue,
    Run,
    SemiGoldOutput,
    TraceRanking,
    UnparsedAnswer,
    Verdict,
)
from rageval.store.runs_measures import MeasureReads
from rageval.store.runs_reteval import RetevalReads
from rageval.store.schemas import CORRELATION_COLUMNS, RUN, RUN_REQUIRED_TABLES, RUN_SCHEMA
from rageval.store.text import text_window
from rageval.types import Passage, Query, Ranking, ScoredPassage

if TYPE_CHECKING:  # pandas is imported by the readers that return frames: `rageval info` starts without it
    import pandas as pd

SCHEMA_VERSION = RUN.version
APPLICATION_ID = RUN.application_id  # "RAGE": marks a SQLite file as a rageval run

#: The columns of :meth:`RunReader.ranking_table` before its label methods' (one column per method follows).
RANKING_COLUMNS = ("rank", "passage_id", "score", "title", "text", "text_size", "output")


def write_run(run: Run, path: str | os.PathLike) -> Path:
    """Write ``run`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    return write_sqlite_atomically(path, lambda connection: _write_tables(connection, run))


def _write_tables(connection: sqlite3.Connection, run: Run) -> None:
    stamp(connection, RUN)
    connection.executescript(RUN_SCHEMA)
    connection.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), ("settings", json.dumps(dict(run.settings), sort_keys=True))],
    )
    connection.executemany(
        "INSERT INTO queries VALUES (?, ?, ?, ?, ?)",
        [(q.query_id, q.text, json.dumps(list(q.answers)), json.dumps(list(q.gold_passage_ids)), q.dataset)
         for q in run.queries],
    )
    connection.executemany(
        "INSERT INTO passages VALUES (?, ?, ?, ?)",
        [(p.passage_id, p.title, p.text, p.source) for p in run.passages],
    )
    connection.executemany(
        "INSERT INTO rankings VALUES (?, ?, ?, ?)",
        [(r.query_id, rank, p.passage_id, float(p.score))
         for r in run.rankings for rank, p in enumerate(r.passages, start=1)],
    )
    connection.executemany("INSERT INTO doc_outputs VALUES (?, ?, ?)",
                           [(o.query_id, o.passage_id, o.output) for o in run.doc_outputs])
    connection.executemany("INSERT INTO labels VALUES (?, ?, ?, ?)",
                           [(x.method, x.query_id, x.passage_id, float(x.value)) for x in run.labels])
    connection.executemany("INSERT INTO e2e_outputs VALUES (?, ?, ?, ?)",
                           [(e.query_id, e.k, e.output, _score(e.score)) for e in run.e2e_outputs])
    connection.executemany("INSERT INTO measure_values VALUES (?, ?, ?, ?)",
                           [(m.method, m.measure, m.query_id, float(m.value)) for m in run.measure_values])
    connection.executemany("INSERT INTO label_evidence VALUES (?, ?, ?, ?)",
                           [(e.method, e.query_id, e.passage_id, e.evidence) for e in run.label_evidence])
    connection.executemany("INSERT INTO semi_gold_outputs VALUES (?, ?, ?)",
                           [(o.query_id, o.sample, o.output) for o in run.semi_gold_outputs])
    connection.executemany("INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?)",
                           [(v.judge, v.reference, v.query_id, v.k, int(v.verdict), v.evidence) for v in run.verdicts])
    connection.executemany("INSERT INTO failure_cases VALUES (?, ?, ?, ?, ?)",
                           [(f.judge, f.query_id, f.k, f.category, f.reason) for f in run.failure_cases])
    connection.executemany("INSERT INTO correlations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [tuple(_sql_value(getattr(c, name)) for name in CORRELATION_COLUMNS)
                            for c in run.correlations])
    connection.executemany("INSERT INTO trace_rankings VALUES (?, ?, ?, ?, ?, ?)",
                           [(t.stage, t.query_id, t.rank, t.passage_id, _sql_value(t.score), t.span_id)
                            for t in run.trace_rankings])
    connection.executemany("INSERT INTO unparsed_answers VALUES (?, ?, ?, ?, ?)",
                           [(u.judge, u.model, u.query_id, u.item, u.answer) for u in run.unparsed])



def _score(value: float | None) -> float | None:
    """An E2E score as stored: NULL for an unscored answer (nan or None)."""
    return None if value is None else _sql_value(float(value))


def _unscored(row: Sequence[Any]) -> E2EOutput:
    """An :class:`E2EOutput` from an ``e2e_outputs`` row, an unscored answer's NULL score as nan."""
    query_id, k, output, score = row
    return E2EOutput(query_id, k, output, float("nan") if score is None else score)


def _sql_value(value: Any) -> Any:
    """nan (an undefined coefficient) as NULL: SQLite stores a float nan as NULL anyway, say so."""
    return None if isinstance(value, float) and value != value else value




#: Columns rageval writes NOT NULL but reads a missing (NULL) value of as an odd row rather than damage: a measure
#: value or E2E score another tool left empty (or a NaN, which SQLite stores as NULL). The views count such rows,
#: say so and work on the rest.
NULLABLE_WHEN_READ = {("measure_values", "value"), ("e2e_outputs", "score")}
_SHAPE = {table: {column: (declared, not_null and (table, column) not in NULLABLE_WHEN_READ)
                  for column, (declared, not_null) in columns.items()}
          for table, columns in schema_shape(RUN_SCHEMA).items()}


#: The settings readers rely on, each with its JSON type in words and its test (a setting may be absent or null).
SETTINGS_TYPES = {
    "k": ("an integer", is_integer),
    "num_queries": ("an integer", is_integer),
    "cutoffs": ("an array of integers", list_of(is_integer)),
    "graded_label_methods": ("an array of strings", list_of(is_string)),
    "label_methods": ("an array of strings", list_of(is_string)),
    "e2e_metric": ("a string", is_string),
    "label_metric": ("a string", is_string),
    "notes": ("a string", is_string),
    "config": ("an object", object_of()),
    "rescored": ("an object of objects", lambda v: object_of()(v) and all(object_of()(x) for x in v.values())),
    "completed": ("an array", list_of(lambda _: True)),
    "timing_s": ("an object", object_of()),
    "llm_calls": ("an object", object_of()),
    "correlations": ("an object", object_of()),
    "brought": ("an object", object_of()),
    "reteval": ("an object (numeric thresholds, semi_gold an object)",
                object_of(f1_threshold=is_number, cosine_threshold=is_number, semi_gold=object_of(),
                          ks=list_of(is_integer))),
}


#: The join condition (``e`` the E2E output, ``q`` the query) of a query's own E2E answer (a traced system's): the
#: one at the smallest k not under the length of its ranked list; that length itself, or the traced length of a list
#: a tracer's attribute limit cut.
OWN_ANSWER_K = ("e.k = (SELECT MIN(o.k) FROM e2e_outputs o WHERE o.query_id = q.query_id "
                "AND o.k >= (SELECT COUNT(*) FROM rankings r WHERE r.query_id = q.query_id))")


@checked_reads(RUN)
class RunReader(RetevalReads, MeasureReads):
    """Read access to one run file, query by query (the dashboard never loads a whole run into memory).

    Opens the file read-only and checks it is a rageval run with a schema this version understands, tables of the
    shape it writes and settings that parse; every read that fails on a damaged file raises :class:`StoreError`
    naming the file.
    ``note`` says why the file may not read as its writer left it (an interrupted write read around), else None.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._connection = open_readonly(self.path, RUN, check_same_thread=False)
        self.note = self._connection.note
        try:
            with reading(self.path, RUN):
                self.schema_version = self._connection.execute("PRAGMA user_version").fetchone()[0]
                self._tables = check_shape(self._connection, self.path, RUN, _SHAPE, RUN_REQUIRED_TABLES)
                self.settings()  # what produced the run must parse: every view shows it
        except BaseException:
            self._connection.close()
            raise

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> RunReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _frame(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        import pandas as pd

        return pd.read_sql_query(sql, self._connection, params=list(params))

    def settings(self) -> dict[str, Any]:
        """What produced the run (a JSON object in ``meta``; {} when absent)."""
        row = self._connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        settings = check_settings(json_object(row[0], self.path, RUN), self.path, RUN, SETTINGS_TYPES) if row else {}
        remember_stored_kinds(settings.get("label_kinds"))  # a judge file's method: scored and shown by its rules
        return settings

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables (the run's sizes), remembered per version of the file
        (:func:`rageval.store.files.remembered_summary`): a count walks a whole index, 0.6 s for the labels,
        rankings and outputs of a 100,000-query run, and every dashboard page states the run's size."""
        tables = ("queries", "passages", "rankings", "doc_outputs", "labels", "e2e_outputs")
        return remembered_summary(self.path, "counts:1", lambda: {
            t: self._connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables})

    def query_count(self) -> int:
        """How many queries the run has."""
        return self._connection.execute("SELECT COUNT(*) FROM queries").fetchone()[0]

    def label_shares(self) -> list[tuple[str, float | None, int]]:
        """Per label method, by method: ``(method, mean label, labels)`` (the mean of 0/1 labels is the share of
        1s), aggregated by SQLite."""
        return self._connection.execute(
            "SELECT method, AVG(value), COUNT(*) FROM labels GROUP BY method ORDER BY method").fetchall()

    def label_share_from(self, method: str, grade: float) -> tuple[float | None, int]:
        """``(share, labels)``: the share of ``method``'s labels at or above ``grade`` (levels: from 2 of 0-3),
        aggregated by SQLite; None and 0 without labels."""
        return self._connection.execute("SELECT AVG(value >= ?), COUNT(*) FROM labels WHERE method = ?",
                                        (grade, method)).fetchone()

    def e2e_mean(self, k: int | None) -> tuple[float | None, int]:
        """``(mean, n)``: the mean E2E score at ``k`` over the run's queries and how many queries have one (None
        and 0 when none does, or ``k`` is None), aggregated by SQLite."""
        return self._connection.execute(
            "SELECT AVG(e.score), COUNT(e.score) FROM queries q "
            "LEFT JOIN e2e_outputs e ON e.query_id = q.query_id AND e.k = ?",
            (k if k is not None else -1,)).fetchone()

    def e2e_means(self) -> list[tuple[int, float | None, int]]:
        """Per k with E2E outputs, ascending: ``(k, mean score, outputs)``, aggregated by SQLite."""
        return self._connection.execute(
            "SELECT k, AVG(score), COUNT(*) FROM e2e_outputs GROUP BY k ORDER BY k").fetchall()

    def measure_means(self) -> list[tuple[str, str, float | None]]:
        """Per (method, measure), in that order: ``(method, measure, mean)`` over every stored value (SQLite's
        AVG: NULLs left out), aggregated by SQLite."""
        return self._connection.execute("SELECT method, measure, AVG(value) FROM measure_values "
                                        "GROUP BY method, measure ORDER BY method, measure").fetchall()

    def passages(self, passage_ids: Iterable[str]) -> dict[str, Passage]:
        """The passages of ``passage_ids`` that the run has, by id (read 500 ids at a time, through the primary
        key)."""
        ids = sorted(set(passage_ids))
        found: dict[str, Passage] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = self._connection.execute(f"SELECT passage_id, title, text, source FROM passages WHERE passage_id "
                                            f"IN ({','.join('?' * len(chunk))})", chunk)
            found.update({row[0]: Passage(*row) for row in rows})
        return found

    def _optional_frame(self, table: str, sql: str, params: Sequence[Any] = (), columns: Sequence[str] = ()
                        ) -> pd.DataFrame:
        """``sql`` on a table that older schemas lack: an empty frame with ``columns`` when it is absent."""
        if table not in self._tables:
            import pandas as pd

            return pd.DataFrame(columns=list(columns))
        return self._frame(sql, params)

    def e2e_ks(self) -> list[int]:
        """The k values with stored E2E outputs, ascending (the run's k sweep); one pass over the E2E outputs,
        remembered per version of the file (:func:`rageval.store.files.remembered_summary`)."""
        return remembered_summary(self.path, "e2e_ks:1", lambda: [
            r[0] for r in self._connection.execute("SELECT DISTINCT k FROM e2e_outputs ORDER BY k")])

    def main_k(self) -> int | None:
        """The k the run is about: its ``k`` setting when E2E outputs exist for it, else the largest stored k."""
        ks = self.e2e_ks()
        k = self.settings().get("k")
        return k if k in ks else (ks[-1] if ks else None)

    def answers_are_imported(self) -> bool:
        """Whether the run's E2E answers are a traced system's, each at the length of its own list
        (``rageval import``): then a query's answer is the one at its own k, not at the run's main k."""
        return self.settings().get("e2e_answers") == "imported"

    def query_table(self, k: int | None = None) -> pd.DataFrame:
        """One row per query: id, text, dataset, answers and the E2E output and score at ``k`` (default: the
        run's main k; for a run imported from traces, each query's own answer, at the length of its own list;
        NaN when no E2E output was stored)."""
        if k is None and self.answers_are_imported():
            return self._frame(
                "SELECT q.query_id, q.text, q.dataset, q.answers, e.output AS e2e_output, e.score AS e2e_score "
                f"FROM queries q LEFT JOIN e2e_outputs e ON e.query_id = q.query_id AND {OWN_ANSWER_K} "
                "ORDER BY q.rowid")
        k = self.main_k() if k is None else k
        return self._frame(
            "SELECT q.query_id, q.text, q.dataset, q.answers, e.output AS e2e_output, e.score AS e2e_score "
            "FROM queries q LEFT JOIN e2e_outputs e ON e.query_id = q.query_id AND e.k = ? ORDER BY q.rowid",
            (k if k is not None else -1,))

    def own_answer_mean(self) -> tuple[float | None, int, int]:
        """``(mean score, scored, answers)`` over each query's own answer, the one at the length of its own list
        (an imported run's system answers; :meth:`answers_are_imported`), aggregated by SQLite."""
        return self._connection.execute(
            f"SELECT AVG(e.score), COUNT(e.score), COUNT(e.output) FROM queries q "
            f"JOIN e2e_outputs e ON e.query_id = q.query_id AND {OWN_ANSWER_K}").fetchone()

    def has_rows(self, table: str) -> bool:
        """Whether ``table`` (one of the run's tables, e.g. ``e2e_outputs``, ``verdicts``) exists and holds a row:
        one indexed probe, what a page checks before it lists the run."""
        if table not in self._tables:
            return False
        return bool(self._connection.execute(f'SELECT EXISTS (SELECT 1 FROM "{table}")').fetchone()[0])

    def query_ids(self) -> list[str]:
        """Every query id, in run order (no text: what a comparison of two runs' query sets needs)."""
        return [row[0] for row in self._connection.execute("SELECT query_id FROM queries ORDER BY rowid")]

    def questions(self) -> pd.DataFrame:
        """Every query's id and question, in run order: columns query_id, text (two columns of
        :meth:`query_table`, without its join)."""
        return self._frame("SELECT query_id, text FROM queries ORDER BY rowid")

    def question_texts(self, query_ids: Sequence[str]) -> dict[str, str]:
        """The question of each of ``query_ids`` that the run has, by query id: one indexed lookup per id (a page
        that shows 1,000 rows of a 100,000-query run reads 1,000 questions, not every one)."""
        if not query_ids:
            return {}
        rows = self._connection.execute(
            "SELECT query_id, text FROM queries WHERE query_id IN (SELECT value FROM json_each(?))",
            (json.dumps([str(q) for q in query_ids]),))
        return dict(rows)

    def e2e_table(self) -> pd.DataFrame:
        """Every E2E output: columns query_id, k, output, score."""
        return self._frame("SELECT query_id, k, output, score FROM e2e_outputs ORDER BY query_id, k")

    def label_evidence(self, query_id: str | None = None) -> pd.DataFrame:
        columns = ("method", "query_id", "passage_id", "evidence")
        if query_id is None:
            return self._optional_frame("label_evidence", "SELECT * FROM label_evidence", (), columns)
        if "label_evidence" not in self._tables:
            return self._optional_frame("label_evidence", "", (), columns)
        return self._of_query("label_evidence", ", ".join(columns), query_id)

    def correlations(self, k: int | None = None) -> pd.DataFrame:
        """The stored correlation of every (label method, measure) with the E2E score (all ks, or only ``k``):
        columns :data:`CORRELATION_COLUMNS` (undefined coefficients nan), sorted by k, method, measure; empty for
        a file written before the table existed or by a writer that computes none."""
        where, params = ("", ()) if k is None else (" WHERE k = ?", (int(k),))
        frame = self._optional_frame("correlations", f"SELECT {', '.join(CORRELATION_COLUMNS)} FROM correlations"
                                     f"{where} ORDER BY k, method, measure", params, CORRELATION_COLUMNS)
        return frame.astype(dict.fromkeys(CORRELATION_COLUMNS[4:10], float))

    def trace_stages(self) -> list[str]:
        """The stages of an imported trace's lists the run keeps (:class:`~rageval.store.records.TraceRanking`),
        sorted; empty for a run not imported from traces."""
        if "trace_rankings" not in self._tables:
            return []
        return [row[0] for row in self._connection.execute("SELECT DISTINCT stage FROM trace_rankings ORDER BY stage")]

    def trace_rankings(self, query_id: str | None = None) -> pd.DataFrame:
        """The imported lists stage by stage (all queries, or one): columns stage, query_id, rank, passage_id,
        score (NaN when the trace gave none), span_id; by stage, query, rank."""
        columns = ("stage", "query_id", "rank", "passage_id", "score", "span_id")
        where, params = ("", ()) if query_id is None else (" WHERE query_id = ?", (query_id,))
        frame = self._optional_frame("trace_rankings", f"SELECT {', '.join(columns)} FROM trace_rankings{where} "
                                     "ORDER BY stage, query_id, rank", params, columns)
        return frame.astype({"score": float})

    def table_names(self) -> list[str]:
        """The run's tables (those of :data:`~rageval.store.schemas.RUN_SCHEMA` the file has), sorted."""
        return sorted(t for t in self._tables if t in _SHAPE)

    def table_frame(self, table: str) -> pd.DataFrame:
        """Every row of one of the run's tables (:meth:`table_names`), as stored, in primary-key order: what an
        export of the whole run writes."""
        if table not in self._tables or table not in _SHAPE:
            raise StoreError(f"{self.path}: no table {table!r} in this run")
        return self._frame(f'SELECT * FROM "{table}"')

    def query(self, query_id: str) -> Query:
        row = self._connection.execute(
            "SELECT query_id, text, answers, gold_passage_ids, dataset FROM queries WHERE query_id = ?",
            (query_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no query {query_id!r} in this run")
        return _query(row)

    def queries(self) -> list[Query]:
        """Every query, in run order, as :meth:`query` reads one (one statement, not one a query)."""
        return [_query(row) for row in self._connection.execute(
            "SELECT query_id, text, answers, gold_passage_ids, dataset FROM queries ORDER BY rowid")]

    def label_counts(self) -> dict[str, int]:
        """Label method -> how many labels it has, by method: one skip along the primary-key index and one
        index-only count per method (a GROUP BY over 3M labels took 4x as long)."""
        counts, connection = {}, self._connection
        method = connection.execute("SELECT method FROM labels ORDER BY method LIMIT 1").fetchone()
        while method is not None:
            counts[method[0]] = connection.execute("SELECT COUNT(*) FROM labels WHERE method = ?", method).fetchone()[0]
            method = connection.execute("SELECT method FROM labels WHERE method > ? ORDER BY method LIMIT 1",
                                        method).fetchone()
        return counts

    def label_methods(self) -> list[str]:
        return self._methods_of("labels")

    def _methods_of(self, table: str) -> list[str]:
        """The distinct methods of ``labels`` or ``label_evidence`` (tables keyed by method first), sorted: one
        short lookup per method along the primary-key index, not a scan of every row."""
        methods, connection = [], self._connection
        method = connection.execute(f"SELECT method FROM {table} ORDER BY method LIMIT 1").fetchone()
        while method is not None:
            methods.append(method[0])
            method = connection.execute(f"SELECT method FROM {table} WHERE method > ? ORDER BY method LIMIT 1",
                                        method).fetchone()
        return methods

    def _of_query(self, table: str, columns: str, query_id: str) -> pd.DataFrame:
        """``columns`` of one query's rows of a table keyed by (method, query_id, ...): through the index, method by
        method (``WHERE query_id = ?`` alone scanned the whole table: 3M labels for one query)."""
        methods = self._methods_of(table)
        placeholders = ", ".join("?" * len(methods)) or "NULL"
        return self._frame(f"SELECT {columns} FROM {table} WHERE method IN ({placeholders}) AND query_id = ?",
                           (*methods, query_id))

    def query_e2e_outputs(self, query_id: str) -> pd.DataFrame:
        """One query's E2E outputs at every k as stored: columns k, output, score, ascending k."""
        return self._frame("SELECT k, output, score FROM e2e_outputs WHERE query_id = ? ORDER BY k", (query_id,))

    def graded_label_methods(self) -> list[str]:
        """The label methods whose labels are graded (scored with P, nDCG and Hit only), as the run's writer
        recorded them (setting ``graded_label_methods``: eRAG under a graded metric, whatever model re-scored it,
        and methods with fractional labels); for a file without that setting, the methods with a label strictly
        between 0 and 1."""
        recorded = self.settings().get("graded_label_methods")
        if recorded is not None:
            return sorted(recorded)
        return [r[0] for r in self._connection.execute(
            "SELECT DISTINCT method FROM labels WHERE value > 0 AND value < 1 ORDER BY method")]

    def ranking_table(self, query_id: str, preview: int | None = None) -> pd.DataFrame:
        """The query's ranked passages (by rank, then stored order) with their text, its size (``text_size``),
        the single-passage output and one column per label method.

        A ranked passage the ``passages`` table lacks keeps its row, with title, text and size NULL (NaN).
        ``preview``: only the first ``preview`` bytes of each text are read (:func:`rageval.store.text.text_window`,
        sizes in UTF-8 bytes), so a huge passage is never loaded whole; :meth:`passage_text` reads the rest piece
        by piece. Without it, the whole texts and their sizes in characters. Rows are returned as stored: a file
        written by another tool may hold the same rank, or the same passage, twice."""
        import pandas as pd

        whole = preview is None
        ranked = self._frame(
            f"SELECT r.rank, r.passage_id, r.score, p.title, {'p.text' if whole else 'NULL'} AS text, "
            f"{'length(p.text)' if whole else 'NULL'} AS text_size, o.output "
            "FROM rankings r LEFT JOIN passages p USING (passage_id) "
            "LEFT JOIN doc_outputs o ON o.query_id = r.query_id AND o.passage_id = r.passage_id "
            "WHERE r.query_id = ? ORDER BY r.rank, r.rowid", (query_id,))
        if preview is not None:
            windows = [self.passage_text(passage_id, 0, preview) for passage_id in ranked["passage_id"]]
            ranked["text"] = pd.Series([w[0] if w else None for w in windows], index=ranked.index, dtype=object)
            ranked["text_size"] = pd.array([w[1] if w else None for w in windows], dtype="Int64")
        labels = self._of_query("labels", "method, passage_id, value", query_id)
        if not labels.empty:
            labels = labels.drop_duplicates(["method", "passage_id"])  # a file without the primary key
            wide = labels.pivot(index="passage_id", columns="method", values="value").reset_index()
            ranked = ranked.merge(wide, on="passage_id", how="left")
        return ranked

    def passage_text(self, passage_id: str, start: int, size: int) -> tuple[str, int] | None:
        """``(piece, total)``: the piece ``[start, start + size)`` of a passage's text and the whole text's size
        (:func:`rageval.store.text.text_window`: UTF-8 bytes, read without loading the whole text); None when the
        run lacks the passage."""
        return text_window(self._connection, "passages", "passage_id = ?", (passage_id,), start, size)

    def negative_label_counts(self) -> dict[str, int]:
        """Label method -> how many of its labels are below 0 (only methods with any): labels are 0/1 or a
        graded value in [0, 1], so a negative one comes from a file another tool wrote."""
        return {method: int(n) for method, n in self._connection.execute(
            "SELECT method, COUNT(*) FROM labels WHERE value < 0 GROUP BY method ORDER BY method")}

    def e2e_output(self, query_id: str, k: int | None = None) -> E2EOutput | None:
        """The E2E output of ``query_id`` at ``k`` (default: the run's main k)."""
        k = self.main_k() if k is None else k
        row = self._connection.execute(
            "SELECT query_id, k, output, score FROM e2e_outputs WHERE query_id = ? AND k = ?", (query_id, k)).fetchone()
        return _unscored(row) if row else None

    def labels(self, method: str | None = None) -> pd.DataFrame:
        if method is None:
            return self._frame("SELECT method, query_id, passage_id, value FROM labels")
        return self._frame("SELECT method, query_id, passage_id, value FROM labels WHERE method = ?", (method,))

    def rankings(self) -> dict[str, Ranking]:
        grouped: dict[str, list[ScoredPassage]] = {}
        for query_id, passage_id, score in self._connection.execute(
                "SELECT query_id, passage_id, score FROM rankings ORDER BY query_id, rank"):
            grouped.setdefault(query_id, []).append(ScoredPassage(passage_id, score))
        return {q: Ranking(q, tuple(ps)) for q, ps in grouped.items()}


def _strings(text: str, query_id: str, column: str) -> tuple[str, ...]:
    """A JSON array of strings from the ``queries`` table (ValueError naming the query and column otherwise)."""
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"query {query_id!r}, column {column}: expected a JSON array of strings")
    return tuple(value)


def _query(row: Sequence[Any]) -> Query:
    """A :class:`Query` from a ``queries`` row (query_id, text, answers, gold_passage_ids, dataset)."""
    query_id, text, answers, gold, dataset = row
    return Query(query_id, text, _strings(answers, query_id, "answers"),
                 _strings(gold, query_id, "gold_passage_ids"), dataset)


def read_run(path: str | os.PathLike) -> Run:
    """The whole run file as a :class:`Run` (what a job that completes a run starts from and rewrites)."""
    with RunReader(path) as reader, reading(path, RUN):
        conn = reader._connection

        def rows(table: str, sql: str) -> list[tuple]:
            return list(conn.execute(sql)) if table in reader._tables else []

        queries = [_query(row) for row in rows(
            "queries", "SELECT query_id, text, answers, gold_passage_ids, dataset FROM queries ORDER BY rowid")]
        rankings = reader.rankings()
        return Run(
            settings=reader.settings(), queries=queries,
            passages=[Passage(*r) for r in rows("passages", "SELECT passage_id, title, text, source FROM passages")],
            rankings=[rankings[q.query_id] for q in queries if q.query_id in rankings],
            doc_outputs=[DocOutput(*r) for r in rows(
                "doc_outputs", "SELECT query_id, passage_id, output FROM doc_outputs")],
            labels=[Label(*r) for r in rows("labels", "SELECT method, query_id, passage_id, value FROM labels")],
            e2e_outputs=[_unscored(r) for r in rows(
                "e2e_outputs", "SELECT query_id, k, output, score FROM e2e_outputs")],
            measure_values=[MeasureValue(*r) for r in rows(
                "measure_values", "SELECT method, measure, query_id, value FROM measure_values")],
            label_evidence=[LabelEvidence(*r) for r in rows(
                "label_evidence", "SELECT method, query_id, passage_id, evidence FROM label_evidence")],
            semi_gold_outputs=[SemiGoldOutput(*r) for r in rows(
                "semi_gold_outputs", "SELECT query_id, sample, output FROM semi_gold_outputs")],
            verdicts=[Verdict(j, ref, q, k, bool(v), e) for j, ref, q, k, v, e in rows(
                "verdicts", "SELECT judge, reference, query_id, k, verdict, evidence FROM verdicts")],
            failure_cases=[FailureCase(*r) for r in rows(
                "failure_cases", "SELECT judge, query_id, k, category, reason FROM failure_cases")],
            correlations=[Correlation(int(r.k), r.method, r.measure, int(r.n), float(r.tau), float(r.tau_low),
                                      float(r.tau_high), float(r.rho), float(r.rho_low), float(r.rho_high),
                                      int(r.n_resamples), float(r.confidence))
                          for r in reader.correlations().itertuples(index=False)],
            trace_rankings=[TraceRanking(*r) for r in rows(
                "trace_rankings", "SELECT stage, query_id, rank, passage_id, score, span_id FROM trace_rankings "
                "ORDER BY stage, query_id, rank")],
            unparsed=[UnparsedAnswer(*r) for r in rows(
                "unparsed_answers", "SELECT judge, model, query_id, item, answer FROM unparsed_answers")])


def list_runs(folder: str | os.PathLike) -> list[Path]:
    """Run files (``*.sqlite``) in ``folder``, newest first, then those in its sub-folders (newest first).

    Sub-folders hold supporting runs (e.g. ``retrieval/``, the retriever comparison), so the default run
    (the first) is always a top-level one. A file is listed by its kind (SQLite ``application_id`` "RAGE",
    :data:`~rageval.store.files.RUN`): attributed-answer and IUM runs, annotation files and anything else are not.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    top = sorted(folder.glob("*.sqlite"), key=lambda p: p.stat().st_mtime, reverse=True)
    nested = sorted((p for p in folder.glob("*/**/*.sqlite") if not p.name.startswith(".")),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    return [p for p in top + nested if sqlite_application_id(p) == RUN.application_id]


def labels_as_qrels(labels: Iterable[Label] | pd.DataFrame, method: str) -> dict[str, dict[str, float]]:
    """The labels of one method as a qrels mapping ``{query_id: {passage_id: value}}``."""
    import pandas as pd

    if isinstance(labels, pd.DataFrame):
        rows = labels[labels["method"] == method].itertuples(index=False)
        triples = ((r.query_id, r.passage_id, r.value) for r in rows)
    else:
        triples = ((x.query_id, x.passage_id, x.value) for x in labels if x.method == method)
    qrels: dict[str, dict[str, float]] = {}
    for query_id, passage_id, value in triples:
        qrels.setdefault(query_id, {})[passage_id] = float(value)
    return qrels
