"""``rageval.store.text.text_window``: a long text read a part at a time, every character once, whatever its UTF-8
width; the ``substr`` fallback for files that cannot be read incrementally; and the run reader built on it."""

from __future__ import annotations

import sqlite3

import pytest

from rageval.store import RunReader
from rageval.store.text import text_window
from tests import odd_runs

# 1-, 2-, 3- and 4-byte characters, so part boundaries fall inside characters.
TEXT = "".join(f"a{i}é€😀 " for i in range(300))


def starting_at(text: str, first: int, stop: int) -> str:
    """The characters of ``text`` whose first UTF-8 byte lies in ``[first, stop)``."""
    chosen, offset = [], 0
    for character in text:
        if first <= offset < stop:
            chosen.append(character)
        offset += len(character.encode())
    return "".join(chosen)


def parts(connection, table: str, size: int) -> list[str]:
    found, start, pieces = text_window(connection, table, "id = ?", ("x",), 0, size), 0, []
    while found and start < found[1]:
        found = text_window(connection, table, "id = ?", ("x",), start, size)
        pieces.append(found[0])
        start += size
    return pieces


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 1000, 100_000])
def test_parts_of_utf8_bytes_show_every_character_once(size):
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (id TEXT PRIMARY KEY, text TEXT)")
    connection.execute("INSERT INTO t VALUES ('x', ?)", (TEXT,))
    total = text_window(connection, "t", "id = ?", ("x",), 0, size)[1]
    assert total == len(TEXT.encode("utf-8"))  # sizes in UTF-8 bytes
    pieces = parts(connection, "t", size)
    assert "".join(pieces) == TEXT and len(pieces) == -(-total // size)
    assert pieces[1 % len(pieces)] == starting_at(TEXT, size * (1 % len(pieces)), size * (1 % len(pieces) + 1))
    assert all(len(p.encode()) <= size + 3 for p in pieces)  # a part is its bytes and at most one cut character


def test_a_table_without_rowids_is_read_with_substr_in_characters():
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (id TEXT PRIMARY KEY, text TEXT) WITHOUT ROWID")
    connection.execute("INSERT INTO t VALUES ('x', ?)", (TEXT,))
    assert text_window(connection, "t", "id = ?", ("x",), 0, 10) == (TEXT[:10], len(TEXT))
    assert "".join(parts(connection, "t", 7)) == TEXT


def test_absent_rows_and_null_texts_are_none():
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (id TEXT PRIMARY KEY, text TEXT)")
    connection.execute("INSERT INTO t VALUES ('x', NULL)")
    assert text_window(connection, "t", "id = ?", ("x",), 0, 10) is None
    assert text_window(connection, "t", "id = ?", ("y",), 0, 10) is None


def test_the_run_reader_previews_each_ranked_passage_and_keeps_missing_ones(tmp_path):
    path = tmp_path / "run.sqlite"
    gone = odd_runs.without_passages(path, n=1)
    with RunReader(path) as reader:
        whole = reader.ranking_table(odd_runs.QUERY)
        preview = reader.ranking_table(odd_runs.QUERY, preview=20)
        texts = dict(zip(whole["passage_id"], whole["text"]))
        assert list(preview["passage_id"]) == list(whole["passage_id"]) == odd_runs.ranked_ids(path)
        assert preview["text"].isna().tolist() == [True, False, False, False, False]
        assert preview["passage_id"][0] == gone[0]
        for passage_id, text, size in zip(preview["passage_id"][1:], preview["text"][1:], preview["text_size"][1:]):
            assert text == starting_at(texts[passage_id], 0, 20)
            assert size == len(texts[passage_id].encode())
            assert reader.passage_text(passage_id, 20, 10**9)[0] == starting_at(texts[passage_id], 20, 10**9)
        assert reader.passage_text(gone[0], 0, 10) is None
