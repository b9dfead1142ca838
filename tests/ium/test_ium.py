"""Iterative Utility Maximization (issue 6): the EM loop, unk replacement, the online no-leak rule, the baselines and
the run's tables, on real NQ-open and HotpotQA questions with a small BM25 index and a transparent fake LLM."""

from __future__ import annotations

import random
import re

import pytest

from rageval.generation.base import FakeGenerator
from rageval.ium.agents import AgentSpec, build_agents, chat_user_message
from rageval.ium.learning import (
    UNK_MODEL,
    UNK_TASK,
    FeedbackRow,
    IumConfig,
    SearchEngine,
    engine_text,
    offline_ium,
    online_ium,
    special_tokens,
    training_examples,
)
from rageval.stats.paired import jaccard, mcnemar_exact, top_k_kendall_tau

SMALL = IumConfig(first_stage_depth=8, train_k=3, iterations=2, epochs=1, batch_size=8, trainable_layers=1,
                  max_length=128, online_batch_sizes=(3,))


def answer_from_passages(answers_by_question):
    """A fake LLM that answers correctly exactly when its prompt's last block holds a gold answer."""

    def rule(prompt: str) -> str:
        last = prompt.split("\n\n")[-1] if "Question:" in prompt.split("\n\n")[-1] else prompt
        question = re.findall(r"Question: (.*)", last)[-1].strip()
        for answer in answers_by_question.get(question, ()):
            if answer.lower() in last.lower().rsplit("question:", 1)[0]:
                return answer
        return "unknown"

    return rule


@pytest.fixture(scope="module")
def setup(corpus, passages, tmp_path_factory):
    from rageval.retrieval.bm25 import BM25Retriever, build_bm25_index
    from rageval.retrieval.evaluate import hotpotqa_queries

    nq = [q for q in corpus.nq_queries[:40] if q.gold_passage_ids]
    hotpot = hotpotqa_queries(corpus, num_queries=30)
    wanted = {pid for q in [*nq, *hotpot] for pid in q.gold_passage_ids}
    subset = [p for p in corpus.passages if p.passage_id in wanted]
    subset += [p for p in corpus.passages if p.source in ("wiki18", "hotpotqa") and p.passage_id not in wanted][:500]
    answers = {" ".join(q.text.split()): q.answers for q in [*nq, *hotpot]}
    generator = FakeGenerator(rule=answer_from_passages(answers), model_id="fake:reads-passages")
    chatty = FakeGenerator(rule=answer_from_passages(answers), model_id="fake:chat")
    specs = (AgentSpec("nq/base/em", "nq_open", "nq", "base", 3, "em"),
             AgentSpec("nq/chat/contains", "nq_open", "nq", "chat", 2, "contains"),
             AgentSpec("hotpotqa/base/em", "hotpotqa", "hotpotqa", "base", 3, "em"),
             AgentSpec("hotpotqa/chat/f1", "hotpotqa", "hotpotqa", "chat", 2, "f1"))
    agents = build_agents(specs, {"base": generator, "chat": chatty}, {"chat": lambda message: f"<chat>{message}"})
    retriever = BM25Retriever(build_bm25_index(subset, tmp_path_factory.mktemp("ium") / "bm25"))
    yield {"nq": nq, "hotpot": hotpot, "agents": agents, "bm25": retriever, "passages": passages}
    retriever.close()


def test_agent_feedback_is_the_utility_of_each_passage_alone(setup):
    agent = setup["agents"][0]
    query = setup["nq"][0]
    gold = setup["passages"][query.gold_passage_ids[0]]
    other = next(p for p in setup["passages"].values() if p.source == "wiki18")
    [labels] = agent.feedback([(query, [gold, other])])
    assert [pid for pid, _ in labels] == [gold.passage_id, other.passage_id]
    assert labels[1][1] == 0.0
    chat = setup["agents"][1]
    assert chat.prompt(query.text, [gold]).startswith("<chat>")
    assert chat_user_message(query.text, [gold]).endswith(f"Question: {query.text}")


