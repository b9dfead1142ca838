"""The results document, exports and cost report, on a real HotpotQA run built with a deterministic reader."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
import scipy.stats

from rageval import correlations, results_doc
from rageval.cli import main
from rageval.corpus import build_corpus
from rageval.generation.base import FakeGenerator
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.paths import REPO_ROOT as REPO
from rageval.pipeline.config import EvaluateConfig
from rageval.pipeline.demo import load_demo_runs
from rageval.pipeline.run import evaluate_config
from rageval.pipeline.sources import ShippedData, shipped_queries
from rageval.reteval import recall_precision_f1
from rageval.store import RunReader, write_run
from rageval.text_metrics import contains_answer
from rageval.trec import read_trec_qrels

NUM_QUESTIONS = 16


def answer_reader(answers_by_question: dict[str, tuple[str, ...]]):
    """A stand-in RAG LLM: the first gold answer found in the prompt's final block (the passages given for the
    asked question), else "unknown"; judge/relevance prompts get "Yes" when the block contains an answer."""

    def rule(prompt: str) -> str:
        final = prompt.rsplit("\n\n", 1)[-1]
        question = re.findall(r"^Question: (.*)$", final, flags=re.M)[-1]
        answers = answers_by_question.get(question, ())
        if final.rstrip().endswith(("Relevant:", "Correct:")):
            return "Yes" if any(contains_answer(final, (a,)) for a in answers) else "No"
        context = final.rsplit("Question:", 1)[0]
        return next((a for a in answers if contains_answer(context, (a,))), "unknown")

    return rule


@pytest.fixture(scope="module")
def built_run(tmp_path_factory):
    """A HotpotQA run over the questions' own candidate paragraphs, with LLM-retEval, named as the demo run."""
    folder = tmp_path_factory.mktemp("runs")
    shipped = ShippedData(build_corpus())
    name = "hotpotqa-candidates-gemma3_270m"
    config = EvaluateConfig(dataset="hotpotqa", retriever="candidates", num_queries=NUM_QUESTIONS, k="1,3,5",
                            label_metrics="em,f1", reteval_ks="1,5", judges="em,token_f1,llm", rerank_check=True)
    questions = {q.text: q.answers for q in shipped_queries("hotpotqa", shipped, 0, NUM_QUESTIONS)}
    generator = CachedGenerator(FakeGenerator(answer_reader(questions), "fake:answer-reader/v1"),
                                LLMCache(folder / "llm.sqlite"))
    path = write_run(evaluate_config(config, generator, shipped=shipped, name=name), folder / "demo" / f"{name}.sqlite")
    return path


def test_correlation_at_k_matches_scipy(built_run):
    with RunReader(built_run) as reader:
        table = results_doc.read_correlation_table(reader, 5, n_resamples=50)
        measures, e2e = reader.measure_table(), reader.e2e_table()
    e2e5 = e2e[e2e["k"] == 5].set_index("query_id")["score"]
    for method, measure in (("erag:em", "P@5"), ("contains_answer", "nDCG@5"), ("erag:f1", "Hit@5")):
        values = measures[(measures["method"] == method) & (measures["measure"] == measure)]
        x, y = values["value"].to_numpy(), e2e5.loc[values["query_id"]].to_numpy()
        row = table[(table["method"] == method) & (table["measure"] == measure)].iloc[0]
        expected = scipy.stats.kendalltau(x, y).statistic
        assert row["n"] == NUM_QUESTIONS
        if np.isnan(expected):
            assert np.isnan(row["tau"])
        else:
            assert row["tau"] == pytest.approx(expected)
            assert row["rho"] == pytest.approx(scipy.stats.spearmanr(x, y).statistic)
    assert set(table["measure"]) <= {f"{m}@5" for m in ("P", "R", "AP", "RR", "nDCG", "Hit")}
    assert not set(table[table["method"] == "erag:f1"]["family"]) - {"P", "nDCG", "Hit"}  # graded labels


