"""The LLM-retEval reads of a run file: :class:`~rageval.store.runs.RunReader`'s semi-gold answers, judge verdicts,
failure cases, and the LLM judges' answers it could not read (unparsed, or counted as No by an older rageval).

A mixin of :class:`~rageval.store.runs.RunReader` (which opens and checks the file); every public read runs inside
:func:`~rageval.store.files.reading`, so a damaged file is one StoreError naming it. Tables older files lack read as
empty.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rageval.labelmethods import LLM_RELEVANCE, method_kind
from rageval.store.files import (
    ReaderParts,
    checked_reads,
    remembered_frame,
    remembered_summary,
)
from rageval.store.schemas import RUN

if TYPE_CHECKING:  # pandas is imported by the readers that return frames: `rageval info` starts without it
    import pandas as pd


@checked_reads(RUN)
class RetevalReads(ReaderParts):
    """The LLM-retEval reads of :class:`~rageval.store.runs.RunReader` (its mixin)."""

    def semi_gold_verdict_counts(self) -> list[tuple[int, str, int, int]]:
        """Per (k, judge), in that order: ``(k, judge, yes, verdicts)`` of the LLM-retEval verdicts against the
        semi-gold answers; empty for a run without verdicts."""
        if "verdicts" not in self._tables:
            return []
        return self._connection.execute(
            "SELECT k, judge, SUM(verdict), COUNT(*) FROM verdicts WHERE reference = 'semi_gold' "
            "GROUP BY k, judge ORDER BY k, judge").fetchall()

    def failure_case_counts(self) -> list[tuple[int, str, int]]:
        """Per (k, category), in that order: ``(k, category, cases)`` over every judge; empty for a run without
        failure cases."""
        if "failure_cases" not in self._tables:
            return []
        return self._connection.execute(
            "SELECT k, category, COUNT(*) FROM failure_cases GROUP BY k, category ORDER BY k, category").fetchall()

    def semi_gold_outputs(self) -> pd.DataFrame:
        return self._optional_frame("semi_gold_outputs",
                                    "SELECT query_id, sample, output FROM semi_gold_outputs ORDER BY query_id, sample",
                                    (), ("query_id", "sample", "output"))

    def verdicts(self) -> pd.DataFrame:
        return self._optional_frame("verdicts", "SELECT judge, reference, query_id, k, verdict, evidence FROM verdicts",
                                    (), ("judge", "reference", "query_id", "k", "verdict", "evidence"))

    def judges(self) -> list[str]:
        """The judges with LLM-retEval verdicts, sorted: one step down the ``verdicts`` primary key per judge (a
        DISTINCT over 600k verdicts reads them all)."""
        if "verdicts" not in self._tables:
            return []
        return [row[0] for row in self._connection.execute(
            "WITH RECURSIVE j(judge) AS (SELECT MIN(judge) FROM verdicts UNION ALL SELECT (SELECT MIN(judge) FROM "
            "verdicts WHERE judge > j.judge) FROM j WHERE j.judge IS NOT NULL) "
            "SELECT judge FROM j WHERE judge IS NOT NULL")]

    def query_semi_gold(self, query_id: str) -> pd.DataFrame:
        """One query's semi-gold answers: columns sample, output, by sample (through the primary key)."""
        return self._optional_frame("semi_gold_outputs", "SELECT sample, output FROM semi_gold_outputs WHERE "
                                    "query_id = ? ORDER BY sample", (query_id,), ("sample", "output"))

    def query_verdicts(self, query_id: str) -> pd.DataFrame:
        """One query's verdicts: columns judge, reference, k, verdict, evidence, by k, judge, reference; through
        the primary key (judge, reference, query_id, k), judge by judge and reference by reference."""
        pairs = [(judge, reference) for judge in self.judges() for (reference,) in self._connection.execute(
            "WITH RECURSIVE r(reference) AS (SELECT MIN(reference) FROM verdicts WHERE judge = ?1 UNION ALL SELECT "
            "(SELECT MIN(reference) FROM verdicts WHERE judge = ?1 AND reference > r.reference) FROM r WHERE "
            "r.reference IS NOT NULL) SELECT reference FROM r WHERE reference IS NOT NULL", (judge,))]
        condition = " OR ".join(["(judge = ? AND reference = ?)"] * len(pairs)) or "0"
        return self._optional_frame(
            "verdicts", f"SELECT judge, reference, k, verdict, evidence FROM verdicts WHERE ({condition}) AND "
            "query_id = ? ORDER BY k, judge, reference", (*(v for pair in pairs for v in pair), query_id),
            ("judge", "reference", "k", "verdict", "evidence"))

    def query_failure_cases(self, query_id: str) -> pd.DataFrame:
        """One query's failure cases: columns judge, k, category, reason, by k, judge, category (through the
        primary key, judge by judge)."""
        judges = self.judges() if "failure_cases" in self._tables else []
        placeholders = ", ".join("?" * len(judges)) or "NULL"
        return self._optional_frame(
            "failure_cases", f"SELECT judge, k, category, reason FROM failure_cases WHERE judge IN ({placeholders}) "
            "AND query_id = ? ORDER BY k, judge, category", (*judges, query_id), ("judge", "k", "category", "reason"))

    def failure_case_table(self, judge: str, k: int | None = None, *, details: bool = True) -> pd.DataFrame:
        """One judge's failure cases (at ``k`` only, when given) with their question: columns query_id, text, k,
        category, reason, by k, category and the run order of the queries; one join, no other query column.
        ``details=False``: columns query_id, k, category only (what counts and lists need; a 100,000-query run's
        questions and reasons are megabytes), :meth:`failure_case_details` reads the others for the rows shown."""
        where, params = ("f.judge = ?", [judge]) if k is None else ("f.judge = ? AND f.k = ?", [judge, int(k)])
        columns = ("query_id", "text", "k", "category", "reason") if details else ("query_id", "k", "category")
        selected = ", ".join(f"q.{c}" if c == "text" else f"f.{c}" for c in columns)

        def read() -> pd.DataFrame:
            return self._optional_frame(
                "failure_cases", f"SELECT {selected} FROM failure_cases f JOIN queries q ON q.query_id = f.query_id "
                f"WHERE {where} ORDER BY f.k, f.category, q.rowid", params, columns)

        if details:
            return read()
        # The lean table of a big run (0.4 s for 205,000 cases) is remembered per version of the file.
        return remembered_frame(self.path, f"failure_case_keys:1:{json.dumps([judge, k])}", read)

    def failure_case_details(self, judge: str, query_ids: Sequence[str]) -> pd.DataFrame:
        """The question and the reason of every failure case of ``judge`` on ``query_ids``: columns query_id, k,
        category, text, reason (through the primary key, a query at a time)."""
        import pandas as pd

        columns = ["query_id", "k", "category", "text", "reason"]
        if "failure_cases" not in self._tables:
            return pd.DataFrame(columns=columns)
        rows = [row for query_id in dict.fromkeys(query_ids) for row in self._connection.execute(
            "SELECT f.query_id, f.k, f.category, q.text, f.reason FROM failure_cases f JOIN queries q ON "
            "q.query_id = f.query_id WHERE f.judge = ? AND f.query_id = ?", (judge, query_id))]
        return pd.DataFrame(rows, columns=columns)

    def failure_cases(self) -> pd.DataFrame:
        return self._optional_frame("failure_cases", "SELECT judge, query_id, k, category, reason FROM failure_cases",
                                    (), ("judge", "query_id", "k", "category", "reason"))

    def unparsed_answers(self, judge: str | None = None) -> pd.DataFrame:
        """The LLM judges' answers that could not be read (:class:`~rageval.store.records.UnparsedAnswer`): columns
        judge, model, query_id, item, answer; every judge's, or ``judge``'s; none in a file without the table."""
        columns = ("judge", "model", "query_id", "item", "answer")
        where = " WHERE judge = ?" if judge is not None else ""
        return self._optional_frame("unparsed_answers", f"SELECT {', '.join(columns)} FROM unparsed_answers{where} "
                                    "ORDER BY judge, query_id, item", (judge,) if judge is not None else (),
                                    columns)

    def unparsed_counts(self) -> list[tuple[str, str, int, int]]:
        """Per judge with an unparsed answer, by judge: ``(judge, model, unparsed, answers)``, ``answers`` all the
        judge's answers (its labels or verdicts, and the unparsed ones). Empty for a file without the table."""
        if "unparsed_answers" not in self._tables:
            return []
        rows = self._connection.execute(
            "SELECT judge, group_concat(DISTINCT model), COUNT(*) FROM unparsed_answers GROUP BY judge "
            "ORDER BY judge").fetchall()
        counts = []
        for judge, model, unparsed in rows:
            parsed = self._connection.execute("SELECT COUNT(*) FROM labels WHERE method = ?", (judge,)).fetchone()[0]
            if not parsed and "verdicts" in self._tables and "/" in judge:
                name, reference = judge.split("/", 1)
                parsed = self._connection.execute("SELECT COUNT(*) FROM verdicts WHERE judge = ? AND reference = ?",
                                                  (name, reference)).fetchone()[0]
            counts.append((judge, str(model).replace(",", ", "), int(unparsed), int(parsed) + int(unparsed)))
        return counts

    def counted_as_no(self) -> list[tuple[str, str, int, int]]:
        """The replies an older rageval could not read and stored as No: yes/no LLM relevance labels of 0 and LLM
        judge verdicts whose evidence says "(neither Yes nor No: counted as No)". Per judge (label method, or
        ``llm/<reference>``), by judge: ``(judge, model, counted as No, answers)``; empty for a run without any.
        Unlike :meth:`unparsed_counts` these are in the run's measures (as not relevant / No). Remembered per
        version of the file (:func:`rageval.store.files.remembered_summary`)."""
        marker = "%(neither Yes nor No: counted as No)"
        connection = self._connection

        def model_of(evidence: str) -> str:
            return evidence.split(" replied '", 1)[0]

        def compute() -> list[list[Any]]:
            rows: list[list[Any]] = []
            if "label_evidence" in self._tables:
                for method in self._methods_of("label_evidence"):
                    if method_kind(method).name != LLM_RELEVANCE:  # the yes/no judge's legacy "counted as No"
                        continue
                    found = connection.execute("SELECT COUNT(*), MIN(evidence) FROM label_evidence WHERE method = ? "
                                               "AND evidence LIKE ?", (method, marker)).fetchone()
                    if found[0]:
                        answers = connection.execute("SELECT COUNT(*) FROM labels WHERE method = ?",
                                                     (method,)).fetchone()[0]
                        rows.append([method, model_of(found[1]), int(found[0]), int(answers)])
            if "verdicts" in self._tables:
                for reference, count, answers, evidence in connection.execute(
                        "SELECT reference, TOTAL(evidence LIKE ?), COUNT(*), MIN(CASE WHEN evidence LIKE ? THEN "
                        "evidence END) FROM verdicts WHERE judge = 'llm' GROUP BY reference ORDER BY reference",
                        (marker, marker)):
                    if count:
                        rows.append([f"llm/{reference}", model_of(evidence), int(count), int(answers)])
            return rows

        return [(str(j), str(m), int(n), int(a)) for j, m, n, a in remembered_summary(self.path, "counted_as_no:1",
                                                                                        compute)]
