"""Fusion of ranked lists: several rankings of the same collection combined into one.

Two uses in rageval: *hybrid* retrieval (BM25 and dense rankings of one query) and *sub-query fusion* (rankings
of sub-queries generated from one user query, as in the RTG-query-gen scenario of Djeddal et al., "An
Evaluation Framework for Attributed Information Retrieval using Large Language Models", CIKM 2024, which
compares CombSUM, CombMNZ, PM2, Sort and Rerank).

Every function is pure: it takes :class:`Ranking` objects and returns a new one. Notation: rankings
``R_1..R_m``; ``s_i(d)`` the score of passage d in ``R_i``, ``r_i(d)`` its 1-based rank, ``n_i(d)`` its score
after normalisation (see :func:`min_max` and :func:`z_score`); a passage absent from ``R_i`` contributes
nothing to ``R_i``'s terms. Fused rankings are sorted by fused score, descending, ties broken by passage id
(ascending, as Anserini does for BM25), so every result is deterministic. ``k`` (optional) truncates the
fused ranking; ``query_id`` (default: the first ranking's) names it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from rageval.retrieval.checks import check_k
from rageval.types import Passage, Query, Ranking, ScoredPassage

RRF_K = 60
PM2_LAMBDA = 0.5
NORMALIZATIONS = ("min_max", "z_score", "none")


class Reranker(Protocol):
    """What :func:`rerank_fusion` needs of a cross-encoder (``rageval.retrieval.rerank.Reranker`` has it):
    ``rerank`` re-scores the top ``k`` of ``ranking`` and returns them best first."""

    def rerank(self, query: Query, ranking: Ranking, passages: Mapping[str, Passage], k: int) -> Ranking:
        ...


# ---------------------------------------------------------------------------------------- normalisation


def min_max(ranking: Ranking) -> Ranking:
    """Min-max normalisation: ``n(d) = (s(d) - min s) / (max s - min s)``, so the top score maps to 1 and the
    bottom to 0 (Lee, "Analyses of multiple evidence combination", SIGIR 1997).

    A list whose scores are all equal (including a one-passage list) maps every score to 1: each of its passages
    is as good as the list's best. Order and passage ids are kept.
    """
    if not ranking.passages:
        return ranking
    scores = [p.score for p in ranking.passages]
    low, high = min(scores), max(scores)
    if high == low:
        return _rescored(ranking, [1.0] * len(scores))
    return _rescored(ranking, [(s - low) / (high - low) for s in scores])


def z_score(ranking: Ranking) -> Ranking:
    """Z-score normalisation: ``n(d) = (s(d) - mean s) / std s`` with the population standard deviation
    (divide by the list length) over the list's scores (Montague & Aslam, "Relevance score normalization for
    metasearch", CIKM 2001).

    A list whose scores are all equal maps every score to 0 (each equals the mean). Order and ids are kept.
    """
    if not ranking.passages:
        return ranking
    scores = [p.score for p in ranking.passages]
    mean = math.fsum(scores) / len(scores)
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    if std == 0.0:
        return _rescored(ranking, [0.0] * len(scores))
    return _rescored(ranking, [(s - mean) / std for s in scores])


def normalize(ranking: Ranking, method: str = "min_max") -> Ranking:
    """``min_max``, ``z_score`` or ``none`` (scores as they are)."""
    return _normalizer(method)(ranking)


def _normalizer(method: str) -> Callable[[Ranking], Ranking]:
    normalizers = {"min_max": min_max, "z_score": z_score, "none": lambda ranking: ranking}
    if method not in normalizers:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {method!r}")
    return normalizers[method]


def _rescored(ranking: Ranking, scores: Sequence[float]) -> Ranking:
    return Ranking(ranking.query_id, tuple(ScoredPassage(p.passage_id, float(s))
                                           for p, s in zip(ranking.passages, scores)))


# ---------------------------------------------------------------------------------------- score fusion


def ranking_from_scores(query_id: str, scores: Mapping[str, float], k: int | None = None) -> Ranking:
    """Passages sorted by score (descending), ties by passage id (ascending), truncated to ``k``."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    if k is not None:
        ordered = ordered[:check_k(k)]
    return Ranking(query_id, tuple(ScoredPassage(pid, float(score)) for pid, score in ordered))