def test_engine_text_and_special_tokens():
    spec = AgentSpec("a", "nq_open", "nq", "gemma", 3, "em")
    assert engine_text("who?", spec) == "[task:nq] [model:gemma] who?"
    assert engine_text("who?", spec, unk=True) == f"{UNK_TASK} {UNK_MODEL} who?"
    assert engine_text("who?", None) == "who?"
    tokens = special_tokens([spec, AgentSpec("b", "nq_open", "nq", "smollm2", 2, "contains")])
    assert tokens == ("[task:nq]", "[model:gemma]", "[model:smollm2]", UNK_TASK, UNK_MODEL)
    with pytest.raises(ValueError, match="utility"):
        AgentSpec("c", "nq_open", "nq", "x", 1, "bleu")


def test_unk_replaces_both_ids_for_about_ten_percent_of_samples(setup):
    from rageval.types import Passage, Query

    specs = {"a": AgentSpec("a", "nq_open", "nq", "gemma", 3, "em")}
    rows = [FeedbackRow("a", "q", "p", 1.0)] * 2000
    queries, passages = {"q": Query("q", "who?")}, {"p": Passage("p", "T", "text")}
    examples = training_examples(rows, specs, queries, passages, True, 0.1, random.Random(0))
    unk = sum(text.startswith(f"{UNK_TASK} {UNK_MODEL} ") for text, _, _ in examples)
    assert 140 <= unk <= 260  # Binomial(2000, 0.1): mean 200, sd 13.4
    assert all(text.startswith(("[task:nq] [model:gemma] who?", f"{UNK_TASK} {UNK_MODEL} who?"))
               for text, _, _ in examples)
    plain = training_examples(rows, specs, queries, passages, False, 0.1, random.Random(0))
    assert {text for text, _, _ in plain} == {"who?"}


@pytest.mark.slow
def test_offline_ium_em_loop(setup):
    agents = setup["agents"][:2]
    train = {a.name: setup["nq"][10:18] for a in agents}
    queries = setup["nq"][10:18]
    candidates = {qid: r.passage_ids for qid, r in setup["bm25"].batch_search(queries, SMALL.first_stage_depth).items()}
    iterations = offline_ium(agents, train, candidates, setup["passages"], SMALL)
    assert [it.number for it in iterations] == [1, 2]
    # Iteration 1 is served by the first stage: feedback on each agent's BM25 top train_k.
    first = iterations[0].feedback
    assert len(first) == len(agents) * len(queries) * SMALL.train_k
    for agent in agents:
        for q in queries:
            got = [r.passage_id for r in first if r.agent == agent.name and r.query_id == q.query_id]
            assert got == list(candidates[q.query_id][:SMALL.train_k])
    # Iteration 2 is served by the model iteration 1 trained, for each agent with its own ids.
    second = iterations[1].feedback
    engine = SearchEngine(candidates, setup["passages"], iterations[0].model, personalised=True)
    for agent in agents:
        lists = engine.serve(agent.spec, queries, SMALL.train_k)
        got = {q.query_id: tuple(r.passage_id for r in second if r.agent == agent.name and r.query_id == q.query_id)
               for q in queries}
        assert got == lists
    assert iterations[0].model is not iterations[1].model
    # Feedback is real utility: the fake LLM answers from a passage holding the answer.
    assert any(r.utility == 1.0 for r in first) and any(r.utility == 0.0 for r in first)


