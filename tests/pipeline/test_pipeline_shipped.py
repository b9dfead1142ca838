"""Complete runs of shipped dataset slices (rageval.pipeline: a config with ``dataset`` and no files) with the fake
LLM behind the LLM-call cache, on real NQ-open and HotpotQA records, their round trip through the run store (schema
v2), the shipped demo run configs, and reading a schema-v1 file."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from dataclasses import asdict
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rageval.corpus import build_corpus
from rageval.erag.labels import ALL_METRICS
from rageval.erag.measures import is_graded_method, measure_names
from rageval.errors import DataError, RagevalError
from rageval.generation.base import FakeGenerator, first_capitalised_span
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.pipeline.config import EvaluateConfig
from rageval.pipeline.evaluate import parse_ks
from rageval.pipeline.run import evaluate_config
from rageval.pipeline.sources import SHIPPED_RETRIEVER_DESCRIPTIONS as RETRIEVER_DESCRIPTIONS
from rageval.pipeline.sources import ShippedData, load_shipped_inputs, shipped_queries
from rageval.prompts import ANSWER_JUDGE_FEW_SHOT, QA_FEW_SHOT, RELEVANCE_FEW_SHOT
from rageval.reteval import (
    GOLD_ANSWERS,
    JUDGE_NAMES,
    SEMI_GOLD,
    find_failure_cases,
    recall_precision_f1,
    reteval_table,
)
from rageval.retrieval.evaluate import hotpotqa_queries
from rageval.store import APPLICATION_ID, RunReader, Verdict, write_run
from rageval.types import Passage

NAME = "nq6-bm25-fake"
CONFIG = EvaluateConfig(dataset="nq_open", retriever="bm25", num_queries=6, k="1,3,5", reteval_ks="1,5",
                        rerank_check=True)
N, K, E2E_KS = 6, 5, (1, 3, 5)
SEMI_SAMPLES = CONFIG.semi_gold_samples
MODEL_ID = "fake:last-passage-span/v1"


def last_passage_span(prompt: str) -> str:
    """The fake LLM of these runs: the first capitalised span of the LAST passage in the prompt, so that its
    top-k answer changes with k (FakeGenerator's default reads the first passage, the same at every k). Asked a
    Yes/No question (the relevance and answer-judge prompts), it says Yes when a word of 4 letters or more of the
    question occurs in the rest of the block, else No: a judge that reads no Yes or No stores no label."""
    final = prompt.rsplit("\n\n", 1)[-1]
    if final.endswith(("Relevant:", "Correct:")):
        question, _, rest = final.partition("\n")
        words = {w for w in question.lower().split()[1:] if len(w) >= 4}
        return "Yes" if any(w in rest.lower() for w in words) else "No"
    passages = [line for line in final.splitlines() if line.startswith("Passage:")]
    return first_capitalised_span(passages[-1] if passages else prompt)


@pytest.fixture(scope="module")
def resources():
    return ShippedData(build_corpus())


@pytest.fixture(scope="module")
def built(resources, tmp_path_factory):
    """CONFIG built once with FakeGenerator behind a fresh LLM-call cache, and written to a run file."""
    folder = tmp_path_factory.mktemp("experiments")
    cache = LLMCache(folder / "llm_cache.sqlite")
    fake = FakeGenerator(last_passage_span, MODEL_ID)
    generator = CachedGenerator(fake, cache)
    logs: list[str] = []
    run = evaluate_config(CONFIG, generator, shipped=resources, name=NAME, log=logs.append,
                          command="pytest tests/pipeline/test_pipeline_shipped.py")
    path = write_run(run, folder / f"{NAME}.sqlite")
    yield SimpleNamespace(run=run, path=path, cache=cache, fake=fake, generator=generator, logs=logs,
                          prompts_seen=fake.prompts_seen, hits=generator.hits, misses=generator.misses)
    cache.close()


@pytest.fixture(scope="module")
def reader(built):
    with RunReader(built.path) as r:
        yield r


def stored_passages(path) -> dict[str, Passage]:
    with closing(sqlite3.connect(path)) as connection:
        return {row[0]: Passage(*row) for row in connection.execute(
            "SELECT passage_id, title, text, source FROM passages")}


# ---------------------------------------------------------------------------------------------- the run


def test_every_table_is_populated(built, reader):
    run = built.run
    assert reader.schema_version == 2
    counts = reader.counts()
    n_gold = sum(len(q.gold_passage_ids) for q in run.queries)
    rankings = reader.rankings()
    n_page = sum(len(set(q.gold_passage_ids) | set(rankings[q.query_id].passage_ids)) for q in run.queries)
    assert counts["queries"] == N and counts["rankings"] == N * K and counts["doc_outputs"] == N * K
    assert counts["e2e_outputs"] == N * len(E2E_KS)
    # eRAG under 5 metrics, contains-answer and LLM relevance on the top-k, gold on every gold passage, gold page
    # on both.
    assert counts["labels"] == N * K * (len(ALL_METRICS) + 2) + n_gold + n_page
    assert counts["passages"] == len(run.passages) >= K
    assert reader.e2e_ks() == [1, 3, 5] and reader.main_k() == 5
    assert reader.label_methods() == sorted(["erag:em", "erag:f1", "erag:accuracy", "erag:rougeL", "erag:bertscore",
                                             "gold", "gold_page", "contains_answer", "llm_relevance"])
    assert len(reader.label_evidence()) == N * K
    semi = reader.semi_gold_outputs()
    assert len(semi) == N * SEMI_SAMPLES and sorted(set(semi["sample"])) == list(range(SEMI_SAMPLES))
    verdicts = reader.verdicts()
    assert len(verdicts) == len(JUDGE_NAMES) * 2 * len(CONFIG.options().reteval.ks) * N
    assert set(verdicts["judge"]) == set(JUDGE_NAMES) and set(verdicts["reference"]) == {SEMI_GOLD, GOLD_ANSWERS}
    assert sorted(set(verdicts["k"])) == [1, 5] and set(verdicts["verdict"]) <= {0, 1}
    assert not reader.failure_cases().empty and not reader.measure_table().empty
    # Every gold passage is stored, retrieved or not (the failure rules and the inspector need it).
    assert {pid for q in run.queries for pid in q.gold_passage_ids} <= set(stored_passages(built.path))


def test_new_tables_round_trip(built, reader):
    run = built.run
    assert reader.semi_gold_outputs().to_dict("records") == sorted(
        (asdict(o) for o in run.semi_gold_outputs), key=lambda r: (r["query_id"], r["sample"]))
    stored = {tuple(r.values()) for r in reader.verdicts().to_dict("records")}
    assert stored == {(v.judge, v.reference, v.query_id, v.k, int(v.verdict), v.evidence) for v in run.verdicts}
    assert {tuple(r.values()) for r in reader.failure_cases().to_dict("records")} == {
        (f.judge, f.query_id, f.k, f.category, f.reason) for f in run.failure_cases}
    assert {tuple(r.values()) for r in reader.label_evidence().to_dict("records")} == {
        tuple(asdict(e).values()) for e in run.label_evidence}
    qid = run.queries[0].query_id
    assert set(reader.label_evidence(qid)["query_id"]) == {qid}
    assert {tuple(r.values()) for r in reader.e2e_table().to_dict("records")} == {
        (e.query_id, e.k, e.output, e.score) for e in run.e2e_outputs}
    for k in E2E_KS:
        assert reader.e2e_output(qid, k).k == k
        assert reader.query_table(k)["e2e_output"].tolist() == [
            next(e.output for e in run.e2e_outputs if e.query_id == q.query_id and e.k == k) for q in run.queries]


def test_verdicts_at_k_judge_the_e2e_answer_at_k(reader):
    e2e = reader.e2e_table().set_index(["query_id", "k"])["output"]
    assert any(e2e[(q, 1)] != e2e[(q, 5)] for q in reader.query_table()["query_id"])  # answers change with k
    verdicts = reader.verdicts()
    for row in verdicts[verdicts["judge"] == "em"].itertuples():
        assert row.evidence.startswith(f"'{e2e[(row.query_id, row.k)]}' equals "), row


def test_settings_say_what_produced_the_run(built, reader):
    settings = reader.settings()
    assert settings["name"] == NAME and settings["dataset"] == "nq_open" and settings["num_queries"] == N
    assert settings["dataset_slice"] == "questions 0..5 of the shipped NQ-open test file, in file order"
    assert settings["retriever"] == RETRIEVER_DESCRIPTIONS["bm25"] and settings["retriever_name"] == "bm25"
    assert settings["k"] == K and settings["e2e_ks"] == [1, 3, 5] and settings["model_id"] == MODEL_ID
    assert settings["reteval"]["ks"] == [1, 5] and settings["reteval"]["judges"] == list(JUDGE_NAMES)
    assert settings["graded_label_methods"] == ["erag:bertscore", "erag:f1", "erag:rougeL"]
    assert settings["label_methods"] == reader.label_methods()
    assert settings["command"] == "pytest tests/pipeline/test_pipeline_shipped.py"
    # The QA, relevance and answer-judge prompts, each stored in full under its name@version#hash.
    assert settings["prompt"] == QA_FEW_SHOT.identifier
    assert set(settings["prompts"]) == {t.identifier for t in (QA_FEW_SHOT, RELEVANCE_FEW_SHOT, ANSWER_JUDGE_FEW_SHOT)}
    assert settings["prompts"][QA_FEW_SHOT.identifier]["instruction"] == QA_FEW_SHOT.instruction
    # LLM calls before the re-ranking check: eRAG 30 + E2E 18 + relevance 30 + semi-gold 18 + LLM judge 24 prompts.
    calls = settings["llm_calls"]
    assert calls["cache_hits"] + calls["cache_misses"] == N * K + N * 3 + N * K + N * SEMI_SAMPLES + 2 * 2 * N
    assert calls["cache_misses"] == built.prompts_seen  # a fresh cache: every miss went to the fake LLM
    # The E2E prompt at k=1 is the eRAG prompt of the rank-1 passage: at least 6 hits.
    assert calls["cache_hits"] >= N
    assert set(settings["timing_s"]) == {"rankings", "erag", "e2e", "llm_relevance", "reteval", "measures",
                                        "correlations"}
    assert settings["correlations"]["ks"] == [1, 3, 5] and reader.correlations()["k"].unique().tolist() == [1, 3, 5]
    assert any("re-ranking check" in line for line in built.logs)


def test_reranking_costs_no_llm_call(built):
    check = built.run.settings["rerank_check"]
    assert check["cache_misses"] == 0 and check["cache_hits"] == N * K
    assert check["reranking"] == f"each top-{K} reversed, eRAG labels recomputed"


def test_a_rebuild_on_the_same_cache_makes_no_llm_call(built, resources):
    fake = FakeGenerator(last_passage_span, MODEL_ID)
    generator = CachedGenerator(fake, built.cache)
    again = evaluate_config(CONFIG, generator, shipped=resources, name=NAME, log=lambda _: None)
    assert fake.calls == 0 and generator.misses == 0
    assert again.settings["llm_calls"]["cache_misses"] == 0 and again.settings["rerank_check"]["cache_misses"] == 0
    for table in ("queries", "rankings", "doc_outputs", "labels", "e2e_outputs", "semi_gold_outputs",
                  "verdicts", "failure_cases", "label_evidence"):
        assert list(getattr(again, table)) == list(getattr(built.run, table)), table


def test_llm_calls_count_only_this_runs_calls(built, resources):
    tiny = EvaluateConfig(dataset="nq_open", retriever="bm25", num_queries=1, k="1", label_metrics="em",
                          llm_relevance=False, methods="erag,e2e,baselines", rerank_check=True)
    misses_before = built.generator.misses
    run = evaluate_config(tiny, built.generator, shipped=resources, name="tiny", log=lambda _: None)
    assert built.generator.misses == misses_before  # every prompt of the tiny run is cached by the first build
    assert run.settings["llm_calls"]["cache_misses"] == 0


def test_stored_failure_cases_follow_from_the_stored_facts(built, reader):
    """The failure rules read stored facts only: recomputing them from the run file gives the stored cases."""
    passages = stored_passages(built.path)
    queries = [reader.query(qid) for qid in reader.query_table()["query_id"]]
    rankings = reader.rankings()
    retrieved = {q.query_id: [passages[pid] for pid in rankings[q.query_id].passage_ids] for q in queries}
    gold = {q.query_id: [passages[pid] for pid in q.gold_passage_ids] for q in queries}
    e2e = reader.e2e_table()
    answers_at_k = {k: dict(zip(rows["query_id"], rows["output"])) for k, rows in e2e.groupby("k")}
    semi: dict[str, list[str]] = {}
    for row in reader.semi_gold_outputs().itertuples():
        semi.setdefault(row.query_id, []).append(row.output)
    verdicts = [Verdict(r.judge, r.reference, r.query_id, int(r.k), bool(r.verdict), r.evidence)
                for r in reader.verdicts().itertuples()]
    recomputed = find_failure_cases(queries, retrieved, gold, answers_at_k, semi, verdicts)
    assert {(c.judge, c.query_id, c.k, c.category, c.reason) for c in recomputed} == {
        tuple(r.values()) for r in reader.failure_cases().to_dict("records")}


@pytest.mark.parametrize("judge", JUDGE_NAMES)
def test_reteval_table_from_the_run_file(built, reader, judge):
    run = built.run
    queries = pd.DataFrame({"query_id": [q.query_id for q in run.queries],
                            "answers": [json.dumps(list(q.answers)) for q in run.queries],
                            "gold_passage_ids": [list(q.gold_passage_ids) for q in run.queries]})
    rankings = {q: list(r.passage_ids) for q, r in reader.rankings().items()}
    cases, e2e = reader.failure_cases(), reader.e2e_table()
    table = reteval_table(queries, rankings, reader.verdicts(), cases, e2e, judge)
    assert table["k"].tolist() == [1, 5] and table["n"].tolist() == [N, N]
    for row in table.to_dict("records"):
        k = row["k"]
        mine = cases[(cases["judge"] == judge) & (cases["k"] == k)]
        assert {c: row[c] for c in "ABCDEF"} == {c: int((mine["category"] == c).sum()) for c in "ABCDEF"}
        rpf = np.array([recall_precision_f1(rankings[q.query_id], q.gold_passage_ids, k) for q in run.queries])
        assert [row["recall"], row["precision"], row["f1"]] == pytest.approx(rpf.mean(axis=0).tolist())
        assert row["qa_em"] == pytest.approx(e2e[e2e["k"] == k]["score"].mean())
        verdicts = reader.verdicts()
        semi = verdicts[(verdicts["judge"] == judge) & (verdicts["k"] == k) & (verdicts["reference"] == SEMI_GOLD)]
        assert row["llm_reteval"] == pytest.approx(semi["verdict"].mean())


def test_measures_at_every_sweep_cutoff(built, reader):
    measures = reader.measure_table()
    assert set(measures["method"]) == set(reader.label_methods())
    binary = set(measure_names((1, 3, 5)))
    graded = set(measure_names((1, 3, 5), graded=True))
    for method, rows in measures.groupby("method"):
        assert set(rows["measure"]) == (graded if is_graded_method(method) else binary), method
        assert rows.groupby("measure")["query_id"].nunique().eq(N).all()
        assert rows["value"].between(0, 1).all()
    # Gold-label R@5 is the Recall@5 of LLM-retEval's table, query by query.
    gold_recall = measures[(measures["method"] == "gold") & (measures["measure"] == "R@5")].set_index("query_id")
    rankings = reader.rankings()
    for q in built.run.queries:
        expected = recall_precision_f1(rankings[q.query_id].passage_ids, q.gold_passage_ids, 5)[0]
        assert gold_recall.loc[q.query_id, "value"] == pytest.approx(expected)


# ------------------------------------------------------------------------------------ HotpotQA candidates


def candidate_ids(corpus, question_id: str) -> set[str]:
    """The question's own candidate paragraphs as canonical corpus ids, from the corpus ids and aliases alone."""
    prefix = f"hotpotqa:{question_id}:"
    ids = {p.passage_id for p in corpus.passages if p.passage_id.startswith(prefix)}
    ids |= {canonical for alias, canonical in corpus.aliases if alias.startswith(prefix)}
    return ids


@pytest.mark.slow
def test_hotpotqa_candidates_rank_exactly_the_questions_own_paragraphs(resources, tmp_path):
    # HotpotQA dev questions 97 and 98 (file order); one candidate paragraph of question 97 is a duplicate of an
    # NQ gold passage, so the corpus knows it under that passage's id.
    config = EvaluateConfig(dataset="hotpotqa", retriever="candidates", num_queries=2, k="1,10", label_metrics="em",
                            llm_relevance=False, offset=97, methods="erag,e2e,baselines", rerank_check=True)
    with LLMCache(tmp_path / "cache.sqlite") as cache:
        run = evaluate_config(config, CachedGenerator(FakeGenerator(), cache), shipped=resources, name="hotpot2",
                              log=lambda _: None)
    queries = hotpotqa_queries(resources.corpus, num_queries=99)[97:]
    assert list(run.queries) == queries
    assert any(not pid.startswith("hotpotqa:") for r in run.rankings for pid in r.passage_ids)
    for query, ranked in zip(queries, run.rankings):
        assert ranked.query_id == query.query_id
        candidates = candidate_ids(resources.corpus, query.query_id.split(":", 1)[1])
        ids = list(ranked.passage_ids)
        assert len(candidates) <= 10 and len(ids) == len(set(ids)) and set(ids) == candidates
        assert set(query.gold_passage_ids) <= set(ids)  # both supporting paragraphs are candidates
        scores = [p.score for p in ranked.passages]
        assert scores == sorted(scores, reverse=True)
        # Scores are MiniLM cosines between the question and each paragraph (title + text).
        vectors = resources.retrievers.encoder.encode([query.text,
                                                       resources.retrievers.passages[ids[0]].as_document()])
        assert scores[0] == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-5)
    assert run.settings["retriever"] == RETRIEVER_DESCRIPTIONS["candidates"]
    assert run.settings["reteval"] is None and not run.verdicts and not run.semi_gold_outputs
    assert {x.method for x in run.labels} == {"erag:em", "gold", "gold_page", "contains_answer"}
    assert run.settings["rerank_check"]["cache_misses"] == 0


