"""Retrieval with LLM-generated sub-queries, fused into one ranking (the RTG-query-gen scenario).

Djeddal et al., "An Evaluation Framework for Attributed Information Retrieval using Large Language Models"
(CIKM 2024, Section 2.4): given the user query ``q_0`` the LLM writes sub-queries ``q_1..q_m``; each of
``q_0..q_m`` retrieves its top k ``P_t``, and the lists are aggregated with CombSUM, CombMNZ, PM2, Sort or a
reranker (:mod:`rageval.retrieval.fusion`). Their **MAX** row is an oracle: every list ``P_t`` evaluated alone,
and per query the best value of each measure kept (:func:`max_oracle`).

Here a base (non-chat) LLM is prompted few-shot (:data:`SUBQUERY_FEW_SHOT`) to write up to 3 short queries, one
per line; :func:`parse_subqueries` turns its output into clean, distinct queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rageval.generation.base import DecodingSettings, Generator
from rageval.prompts import PromptTemplate
from rageval.retrieval.fusion import comb_mnz, comb_sum, pm2, reciprocal_rank_fusion, sort_fusion
from rageval.types import Ranking

FUSION_METHODS = ("combsum", "combmnz", "rrf", "sort", "pm2")
MAX_SUBQUERIES = 3
# Greedy; a blank line ends the list (the few-shot blocks are separated by one), and 48 tokens hold 3 short queries.
SUBQUERY_DECODING = DecodingSettings(max_new_tokens=48, stop=("\n\n", "Question:"))


class Searcher(Protocol):
    """Any retriever: ``search(text, k)`` returns the top ``k`` passages for ``text``, best first."""

    def search(self, query_text: str, k: int = 10) -> Ranking:
        ...


@dataclass(frozen=True)
class SubqueryExample:
    """One worked example: a question and the search queries a good answer would list for it."""

    question: str
    queries: tuple[str, ...]


SUBQUERY_FEW_SHOT = PromptTemplate(
    name="subquery-fewshot",
    version="1",
    instruction="Write up to 3 short search engine queries that would find the answer to the question, "
                "one per line.",
    examples=(
        SubqueryExample("who discovered penicillin",
                        ("penicillin discovery", "Alexander Fleming penicillin 1928", "history of antibiotics")),
        SubqueryExample("what is the highest mountain in africa",
                        ("highest mountain in Africa", "Mount Kilimanjaro height")),
        SubqueryExample("when did the first humans land on the moon",
                        ("first crewed Moon landing date", "Apollo 11 mission", "Neil Armstrong Moon landing")),
    ),
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def build_subquery_prompt(question: str, template: PromptTemplate = SUBQUERY_FEW_SHOT) -> str:
    """The instruction, then ``Question: ...\\nQueries:\\n<one per line>`` blocks separated by blank lines, the
    last one open after ``Queries:``."""
    blocks = [_one_line(template.instruction)]
    blocks.extend("\n".join([f"Question: {_one_line(ex.question)}", "Queries:", *map(_one_line, ex.queries)])
                  for ex in template.examples)
    blocks.append(f"Question: {_one_line(question)}\nQueries:")
    return "\n\n".join(blocks)


# Leading list markers: "1.", "2)", "(3)", "-", "*", "•", "Query 1:", "Q2:".
_MARKER = re.compile(r"^\s*(?:(?:query|q)\s*\d*\s*[:.)]|\(?\d+\s*[.):-]|[-*•·]+)\s*", re.IGNORECASE)
_HEADER = re.compile(r"^\s*(?:question|queries|answer)\s*:", re.IGNORECASE)


def parse_subqueries(text: str, question: str, max_n: int = MAX_SUBQUERIES) -> list[str]:
    """The first ``max_n`` distinct queries in an LLM's list: one per line, list markers and quotes stripped.

    Reading stops at a line that opens a new prompt block (``Question:``, ``Answer:``); lines without a letter
    or digit are dropped; duplicates (case and whitespace ignored) keep their first occurrence. When nothing
    usable is left, the result is ``[question]``.
    """
    if max_n < 1:
        raise ValueError(f"max_n must be at least 1, got {max_n}")
    queries: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        if _HEADER.match(line):
            break
        query = _one_line(_MARKER.sub("", line, count=1)).strip("\"'`“”‘’ ")
        key = query.casefold()
        if not any(ch.isalnum() for ch in query) or key in seen:
            continue
        seen.add(key)
        queries.append(query)
        if len(queries) == max_n:
            break
    return queries or [_one_line(question)]


def generate_subqueries(generator: Generator, questions: Sequence[str],
                        settings: DecodingSettings = SUBQUERY_DECODING, max_n: int = MAX_SUBQUERIES,
                        template: PromptTemplate = SUBQUERY_FEW_SHOT) -> list[list[str]]:
    """Up to ``max_n`` sub-queries per question, in question order, from one batched ``generate`` call (a
    :class:`~rageval.generation.cache.CachedGenerator` answers repeated prompts from its cache)."""
    outputs = generator.generate([build_subquery_prompt(q, template) for q in questions], settings)
    if len(outputs) != len(questions):
        raise ValueError(f"generate_subqueries: {len(outputs)} outputs for {len(questions)} prompts")
    return [parse_subqueries(text, q, max_n) for text, q in zip(outputs, questions)]


def fuse(rankings: Sequence[Ranking], method: str, k: int, query_id: str) -> Ranking:
    """One of :data:`FUSION_METHODS` over ``rankings``, top ``k``: CombSUM, CombMNZ, Sort and PM2 use min-max
    normalised scores, RRF only ranks (rrf_k = 60)."""
    if method == "combsum":
        return comb_sum(rankings, "min_max", k=k, query_id=query_id)
    if method == "combmnz":
        return comb_mnz(rankings, "min_max", k=k, query_id=query_id)
    if method == "rrf":
        return reciprocal_rank_fusion(rankings, k=k, query_id=query_id)
    if method == "sort":
        return sort_fusion(rankings, "min_max", k=k, query_id=query_id)
    if method == "pm2":
        return pm2(rankings, k, normalization="min_max", query_id=query_id)
    raise ValueError(f"fusion method must be one of {', '.join(FUSION_METHODS)}, got {method!r}")


def subquery_rankings(retriever: Searcher, query: str, subqueries: Sequence[str], k: int,
                      include_query: bool = True) -> list[Ranking]:
    """The top ``k`` of ``query`` itself (first, unless ``include_query`` is False, as the paper's ``P_0``) and
    of each sub-query that differs from it (case and whitespace ignored)."""
    texts = [query] if include_query else []
    keys = {_one_line(t).casefold() for t in texts}
    for sub in subqueries:
        if _one_line(sub).casefold() not in keys:
            keys.add(_one_line(sub).casefold())
            texts.append(sub)
    return [retriever.search(text, k) for text in texts]


def fused_retrieval(retriever: Searcher, query: str, subqueries: Sequence[str], k: int, method: str,
                    query_id: str = "", include_query: bool = True) -> Ranking:
    """Retrieve the top ``k`` for the query and each sub-query (:func:`subquery_rankings`) and :func:`fuse`
    them with ``method`` into one top-``k`` ranking named ``query_id``."""
    return fuse(subquery_rankings(retriever, query, subqueries, k, include_query), method, k, query_id)


def max_oracle(per_system_scores: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """MAX oracle: per query, the best score any system got: ``max_s score_s(q)`` over the systems that scored q.

    ``per_system_scores`` maps a system (a fusion method, or one sub-query's list as in the paper's MAX row)
    to ``{query_id: score}``; queries come out in first-seen order.
    """
    best: dict[str, float] = {}
    for scores in per_system_scores.values():
        for qid, value in scores.items():
            if qid not in best or value > best[qid]:
                best[qid] = float(value)
    return best


def parse_fusion_methods(text: str) -> list[str]:
    """Distinct names among :data:`FUSION_METHODS` and ``rerank`` (the cross-encoder over the union)."""
    from rageval.errors import RagevalError

    allowed = (*FUSION_METHODS, "rerank")
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods or any(m not in allowed for m in methods) or len(set(methods)) != len(methods):
        raise RagevalError(f"--fusion {text!r}: expected distinct names among {', '.join(allowed)}")
    return methods


@dataclass(frozen=True)
class SubqueryResult:
    """Mean R@10 / nDCG@10 per system (BM25 on the question, each fusion method, the two MAX oracles), the
    sub-queries of each question, and the generation time."""

    table: Any  # pandas.DataFrame: rows = systems, columns = measures
    subqueries: list[list[str]]
    generation_s: float

    @property
    def mean_subqueries(self) -> float:
        return sum(len(s) for s in self.subqueries) / max(len(self.subqueries), 1)


def evaluate_subquery_retrieval(queries, retriever, generator, methods, k: int, *, passages=None, reranker=None,
                                max_new_tokens: int = 48, measures=("R@10", "nDCG@10")) -> SubqueryResult:
    """Sub-queries from ``generator`` -> ``retriever`` per (sub-)query -> each fusion method, against the gold
    passages; MAX (per list): each list alone, the best per query and measure; MAX (per method): the best
    system per query and measure (the paper's oracle)."""
    import time

    import pandas as pd

    from rageval.generation.base import DecodingSettings
    from rageval.retrieval.evaluate import compute_retrieval_measures
    from rageval.retrieval.fusion import rerank_fusion

    settings = DecodingSettings(max_new_tokens=max_new_tokens, stop=SUBQUERY_DECODING.stop)
    started = time.perf_counter()
    subqueries = generate_subqueries(generator, [q.text for q in queries], settings)
    generation_s = time.perf_counter() - started
    lists = {q.query_id: subquery_rankings(retriever, q.text, subs, k) for q, subs in zip(queries, subqueries)}
    systems = {"bm25 (question)": {qid: rankings[0] for qid, rankings in lists.items()}}
    for method in methods:
        if method == "rerank":  # the paper's Rerank: the cross-encoder re-scores the union for the question
            systems[method] = {q.query_id: rerank_fusion(reranker, q, lists[q.query_id], passages, k) for q in queries}
        else:
            systems[method] = {qid: fuse(rankings, method, k, qid) for qid, rankings in lists.items()}
    per_query = {name: compute_retrieval_measures(run, queries, measures) for name, run in systems.items()}

    def by_measure(frame) -> dict[str, dict[str, float]]:
        return {m: dict(zip(part["query_id"], part["value"])) for m, part in frame.groupby("measure")}

    depth = max(len(rankings) for rankings in lists.values())
    per_list = {f"list {t}": compute_retrieval_measures(
        {qid: rankings[t] for qid, rankings in lists.items() if t < len(rankings)},
        [q for q in queries if t < len(lists[q.query_id])], measures) for t in range(depth)}
    rows = {name: {m: frame[frame["measure"] == m]["value"].mean() for m in measures}
            for name, frame in per_query.items()}
    for label, group in (("MAX (per list)", per_list), ("MAX (per method)", per_query)):
        scores = {name: by_measure(frame) for name, frame in group.items()}
        rows[label] = {m: sum(max_oracle({n: s[m] for n, s in scores.items()}).values()) / len(queries)
                       for m in measures}
    return SubqueryResult(pd.DataFrame(rows).T[list(measures)], subqueries, generation_s)


@dataclass(frozen=True)
class SubqueryReport:
    """``rageval subquery-retrieval``'s result: :class:`SubqueryResult` for ``queries``, and the model that wrote
    the sub-queries with its LLM-call cache hits and misses."""

    queries: list
    k: int
    model_id: str
    cache_hits: int
    cache_misses: int
    result: SubqueryResult

    def as_json(self) -> dict:
        """The table (system -> measure -> mean) and every question's sub-queries (what ``--out`` writes)."""
        return {"num_queries": len(self.queries), "k": self.k, "model_id": self.model_id,
                "table": {name: {m: float(v) for m, v in row.items()} for name, row in self.result.table.iterrows()},
                "subqueries": {q.query_id: subs for q, subs in zip(self.queries, self.result.subqueries)}}


def subquery_retrieval(queries, passages: Mapping, fingerprint: str, methods: Sequence[str], k: int, *,
                       model, cache: Path | None = None, reranker_dir: Path | None = None,
                       max_new_tokens: int = 48, out: Path | None = None) -> SubqueryReport:
    """Sub-queries by ``model`` (a :class:`~rageval.generation.factory.ModelSettings`, through the LLM-call cache
    ``cache``, default the user's) -> BM25 over ``passages`` per (sub-)query -> each fusion method in
    ``methods`` (:func:`evaluate_subquery_retrieval`; ``rerank`` with the cross-encoder in ``reranker_dir``,
    default the latest ``rageval train-reranker`` model). ``out``: also written there as JSON
    (:meth:`SubqueryReport.as_json`)."""
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.generation.factory import load_generator
    from rageval.retrieval.retrievers import Retrievers

    retriever = Retrievers(passages.values(), fingerprint).bm25
    generator = CachedGenerator(load_generator(model), LLMCache(cache) if cache else LLMCache())
    reranker = None
    if "rerank" in methods:
        from rageval.retrieval.evaluate import latest_nq_reranker_dir
        from rageval.retrieval.rerank import CrossEncoderReranker

        reranker = CrossEncoderReranker.load(reranker_dir or latest_nq_reranker_dir())
    result = evaluate_subquery_retrieval(queries, retriever, generator, methods, k, passages=passages,
                                         reranker=reranker, max_new_tokens=max_new_tokens)
    report = SubqueryReport(list(queries), k, generator.model_id, generator.hits, generator.misses, result)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report.as_json(), indent=1))
    return report
