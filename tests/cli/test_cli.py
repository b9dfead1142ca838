"""The ``rageval`` command line end to end: real corpus, real BM25 index, a tiny local model, a run file."""

from __future__ import annotations

import pytest

from rageval.cli import main
from rageval.store import RunReader


@pytest.fixture(scope="module")
def cli_cache(tmp_path_factory, tiny_model_dir):
    """One cache folder (BM25 index, LLM-call cache) for every CLI test of this module."""
    return tmp_path_factory.mktemp("cli-cache")


def run_cli(args, cache, monkeypatch, capsys):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(cache))
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_erag_writes_a_run_and_a_rerun_costs_no_llm_call(cli_cache, tiny_model_dir, tmp_path, monkeypatch, capsys):
    args = ["erag", "--num-queries", 2, "--k", 3, "--model", tiny_model_dir, "--max-new-tokens", 3,
            "--out", tmp_path / "run.sqlite"]
    code, out, err = run_cli(args, cli_cache, monkeypatch, capsys)
    assert code == 0, err
    assert "erag" in err and "6/6" in err and "e2e" in err and "2/2" in err  # each stage's bar reached its total
    assert f"wrote {tmp_path / 'run.sqlite'}" in out
    with RunReader(tmp_path / "run.sqlite") as reader:
        settings = reader.settings()
        assert settings["model_id"] == str(tiny_model_dir)
        assert settings["num_queries"] == 2 and settings["k"] == 3
        calls = settings["llm_calls"]  # 2 x 3 single-passage + 2 E2E
        assert (calls["cache_hits"], calls["cache_misses"]) == (0, 8)
        assert calls["by_stage"] == {"erag": {"calls": 6, "cached": 0, "new": 6},
                                     "e2e": {"calls": 2, "cached": 0, "new": 2}}
        assert reader.counts()["doc_outputs"] == 6 and reader.counts()["e2e_outputs"] == 2
        assert set(reader.label_methods()) == {"erag:em", "contains_answer", "gold", "gold_page"}
        # The first NQ-open test question, retrieved by BM25 over the real corpus: its gold passage ranks high.
        query = reader.query(reader.query_table()["query_id"][0])
        assert query.text == "who got the first nobel prize in physics"
        assert set(query.gold_passage_ids) & set(reader.ranking_table(query.query_id)["passage_id"])
        measures = set(reader.measure_table()["measure"])
        assert {"P@1", "P@3", "nDCG@3", "Rprec"} <= measures and not any(m.endswith("@5") for m in measures)  # k=3

    code, out, err = run_cli([*args[:-1], tmp_path / "again.sqlite"], cli_cache, monkeypatch, capsys)
    assert code == 0, err
    with RunReader(tmp_path / "again.sqlite") as reader:
        calls = reader.settings()["llm_calls"]
        assert (calls["cache_hits"], calls["cache_misses"]) == (8, 0)

    code, out, _ = run_cli(["info", tmp_path / "run.sqlite"], cli_cache, monkeypatch, capsys)
    assert code == 0 and "share of labels = 1 (erag:em)" in out and "E2E em" in out


def test_errors_are_one_clear_line(cli_cache, tmp_path, monkeypatch, capsys):
    code, _, err = run_cli(["erag", "--offset", 100000, "--out", tmp_path / "x.sqlite"], cli_cache, monkeypatch,
                           capsys)
    assert code == 2 and "rageval: error: no NQ-open queries in the slice offset=100000" in err
    not_a_run = tmp_path / "notes.sqlite"
    not_a_run.write_text("hello")
    code, _, err = run_cli(["info", not_a_run], cli_cache, monkeypatch, capsys)
    assert code == 2 and "notes.sqlite: not a rageval run file" in err