def test_best_measures_and_k_sweep(built_run):
    with RunReader(built_run) as reader:
        table = results_doc.read_correlation_table(reader, 5, n_resamples=50)
        best = correlations.best_measures(table, 5)
        sweep = results_doc.read_k_sweep(reader)
    for row in best.itertuples():
        assert row.tau == pytest.approx(table[table["method"] == row.method]["tau"].max())
    assert list(best["tau"]) == sorted(best["tau"], reverse=True)
    assert set(sweep["k"]) == {1, 3, 5}
    for method, group in sweep.groupby("method"):  # one measure family per method, chosen at the main k
        chosen = best.set_index("method").loc[method, "family"]
        assert set(group["measure"]) == {f"{chosen}@{k}" for k in group["k"]}


def test_reteval_tables_recompute_recall_independently(built_run):
    with RunReader(built_run) as reader:
        tables = results_doc.reteval_tables(reader)
        rankings = reader.rankings()
        gold = {q: reader.query(q).gold_passage_ids for q in rankings}
        cases = reader.failure_cases()
    assert set(tables) == {"em", "token_f1", "llm"}
    em = tables["em"].set_index("k")
    for k in (1, 5):
        recall = np.mean([recall_precision_f1(rankings[q].passage_ids, gold[q], k)[0] for q in rankings])
        assert em.loc[k, "recall"] == pytest.approx(recall)
        counted = cases[(cases["judge"] == "em") & (cases["k"] == k)]["category"].value_counts()
        for category in "ABCDEF":
            assert em.loc[k, category] == counted.get(category, 0)
        assert em.loc[k, "n"] == NUM_QUESTIONS


def test_results_markdown_is_built_from_the_runs(built_run, tmp_path):
    cost = {"run": str(built_run), "dataset": "hotpotqa", "retriever": "x", "num_queries": 2, "k": 5,
            "model": "fake", "device": "cpu", "threads": 2,
            "measurements": [{"configuration": "e2e", "prompts": 2, "batch_size": 1, "wall_s": 4.0,
                              "baseline_mb": 900, "peak_above_model_mb": 80.0, "device": "cpu"},
                             {"configuration": "erag-query", "prompts": 10, "batch_size": 5, "wall_s": 2.0,
                              "baseline_mb": 900, "peak_above_model_mb": 20.0, "device": "cpu", "cpu_s": 3.0}]}
    (tmp_path / "cost.json").write_text(json.dumps(cost))
    out = tmp_path / "results.md"
    code = main(["results", "--runs-dir", str(built_run.parent.parent), "--out", str(out),
                 "--cost", str(tmp_path / "cost.json")])
    assert code == 0
    text = out.read_text()
    with RunReader(built_run) as reader:
        best = correlations.best_measures(results_doc.read_correlation_table(reader, 5), 5)
    top = best.iloc[0]
    assert f"| {top['method']} | {top['measure']} | {top['n']} | {top['tau']:.3f} [" in text
    assert "## LLM-retEval Tables 1 and 2" in text and "**Judge `em`** (the default)" in text
    # Ratios computed from the cost file; CPU time where it was measured (not in this file's e2e row: "–").
    assert "| erag-query | 10 | 5 | 3.0 | – | 2.0 | 2.00 | 20 | 4.0 | 920 | 1.07 |" in text
    assert "### Why the paper's ratios differ" in text
    assert f"`demo/{built_run.name}` | hotpotqa | candidates | {NUM_QUESTIONS} |" in text


def test_results_without_demo_runs_names_the_folder(tmp_path, capsys):
    assert main(["results", "--runs-dir", str(tmp_path), "--out", str(tmp_path / "r.md")]) == 2
    assert f"{tmp_path}: none of the demo runs" in capsys.readouterr().err
    assert not (tmp_path / "r.md").exists()
    assert {d.name for d in load_demo_runs()} >= {"nq_open-bm25-gemma3_270m", "hotpotqa-candidates-gemma3_270m"}


