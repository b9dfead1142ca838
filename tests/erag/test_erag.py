"""eRAG labels, E2E and the reference labels on real NQ-open records, with the fake LLM of conftest."""

from __future__ import annotations

import pytest

from rageval.corpus import build_corpus
from rageval.erag.baselines import compute_reference_labels
from rageval.erag.e2e import compute_e2e
from rageval.erag.labels import EragSettings, compute_erag_labels
from rageval.erag.measures import compute_measure_values
from rageval.generation.base import DecodingSettings
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.labelmethods import CONTAINS_ANSWER, GOLD
from rageval.measures import compute_measures
from rageval.store import Run, RunReader, write_run
from rageval.types import Ranking, ScoredPassage


@pytest.fixture(scope="module")
def corpus():
    return build_corpus()


@pytest.fixture(scope="module")
def slice_(corpus):
    """Four real NQ questions; each ranking = one other question's gold passage, then the query's own gold."""
    queries = list(corpus.nq_queries[:4])
    rankings = {}
    for i, q in enumerate(queries):
        distractor = queries[(i + 1) % len(queries)].gold_passage_ids[0]
        ids = [distractor, *q.gold_passage_ids]
        rankings[q.query_id] = Ranking(q.query_id, tuple(ScoredPassage(pid, 10.0 - r) for r, pid in enumerate(ids)))
    passages = {p.passage_id: p for p in corpus.passages}
    return queries, rankings, passages


def gold_answer_reader(prompt: str) -> str:
    """A fake LLM that answers with the first gold answer of the Nobel question iff the last passage shows it."""
    last_passage = prompt.rsplit("Passage:", 1)[1]
    return "Wilhelm Conrad Röntgen" if "Röntgen" in last_passage else "I do not know"


def test_erag_labels_score_each_passage_alone(slice_):
    from rageval.generation.base import FakeGenerator

    queries, rankings, passages = slice_
    generator = FakeGenerator(rule=gold_answer_reader)
    settings = EragSettings(k=2, batch_size=3)
    progress = []
    outputs, labels = compute_erag_labels(queries, rankings, passages, generator, settings,
                                          lambda done, total: progress.append((done, total)))
    assert len(outputs) == len(labels) == 2 * len(queries)  # k=2 passages per query, each in its own prompt
    assert progress[-1] == (8, 8) and [d for d, _ in progress] == [3, 6, 8]
    by_key = {(x.query_id, x.passage_id): x.value for x in labels}
    nobel = queries[0]
    assert nobel.text == "who got the first nobel prize in physics"
    # Only the Nobel question's own gold passage (rank 2) makes the fake LLM say the gold answer.
    assert by_key[(nobel.query_id, nobel.gold_passage_ids[0])] == 1.0
    assert sum(by_key.values()) == 1.0
    assert {x.method for x in labels} == {"erag:em"}


def test_e2e_sees_the_whole_top_k_in_order(slice_):
    from rageval.generation.base import FakeGenerator

    queries, rankings, passages = slice_
    prompts = []
    generator = FakeGenerator(rule=lambda prompt: prompts.append(prompt) or gold_answer_reader(prompt))
    e2e = compute_e2e(queries, rankings, passages, generator, EragSettings(k=2))
    assert [e.k for e in e2e] == [2] * 4
    assert [e.score for e in e2e] == [1.0, 0.0, 0.0, 0.0]
    prompt = prompts[0]
    first, second = (passages[pid].text[:40] for pid in rankings[queries[0].query_id].passage_ids[:2])
    assert prompt.index(" ".join(first.split())) < prompt.index(" ".join(second.split()))