def comb_sum(rankings: Sequence[Ranking], normalization: str = "min_max", k: int | None = None,
             query_id: str | None = None) -> Ranking:
    """CombSUM (Fox & Shaw, "Combination of Multiple Searches", TREC-2, 1993/94):
    ``score(d) = sum_i n_i(d)`` over the lists that retrieved d."""
    normalized = _normalized(rankings, normalization)
    scores: dict[str, float] = {}
    for ranking in normalized:
        for p in ranking.passages:
            scores[p.passage_id] = scores.get(p.passage_id, 0.0) + p.score
    return ranking_from_scores(_query_id(rankings, query_id), scores, k)


def comb_mnz(rankings: Sequence[Ranking], normalization: str = "min_max", k: int | None = None,
             query_id: str | None = None) -> Ranking:
    """CombMNZ (Fox & Shaw 1993/94): ``score(d) = |{i : d in R_i}| * sum_i n_i(d)``.

    The multiplier counts the lists that *retrieved* d (as ranx and trec_tools do), not the lists where its
    normalised score is non-zero, so a passage at the bottom of a min-max list still counts as retrieved.
    """
    normalized = _normalized(rankings, normalization)
    scores: dict[str, float] = {}
    hits: dict[str, int] = {}
    for ranking in normalized:
        for p in ranking.passages:
            scores[p.passage_id] = scores.get(p.passage_id, 0.0) + p.score
            hits[p.passage_id] = hits.get(p.passage_id, 0) + 1
    return ranking_from_scores(_query_id(rankings, query_id),
                               {pid: hits[pid] * total for pid, total in scores.items()}, k)


def reciprocal_rank_fusion(rankings: Sequence[Ranking], k: int | None = None, rrf_k: int = RRF_K,
                           query_id: str | None = None) -> Ranking:
    """Reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
    individual Rank Learning Methods", SIGIR 2009): ``score(d) = sum_i 1 / (rrf_k + r_i(d))``, ``rrf_k = 60``.

    Scores are ignored, only ranks count, so no normalisation is needed.
    """
    if rrf_k < 0:
        raise ValueError(f"rrf_k must be non-negative, got {rrf_k}")
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, p in enumerate(ranking.passages, start=1):
            scores[p.passage_id] = scores.get(p.passage_id, 0.0) + 1.0 / (rrf_k + rank)
    return ranking_from_scores(_query_id(rankings, query_id), scores, k)


def sort_fusion(rankings: Sequence[Ranking], normalization: str = "min_max", k: int | None = None,
                query_id: str | None = None) -> Ranking:
    """"Sort" (Djeddal et al., CIKM 2024, Section 2.4): the union of the lists sorted by normalised score.

    ``score(d) = max_i n_i(d)``: a passage that several lists retrieved keeps its best normalised score (the
    paper sorts the documents of the lists by their normalised MonoT5 scores and does not say how repeats
    are merged; the maximum keeps each passage once at its best position).
    """
    scores: dict[str, float] = {}
    for ranking in _normalized(rankings, normalization):
        for p in ranking.passages:
            if p.passage_id not in scores or p.score > scores[p.passage_id]:
                scores[p.passage_id] = p.score
    return ranking_from_scores(_query_id(rankings, query_id), scores, k)


# ----------------------------------------------------------------------------------------------- PM2


