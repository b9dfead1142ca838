"""rageval.evaluate / rageval.open / rageval.Run: the names stay light to import, each table equals the run read
another way (pytrec_eval on the run's own labels and rankings, scipy's Kendall tau, the raw tables), and inputs
given as Python objects make the same run as the same inputs given as files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
import scipy.stats

import rageval
from rageval.errors import DataError, RagevalError, StoreError
from rageval.paths import REPO_ROOT
from rageval.store import RunReader
from tests.run_fixtures import make_small_run

SHIPPED = REPO_ROOT / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"


def test_import_rageval_loads_neither_the_api_nor_pandas():
    code = ("import json, sys, rageval; before = sorted(m for m in ('rageval.api', 'pandas', 'numpy', 'typing') "
            "if m in sys.modules); f = rageval.open; print(json.dumps([before, f.__module__, "
            "'rageval.api' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[], "rageval.api", True]


def test_public_names_are_the_api_module_names():
    from rageval import api

    assert (rageval.evaluate, rageval.open, rageval.Run) == (api.evaluate, api.open, api.Run)
    from rageval import Run, evaluate, open  # noqa: F401 - from-imports resolve through the module __getattr__
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        rageval.nothing  # noqa: B018


@pytest.fixture(scope="module")
def shipped():
    return rageval.open(SHIPPED)


def _binary_methods(labels: pd.DataFrame) -> list[str]:
    return sorted(m for m, values in labels.groupby("method")["value"] if set(values.unique()) <= {0.0, 1.0})


def test_measures_equal_pytrec_eval_on_the_runs_own_labels(shipped):
    """P@k and nDCG@k of every binary label method, recomputed by trec_eval's implementation with the run's labels
    as qrels and its stored rankings as the run (scores made strictly decreasing by rank)."""
    measures, labels = shipped.measures(), shipped.labels()
    with RunReader(shipped.path) as reader:
        rankings = {q: r.passage_ids for q, r in reader.rankings().items()}
    run = {q: {p: float(len(ids) - rank) for rank, p in enumerate(ids)} for q, ids in rankings.items()}
    methods = _binary_methods(labels)
    assert {"erag:em", "contains_answer", "gold"} <= set(methods)
    checked = 0
    for method in methods:
        rows = labels[labels["method"] == method]
        qrels: dict[str, dict[str, int]] = {}
        for query, passage, value in zip(rows["query_id"], rows["passage_id"], rows["value"]):
            qrels.setdefault(query, {})[passage] = int(value)
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "P_10", "ndcg_cut_10"}).evaluate(
            {q: run[q] for q in qrels})
        for ours, theirs in (("P@5", "P_5"), ("P@10", "P_10"), ("nDCG@10", "ndcg_cut_10")):
            values = measures[(measures["method"] == method) & (measures["measure"] == ours)]
            assert len(values) == len(reference), (method, ours)
            expected = [reference[q][theirs] for q in values["query_id"]]
            np.testing.assert_allclose(values["value"].to_numpy(), expected, atol=1e-12, err_msg=f"{method} {ours}")
            checked += len(values)
    assert checked > 3000


def test_stored_correlations_equal_scipy_kendall_tau(shipped):
    k = shipped.main_k
    table = shipped.correlations(k)
    assert set(table["source"]) == {"stored"} and set(table["k"]) == {k}
    measures = shipped.measures()
    e2e = shipped.queries().set_index("query_id")["e2e_score"]
    for row in table[table["measure"].isin([f"P@{k}", f"nDCG@{k}"])].itertuples():
        values = measures[(measures["method"] == row.method) & (measures["measure"] == row.measure)]
        tau = scipy.stats.kendalltau(values["value"], e2e.loc[values["query_id"]], variant="b").statistic
        assert row.n == len(values)
        assert row.tau == pytest.approx(tau, nan_ok=True, abs=1e-12), (row.method, row.measure)
        if np.isfinite(row.tau):
            assert row.tau_low <= row.tau <= row.tau_high


def test_correlations_of_a_run_that_stores_none_are_computed(tmp_path):
    path = make_small_run(tmp_path / "small.sqlite")
    small = rageval.open(path)
    table = small.correlations()
    assert len(table) and set(table["source"]) == {"computed"} and set(table["k"]) == {5}
    measures, e2e = small.measures(), small.queries().set_index("query_id")["e2e_score"]
    row = table[(table["method"] == "contains_answer") & (table["measure"] == "P@5")].iloc[0]
    values = measures[(measures["method"] == "contains_answer") & (measures["measure"] == "P@5")]
    expected = scipy.stats.kendalltau(values["value"], e2e.loc[values["query_id"]], variant="b").statistic
    assert row["tau"] == pytest.approx(expected, nan_ok=True) and row["n"] == 6


def test_failure_cases_are_the_stored_cases_with_their_questions(shipped):
    cases = shipped.failure_cases()
    with RunReader(shipped.path) as reader:
        raw = reader.failure_cases()
        texts = dict(zip(reader.query_table()["query_id"], reader.query_table()["text"]))
    assert len(cases) == len(raw) > 0
    key = ["judge", "query_id", "k", "category"]
    assert sorted(map(tuple, cases[key].values.tolist())) == sorted(map(tuple, raw[key].values.tolist()))
    assert (cases["text"] == cases["query_id"].map(texts)).all()
    only = shipped.failure_cases(judge="em", k=5)
    assert len(only) == ((raw["judge"] == "em") & (raw["k"] == 5)).sum()


def test_open_by_name_and_refusals(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    make_small_run(tmp_path / "mine.sqlite")
    assert rageval.open("mine").path == tmp_path / "mine.sqlite"
    with pytest.raises(RagevalError, match="no run of that name in"):
        rageval.open("no-such-run")
    (tmp_path / "notes.sqlite").write_text("not a database")
    with pytest.raises(StoreError, match=r"notes\.sqlite"):
        rageval.open(tmp_path / "notes.sqlite")


# --- evaluate: in-memory inputs against the same inputs as files, with the tests' tiny model ----------------------

QUERIES = [{"query_id": "q1", "text": "who wrote the origin of species", "answers": ["Charles Darwin"]},
           {"query_id": "q2", "text": "what is the capital of australia", "answers": ["Canberra"]}]
CORPUS = [{"passage_id": "p1", "title": "On the Origin of Species", "text": "A book by Charles Darwin."},
          {"passage_id": "p2", "title": "Canberra", "text": "Canberra is the capital city of Australia."},
          {"passage_id": "p3", "title": "Australia", "text": "Australia is a country in Oceania."}]
RUN = {"q1": {"p1": 2.0, "p3": 1.0, "p2": 0.5}, "q2": {"p3": 2.5, "p2": 1.5}}
QRELS = {"q1": {"p1": 1}, "q2": {"p2": 1, "p3": 0}}
SETTINGS = {"methods": ["erag", "e2e", "baselines"], "k": [1, 2], "label_metrics": "em", "max_new_tokens": 4,
            "llm_relevance": False}


def _as_files(folder) -> dict[str, str]:
    """The same inputs, written by hand in the formats docs/upload_format.md gives."""
    folder.mkdir()
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (folder / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in CORPUS))
    (folder / "run.trec").write_text("".join(f"{q} Q0 {p} {rank} {score} mine\n" for q, ranked in RUN.items()
                                             for rank, (p, score) in enumerate(ranked.items(), 1)))
    (folder / "gold.qrels").write_text("".join(f"{q} 0 {p} {rel}\n" for q, judged in QRELS.items()
                                               for p, rel in judged.items()))
    return {"queries": str(folder / "questions.jsonl"), "corpus": str(folder / "passages.jsonl"),
            "run": str(folder / "run.trec"), "qrels": str(folder / "gold.qrels")}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, tiny_model_dir):
    """The same evaluation from Python objects (a DataFrame of questions, a list of passages, dicts) and from
    files, with the tests' tiny random Gemma, into a runs folder of the test's own."""
    folder = tmp_path_factory.mktemp("api_evaluate")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGEVAL_RUNS_DIR", str(folder / "runs"))
        patch.setenv("RAGEVAL_CACHE_DIR", str(folder / "cache"))
        patch.setenv("OMP_NUM_THREADS", "1")
        patch.setenv("RAGEVAL_DTYPE_CHECK", "off")
        in_memory = rageval.evaluate(queries=pd.DataFrame(QUERIES), corpus=CORPUS, run=RUN, qrels=QRELS,
                                     model=str(tiny_model_dir), dataset="tiny", **SETTINGS)
        from_files = rageval.evaluate(**_as_files(folder / "files"), model=str(tiny_model_dir), dataset="tiny",
                                      out=folder / "from_files.sqlite", **SETTINGS)
    return in_memory, from_files, folder


def test_in_memory_inputs_make_the_run_files_make(two_runs):
    in_memory, from_files, folder = two_runs
    assert in_memory.path.parent == folder / "runs" and in_memory.path.name.startswith("tiny-in_memory-")
    for table in ("measures", "labels"):
        left, right = getattr(in_memory, table)(), getattr(from_files, table)()
        pd.testing.assert_frame_equal(left, right)
    assert set(in_memory.labels()["method"]) == {"erag:em", "qrels", "gold", "gold_page", "contains_answer"}
    left, right = in_memory.queries(), from_files.queries()
    pd.testing.assert_frame_equal(left.drop(columns="dataset"), right.drop(columns="dataset"))
    with RunReader(in_memory.path) as reader:
        assert {q: r.passage_ids for q, r in reader.rankings().items()} == {
            "q1": ("p1", "p3", "p2"), "q2": ("p3", "p2")}
        assert reader.e2e_ks() == [1, 2]
    assert in_memory.settings["command"].startswith("rageval.evaluate(queries=<DataFrame of 2 in memory>")


def test_a_bad_in_memory_record_is_named_and_nothing_is_written(tmp_path, monkeypatch, tiny_model_dir):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "runs"))
    bad = [QUERIES[0], {"query_id": "q2", "text": "what is the capital of australia", "answers": 7}]
    with pytest.raises(DataError) as raised:
        rageval.evaluate(queries=bad, corpus=CORPUS, run=RUN, model=str(tiny_model_dir), **SETTINGS)
    message = str(raised.value)
    assert message.startswith("queries= (in memory), row 1: field 'answers': expected a list of strings")
    assert "rageval-api-" not in message  # the temporary file is not named: it is gone
    with pytest.raises(RagevalError, match=r"run=: expected .* a dict must map each query id"):
        rageval.evaluate(queries=QUERIES, corpus=CORPUS, run={"q1": ["p1"]}, model=str(tiny_model_dir))
    with pytest.raises(RagevalError, match="unknown setting 'temprature'"):
        rageval.evaluate(queries=QUERIES, corpus=CORPUS, run=RUN, temprature=0.5)
    with pytest.raises(RagevalError, match="score: expected numbers"):
        rageval.evaluate(queries=QUERIES, corpus=CORPUS, run={"q1": {"p1": "high"}})
    assert not (tmp_path / "runs").exists()