@pytest.mark.slow
def test_offline_ium_resumes_from_checkpoints_without_retraining(setup, tmp_path, monkeypatch):
    import rageval.retrieval.rerank as rerank

    agents = setup["agents"][:1]
    queries = setup["nq"][10:14]
    train = {agents[0].name: queries}
    config = IumConfig(first_stage_depth=6, train_k=2, iterations=2, epochs=1, batch_size=8, trainable_layers=1,
                       max_length=96)
    candidates = {qid: r.passage_ids for qid, r in setup["bm25"].batch_search(queries, 6).items()}
    first = offline_ium(agents, train, candidates, setup["passages"], config, checkpoints=tmp_path)
    assert len(list(tmp_path.glob("ium-*"))) == 2  # one saved model per iteration

    def no_training(*args, **kwargs):
        raise AssertionError("retrained although a checkpoint exists")

    monkeypatch.setattr(rerank, "train_cross_encoder", no_training)
    again = offline_ium(agents, train, candidates, setup["passages"], config, checkpoints=tmp_path)
    pairs = [("who wrote hamlet", setup["passages"][candidates[queries[0].query_id][0]].as_document())]
    for a, b in zip(first, again):
        assert [r.passage_id for r in a.feedback] == [r.passage_id for r in b.feedback]
        assert a.model.score_pairs(pairs) == pytest.approx(b.model.score_pairs(pairs), abs=1e-5)
    # Other training data is another key: it trains (and here hits the patched trainer).
    with pytest.raises(AssertionError, match="retrained"):
        offline_ium(agents, {agents[0].name: queries[:3]}, candidates, setup["passages"], config,
                    checkpoints=tmp_path)


@pytest.mark.slow
def test_online_ium_never_serves_a_query_with_parameters_that_saw_its_feedback(setup):
    agent = setup["agents"][0]
    queries = setup["nq"][:7]
    candidates = {qid: r.passage_ids for qid, r in setup["bm25"].batch_search(queries, SMALL.first_stage_depth).items()}
    from rageval.ium.learning import new_model
    from rageval.ium.learning import special_tokens as tokens

    start = new_model(tokens([agent.spec]), SMALL, "start")
    result = online_ium(agent, queries, start, candidates, setup["passages"], 3, SMALL)
    assert result.retrains == 2  # after queries 1-3 and 4-6; none after the last batch
    order = [q.query_id for q in queries]
    for position, q in enumerate(queries):
        seen = result.trained_on[q.query_id]
        assert q.query_id not in seen
        assert set(seen) == set(order[:position - position % 3])  # exactly the earlier batches
    assert [len(result.served[q]) for q in order] == [agent.spec.k] * 7
    assert {r.query_id for r in result.feedback} == set(order)
    first_batch = SearchEngine(candidates, setup["passages"], start).serve(agent.spec, queries[:3], agent.spec.k)
    assert {q: result.served[q] for q in order[:3]} == first_batch


def test_mcnemar_against_scipy_and_list_agreement():
    from scipy.stats import binomtest

    a = [1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1]
    b = [0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 1]
    result = mcnemar_exact(a, b)
    assert (result.only_a, result.only_b) == (6, 1)
    assert result.p_value == pytest.approx(binomtest(1, 7, 0.5).pvalue)
    assert mcnemar_exact([1, 0], [1, 0]).p_value == 1.0
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert top_k_kendall_tau(["a", "b", "c"], ["a", "b", "c"]) == pytest.approx(1.0)
    assert top_k_kendall_tau(["a", "b", "c"], ["c", "b", "a"]) < 0


