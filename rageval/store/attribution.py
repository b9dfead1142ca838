"""The attributed-answer run file: one SQLite file per HAGRID run (issue 5; read by the dashboard's citation views).

Tables (``scenario`` is G, RTG-gold, ..., or ``gold-answer`` for HAGRID's own answers):

* ``meta``: schema version and the run's settings (JSON: plan, models, prompts, NLI model and its test report).
* ``queries``: query id, text, relevant (quote) passage ids.
* ``input_passages``: per (scenario, query) the passages the generator saw, under the number answers cite.
* ``answers`` / ``statements``: answer text and human labels; statements with their citations, the human
  sentence label, AutoAIS_cit's per-statement verdict and ALCE's joint-premise verdict.
* ``entailment``: the full statement × passage matrix p(passage ⊨ statement) of every answer.
* ``answer_metrics``: every metric value of every answer (long format).
* ``retrieval_rankings`` / ``retrieval_measures`` / ``subqueries``: the RTG retrieval systems (Table 3).
* ``agreement``: Pearson / Spearman / accuracy of the automatic scores against HAGRID's human labels.

Written atomically (:func:`rageval.store.write_sqlite_atomically`); the SQLite ``application_id`` marks the kind.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rageval.errors import StoreError
from rageval.store.files import (
    check_settings,
    check_shape,
    checked_reads,
    is_integer,
    json_object,
    list_of,
    object_of,
    open_readonly,
    schema_shape,
    stamp,
    write_sqlite_atomically,
)
from rageval.store.schemas import ATTRIBUTION, ATTRIBUTION_SCHEMA
from rageval.store.text import text_window

SCHEMA_VERSION = ATTRIBUTION.version



@dataclass
class AttributionRun:
    """Everything an attributed-answer run stores (see the module docstring); ``scored`` holds ScoredAnswers."""

    settings: Mapping[str, Any]
    queries: Sequence[tuple[str, str, Sequence[str]]]  # (query id, text, relevant passage ids)
    scored: Sequence[Any]  # rageval.attribution.scoring.ScoredAnswer
    retrieval_rankings: Mapping[str, Mapping[str, Sequence[tuple[str, float]]]] = field(default_factory=dict)
    retrieval_measures: pd.DataFrame | None = None  # system, query_id, measure, value
    subqueries: Mapping[str, Sequence[str]] = field(default_factory=dict)
    agreement: Sequence[Any] = ()  # rageval.attribution.scoring.Agreement


def _nullable(value: float) -> float | None:
    return None if value != value else float(value)  # NaN -> NULL


def write_attribution_run(run: AttributionRun, path: str | os.PathLike) -> Path:
    """Write ``run`` to ``path`` atomically."""
    return write_sqlite_atomically(path, lambda connection: _fill(connection, run))


def _fill(connection: sqlite3.Connection, run: AttributionRun) -> None:
    stamp(connection, ATTRIBUTION)
    connection.executescript(ATTRIBUTION_SCHEMA)
    connection.executemany("INSERT INTO meta VALUES (?, ?)", [
        ("schema_version", str(SCHEMA_VERSION)), ("settings", json.dumps(dict(run.settings), sort_keys=True))])
    connection.executemany("INSERT INTO queries VALUES (?, ?, ?)",
                           [(qid, text, json.dumps(list(relevant))) for qid, text, relevant in run.queries])
    seen_inputs: set[tuple[str, str]] = set()
    for scored in run.scored:
        answer = scored.answer
        key = (answer.scenario, answer.query_id, answer.answer_id)
        if (answer.scenario, answer.query_id) not in seen_inputs:
            seen_inputs.add((answer.scenario, answer.query_id))
            connection.executemany("INSERT INTO input_passages VALUES (?, ?, ?, ?, ?, ?)", [
                (answer.scenario, answer.query_id, p.number, p.passage_id, p.title, p.text)
                for p in answer.passages.values()])
        connection.execute("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                           (*key, answer.text, answer.human_attributable, answer.human_informative))
        citations = scored.citations
        connection.executemany("INSERT INTO statements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
            (*key, index, s.text, s.raw, json.dumps(list(s.citations)), s.human_attributable,
             citations.statement_supported[index] if citations else None,
             citations.statement_recall[index] if citations else None)
            for index, s in enumerate(answer.statements)])
        numbers = sorted(answer.passages)
        connection.executemany("INSERT INTO entailment VALUES (?, ?, ?, ?, ?, ?)", [
            (*key, index, numbers[j], float(p)) for index, row in enumerate(scored.probabilities)
            for j, p in enumerate(row)])
        connection.executemany("INSERT INTO answer_metrics VALUES (?, ?, ?, ?, ?)",
                               [(*key, metric, float(value)) for metric, value in scored.metrics.items()])
    connection.executemany("INSERT INTO retrieval_rankings VALUES (?, ?, ?, ?, ?)", [
        (system, qid, rank, pid, float(score)) for system, per_query in run.retrieval_rankings.items()
        for qid, ranked in per_query.items() for rank, (pid, score) in enumerate(ranked, start=1)])
    if run.retrieval_measures is not None:
        connection.executemany("INSERT INTO retrieval_measures VALUES (?, ?, ?, ?)",
                               run.retrieval_measures[["system", "query_id", "measure", "value"]]
                               .itertuples(index=False, name=None))
    connection.executemany("INSERT INTO subqueries VALUES (?, ?, ?)", [
        (qid, position, text) for qid, texts in run.subqueries.items() for position, text in enumerate(texts)])
    connection.executemany("INSERT INTO agreement VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        (a.level, a.score, a.n, _nullable(a.pearson), _nullable(a.spearman), _nullable(a.accuracy),
         _nullable(a.human_positive_rate), _nullable(a.model_positive_rate)) for a in run.agreement])


_SHAPE = schema_shape(ATTRIBUTION_SCHEMA)
#: The settings the views compute with, each with its JSON type in words and its test (see check_settings).
SETTINGS_TYPES = {
    "invalid_citations": ("an object of counts with a list of {line} objects",
                          object_of(citations=is_integer, answers=is_integer,
                                    first=list_of(object_of(line=lambda v: True)))),
    "rescored": ("an object (rageval attribution --rescore)",
                 object_of(command=lambda v: isinstance(v, str), previous_nli=lambda v: isinstance(v, str),
                           seconds=lambda v: isinstance(v, int | float), date=lambda v: isinstance(v, str),
                           kept=lambda v: isinstance(v, str))),
    "nli_threshold": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
}


@checked_reads(ATTRIBUTION)
class AttributionReader:
    """Read-only access to an attributed-answer run file; a read that fails on a damaged file raises
    :class:`StoreError` naming the file."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._connection = open_readonly(self.path, ATTRIBUTION, check_same_thread=False)
        try:
            check_shape(self._connection, self.path, ATTRIBUTION, _SHAPE, tuple(_SHAPE))
            self.settings()  # must parse: every view shows them
        except BaseException:
            self._connection.close()
            raise

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> AttributionReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def frame(self, table: str, where: str = "", params: Sequence[Any] = ()) -> pd.DataFrame:
        """Rows of one of the run's tables (``where``: an SQL condition with ``?`` parameters)."""
        if table not in {"queries", "input_passages", "answers", "statements", "entailment", "answer_metrics",
                         "retrieval_rankings", "retrieval_measures", "subqueries", "agreement"}:
            raise ValueError(f"unknown table {table!r}")
        sql = f"SELECT * FROM {table}" + (f" WHERE {where}" if where else "")
        return pd.read_sql_query(sql, self._connection, params=list(params))

    def input_passages(self, scenario: str, query_id: str, preview: int) -> pd.DataFrame:
        """The passages the generator saw for (scenario, query), by citation number: number, passage_id, title,
        text (its first ``preview`` bytes, :func:`rageval.store.text.text_window`: a huge passage is never loaded
        whole), text_size (its size in UTF-8 bytes; :meth:`input_passage_text` reads the rest)."""
        frame = pd.read_sql_query("SELECT number, passage_id, title FROM input_passages WHERE scenario = ? AND "
                                  "query_id = ? ORDER BY number", self._connection, params=[scenario, query_id])
        windows = [self.input_passage_text(scenario, query_id, int(n), 0, preview) for n in frame["number"]]
        return frame.assign(text=[w[0] if w else "" for w in windows],
                            text_size=pd.array([w[1] if w else 0 for w in windows], dtype="Int64"))

    def input_passage_text(self, scenario: str, query_id: str, number: int, start: int,
                           size: int) -> tuple[str, int] | None:
        """``(piece, total)`` of one input passage's text (:func:`rageval.store.text.text_window`)."""
        return text_window(self._connection, "input_passages", "scenario = ? AND query_id = ? AND number = ?",
                           (scenario, query_id, int(number)), start, size)

    def settings(self) -> dict[str, Any]:
        row = self._connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        return check_settings(json_object(row[0], self.path, ATTRIBUTION), self.path, ATTRIBUTION,
                              SETTINGS_TYPES) if row else {}

    def scenarios(self) -> list[str]:
        return [r[0] for r in self._connection.execute("SELECT DISTINCT scenario FROM answers ORDER BY rowid")]

    def metric_means(self) -> pd.DataFrame:
        """Mean of every metric per scenario over all its answers (empty answers count, with 0 citation scores)."""
        return pd.read_sql_query("SELECT scenario, metric, AVG(value) AS value, COUNT(*) AS answers "
                                 "FROM answer_metrics GROUP BY scenario, metric", self._connection)

    def entailment_matrix(self, scenario: str, query_id: str, answer_id: str) -> pd.DataFrame:
        """The statement × passage matrix of one answer (index: statement number, columns: passage number)."""
        frame = self.frame("entailment", "scenario = ? AND query_id = ? AND answer_id = ?",
                           (scenario, query_id, answer_id))
        return frame.pivot(index="statement", columns="number", values="probability")

    def summary(self) -> dict[str, Any]:
        """What the file holds (:func:`attribution_summary`); StoreError naming the file for an incomplete one."""
        connection = self._connection
        try:
            statements, pairs, answers = (connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                                          for table in ("statements", "entailment", "answers"))
            metrics = {metric: float(value) for metric, value in connection.execute(
                "SELECT metric, AVG(value) FROM answer_metrics GROUP BY metric ORDER BY metric")}
            scenarios: dict[str, dict[str, float]] = {}
            for scenario, metric, value in connection.execute(
                    "SELECT scenario, metric, AVG(value) FROM answer_metrics GROUP BY scenario, metric "
                    "ORDER BY scenario, metric"):
                scenarios.setdefault(scenario, {})[metric] = float(value)
            invalid = connection.execute("SELECT COALESCE(SUM(value), 0) FROM answer_metrics "
                                         "WHERE metric = 'invalid_citations'").fetchone()[0]
        except (sqlite3.Error, OSError, TypeError, ValueError) as error:
            raise StoreError(f"{self.path}: not a complete attribution run file ({error})") from error
        return {"statements": int(statements), "pairs": int(pairs), "answers": int(answers), "metrics": metrics,
                "scenarios": scenarios, "invalid_citations": int(invalid)}


def agreement_rows(agreements: Sequence[Any]) -> list[dict[str, Any]]:
    return [asdict(a) for a in agreements]


def attribution_summary(path: str | os.PathLike) -> dict[str, Any]:
    """What an attribution run file holds: ``{"statements": n, "pairs": n, "answers": n, "metrics": {name: mean}}``.

    ``pairs`` counts the statement × passage cells of the entailment matrix (each statement times its answer's
    input passages); ``metrics`` averages every stored metric over all answers of all scenarios that have it (per
    scenario under ``"scenarios"``); ``invalid_citations`` sums the citations that named no input passage. Raises
    :class:`StoreError` for anything that is not a readable attribution run file.
    """
    with AttributionReader(path) as reader:
        return reader.summary()
