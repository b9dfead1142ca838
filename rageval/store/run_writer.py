"""Writes into an existing run file in place, one transaction at a time: what a re-score job adds batch by batch
(labels and their evidence, the method's measure values and correlations, its provenance in the settings).

Not the atomic rewrite of :func:`rageval.store.write_run` (a whole new file renamed over the old one): results must
appear as they are produced, and a commit is what survives a kill. A killed writer leaves a "hot" rollback journal
beside the file, which the next read-write open rolls back (:func:`rageval.store.files.recover_hot_journal`), so a
reader sees every committed transaction and none of the one in flight.

Usage, one committed transaction (rolled back on any exception, ``KeyboardInterrupt`` included)::

    with RunWriter(path, timeout_s=60) as writer:
        writer.put_labels(labels, evidence)
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

from rageval.store.files import open_for_write
from rageval.store.records import Correlation, Label, LabelEvidence, MeasureValue, UnparsedAnswer
from rageval.store.schemas import CORRELATION_COLUMNS, RUN, RUN_SCHEMA, create_statement


class RunWriter:
    """One write transaction on the run file ``path``, in place (see the module docstring).

    Opening checks the file is a run file of a schema this rageval reads (:class:`~rageval.errors.StoreError`
    naming it otherwise; a missing file is never created); entering takes the write lock (``BEGIN IMMEDIATE``,
    waiting up to ``timeout_s`` for readers), leaving commits, or rolls back on an exception, and closes."""

    def __init__(self, path: str | os.PathLike, *, timeout_s: float = 30.0):
        self.path = Path(path)
        self._connection = open_for_write(self.path, RUN, timeout_s=timeout_s, isolation_level=None)

    def __enter__(self) -> Self:
        try:
            self._connection.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._connection.close()
            raise
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            self._connection.execute("ROLLBACK" if exc_type is not None else "COMMIT")
        finally:
            self._connection.close()

    def put_labels(self, labels: Sequence[Label], evidence: Sequence[LabelEvidence],
                   unparsed: Sequence[UnparsedAnswer] = ()) -> None:
        """Insert (or replace) labels and their evidence (the ``label_evidence`` table is created in a v1 file), and
        the judge's answers that could not be read (``unparsed_answers``, created where the file lacks it). An item
        is either labelled or unparsed: a new label removes the item's unparsed answer, an unparsed answer the
        item's label and evidence."""
        self._connection.execute(create_statement(RUN_SCHEMA, "label_evidence", if_not_exists=True))
        self._connection.execute(create_statement(RUN_SCHEMA, "unparsed_answers", if_not_exists=True))
        self._connection.executemany("DELETE FROM unparsed_answers WHERE judge = ? AND query_id = ? AND item = ?",
                                     [(x.method, x.query_id, x.passage_id) for x in labels])
        self._connection.executemany("INSERT OR REPLACE INTO labels VALUES (?, ?, ?, ?)",
                                     [(x.method, x.query_id, x.passage_id, float(x.value)) for x in labels])
        self._connection.executemany("INSERT OR REPLACE INTO label_evidence VALUES (?, ?, ?, ?)",
                                     [(e.method, e.query_id, e.passage_id, e.evidence) for e in evidence])
        for table in ("labels", "label_evidence"):
            self._connection.executemany(f"DELETE FROM {table} WHERE method = ? AND query_id = ? AND passage_id = ?",
                                         [(u.judge, u.query_id, u.item) for u in unparsed])
        self._connection.executemany("INSERT OR REPLACE INTO unparsed_answers VALUES (?, ?, ?, ?, ?)",
                                     [(u.judge, u.model, u.query_id, u.item, u.answer) for u in unparsed])

    def update_settings(self, change: Callable[[dict], None]) -> None:
        """Read the run's settings, let ``change`` edit them in place, and store them (read and written in this
        transaction, so two writers never lose each other's change)."""
        row = self._connection.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        settings = json.loads(row[0]) if row else {}
        change(settings)
        self._connection.execute("INSERT OR REPLACE INTO meta VALUES ('settings', ?)",
                                 (json.dumps(settings, sort_keys=True),))

    def replace_measure_values(self, method: str, values: Sequence[MeasureValue]) -> None:
        """Replace every stored measure value of ``method`` with ``values``."""
        self._connection.execute("DELETE FROM measure_values WHERE method = ?", (method,))
        self._connection.executemany("INSERT INTO measure_values VALUES (?, ?, ?, ?)",
                                     [(v.method, v.measure, v.query_id, v.value) for v in values])

    def replace_correlations(self, method: str, correlations: Sequence[Correlation]) -> None:
        """Replace every stored correlation of ``method`` with ``correlations``."""
        self._connection.execute("DELETE FROM correlations WHERE method = ?", (method,))
        self._connection.executemany(f"INSERT INTO correlations VALUES ({', '.join('?' * len(CORRELATION_COLUMNS))})",
                                     [dataclasses.astuple(c) for c in correlations])
