"""A small but real attributed-answer run for the tests, built without any LLM
(``tests/attribution/test_attribution.py`` and the dashboard's ``tests/ui/test_app_attribution_ium.py`` share it).

:func:`build_hagrid_run` runs :func:`rageval.attribution.experiment.build_attribution_run` on the first 4 shipped
HAGRID dev queries with transparent stand-ins: a :class:`FakeGenerator` that cites the first passage
(:func:`cite_first_passage`), a word-containment NLI (:class:`ContainmentNli`), a word-overlap reranker
(:class:`OverlapReranker`) and BM25 over ~400 real passages (the queries' quotes plus wiki18 passages). Every
expected value of the stand-ins can be worked out by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

WORD = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 3}


class ContainmentNli:
    """p(entail) = share of the hypothesis' content words found in the premise; entailed from 0.8 on."""

    model_id = "test:containment"

    def __init__(self):
        self.pairs_seen = 0

    def entailment_probabilities(self, pairs):
        self.pairs_seen += len(pairs)
        scores = []
        for premise, hypothesis in pairs:
            words = content_words(hypothesis)
            share = len(words & content_words(premise)) / len(words) if words else 0.0
            scores.append(1.0 if share >= 0.8 else share / 2)
        return scores


class OverlapReranker:
    """Scores a passage by the query words it contains (a deterministic stand-in for the cross-encoder)."""

    model_id = "test:overlap-reranker"

    def score(self, query_text, passages):
        words = content_words(query_text)
        return [float(len(words & content_words(p.as_document()))) for p in passages]

    def rerank(self, query, ranking, passages, k):
        from rageval.retrieval.rerank import rerank_with

        return rerank_with(self, query, ranking, passages, k)


def cite_first_passage(prompt: str) -> str:
    """A fake attributed answer: the last block's first passage sentence, cited [1]; closed-book: a fixed one."""
    last = prompt.split("\n\n")[-1]
    match = re.search(r"^\[1\] (?:Title: [^\n]*\n)?([^\n]*)", last, re.MULTILINE)
    if not match:
        return "It is a well known fact."
    return match.group(1).split(". ")[0].rstrip(".") + ". [1]"


def build_hagrid_run(directory: Path, corpus, hagrid, num_queries: int = 4):
    """The run file ``directory/runs/a.sqlite`` on the first ``num_queries`` HAGRID records; returns
    ``(path, generator, records)`` (the generator counts its prompts)."""
    from rageval.attribution.experiment import AttributionPlan, AttributionResources, build_attribution_run
    from rageval.bertscore import BertScorer
    from rageval.data import HAGRID_RUN_FILE, read_hagrid_run
    from rageval.generation.base import FakeGenerator
    from rageval.paths import DATA_DIR
    from rageval.retrieval.bm25 import BM25Retriever, build_bm25_index

    records = hagrid[:num_queries]
    wanted = {corpus.resolve(f"hagrid:{q.docid}") for r in records for q in r.quotes}
    subset = [p for p in corpus.passages if p.passage_id in wanted or p.source == "wiki18"][:400]
    subset += [p for p in corpus.passages if p.passage_id in wanted and p not in subset]
    generator = FakeGenerator(rule=cite_first_passage)
    with BM25Retriever(build_bm25_index(subset, directory / "bm25")) as bm25:
        resources = AttributionResources(corpus, generator, ContainmentNli(), OverlapReranker(), BertScorer(),
                                         hagrid, read_hagrid_run(DATA_DIR / HAGRID_RUN_FILE), bm25=bm25)
        path = build_attribution_run(AttributionPlan(num_queries=num_queries), resources,
                                     directory / "runs" / "a.sqlite", log=lambda message: None)
    return path, generator, records