def test_ium_run_end_to_end(setup, tmp_path):
    from rageval.ium.experiment import IumPlan, run_ium, significance_table, summary_table, write_ium_run
    from rageval.store import list_runs
    from rageval.store.ium import read_ium_run

    plan = IumPlan(num_train=6, num_test=6, nq_train_offset=12, hotpotqa_train_offset=12,
                   agents=tuple(a.spec for a in setup["agents"]), config=SMALL)
    from rageval.ium.experiment import plan_queries

    split = plan_queries(plan, setup["nq"], setup["hotpot"])
    assert not {q.query_id for q in split["nq_open"][0]} & {q.query_id for q in split["nq_open"][1]}
    result = run_ium(plan, setup["agents"], split, setup["passages"], setup["bm25"], log=lambda message: None)
    methods = set(result.outcomes.method)
    for method in ("BM25", "reranker-individual", "reranker-dataset", "uRAG", "offline-IUM", "offline-IUM@t0",
                   "offline-IUM@t1", "offline-IUM@t2", "offline-IUM-nonpersonalised@t2", "online-IUM@b3"):
        assert method in methods, method
    assert (result.outcomes.groupby(["method", "agent"]).size() == 6).all()
    table = summary_table(result.outcomes)
    assert "macro average" in table.index
    assert table.loc["macro average", "BM25"] == pytest.approx(table.drop("macro average")["BM25"].mean())
    # BM25 @t0 is the same lists as BM25.
    bm25 = result.outcomes[result.outcomes.method == "BM25"].set_index(["agent", "query_id"]).score
    t0 = result.outcomes[result.outcomes.method == "offline-IUM@t0"].set_index(["agent", "query_id"]).score
    assert (bm25 == t0).all()
    significance = significance_table(result.outcomes)
    assert set(significance.agent) == {*(a.name for a in setup["agents"]), "all agents"}
    assert significance.p_value.between(0, 1).all()
    pairs = set(zip(result.personalisation.agent_a, result.personalisation.agent_b))
    assert pairs == {("nq/base/em", "nq/chat/contains"), ("hotpotqa/base/em", "hotpotqa/chat/f1")}
    assert result.personalisation.jaccard.between(0, 1).all()
    # Online: every served query's trained_on excludes itself.
    leaks = [row for row in result.online_trained_on.itertuples() if row.query_id in row.trained_on.split()]
    assert not leaks
    path = write_ium_run(result, tmp_path / "ium.sqlite")
    assert list_runs(tmp_path) == []
    settings, tables = read_ium_run(path)
    assert settings["kind"] == "ium" and len(tables["outcomes"]) == len(result.outcomes)
    from rageval.ium.results_section import ium_sections

    text = "\n".join(ium_sections(path))
    for expected in ("| macro average |", "| macro average (18 agents) | 55.38", "| 0 |", "| 2 |",
                     "Personalisation (Figure 5)", "| 3 |"):
        assert expected in text, expected
    first = result.feedback[result.feedback.phase == "offline-IUM@t1"]
    assert (f"of the {len(first):,} feedback rows of offline iteration 1" in text
            and f"{(first.utility > 0).mean():.1%} are positive" in text)


def test_training_the_id_tokens_is_part_of_the_checkpoint_key_only_when_asked():
    from rageval.ium.learning import IumConfig

    assert "train_id_tokens" not in IumConfig().digest_fields()  # older checkpoints keep their keys
    assert IumConfig(train_id_tokens=True).digest_fields()["train_id_tokens"] is True


def test_kendall_tau_of_one_passage_lists_is_undefined_not_minus_one():
    import math

    import pandas as pd

    from rageval.ium.experiment import personalisation_summary
    from rageval.stats.paired import top_k_kendall_tau

    assert top_k_kendall_tau(["a"], ["b"]) == -1.0  # what a one-item pair reads as without the rule
    rows = pd.DataFrame([("m", "x/k1", "x/k5", "q1", -1.0, 0.0), ("m", "x/k5", "x/k3", "q1", 0.5, 0.5)],
                        columns=["method", "agent_a", "agent_b", "query_id", "kendall_tau", "jaccard"])
    agents = pd.DataFrame({"name": ["x/k1", "x/k5", "x/k3"], "k": [1, 5, 3]})
    summary = personalisation_summary(rows, agents).set_index(["agent_a", "agent_b"])
    assert math.isnan(summary.loc[("x/k1", "x/k5"), "kendall_tau"])
    assert summary.loc[("x/k5", "x/k3"), "kendall_tau"] == 0.5
    assert summary.loc[("x/k1", "x/k5"), "jaccard"] == 0.0
