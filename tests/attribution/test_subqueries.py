"""Sub-query generation, parsing, fusion of sub-query rankings, the MAX oracle and the subquery-retrieval CLI."""

from __future__ import annotations

import json

import pytest

from rageval.cli import main
from rageval.generation.base import FakeGenerator
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.retrieval.subqueries import (
    FUSION_METHODS,
    SUBQUERY_DECODING,
    SUBQUERY_FEW_SHOT,
    build_subquery_prompt,
    fused_retrieval,
    generate_subqueries,
    max_oracle,
    parse_subqueries,
)
from rageval.types import Ranking, ScoredPassage


def ranking(*pairs) -> Ranking:
    return Ranking("", tuple(ScoredPassage(pid, float(score)) for pid, score in pairs))


# ------------------------------------------------------------------------------------------------ parsing


def test_parse_strips_markers_dedupes_and_caps():
    text = "1. Foo bar\n2) baz\n- foo  BAR\n\n* qux\n• extra"
    assert parse_subqueries(text, "the question") == ["Foo bar", "baz", "qux"]
    assert parse_subqueries(text, "the question", max_n=1) == ["Foo bar"]


def test_parse_stops_at_a_new_block_and_keeps_leading_numbers_of_a_query():
    text = 'Query 1: "Eiffel tower height"\n1990 world cup winner\nQuestion: who won\nQueries:\nnoise'
    assert parse_subqueries(text, "q") == ["Eiffel tower height", "1990 world cup winner"]


@pytest.mark.parametrize("text", ["", "   \n\n", "---\n***\n1.", "Question: who"])
def test_parse_falls_back_to_the_question(text):
    assert parse_subqueries(text, "  who  wrote hamlet ") == ["who wrote hamlet"]


def test_parse_rejects_max_n_below_one():
    with pytest.raises(ValueError, match="max_n"):
        parse_subqueries("a", "q", max_n=0)


def test_prompt_ends_open_after_the_question_and_has_a_stable_identifier():
    prompt = build_subquery_prompt("who  wrote\nhamlet")
    assert prompt.endswith("\n\nQuestion: who wrote hamlet\nQueries:")
    assert prompt.count("Question:") == len(SUBQUERY_FEW_SHOT.examples) + 1
    assert SUBQUERY_FEW_SHOT.identifier.startswith("subquery-fewshot@1#")


# ------------------------------------------------------------------------------------------------ generation


def _list_rule(prompt: str) -> str:
    """Echo the prompt's question as a numbered list, then keep going into a new block (cut by the stop)."""
    question = prompt.rsplit("\n\n", 1)[-1].splitlines()[0][len("Question: "):]
    return f"1. {question} wiki\n2. {question}\n\nQuestion: junk"


def test_generate_subqueries_one_batch_and_cached(tmp_path):
    fake = FakeGenerator(rule=_list_rule, model_id="fake:list")
    questions = ["who wrote hamlet", "capital of peru"]
    with LLMCache(tmp_path / "llm.sqlite") as cache:
        cached = CachedGenerator(fake, cache)
        first = generate_subqueries(cached, questions, SUBQUERY_DECODING)
        again = generate_subqueries(cached, questions, SUBQUERY_DECODING)
    assert first == again == [["who wrote hamlet wiki", "who wrote hamlet"],
                              ["capital of peru wiki", "capital of peru"]]
    assert (fake.calls, fake.prompts_seen) == (1, 2)  # the second call came from the cache


# ------------------------------------------------------------------------------------------------ fusion


class DictRetriever:
    """A retriever whose rankings are written by hand; records what it was asked."""

    def __init__(self, rankings):
        self.rankings = rankings
        self.asked = []

    def search(self, query_text: str, k: int = 10) -> Ranking:
        self.asked.append(query_text)
        return Ranking("", self.rankings[query_text].passages[:k])


# Min-max normalised: question list a 1, b .9, c 0; sub-query list d 1, c .6, b .5, e 0.
RETRIEVER_LISTS = {"q": ranking(("a", 10), ("b", 9), ("c", 0)),
                   "s": ranking(("d", 10), ("c", 6), ("b", 5), ("e", 0))}
