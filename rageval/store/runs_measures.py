"""The measure reads of a run file: :class:`~rageval.store.runs.RunReader`'s per-query measure values, E2E scores, their
counts and moments (each in SQL, remembered per version of the file where a read walks a whole table).

A mixin of :class:`~rageval.store.runs.RunReader` (which opens and checks the file); every public read runs inside
:func:`~rageval.store.files.reading`, so a damaged file is one StoreError naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rageval.store.files import (
    ReaderParts,
    checked_reads,
    remembered_summary,
)
from rageval.store.schemas import RUN

if TYPE_CHECKING:  # pandas is imported by the readers that return frames: `rageval info` starts without it
    import pandas as pd

#: An SQL condition true for a finite number (false for NULL, +-inf and text: text sorts above every number).
_FINITE = "(value > -9e999 AND value < 9e999)"


@checked_reads(RUN)
class MeasureReads(ReaderParts):
    """The measure reads of :class:`~rageval.store.runs.RunReader` (its mixin)."""

    def measure_table(self) -> pd.DataFrame:
        """Per-query measure values: columns method, measure, query_id, value."""
        return self._frame("SELECT method, measure, query_id, value FROM measure_values")

    def measure_names(self) -> pd.DataFrame:
        """Every (method, measure) the run has per-query values of: columns method, measure, sorted. Read by
        skipping along the primary-key index (one short lookup per pair), not by scanning every value, and
        remembered per version of the file (:func:`rageval.store.files.remembered_summary`): the lookups touch
        leaf pages all over the index, 0.4 s on the shipped run when the file is not in the OS cache, and the
        Correlations and Compare pages read it first."""
        import pandas as pd

        pairs = remembered_summary(self.path, "measure_names:1", self._read_measure_names)
        return pd.DataFrame(pairs, columns=["method", "measure"])

    def _read_measure_names(self) -> list[tuple[str, str]]:
        pairs, connection = [], self._connection
        method = connection.execute("SELECT method FROM measure_values ORDER BY method LIMIT 1").fetchone()
        while method is not None:
            measure = connection.execute("SELECT measure FROM measure_values WHERE method = ? ORDER BY measure "
                                         "LIMIT 1", method).fetchone()
            while measure is not None:
                pairs.append((method[0], measure[0]))
                measure = connection.execute("SELECT measure FROM measure_values WHERE method = ? AND measure > ? "
                                             "ORDER BY measure LIMIT 1", (method[0], measure[0])).fetchone()
            method = connection.execute("SELECT method FROM measure_values WHERE method > ? ORDER BY method LIMIT 1",
                                        method).fetchone()
        return pairs

    def measure_values(self, method: str, measure: str) -> pd.DataFrame:
        """One measure's per-query values as stored (NULL or non-finite too): columns query_id, value. Reads
        only that (method, measure)'s rows, through the primary-key index."""
        return self._frame("SELECT query_id, value FROM measure_values WHERE method = ? AND measure = ?",
                           (method, measure))

    def measures_of(self, pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
        """The stored per-query values of several (method, measure) pairs in one read, each through the
        primary-key index: columns method, measure, query_id, value."""
        import pandas as pd

        if not pairs:
            return pd.DataFrame(columns=["method", "measure", "query_id", "value"])
        one = "SELECT method, measure, query_id, value FROM measure_values WHERE method = ? AND measure = ?"
        return self._frame(" UNION ALL ".join([one] * len(pairs)), [v for pair in pairs for v in pair])

    def e2e_scores(self, k: int) -> pd.DataFrame:
        """The E2E score of every query at ``k`` as stored: columns query_id, score."""
        return self._frame("SELECT query_id, score FROM e2e_outputs WHERE k = ?", (int(k),))

    def every_query_scored(self, k: int) -> bool:
        """Whether every query of the run has a finite E2E score at ``k`` (remembered per version of the file:
        :func:`rageval.store.files.remembered_summary`)."""
        connection, finite_score = self._connection, _FINITE.replace("value", "score")

        def compute() -> bool:
            queries = connection.execute("SELECT COUNT(*) FROM queries").fetchone()[0]
            return queries == connection.execute(
                f"SELECT COUNT(*) FROM e2e_outputs WHERE k = ? AND {finite_score} AND "
                "query_id IN (SELECT query_id FROM queries)", (int(k),)).fetchone()[0]

        return remembered_summary(self.path, f"every_query_scored:1:{int(k)}", compute)

    def measure_counts(self, pairs: Sequence[tuple[str, str]], k: int, every_query_scored: bool | None = None
                       ) -> pd.DataFrame:
        """For each (method, measure) of ``pairs``: ``stored`` values, ``finite`` ones, and ``scored``, the
        finite ones whose query has a finite E2E score at ``k`` (the n of a correlation with that score).
        Aggregated by SQLite over each pair's index range; when every query of the run has a finite E2E score at
        ``k`` (the usual run; :meth:`every_query_scored`, unless the caller knows), ``scored`` is ``finite`` and the
        counts are those of the run's remembered overview (:meth:`_measure_stats`): no read at all."""
        import pandas as pd

        if every_query_scored is None:
            every_query_scored = self.every_query_scored(k)
        if every_query_scored:  # no lookup at all: the counts of the remembered overview (_measure_stats)
            stats = {(row[0], row[1]): (int(row[2]) + int(row[5]), int(row[2])) for row in self._measure_stats()}
            rows = [(method, measure, *stats.get((method, measure), (0, 0))) for method, measure in pairs]
            frame = pd.DataFrame([(*row, row[3]) for row in rows], columns=["method", "measure", "stored", "finite",
                                                                             "scored"])
            return frame.astype({"stored": int, "finite": int, "scored": int})
        finite_score = _FINITE.replace("value", "score")
        scored = _FINITE if every_query_scored else (
            f"{_FINITE} AND query_id IN (SELECT query_id FROM e2e_outputs WHERE k = {int(k)} AND {finite_score})")
        rows = [(method, measure, *self._connection.execute(
            f"SELECT COUNT(*), TOTAL({_FINITE}), TOTAL({scored}) FROM measure_values WHERE method = ? AND measure = ?",
            (method, measure)).fetchone()) for method, measure in pairs]
        frame = pd.DataFrame(rows, columns=["method", "measure", "stored", "finite", "scored"])
        return frame.astype({"stored": int, "finite": int, "scored": int})

    def _measure_stats(self) -> list[list[Any]]:
        """Per (method, measure), in that order: [method, measure, n, mean, sum_sq, nonfinite], n / mean / sum_sq
        over its finite values, nonfinite the count of the others. One pass over ``measure_values`` (seconds at
        millions of rows), remembered per version of the file (:func:`rageval.store.files.remembered_summary`): the
        run overview of an unchanged run is not summed again, in this process nor the next."""
        def compute() -> list[list[Any]]:
            return [list(row) for row in self._connection.execute(
                f"SELECT method, measure, COUNT(CASE WHEN {_FINITE} THEN 1 END), AVG(CASE WHEN {_FINITE} THEN value "
                f"END), TOTAL(CASE WHEN {_FINITE} THEN value * value END), COUNT(CASE WHEN ({_FINITE}) IS NOT 1 THEN 1 "
                "END) FROM measure_values GROUP BY method, measure ORDER BY method, measure")]

        return remembered_summary(self.path, "measure_stats:1", compute)

    def measure_moments(self) -> pd.DataFrame:
        """Per (method, measure): n, mean and sum of squares of the per-query values (what the run overview needs,
        without loading every value; :meth:`_measure_stats`): columns method, measure, n, mean, sum_sq.
        Values that are NULL or not finite numbers (a file another tool wrote) are left out
        (:meth:`nonfinite_measure_counts` counts them)."""
        import pandas as pd

        rows = [row[:5] for row in self._measure_stats() if row[2] > 0]
        frame = pd.DataFrame(rows, columns=["method", "measure", "n", "mean", "sum_sq"])
        return frame.astype({"n": "int64", "mean": "float64", "sum_sq": "float64"})

    def nonfinite_measure_counts(self) -> dict[str, int]:
        """Label method -> how many of its per-query measure values are NULL, infinite or not numbers (only
        methods with any)."""
        counts: dict[str, int] = {}
        for method, _, _, _, _, nonfinite in self._measure_stats():
            if nonfinite:
                counts[method] = counts.get(method, 0) + int(nonfinite)
        return counts
