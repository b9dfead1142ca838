"""The run store: round trip, atomic writes, and clear errors for files it cannot read."""

from __future__ import annotations

import sqlite3

import pytest

from rageval.errors import StoreError
from rageval.store import (
    SCHEMA_VERSION,
    Correlation,
    DocOutput,
    E2EOutput,
    Label,
    LabelEvidence,
    MeasureValue,
    Run,
    RunReader,
    RunWriter,
    labels_as_qrels,
    list_runs,
    read_run,
    write_run,
)
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
        labels=[Label("erag:em", "nq:1", "p2", 0.0), Label("erag:em", "nq:1", "p1", 1.0),
                Label("gold", "nq:1", "p1", 1.0)],
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


def test_correlations_round_trip_with_undefined_coefficients(tmp_path):
    # Made-up numbers: only the storage is under test (nan = an undefined coefficient, stored as NULL).
    nan = float("nan")
    correlations = [Correlation(2, "erag:em", "RR@2", 1, nan, nan, nan, nan, nan, nan, 300, 0.95),
                    Correlation(1, "gold", "P@1", 40, 0.25, 0.1, 0.4, 0.3, 0.12, 0.45, 300, 0.95)]
    path = write_run(Run(**{**small_run().__dict__, "correlations": correlations}), tmp_path / "a.sqlite")
    with RunReader(path) as reader:
        table = reader.correlations()
        assert list(table.columns) == ["k", "method", "measure", "n", "tau", "tau_low", "tau_high", "rho", "rho_low",
                                       "rho_high", "n_resamples", "confidence"]
        assert table["k"].tolist() == [1, 2]  # sorted by k, method, measure
        assert table.iloc[0].to_dict() == {"k": 1, "method": "gold", "measure": "P@1", "n": 40, "tau": 0.25,
                                           "tau_low": 0.1, "tau_high": 0.4, "rho": 0.3, "rho_low": 0.12,
                                           "rho_high": 0.45, "n_resamples": 300, "confidence": 0.95}
        assert table.iloc[1][["tau", "rho_high"]].isna().all()
        assert reader.correlations(k=2)["method"].tolist() == ["erag:em"]
        assert reader.correlations(k=5).empty
    again = read_run(path).correlations  # sorted by k
    assert again[0] == correlations[1]
    assert (again[1].k, again[1].n) == (2, 1) and again[1].tau != again[1].tau
    assert RunReader(write_run(small_run(), tmp_path / "b.sqlite")).correlations().empty


def test_a_file_without_the_correlations_table_reads_none(tmp_path):
    # v2 files written before the table existed: still schema 2, the table reads as empty.
    path = write_run(small_run(), tmp_path / "a.sqlite")
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE correlations")
    with RunReader(path) as reader:
        assert reader.schema_version == SCHEMA_VERSION == 2
        assert reader.correlations().empty and reader.correlations(k=2).empty
        assert list(reader.correlations().columns)[:4] == ["k", "method", "measure", "n"]
    assert read_run(path).correlations == []


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
    with pytest.raises(StoreError, match=r"notes\.sqlite: not a rageval run file"):
        RunReader(text)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match=r"other\.sqlite: not a rageval run file"):
        RunReader(other)
    with pytest.raises(StoreError, match=r"missing\.sqlite: no such run file"):
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


@pytest.mark.parametrize("run", ["nq_open-bm25-gemma3_270m", "demo/nq_open-dense-gemma3_270m"])
def test_lean_llm_reteval_reads_equal_the_whole_tables_filtered(run):
    """The per-query and per-judge reads the dashboard uses (through the primary keys) give exactly the rows of
    the whole tables filtered with pandas, on the shipped runs (3-4 judges, 2 references, 3 k)."""
    from pathlib import Path

    import pandas as pd

    path = Path(__file__).resolve().parents[2] / "data" / "runs" / f"{run}.sqlite"
    with RunReader(path) as reader:
        verdicts, cases, semi = reader.verdicts(), reader.failure_cases(), reader.semi_gold_outputs()
        questions = reader.questions()
        assert reader.judges() == sorted(verdicts["judge"].unique()) and len(reader.judges()) >= 3
        order = {q: i for i, q in enumerate(questions["query_id"])}
        texts = dict(zip(questions["query_id"], questions["text"]))
        for query_id in list(order)[:: 37]:
            mine = verdicts[verdicts["query_id"] == query_id].drop(columns="query_id")
            expected = mine.sort_values(["k", "judge", "reference"]).reset_index(drop=True)
            pd.testing.assert_frame_equal(reader.query_verdicts(query_id), expected, check_dtype=False)
            mine = cases[cases["query_id"] == query_id].drop(columns="query_id")
            expected = mine.sort_values(["k", "judge", "category"]).reset_index(drop=True)
            pd.testing.assert_frame_equal(reader.query_failure_cases(query_id), expected, check_dtype=False)
            mine = semi[semi["query_id"] == query_id].drop(columns="query_id")
            pd.testing.assert_frame_equal(reader.query_semi_gold(query_id), mine.reset_index(drop=True),
                                          check_dtype=False)
        for judge in reader.judges():
            table = reader.failure_case_table(judge)
            mine = cases[cases["judge"] == judge].assign(text=lambda f: f["query_id"].map(texts),
                                                         order=lambda f: f["query_id"].map(order))
            expected = mine.sort_values(["k", "category", "order"])[["query_id", "text", "k", "category", "reason"]]
            pd.testing.assert_frame_equal(table, expected.reset_index(drop=True), check_dtype=False)
            at_5 = reader.failure_case_table(judge, 5)
            pd.testing.assert_frame_equal(at_5, table[table["k"] == 5].reset_index(drop=True), check_dtype=False)
            keys = ["query_id", "k", "category"]  # details=False: ordered in numpy, not by SQL
            pd.testing.assert_frame_equal(reader.failure_case_table(judge, details=False), table[keys],
                                          check_dtype=False)
            pd.testing.assert_frame_equal(reader.failure_case_table(judge, 5, details=False), at_5[keys],
                                          check_dtype=False)
        assert reader.query_verdicts("no-such-query").empty and reader.failure_case_table("no-such-judge").empty
        assert reader.failure_case_table("no-such-judge", details=False).empty


