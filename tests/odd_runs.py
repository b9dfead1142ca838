"""Run files with odd data, as another tool (or a damaged write) might leave them: the good fixture run of
``tests/run_fixtures.py`` edited with sqlite3. Each builder says what it changed, so the page tests can assert the
counts the warnings must name.

``python -m tests.odd_runs measure RUNS_DIR PAGE [QUERY]`` renders one page (AppTest) on the runs in ``RUNS_DIR``
in this fresh process and prints its peak memory as JSON (``ru_maxrss`` of the process before and after the
render, and tracemalloc's peak during it): the big-passage test compares a run holding a huge passage with the
same run without it.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import sys
import tracemalloc
from pathlib import Path

from tests.run_fixtures import make_small_run

REPO = Path(__file__).resolve().parent.parent
#: The query every builder edits (its ranking is :func:`tests.run_fixtures._ranking_ids` of index 0).
QUERY = "nq:0"
BIG_TOKEN_CHARS = 11  # "<000000042>"


def ranked_ids(path: Path, query_id: str = QUERY) -> list[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT passage_id FROM rankings WHERE query_id = ? ORDER BY rank", (query_id,))
        return [r[0] for r in rows]


def _edit(path: Path, sql: str, params: tuple = ()) -> None:
    connection = sqlite3.connect(path)
    try:
        with connection:
            if params:
                connection.execute(sql, params)
            else:
                connection.executescript(sql)
    finally:
        connection.close()


def without_passages(path: Path, n: int = 2) -> list[str]:
    """Delete the first ``n`` ranked passages of :data:`QUERY` from the ``passages`` table (their ranking rows,
    labels and outputs stay); returns their ids."""
    make_small_run(path)
    gone = ranked_ids(path)[:n]
    _edit(path, f"DELETE FROM passages WHERE passage_id IN ({','.join('?' * n)})", tuple(gone))
    return gone


def with_negative_labels(path: Path, method: str = "erag:em", n: int = 2) -> list[str]:
    """Set ``method``'s labels of the first ``n`` ranked passages of :data:`QUERY` to -1; returns their ids."""
    make_small_run(path)
    changed = ranked_ids(path)[:n]
    _edit(path, f"UPDATE labels SET value = -1 WHERE method = ? AND query_id = ? AND passage_id IN "
                f"({','.join('?' * n)})", (method, QUERY, *changed))
    return changed


def with_duplicate_rankings(path: Path) -> int:
    """Rebuild ``rankings`` without its primary key (as another tool may write it; its columns still NOT NULL, as
    the store's shape check requires) and add two duplicates for
    :data:`QUERY`: rank 1 stored twice, and the rank-2 passage again at rank 6. Returns the rows added (2)."""
    make_small_run(path)
    _edit(path, f"""
        CREATE TABLE loose (query_id TEXT NOT NULL, rank INTEGER NOT NULL, passage_id TEXT NOT NULL,
                            score REAL NOT NULL);
        INSERT INTO loose SELECT query_id, rank, passage_id, score FROM rankings;
        INSERT INTO loose SELECT query_id, rank, passage_id, score FROM rankings
            WHERE query_id = '{QUERY}' AND rank = 1;
        INSERT INTO loose SELECT query_id, 6, passage_id, score - 5 FROM rankings
            WHERE query_id = '{QUERY}' AND rank = 2;
        DROP TABLE rankings;
        ALTER TABLE loose RENAME TO rankings;""")
    return 2


def with_nonfinite_measures(path: Path) -> dict[tuple[str, str], int]:
    """Rebuild ``measure_values`` with a nullable ``value`` and store, for every method and measure, NULL for query nq:1
    and +inf for nq:2, and -inf for nq:3 under ``gold`` only (SQLite keeps inf; a NaN is stored as NULL).
    Returns the values changed per (method, measure)."""
    make_small_run(path)
    _edit(path, """
        CREATE TABLE loose (method TEXT NOT NULL, measure TEXT NOT NULL, query_id TEXT NOT NULL, value REAL);
        INSERT INTO loose SELECT method, measure, query_id, value FROM measure_values;
        DROP TABLE measure_values;
        ALTER TABLE loose RENAME TO measure_values;
        UPDATE measure_values SET value = NULL WHERE query_id = 'nq:1';
        UPDATE measure_values SET value = 9e999 WHERE query_id = 'nq:2';
        UPDATE measure_values SET value = -9e999 WHERE query_id = 'nq:3' AND method = 'gold';""")
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT method, measure, COUNT(*) FROM measure_values WHERE value IS NULL OR "
                                  "abs(value) = 9e999 GROUP BY method, measure").fetchall()
    return {(method, measure): n for method, measure, n in rows}


def big_text(start: int, stop: int) -> str:
    """Characters ``[start, stop)`` of the big passage: ``<000000000><000000001>...``, tokens of
    :data:`BIG_TOKEN_CHARS` ASCII characters, computed without building the whole text."""
    first, last = start // BIG_TOKEN_CHARS, -(-stop // BIG_TOKEN_CHARS)
    tokens = "".join(f"<{i:09d}>" for i in range(first, last))
    offset = first * BIG_TOKEN_CHARS
    return tokens[start - offset:stop - offset]


def with_big_passage(path: Path, size: int = 50 * 2**20) -> tuple[str, int]:
    """Replace the text of :data:`QUERY`'s rank-1 passage with :func:`big_text` of about ``size`` characters
    (ASCII, so as many bytes); returns (its id, its length)."""
    make_small_run(path)
    passage_id = ranked_ids(path)[0]
    length = size // BIG_TOKEN_CHARS * BIG_TOKEN_CHARS
    _edit(path, "UPDATE passages SET text = ? WHERE passage_id = ?", (big_text(0, length), passage_id))
    return passage_id, length


def measure(runs: str, page: str, query_id: str = QUERY) -> dict:
    """Render ``page`` once (AppTest, from app.py) on the runs in ``runs``: peak memory and what it showed."""
    from streamlit.testing.v1 import AppTest

    os.environ["RAGEVAL_RUNS_DIR"] = runs
    os.environ["RAGEVAL_SHIPPED_RUNS_DIR"] = ""
    import ui.data  # noqa: F401  (imports before the baseline)

    AppTest.from_file(str(REPO / "app.py"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    app.query_params["query"] = query_id
    app.switch_page(page)
    app.run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"exceptions": [e.value for e in app.exception], "maxrss_before_kib": before, "maxrss_kib": after,
            "tracemalloc_peak_bytes": peak, "text_chars": sum(len(t.value) for t in app.text)}


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] != "measure":
        sys.exit("usage: python -m tests.odd_runs measure RUNS_DIR PAGE [QUERY]")
    print(json.dumps(measure(*sys.argv[2:])))
