"""Fusion of ranked lists on hand-made rankings; every expected number is computed by hand in a comment.

The two lists used throughout (query "q"):

    A = a:10, b:8, c:6        min-max: a=(10-6)/4=1.0, b=(8-6)/4=0.5, c=0.0
    B = b:0.9, d:0.5, a:0.1   min-max: b=(0.9-0.1)/0.8=1.0, d=(0.5-0.1)/0.8=0.5, a=0.0
"""

from __future__ import annotations

import math

import pytest

from rageval.retrieval.fusion import (
    comb_mnz,
    comb_sum,
    min_max,
    normalize,
    pm2,
    ranking_from_scores,
    reciprocal_rank_fusion,
    rerank_fusion,
    sort_fusion,
    union_of,
    z_score,
)
from rageval.retrieval.rerank import rerank_with
from rageval.types import Passage, Query, Ranking, ScoredPassage


def ranking(*pairs, query_id: str = "q") -> Ranking:
    return Ranking(query_id, tuple(ScoredPassage(pid, float(score)) for pid, score in pairs))


def as_pairs(fused: Ranking) -> list[tuple[str, float]]:
    return [(p.passage_id, p.score) for p in fused.passages]


A = ranking(("a", 10), ("b", 8), ("c", 6))
B = ranking(("b", 0.9), ("d", 0.5), ("a", 0.1))


def assert_pairs(fused: Ranking, expected: list[tuple[str, float]]) -> None:
    assert [p for p, _ in as_pairs(fused)] == [p for p, _ in expected]
    assert [s for _, s in as_pairs(fused)] == pytest.approx([s for _, s in expected], abs=1e-12)


# ------------------------------------------------------------------------------------------- normalisation


def test_min_max_maps_the_top_to_one_and_the_bottom_to_zero():
    assert_pairs(min_max(A), [("a", 1.0), ("b", 0.5), ("c", 0.0)])
    assert_pairs(min_max(B), [("b", 1.0), ("d", 0.5), ("a", 0.0)])


def test_z_score_uses_the_population_standard_deviation():
    # mean 8; variance ((10-8)^2 + 0 + (6-8)^2) / 3 = 8/3; z(a) = 2 / sqrt(8/3) = 1.2247448...
    z = 2 / math.sqrt(8 / 3)
    assert_pairs(z_score(A), [("a", z), ("b", 0.0), ("c", -z)])


@pytest.mark.parametrize("scores", [[3.0, 3.0, 3.0], [7.5]])
def test_constant_lists_min_max_to_one_and_z_score_to_zero(scores):
    constant = ranking(*[(f"p{i}", s) for i, s in enumerate(scores)])
    assert [p.score for p in min_max(constant).passages] == [1.0] * len(scores)
    assert [p.score for p in z_score(constant).passages] == [0.0] * len(scores)


def test_empty_rankings_normalise_and_fuse_to_empty():
    empty = Ranking("q", ())
    assert min_max(empty) == empty and z_score(empty) == empty
    assert comb_sum([empty, empty]).passages == ()
    assert reciprocal_rank_fusion([]).passages == ()
    assert pm2([empty], k=3).passages == ()


def test_normalisation_does_not_change_its_input_and_rejects_unknown_methods():
    before = A
    normalize(A, "z_score")
    assert before == A
    with pytest.raises(ValueError, match="normalization"):
        normalize(A, "max")


# ------------------------------------------------------------------------------------------- score fusion


def test_comb_sum_adds_normalised_scores():
    # a = 1.0 + 0.0, b = 0.5 + 1.0, c = 0.0 (A only), d = 0.5 (B only)
    assert_pairs(comb_sum([A, B]), [("b", 1.5), ("a", 1.0), ("d", 0.5), ("c", 0.0)])