# ------------------------------------------------------------------------------------ the shipped source


@pytest.mark.parametrize(("changes", "message"), [
    ({"retriever": "splade"}, r"retriever 'splade': expected one of bm25, dense, hybrid"),
    ({"k": "0,5"}, r"--k '0,5': expected a comma list of positive integers"),
    ({"offset": -1}, r"offset: expected at least 0"),
    ({"num_queries": 0}, r"num_queries: expected at least 1"),
])
def test_shipped_config_validation(changes, message):
    with pytest.raises(RagevalError, match=message):
        EvaluateConfig(**{"dataset": "nq_open", "retriever": "bm25", "num_queries": 3} | changes)


def test_shipped_slices_and_unknown_datasets_fail_early(resources):
    with pytest.raises(RagevalError, match=r"dataset 'triviaqa': without --queries, expected a shipped dataset"):
        shipped_queries("triviaqa", resources)
    assert [q.query_id for q in shipped_queries("nq_open", resources, offset=3, num_queries=2)] == [
        q.query_id for q in resources.corpus.nq_queries[3:5]]
    with pytest.raises(RagevalError, match=r"retriever 'candidates'"):
        load_shipped_inputs("nq_open", "candidates", 5, resources, num_queries=1)
    with pytest.raises(RagevalError, match=r"no NQ-open queries in the slice offset=100000, n=2"):
        load_shipped_inputs("nq_open", "bm25", 5, resources, offset=100_000, num_queries=2)