def pm2(rankings: Sequence[Ranking], k: int, weights: Sequence[float] | None = None, lam: float = PM2_LAMBDA,
        normalization: str = "min_max", query_id: str | None = None) -> Ranking:
    """PM2 diversification (Dang & Croft, "Diversity by proportionality: an election-based approach to search
    result diversification", SIGIR 2012) with each ranking ``R_i`` as one aspect (sub-query) ``t_i``.

    Aspect ``t_i`` has weight ``v_i`` (its share of the seats; equal weights unless ``weights`` is given) and
    ``P(d | t_i) = n_i(d)``, d's normalised score in ``R_i`` (0 when ``R_i`` did not retrieve d). The k seats
    (positions) are filled greedily; ``s_i`` counts the seats aspect i has occupied so far (start 0):

    1. quotient ``qt_i = v_i / (2 s_i + 1)`` (Sainte-Laguë); the aspect ``i*`` with the largest quotient
       has the turn;
    2. the seat goes to the unselected passage maximising
       ``lam * qt_{i*} * P(d | t_{i*}) + (1 - lam) * sum_{i != i*} qt_i * P(d | t_i)``;
    3. every aspect is credited its share of the chosen passage d*:
       ``s_i += P(d* | t_i) / sum_j P(d* | t_j)`` (no credit when that sum is 0).

    ``lam`` trades the turn-holder's relevance against the other aspects' (Dang & Croft tune it; 0.5 is the
    middle value used here by default). Ties (between aspects, or passages) go to the lowest aspect index and
    the smallest passage id. The greedy choice is the ranking; its scores are ``1 / rank`` (the PM2 objective
    values of different seats are not comparable with each other).
    """
    check_k(k)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    weights = [1.0] * len(rankings) if weights is None else [float(w) for w in weights]
    if len(weights) != len(rankings):
        raise ValueError(f"pm2: {len(weights)} weights for {len(rankings)} rankings")
    if any(w < 0 or not math.isfinite(w) for w in weights):
        raise ValueError(f"pm2: weights must be finite and non-negative, got {weights}")
    relevance = [{p.passage_id: p.score for p in ranking.passages}
                 for ranking in _normalized(rankings, normalization)]
    candidates = sorted({pid for aspect in relevance for pid in aspect})
    seats = [0.0] * len(rankings)
    chosen: list[str] = []
    while candidates and len(chosen) < k:
        quotients = [v / (2.0 * s + 1.0) for v, s in zip(weights, seats)]
        turn = max(range(len(quotients)), key=lambda i: (quotients[i], -i))
        best_pid, best_value = candidates[0], -math.inf
        for pid in candidates:  # sorted ids: a strictly larger value is needed to displace an earlier id
            value = sum((lam if i == turn else 1.0 - lam) * quotients[i] * aspect.get(pid, 0.0)
                        for i, aspect in enumerate(relevance))
            if value > best_value:
                best_pid, best_value = pid, value
        candidates.remove(best_pid)
        chosen.append(best_pid)
        shares = [aspect.get(best_pid, 0.0) for aspect in relevance]
        total = math.fsum(shares)
        if total > 0:
            seats = [s + share / total for s, share in zip(seats, shares)]
    return Ranking(_query_id(rankings, query_id),
                   tuple(ScoredPassage(pid, 1.0 / rank) for rank, pid in enumerate(chosen, start=1)))


# --------------------------------------------------------------------------------------------- rerank


def union_of(rankings: Sequence[Ranking], query_id: str | None = None) -> Ranking:
    """Every passage retrieved by any list, once, in :func:`reciprocal_rank_fusion` order (the order only
    matters to a reranker that keeps input order for equal scores)."""
    return reciprocal_rank_fusion(rankings, query_id=query_id)


def rerank_fusion(reranker: Reranker, query: Query, rankings: Sequence[Ranking], passages: Mapping[str, Passage],
                  k: int) -> Ranking:
    """"Rerank" (Djeddal et al., CIKM 2024, Section 2.4): re-score the whole union of the lists with a
    cross-encoder for ``query`` (the user's query, not the sub-queries) and keep the top ``k``.

    The fused ranking carries ``query.query_id``; its scores are the reranker's.
    """
    check_k(k)
    union = union_of(rankings, query_id=query.query_id)
    missing = [pid for pid in union.passage_ids if pid not in passages]
    if missing:
        raise KeyError(f"rerank_fusion: no text for passages {missing[:5]} (of {len(missing)}) of query "
                       f"{query.query_id!r}")
    reranked = reranker.rerank(query, union, passages, max(1, len(union.passages)))
    return Ranking(query.query_id, reranked.passages[:k])


# --------------------------------------------------------------------------------------------- helpers


def _normalized(rankings: Sequence[Ranking], normalization: str) -> list[Ranking]:
    normalizer = _normalizer(normalization)
    return [normalizer(ranking) for ranking in rankings]


def _query_id(rankings: Sequence[Ranking], query_id: str | None) -> str:
    if query_id is not None:
        return query_id
    return rankings[0].query_id if rankings else ""


