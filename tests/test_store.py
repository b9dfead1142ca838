"""The run store: round trip, atomic writes, and clear errors for files it cannot read."""

from __future__ import annotations

import sqlite3

import pytest

from rageval.errors import StoreError
from rageval.store import (SCHEMA_VERSION, DocOutput, E2EOutput, Label, MeasureValue, Run, RunReader,
                           labels_as_qrels, list_runs, write_run)
from rageval.types import Passage, Query, Ranking, ScoredPassage


def small_run(note: str = "first") -> Run:
    # Real NQ-open record: line 1 of data/nq_open/nq_open_oracle_psgs_w100.jsonl.gz (question and answer).
    query = Query("nq:1", "who got the first nobel prize in physics", ("Wilhelm Conrad Röntgen",), ("p1",), "nq_open")
    passages = [Passage("p1", "List of Nobel laureates in Physics",
                        "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen.", "nq_oracle"),
                Passage("p2", "Nobel Prize", "The prizes are awarded in Stockholm <b>every</b> year.", "wiki18")]
    ranking = Ranking("nq:1", (ScoredPassage("p2", 7.5), ScoredPassage("p1", 7.25)))
    return Run(
        settings={"dataset": "nq_open", "k": 2, "notes": note},
        queries=[query], passages=passages, rankings=[ranking],
        doc_outputs=[DocOutput("nq:1", "p2", "Stockholm"), DocOutput("nq:1", "p1", "Wilhelm Conrad Röntgen")],
        labels=[Label("erag:em", "nq:1", "p2", 0.0), Label("erag:em", "nq:1", "p1", 1.0), Label("gold", "nq:1", "p1", 1.0)],
        e2e_outputs=[E2EOutput("nq:1", 2, "Röntgen", 0.0)],
        measure_values=[MeasureValue("erag:em", "RR@2", "nq:1", 0.5)],
    )


def test_round_trip(tmp_path):
    path = write_run(small_run(), tmp_path / "runs" / "a.sqlite")
    with RunReader(path) as reader:
        assert reader.settings() == {"dataset": "nq_open", "k": 2, "notes": "first"}
        assert reader.counts() == {"queries": 1, "passages": 2, "rankings": 2, "doc_outputs": 2, "labels": 3,
                                   "e2e_outputs": 1}
        assert reader.query("nq:1").answers == ("Wilhelm Conrad Röntgen",)
        table = reader.ranking_table("nq:1")
        assert list(table["passage_id"]) == ["p2", "p1"]
        assert list(table["erag:em"]) == [0.0, 1.0]
        assert table["gold"].isna().tolist() == [True, False]
        assert table["text"][0].endswith("<b>every</b> year.")  # stored verbatim; escaping is the UI's job
        assert reader.e2e_output("nq:1") == E2EOutput("nq:1", 2, "Röntgen", 0.0)
        assert reader.rankings()["nq:1"].passage_ids == ("p2", "p1")
        assert labels_as_qrels(reader.labels(), "erag:em") == {"nq:1": {"p2": 0.0, "p1": 1.0}}
        assert reader.measure_table().to_dict("records") == [
            {"method": "erag:em", "measure": "RR@2", "query_id": "nq:1", "value": 0.5}]
        with pytest.raises(StoreError, match="no query 'nq:9'"):
            reader.query("nq:9")


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = write_run(small_run("first"), tmp_path / "a.sqlite")
    broken = small_run("second")
    broken = Run(**{**broken.__dict__, "labels": [Label("erag:em", "nq:1", "p1", 1.0)] * 2})  # duplicate key
    with pytest.raises(sqlite3.IntegrityError):
        write_run(broken, path)
    with RunReader(path) as reader:
        assert reader.settings()["notes"] == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["a.sqlite"]


def test_newer_schema_is_refused_with_both_versions(tmp_path):
    path = write_run(small_run(), tmp_path / "a.sqlite")
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match=rf"a\.sqlite: run schema version {SCHEMA_VERSION + 1} is newer .*"
                                          rf"\({SCHEMA_VERSION}\)"):
        RunReader(path)


def test_files_that_are_not_runs(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("just text, not a database\n" * 100)
    with pytest.raises(StoreError, match="notes.sqlite: not a rageval run file"):
        RunReader(text)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="other.sqlite: not a rageval run file"):
        RunReader(other)
    with pytest.raises(StoreError, match="missing.sqlite: no such run file"):
        RunReader(tmp_path / "missing.sqlite")


def test_list_runs_newest_first(tmp_path):
    import os

    older = write_run(small_run(), tmp_path / "older.sqlite")
    newer = write_run(small_run(), tmp_path / "newer.sqlite")
    os.utime(older, (1_000_000, 1_000_000))
    assert list_runs(tmp_path) == [newer, older]
    nested = write_run(small_run(), tmp_path / "retrieval" / "nested.sqlite")
    assert list_runs(tmp_path) == [newer, older, nested]  # sub-folder runs come after, even when newer
    assert list_runs(tmp_path / "absent") == []