# ------------------------------------------------------------------------------------------ store, v1


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE queries (query_id TEXT PRIMARY KEY, text TEXT NOT NULL, answers TEXT NOT NULL,
    gold_passage_ids TEXT NOT NULL, dataset TEXT NOT NULL);
CREATE TABLE passages (passage_id TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE rankings (query_id TEXT NOT NULL, rank INTEGER NOT NULL, passage_id TEXT NOT NULL, score REAL NOT NULL,
    PRIMARY KEY (query_id, rank));
CREATE TABLE doc_outputs (query_id TEXT NOT NULL, passage_id TEXT NOT NULL, output TEXT NOT NULL,
    PRIMARY KEY (query_id, passage_id));
CREATE TABLE labels (method TEXT NOT NULL, query_id TEXT NOT NULL, passage_id TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (method, query_id, passage_id));
CREATE TABLE e2e_outputs (query_id TEXT PRIMARY KEY, k INTEGER NOT NULL, output TEXT NOT NULL, score REAL NOT NULL);
CREATE TABLE measure_values (method TEXT NOT NULL, measure TEXT NOT NULL, query_id TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (method, measure, query_id));
"""


def test_a_schema_v1_file_reads_with_empty_new_tables(resources, tmp_path):
    """A v1 run (one E2E output per query, none of the LLM-retEval tables), written by hand as rageval 0.x did."""
    query = resources.corpus.nq_queries[0]
    gold = resources.retrievers.passages["nq-dpr:1"]
    path = tmp_path / "v1.sqlite"
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 1")
        connection.executescript(V1_SCHEMA)
        connection.executemany("INSERT INTO meta VALUES (?, ?)",
                               [("schema_version", "1"), ("settings", json.dumps({"k": 1, "dataset": "nq_open"}))])
        connection.execute("INSERT INTO queries VALUES (?, ?, ?, ?, ?)",
                           (query.query_id, query.text, json.dumps(list(query.answers)),
                            json.dumps(list(query.gold_passage_ids)), query.dataset))
        connection.execute("INSERT INTO passages VALUES (?, ?, ?, ?)", (gold.passage_id, gold.title, gold.text,
                                                                         gold.source))
        connection.execute("INSERT INTO rankings VALUES (?, 1, ?, 12.5)", (query.query_id, gold.passage_id))
        connection.execute("INSERT INTO labels VALUES ('erag:em', ?, ?, 1.0)", (query.query_id, gold.passage_id))
        connection.execute("INSERT INTO e2e_outputs VALUES (?, 1, 'Wilhelm Conrad Röntgen', 1.0)", (query.query_id,))
    with RunReader(path) as old:
        assert old.schema_version == 1
        assert old.e2e_ks() == [1] and old.main_k() == 1
        assert old.query_table()["e2e_output"].tolist() == ["Wilhelm Conrad Röntgen"]
        assert old.e2e_output(query.query_id).score == 1.0
        assert old.ranking_table(query.query_id)["erag:em"].tolist() == [1.0]
        for frame, columns in ((old.semi_gold_outputs(), ["query_id", "sample", "output"]),
                               (old.verdicts(), ["judge", "reference", "query_id", "k", "verdict", "evidence"]),
                               (old.failure_cases(), ["judge", "query_id", "k", "category", "reason"]),
                               (old.label_evidence(), ["method", "query_id", "passage_id", "evidence"]),
                               (old.label_evidence(query.query_id), ["method", "query_id", "passage_id", "evidence"])):
            assert frame.empty and list(frame.columns) == columns


def test_demo_configs_describe_the_shipped_runs():
    """data/configs/demo_runs/ is what the shipped run files were built from: each config's sizes and retriever
    equal the settings stored in its run file."""
    from rageval.paths import RUNS_DIR
    from rageval.pipeline.demo import load_demo_runs

    demos = load_demo_runs()
    assert len(demos) == 5
    for demo in demos:
        config = demo.config
        with RunReader(RUNS_DIR / demo.file_name) as reader:
            settings = reader.settings()
        assert settings["name"] == demo.name
        ks = parse_ks(config.k)
        assert (settings["num_queries"], settings["k"], settings["retriever_name"]) == \
            (config.num_queries, max(ks), config.retriever), demo.name
        assert tuple(settings["e2e_ks"]) == ks
        options = config.options()
        assert (settings["reteval"] is not None) == ("reteval" in options.methods)
        if settings["reteval"] is not None:
            assert tuple(settings["reteval"]["ks"]) == options.reteval_ks
            assert tuple(settings["reteval"]["judges"]) == options.reteval.judges
        assert settings["rerank_check"]["cache_misses"] == 0 and config.rerank_check


def test_demo_config_errors_name_the_file(tmp_path):
    from rageval.pipeline.demo import load_demo_runs

    path = tmp_path / "x.toml"
    path.write_text('dataset = "nq_open"\nretriever = "bm25"\nnum_queries = 3\nkk = 2\n')
    with pytest.raises(DataError, match=r"x\.toml, field 'kk': unknown setting 'kk'"):
        load_demo_runs(path)
    path.write_text('dataset = "nq_open"\nretriever = "magic"\nnum_queries = 3\n')
    with pytest.raises(DataError, match=r"x\.toml: retriever 'magic'"):
        load_demo_runs(path)
    path.write_text('queries = "q.jsonl"\nretriever = "bm25"\n')
    with pytest.raises(DataError, match=r"x\.toml: a demo run evaluates a shipped dataset"):
        load_demo_runs(path)


def test_demo_runs_are_chosen_by_name_and_correlations_need_a_built_run(tmp_path):
    """``rageval demo-runs --only`` keeps the configs' order and names the known runs on a typo;
    ``--correlations-only`` on a run not built yet says how to build it."""
    from rageval.pipeline.demo import add_demo_correlations, load_demo_runs, select_demo_runs

    demos = load_demo_runs()
    assert select_demo_runs(demos, None) == demos
    wanted = [demos[-1].name, demos[0].name]
    assert [d.name for d in select_demo_runs(demos, ",".join(wanted))] == [demos[0].name, demos[-1].name]
    with pytest.raises(RagevalError, match=r"--only: unknown run\(s\) nope; known: " + demos[0].name):
        select_demo_runs(demos, f"{demos[0].name},nope")
    with pytest.raises(RagevalError, match=rf"no such run; build it first \(rageval demo-runs --only {demos[0].name}"):
        add_demo_correlations(tmp_path, demos[:1])


@pytest.mark.parametrize("judge", JUDGE_NAMES)
def test_the_dashboards_lean_reteval_table_equals_the_table_from_whole_frames(built, reader, judge, tmp_path,
                                                                              monkeypatch):
    """rageval.reteval.tables.read_reteval_table (the LLM-retEval page's Tables 1-2: no evidence or reason read,
    rankings cut at the largest k, remembered per file version) gives the table reteval_table gives from the run's
    whole frames; read twice, the second from the remembered record."""
    from rageval.reteval.tables import read_reteval_table

    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    run = built.run
    queries = pd.DataFrame({"query_id": [q.query_id for q in run.queries],
                            "gold_passage_ids": [list(q.gold_passage_ids) for q in run.queries]})
    rankings = {q: list(r.passage_ids) for q, r in reader.rankings().items()}
    expected = reteval_table(queries, rankings, reader.verdicts(), reader.failure_cases(), reader.e2e_table(), judge)
    os.utime(reader.path, (1_000_000, 1_000_000))  # settled: its summaries are remembered
    for _ in range(2):
        lean = read_reteval_table(reader, judge)
        pd.testing.assert_frame_equal(lean[expected.columns], expected, check_dtype=False)
    record = json.loads((tmp_path / "cache" / "run_summaries.json").read_text(encoding="utf-8"))
    assert [key for key in record if key.startswith(f"summary:reteval_table:1:{judge}|")]
    assert read_reteval_table(reader, "no-such-judge").empty