def test_export_labels_csv_and_qrels_round_trip(built_run, tmp_path, capsys):
    assert main(["export", str(built_run), "--format", "qrels", "--method", "erag:em",
                 "--out", str(tmp_path / "erag.qrels")]) == 0
    qrels = read_trec_qrels(tmp_path / "erag.qrels")
    with RunReader(built_run) as reader:
        labels = reader.labels("erag:em")
        n_all = len(reader.labels())
    assert len(qrels) == len(labels) == NUM_QUESTIONS * 5
    assert dict(zip(zip(qrels["query_id"].astype(str), qrels["passage_id"].astype(str)), qrels["label"])) == \
        dict(zip(zip(labels["query_id"], labels["passage_id"]), labels["value"]))

    assert main(["export", str(built_run), "--out", str(tmp_path / "labels.csv")]) == 0
    with open(tmp_path / "labels.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == n_all and set(rows[0]) == {"method", "query_id", "passage_id", "rank", "value", "evidence"}
    relevance = [r for r in rows if r["method"] == "llm_relevance"]
    assert relevance and all("fake:answer-reader/v1 replied" in r["evidence"] for r in relevance)
    assert {r["rank"] for r in rows if r["method"] == "erag:em"} == {"1", "2", "3", "4", "5"}

    assert main(["export", str(built_run), "--what", "verdicts", "--out", str(tmp_path / "v.csv")]) == 0
    with open(tmp_path / "v.csv", newline="") as handle:
        verdicts = list(csv.DictReader(handle))
    assert {v["judge"] for v in verdicts} == {"em", "token_f1", "llm"} and all(v["evidence"] for v in verdicts)

    assert main(["export", str(built_run), "--what", "verdicts", "--format", "qrels", "--method", "erag:em",
                 "--out", str(tmp_path / "x")]) == 2
    assert main(["export", str(built_run), "--format", "qrels", "--method", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "no label method 'nope'" in capsys.readouterr().err


def test_cost_measurement_runs_each_configuration_in_a_fresh_process(tiny_model_dir, monkeypatch):
    import sys
    import types

    from rageval.erag.cost import measure_configuration

    # A spawned child re-runs the parent's __main__ file; after an AppTest in the same pytest process that is
    # app.py, which must not run in the child (the CLI's __main__ is rageval's own, so only tests need this).
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))

    erag_prompts = [["Question: a\nAnswer:", "Question: b\nAnswer:"], ["Question: c\nAnswer:", "Question: d\nAnswer:"]]
    e2e_prompts = ["Question: a b\nAnswer:", "Question: c d\nAnswer:"]
    document = measure_configuration("erag-document", erag_prompts, e2e_prompts, model=tiny_model_dir, threads=1)
    assert document.prompts == 4 and document.batch_size == 1 and document.wall_s > 0
    assert document.baseline_mb > 50 and document.peak_above_model_mb >= 0 and document.device == "cpu"
    with pytest.raises(ValueError, match="unknown configuration"):
        measure_configuration("fid", erag_prompts, e2e_prompts, model=tiny_model_dir)


def test_results_document_regenerates_from_the_shipped_runs(tmp_path, monkeypatch):
    """``rageval results`` over the shipped runs writes docs/results.md again, word for word but its date line:
    the document's order is the demo runs' (data/configs/demo_runs/order.txt), and every number comes from the
    run files."""
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "results.md"
    assert main(["results", "--out", str(out)]) == 0
    shipped = (REPO / "docs" / "results.md").read_text(encoding="utf-8").splitlines()
    written = out.read_text(encoding="utf-8").splitlines()
    date_line = re.compile(r"^_Generated by `rageval results` on \d{4}-\d{2}-\d{2} ")
    assert len(written) == len(shipped)
    differing = [(a, b) for a, b in zip(shipped, written) if a != b]
    assert all(date_line.match(a) and date_line.match(b) for a, b in differing), differing[:3]


def test_demo_run_folder_is_read_in_its_order_file(tmp_path):
    from rageval.errors import DataError
    from rageval.pipeline.demo import folder_configs

    for name in ("a.toml", "b.toml", "sub/c.toml", "z.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "order.txt").write_text("# first the sub-folder's\nsub/c.toml\n\nb.toml  # then b\n", encoding="utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in folder_configs(tmp_path)] == [
        "sub/c.toml", "b.toml", "a.toml", "z.toml"]
    (tmp_path / "order.txt").write_text("b.toml\nmissing.toml\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"order\.txt.*line 2.*no config 'missing\.toml'"):
        folder_configs(tmp_path)