def test_reference_labels_gold_includes_unretrieved_gold(slice_):
    queries, rankings, passages = slice_
    labels = compute_reference_labels(queries, rankings, passages, k=1)
    gold = [x for x in labels if x.method == GOLD]
    assert len(gold) == sum(len(q.gold_passage_ids) for q in queries)
    contains = [x for x in labels if x.method == CONTAINS_ANSWER]
    assert len(contains) == len(queries)  # k=1: only the top passage is checked
    # With k=1 the top passage is another question's gold: recall against gold must be 0 for every query.
    values = compute_measure_values(labels, {q: Ranking(q, r.passages[:1]) for q, r in rankings.items()}, (1,))
    assert all(v.value == 0.0 for v in values if v.method == "gold" and v.measure == "R@1")


def test_measure_values_match_the_measures_core(slice_):
    queries, rankings, passages = slice_
    labels = compute_reference_labels(queries, rankings, passages, k=3)
    values = compute_measure_values(labels, rankings, (1, 5))
    run = {q: list(r.passage_ids) for q, r in rankings.items()}
    qrels = {}
    for x in labels:
        if x.method == "gold":
            qrels.setdefault(x.query_id, {})[x.passage_id] = x.value
    expected = compute_measures(["nDCG@5", "RR@5"], run, qrels)
    stored = {(v.measure, v.query_id): v.value for v in values if v.method == "gold"}
    for row in expected.itertuples(index=False):
        assert stored[(row.measure, row.query_id)] == pytest.approx(row.value)
    # The gold passage is at rank 2 for every query: RR@5 = 1/2 (hand-computed).
    assert {stored[("RR@5", q.query_id)] for q in queries} == {0.5}


def test_relabelling_a_reranked_list_costs_no_llm_call(slice_, tmp_path):
    """Labels depend only on (query, passage, model, prompt, decoding): a re-ranked list hits the cache."""
    from rageval.generation.base import FakeGenerator

    queries, rankings, passages = slice_
    fake = FakeGenerator(rule=gold_answer_reader)
    with LLMCache(tmp_path / "cache.sqlite") as cache:
        generator = CachedGenerator(fake, cache)
        settings = EragSettings(k=2, decoding=DecodingSettings())
        first = compute_erag_labels(queries, rankings, passages, generator, settings)[1]
        # Swap ranks 1 and 2: the same top-2 passages in another order.
        reversed_rankings = {q: Ranking(q, (r.passages[1], r.passages[0], *r.passages[2:]))
                             for q, r in rankings.items()}
        calls_before = fake.calls
        second = compute_erag_labels(queries, reversed_rankings, passages, generator, settings)[1]
        assert fake.calls == calls_before
        assert generator.misses == 8 and generator.hits == 8
        assert sorted(first, key=str) == sorted(second, key=str)


def test_run_round_trip_through_the_store(slice_, tmp_path):
    from rageval.generation.base import FakeGenerator

    queries, rankings, passages = slice_
    generator = FakeGenerator(rule=gold_answer_reader)
    settings = EragSettings(k=2)
    outputs, labels = compute_erag_labels(queries, rankings, passages, generator, settings)
    labels += compute_reference_labels(queries, rankings, passages, 2)
    e2e = compute_e2e(queries, rankings, passages, generator, settings)
    used = sorted({pid for r in rankings.values() for pid in r.passage_ids})
    run = Run({"dataset": "nq_open", "k": 2}, queries, [passages[p] for p in used], list(rankings.values()),
              outputs, labels, e2e, compute_measure_values(labels, rankings, (1,)))
    path = write_run(run, tmp_path / "run.sqlite")
    with RunReader(path) as reader:
        table = reader.ranking_table(queries[0].query_id)
        # The Nobel question has two gold passages: its stored ranking has 3 passages, the top k=2 labelled.
        assert list(table["rank"]) == [1, 2, 3]
        assert list(table["erag:em"][:2]) == [0.0, 1.0] and table["erag:em"].isna().iloc[2]
        assert reader.e2e_output(queries[0].query_id).score == 1.0
        assert set(reader.measure_table()["method"]) == {"erag:em", "gold", "gold_page", "contains_answer"}