def test_failure_counts_are_remembered_and_equal_the_tables(tmp_path, monkeypatch):
    """aggregates.read_failure_counts on the shipped run: per (judge, k) the queries judged against the semi-gold
    answers and those with a recall (A-C) or LLM-retEval (D-F) failure, recounted with pandas; read twice, the
    second time from the remembered record (the shipped file is settled)."""
    import json
    from pathlib import Path

    from rageval.store import aggregates

    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path))
    path = Path(__file__).resolve().parents[2] / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"
    with RunReader(path) as reader:
        verdicts, cases = reader.verdicts(), reader.failure_cases()
        first = aggregates.read_failure_counts(reader)
        again = aggregates.read_failure_counts(reader)
    assert first.equals(again) and len(first) == verdicts.groupby(["judge", "k"]).ngroups
    record = json.loads((tmp_path / "run_summaries.json").read_text(encoding="utf-8"))
    assert any(key.startswith("summary:failure_counts:2|") for key in record)
    for row in first.itertuples():
        semi = verdicts[(verdicts["judge"] == row.judge) & (verdicts["k"] == row.k)
                        & (verdicts["reference"] == "semi_gold")]
        mine = cases[(cases["judge"] == row.judge) & (cases["k"] == row.k)]
        assert row.n == semi["query_id"].nunique()
        assert row.recall_failures == mine[mine["category"].isin(list("ABC"))]["query_id"].nunique()
        assert row.reteval_failures == mine[mine["category"].isin(list("DEF"))]["query_id"].nunique()
        for category in "DEF":  # issue 42: each of D, E, F, for the sentence that names what disagreed
            assert getattr(row, category.lower()) == mine[mine["category"] == category]["query_id"].nunique()


def test_run_writer_commits_a_transaction_or_none_of_it(tmp_path):
    path = write_run(small_run(), tmp_path / "a.sqlite")
    with sqlite3.connect(path) as connection:  # a file from before label_evidence: the writer creates it
        connection.execute("DROP TABLE label_evidence")
    connection.close()
    with pytest.raises(KeyboardInterrupt), RunWriter(path) as writer:
        writer.put_labels([Label("erag:f1", "nq:1", "p1", 0.5)], [])
        writer.replace_measure_values("erag:em", [])
        raise KeyboardInterrupt
    assert read_run(path).labels == small_run().labels
    assert read_run(path).measure_values == small_run().measure_values
    with RunWriter(path) as writer:
        writer.put_labels([Label("erag:f1", "nq:1", "p1", 0.5)], [LabelEvidence("erag:f1", "nq:1", "p1", "Röntgen")])
        writer.replace_measure_values("erag:em", [MeasureValue("erag:em", "RR@2", "nq:1", 1.0)])
        writer.update_settings(lambda settings: settings.update(notes="second"))
    run = read_run(path)
    assert Label("erag:f1", "nq:1", "p1", 0.5) in run.labels
    assert run.label_evidence == [LabelEvidence("erag:f1", "nq:1", "p1", "Röntgen")]
    assert run.measure_values == [MeasureValue("erag:em", "RR@2", "nq:1", 1.0)]
    assert run.settings == {**small_run().settings, "notes": "second"}
    with pytest.raises(StoreError, match="no such run file"):
        RunWriter(tmp_path / "missing.sqlite")
    assert not (tmp_path / "missing.sqlite").exists()


def test_the_summary_reads_equal_the_tables(tmp_path):
    path = write_run(small_run(), tmp_path / "a.sqlite")
    with RunReader(path) as reader:
        assert reader.query_count() == 1
        assert reader.label_shares() == [("erag:em", 0.5, 2), ("gold", 1.0, 1)]
        assert reader.e2e_mean(2) == (0.0, 1) and reader.e2e_mean(None) == (None, 0)
        assert reader.e2e_means() == [(2, 0.0, 1)]
        assert reader.measure_means() == [("erag:em", "RR@2", 0.5)]
        assert reader.semi_gold_verdict_counts() == [] and reader.failure_case_counts() == []
        assert reader.passages(["p1", "p9"]) == {"p1": small_run().passages[0]}