# Hand-computed (ties by passage id):
# combsum: a 1, b .9+.5=1.4, c .6, d 1, e 0 -> b, a, d, c, e
# combmnz: counts x sums: a 1, b 2.8, c 1.2, d 1, e 0 -> b, c, a, d, e
# rrf (60 + rank): b 1/62+1/63 = c 1/63+1/62 > a = d 1/61 > e 1/64 -> b, c, a, d, e
# sort (max normalised): a 1, d 1, b .9, c .6, e 0 -> a, d, b, c, e
# pm2 (lam .5, equal weights; value = .5 qt0 P0 + .5 qt1 P1): seat 1 qt (1, 1): b .7 beats a .5, d .5 -> b, seats
#   (.9/1.4, .5/1.4); seat 2 qt (.4375, .5833): d .2917 > a .2188 > c .175 -> d; seat 3 qt (.4375, .2692):
#   a .2188 > c .0808 -> a; then c (.0808) before e (0).
EXPECTED = {"combsum": ["b", "a", "d", "c", "e"], "combmnz": ["b", "c", "a", "d", "e"],
            "rrf": ["b", "c", "a", "d", "e"], "sort": ["a", "d", "b", "c", "e"], "pm2": ["b", "d", "a", "c", "e"]}


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_fused_retrieval_orders(method):
    retriever = DictRetriever(RETRIEVER_LISTS)
    fused = fused_retrieval(retriever, "q", ["s", "Q"], 10, method, query_id="nq:1")
    assert list(fused.passage_ids) == EXPECTED[method]
    assert fused.query_id == "nq:1"
    assert retriever.asked == ["q", "s"]  # the sub-query "Q" repeats the question: not searched twice


def test_fused_retrieval_truncates_and_can_leave_the_question_out():
    retriever = DictRetriever(RETRIEVER_LISTS)
    # k = 2 also cuts each list: (a 1, b 0) and (d 1, c 0) -> a 1, d 1, b 0, c 0, fused top 2 = a, d.
    assert list(fused_retrieval(retriever, "q", ["s"], 2, "combsum").passage_ids) == ["a", "d"]
    assert list(fused_retrieval(retriever, "q", ["s"], 10, "combsum", include_query=False).passage_ids) == \
        ["d", "c", "b", "e"]
    with pytest.raises(ValueError, match="combsum"):
        fused_retrieval(retriever, "q", ["s"], 10, "borda")


def test_max_oracle_takes_the_best_system_per_query():
    assert max_oracle({"x": {"q1": 0.2, "q2": 0.9}, "y": {"q1": 0.5, "q2": 0.1}, "z": {"q1": 0.0}}) == \
        {"q1": 0.5, "q2": 0.9}
    assert max_oracle({}) == {}


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_subquery_retrieval_end_to_end(tiny_model_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "table.json"
    code = main(["subquery-retrieval", "--num-queries", "2", "--model", str(tiny_model_dir), "--max-new-tokens", "8",
                 "--cache", str(tmp_path / "llm.sqlite"), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    rows = ["bm25 (question)", *FUSION_METHODS, "MAX (per list)", "MAX (per method)"]
    for row in rows:
        assert any(line.startswith(row) for line in printed.splitlines()), (row, printed)
    saved = json.loads(out.read_text())
    assert list(saved["table"]) == rows
    assert all(0.0 <= v <= 1.0 for row in saved["table"].values() for v in row.values())
    # MAX over methods is never below any method it maximises over (per query, hence on the mean).
    assert saved["table"]["MAX (per method)"]["R@10"] >= max(saved["table"][m]["R@10"] for m in FUSION_METHODS)
    assert len(saved["subqueries"]) == 2


def test_cli_rerank_fusion_rescores_the_union_with_the_cross_encoder(tiny_model_dir, tmp_path, monkeypatch, capsys):
    """``--fusion rerank``: a (tiny, random) cross-encoder re-scores the union of the question's and the
    sub-queries' lists; the command loads it from ``--reranker`` and reports it beside the other methods."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from rageval.retrieval.rerank import CrossEncoderReranker, CrossEncoderSettings, minilm_path

    encoder_dir = tmp_path / "tiny-bert"
    tokenizer = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    tokenizer.save_pretrained(encoder_dir)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(encoder_dir)
    reranker_dir = tmp_path / "reranker"
    CrossEncoderReranker.from_encoder(encoder_dir, CrossEncoderSettings(), model_id="tiny", seed=0,
                                      device="cpu").save(reranker_dir)

    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "table.json"
    code = main(["subquery-retrieval", "--num-queries", "2", "--model", str(tiny_model_dir), "--max-new-tokens", "8",
                 "--fusion", "combsum,rerank", "--reranker", str(reranker_dir), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    table = json.loads(out.read_text())["table"]
    assert list(table) == ["bm25 (question)", "combsum", "rerank", "MAX (per list)", "MAX (per method)"]
    assert all(0.0 <= table["rerank"][m] <= 1.0 for m in ("R@10", "nDCG@10"))