def test_comb_sum_with_z_scores():
    # z(A): mean 8, std sqrt(8/3): a = +z, b = 0, c = -z with z = 2/sqrt(8/3) = 1.22474
    # C = b:5, d:1, a:0: mean 2, std sqrt((9 + 1 + 4)/3) = sqrt(14/3): b = 3/s = 1.38873, d = -1/s, a = -2/s
    # a = 1.22474 - 0.92582 = 0.29892, b = 0 + 1.38873, d = -0.46291 (C only), c = -1.22474 (A only)
    z, s = 2 / math.sqrt(8 / 3), math.sqrt(14 / 3)
    c_list = ranking(("b", 5), ("d", 1), ("a", 0))
    assert_pairs(comb_sum([A, c_list], "z_score"), [("b", 3 / s), ("a", z - 2 / s), ("d", -1 / s), ("c", -z)])


def test_comb_mnz_multiplies_by_the_number_of_lists_that_retrieved_the_passage():
    # a = 2 * 1.0 (in both lists, B's bottom counts though its min-max score is 0), b = 2 * 1.5, c = 1 * 0, d = 1 * 0.5
    assert_pairs(comb_mnz([A, B]), [("b", 3.0), ("a", 2.0), ("d", 0.5), ("c", 0.0)])


def test_reciprocal_rank_fusion_uses_ranks_only():
    # b: ranks 2 and 1 -> 1/62 + 1/61; a: ranks 1 and 3 -> 1/61 + 1/63; d: rank 2 -> 1/62; c: rank 3 -> 1/63
    expected = [("b", 1 / 62 + 1 / 61), ("a", 1 / 61 + 1 / 63), ("d", 1 / 62), ("c", 1 / 63)]
    assert_pairs(reciprocal_rank_fusion([A, B]), expected)
    # rrf_k = 0: b = 1/2 + 1/1, a = 1 + 1/3, d = 1/2, c = 1/3
    assert_pairs(reciprocal_rank_fusion([A, B], rrf_k=0), [("b", 1.5), ("a", 4 / 3), ("d", 0.5), ("c", 1 / 3)])


def test_sort_fusion_keeps_each_passage_at_its_best_normalised_score():
    # a = max(1.0, 0.0) = 1.0, b = max(0.5, 1.0) = 1.0 (tie: a first by id), d = 0.5, c = 0.0
    assert_pairs(sort_fusion([A, B]), [("a", 1.0), ("b", 1.0), ("d", 0.5), ("c", 0.0)])


def test_k_truncates_and_query_id_defaults_to_the_first_ranking():
    fused = comb_sum([A, B], k=2)
    assert fused.passage_ids == ("b", "a") and fused.query_id == "q"
    assert comb_sum([A, B], query_id="other").query_id == "other"
    with pytest.raises(ValueError, match="k must be at least 1"):
        comb_sum([A, B], k=0)


def test_ties_are_broken_by_passage_id_ascending_as_strings():
    # [p9, p10] and [p10, p9]: both passages score 1/61 + 1/62; "p10" < "p9" as strings
    first, second = ranking(("p9", 2), ("p10", 1)), ranking(("p10", 2), ("p9", 1))
    assert reciprocal_rank_fusion([first, second]).passage_ids == ("p10", "p9")
    assert reciprocal_rank_fusion([second, first]).passage_ids == ("p10", "p9")
    assert ranking_from_scores("q", {"b": 1.0, "a": 1.0, "c": 2.0}).passage_ids == ("c", "a", "b")


# ---------------------------------------------------------------------------------------------------- PM2


def test_pm2_alternates_between_equally_weighted_aspects():
    # R1 = a:3, b:2, c:1 -> P(.|t1): a=1, b=0.5, c=0;  R2 = d:5, b:4, e:3 -> P(.|t2): d=1, b=0.5, e=0; lam = 0.8
    # seat 1: qt = [1, 1], turn t1 (tie -> lower index): a = .8*1*1 = .8, b = .8*.5 + .2*.5 = .5, d = .2*1 = .2 -> a;
    #         seats += P(a|t)/sum = [1, 0]
    # seat 2: qt = [1/3, 1], turn t2: d = .8*1*1 = .8, b = .8*1*.5 + .2*(1/3)*.5 = .4333 -> d; seats = [1, 1]
    # seat 3: qt = [1/3, 1/3], turn t1: b = .8*(1/3)*.5 + .2*(1/3)*.5 = .1667, c = e = 0 -> b
    r1, r2 = ranking(("a", 3), ("b", 2), ("c", 1)), ranking(("d", 5), ("b", 4), ("e", 3))
    fused = pm2([r1, r2], k=3, lam=0.8)
    assert_pairs(fused, [("a", 1.0), ("d", 0.5), ("b", 1 / 3)])
    # CombSUM of the same lists puts a, b, d in a three-way tie at 1.0 (b = .5 + .5), then c, e: no alternation
    assert comb_sum([r1, r2], k=3).passage_ids == ("a", "b", "d")


def test_pm2_gives_a_heavier_aspect_more_seats():
    # weights [3, 1], lam = 0.8; R1 = a:3, b:2, c:1 (a=1, b=.5, c=0); R2 = d:5, e:3 (d=1, e=0)
    # seat 1: qt = [3, 1], turn t1: a = .8*3*1 = 2.4, b = 1.2, d = .2*1*1 = .2 -> a; seats = [1, 0]
    # seat 2: qt = [3/3, 1/1] tie, turn t1: b = .8*1*.5 = .4, d = .2*1*1 = .2 -> b; seats = [2, 0]
    # seat 3: qt = [3/5, 1], turn t2: d = .8*1*1 = .8, c = e = 0 -> d
    r1, r2 = ranking(("a", 3), ("b", 2), ("c", 1)), ranking(("d", 5), ("e", 3))
    assert pm2([r1, r2], k=3, weights=[3, 1], lam=0.8).passage_ids == ("a", "b", "d")
    # equal weights: seat 2 goes to t2 (qt = [1/3, 1]) and so to d
    assert pm2([r1, r2], k=3, lam=0.8).passage_ids == ("a", "d", "b")


def test_pm2_validates_its_parameters():
    with pytest.raises(ValueError, match="weights"):
        pm2([A, B], k=2, weights=[1.0])
    with pytest.raises(ValueError, match="lam"):
        pm2([A, B], k=2, lam=1.5)


# ------------------------------------------------------------------------------------------------- rerank


class LengthReranker:
    """A fake cross-encoder: the score of a passage is the length of its text; counts the passages scored."""

    model_id = "fake-length"

    def __init__(self):
        self.scored: list[str] = []

    def score(self, query_text: str, passages) -> list[float]:
        self.scored.extend(p.passage_id for p in passages)
        return [float(len(p.text)) for p in passages]

    def rerank(self, query, ranking, passages, k):
        return rerank_with(self, query, ranking, passages, k)


def test_rerank_fusion_rescores_the_whole_union_and_keeps_the_top_k():
    passages = {pid: Passage(pid, "", "x" * length) for pid, length in
                [("a", 1), ("b", 2), ("c", 50), ("d", 3)]}
    reranker = LengthReranker()
    fused = rerank_fusion(reranker, Query("user-q", "question"), [A, B], passages, k=2)
    # union order is RRF's (b, a, d, c); c is last there but longest, so it ranks first after reranking
    assert union_of([A, B]).passage_ids == ("b", "a", "d", "c")
    assert sorted(reranker.scored) == ["a", "b", "c", "d"]
    assert as_pairs(fused) == [("c", 50.0), ("d", 3.0)]
    assert fused.query_id == "user-q"


def test_rerank_fusion_names_passages_without_text():
    with pytest.raises(KeyError, match="no text for passages"):
        rerank_fusion(LengthReranker(), Query("q", "question"), [A], {"a": Passage("a", "", "x")}, k=1)
