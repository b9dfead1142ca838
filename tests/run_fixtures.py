"""A small but realistic run file for the dashboard tests, built from real NQ-open records.

``make_small_run(path)`` takes the first 6 questions of ``nq_open/nq_open_oracle_psgs_w100.jsonl.gz`` (the
repo copy under ``data/``) with their gold DPR passages, plus one passage whose
text is an HTML/script injection (to check the dashboard renders passage text as text). Every query gets a
ranking of ``K = 5`` passages drawn from that pool; the labels and measures are then computed honestly:

- ``gold``: 1 for the query's own gold passage (stored even when it was not retrieved, as in qrels), else 0;
- ``contains_answer``: ``rageval.text_metrics.contains_answer(passage.text, answers)``;
- ``erag:em``: exact match (``rageval.text_metrics.exact_match``) of a deterministic *fake reader*'s answer
  given that passage alone. The fake reader (:func:`fake_reader`) answers with the first gold answer that
  occurs (normalised, whole tokens) within the passage's first ``READER_WINDOW`` words, and otherwise with
  the passage title; so eRAG labels are a subset of the contains-answer labels, stricter when the answer
  sits late in the passage.
- the E2E output is the fake reader's answer for the top-ranked passage, scored with exact match.

Measures (binary relevance = label > 0, cutoff K) follow trec_eval's definitions; ``tests/ui/test_app.py``
checks them against ``pytrec_eval``.
"""

from __future__ import annotations

import math
from pathlib import Path

from rageval.data.loaders import read_nq_open_oracle
from rageval.paths import DATA_DIR
from rageval.store import DocOutput, E2EOutput, Label, MeasureValue, Run, write_run
from rageval.text_metrics import contains_answer, exact_match
from rageval.types import Passage, Query, Ranking, ScoredPassage

NQ_ORACLE = Path("nq_open") / "nq_open_oracle_psgs_w100.jsonl.gz"
N_QUERIES = 6
K = 5
READER_WINDOW = 30
INJECTION = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
INJECTION_ID = "test:injection"
LABEL_METHODS = ("erag:em", "contains_answer", "gold")
MEASURES = (f"P@{K}", f"R@{K}", f"AP@{K}", f"RR@{K}", f"nDCG@{K}", f"Hit@{K}", "Rprec")


def read_oracle_head(n: int = N_QUERIES) -> tuple[list[Query], list[Passage]]:
    """The first ``n`` questions (ids ``nq:<line - 1>``) and their gold passages (ids ``nq_oracle:<line - 1>``)."""
    queries, passages = [], []
    for record in read_nq_open_oracle(DATA_DIR / NQ_ORACLE)[:n]:
        index = record.line - 1
        passage = Passage(f"nq_oracle:{index}", record.title, record.text, "nq_oracle")
        passages.append(passage)
        queries.append(Query(f"nq:{index}", record.question, record.answers, (passage.passage_id,), "nq_open"))
    return queries, passages


def fake_reader(passage: Passage, answers: tuple[str, ...]) -> str:
    """A deterministic stand-in for the RAG LLM: the first gold answer found in the passage's first
    ``READER_WINDOW`` words, else the passage title (a wrong answer unless the title is an answer)."""
    window = " ".join(passage.text.split()[:READER_WINDOW])
    for answer in answers:
        if contains_answer(window, (answer,)):
            return answer
    return passage.title


def _ranking_ids(index: int, pool: list[str]) -> list[str]:
    """Query ``index``'s ranked passage ids: the gold passage at rank ``index + 1`` (queries 0-4; query 5
    misses its gold passage), the other slots filled by the next questions' gold passages; query 0 also
    retrieves the injection passage at rank 2."""
    others = [pool[(index + step) % len(pool)] for step in range(1, len(pool))]
    if index == 0:
        others = [others[0], INJECTION_ID, *others[1:]]
    if index >= K:
        return others[:K]
    return [*others[:index], pool[index], *others[index:]][:K]


def _measures(labels: list[float], n_relevant: int) -> dict[str, float]:
    """trec_eval definitions on binary relevance (label > 0) of a ranking of ``K`` passages."""
    relevant = [1.0 if value > 0 else 0.0 for value in labels[:K]]
    hits = sum(relevant)
    ranks = [rank for rank, rel in enumerate(relevant, start=1) if rel]
    precision_at = [sum(relevant[:rank]) / rank for rank in range(1, K + 1)]
    dcg = sum(rel / math.log2(rank + 1) for rank, rel in enumerate(relevant, start=1))
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(n_relevant, K) + 1))
    return {
        f"P@{K}": hits / K,
        f"R@{K}": hits / n_relevant if n_relevant else 0.0,
        f"AP@{K}": sum(precision_at[rank - 1] for rank in ranks) / n_relevant if n_relevant else 0.0,
        f"RR@{K}": 1 / ranks[0] if ranks else 0.0,
        f"nDCG@{K}": dcg / ideal if ideal else 0.0,
        f"Hit@{K}": 1.0 if hits else 0.0,
        "Rprec": sum(relevant[:n_relevant]) / n_relevant if n_relevant else 0.0,
    }


def build_small_run() -> Run:
    """The fixture run (see the module docstring)."""
    queries, gold_passages = read_oracle_head()
    injection = Passage(INJECTION_ID, "Escaping test <b>bold?</b>", f"Before {INJECTION} after.", "test")
    passages = {p.passage_id: p for p in [*gold_passages, injection]}
    pool = [p.passage_id for p in gold_passages]
    rankings, doc_outputs, labels, e2e_outputs, measure_values = [], [], [], [], []
    for index, query in enumerate(queries):
        ids = _ranking_ids(index, pool)
        # Made-up BM25-like scores, strictly decreasing so every tool agrees on the order.
        rankings.append(Ranking(query.query_id, tuple(
            ScoredPassage(pid, round(24.0 - 1.75 * rank, 2)) for rank, pid in enumerate(ids))))
        outputs = [fake_reader(passages[pid], query.answers) for pid in ids]
        doc_outputs += [DocOutput(query.query_id, pid, out) for pid, out in zip(ids, outputs)]
        per_method = {
            "erag:em": {pid: exact_match(out, query.answers) for pid, out in zip(ids, outputs)},
            "contains_answer": {pid: float(contains_answer(passages[pid].text, query.answers)) for pid in ids},
            "gold": {pid: float(pid in query.gold_passage_ids) for pid in [*ids, *query.gold_passage_ids]},
        }
        for method, qrels in per_method.items():
            labels += [Label(method, query.query_id, pid, value) for pid, value in qrels.items()]
            n_relevant = sum(1 for value in qrels.values() if value > 0)
            values = _measures([qrels[pid] for pid in ids], n_relevant)
            measure_values += [MeasureValue(method, name, query.query_id, v) for name, v in values.items()]
        e2e_outputs.append(E2EOutput(query.query_id, K, outputs[0], exact_match(outputs[0], query.answers)))
    settings = {
        "dataset": "nq_open (first 6 oracle questions)",
        "retriever": "fixture ranking (no retriever)",
        "model_id": "fake-reader (tests/run_fixtures.py)",
        "prompt": {"name": "none", "hash": "0" * 12},
        "k": K,
        "label_metric": "em",
        "num_queries": len(queries),
        "corpus": {"name": "6 NQ oracle passages + 1 injection passage", "size": len(passages)},
        "created_at": "2026-01-01T00:00:00+00:00",
        "rageval_version": "test",
        "command": "python -c 'from tests.run_fixtures import make_small_run; make_small_run(...)'",
        "duration_s": 0.0,
        "notes": "A test fixture: labels come from a deterministic fake reader, not an LLM.",
    }
    return Run(settings, queries, list(passages.values()), rankings, doc_outputs, labels, e2e_outputs,
               measure_values)


def make_small_run(path: str | Path) -> Path:
    """Write the fixture run to ``path`` (a ``.sqlite`` file) and return the path."""
    return write_run(build_small_run(), path)


class RecordingGenerator:
    """A deterministic fake LLM (``rule(prompt)``, like :class:`~rageval.generation.base.FakeGenerator`) that
    also records every ``generate`` call as ``(prompts, settings)``, so tests can check what was asked and
    with which decoding settings (seeds, temperature, reply length)."""

    def __init__(self, rule, model_id: str = "stub:recording/v1"):
        from rageval.generation.base import FakeGenerator

        self._fake = FakeGenerator(rule=rule, model_id=model_id)
        self.requests: list[tuple[list[str], object]] = []

    @property
    def model_id(self) -> str:
        return self._fake.model_id

    def generate(self, prompts, settings):
        self.requests.append((list(prompts), settings))
        return self._fake.generate(prompts, settings)

    @property
    def prompts(self) -> list[str]:
        return [p for prompts, _ in self.requests for p in prompts]


def build_constant_e2e_run() -> Run:
    """The fixture run with E2E answers at two ks: at k=1 its own answers' exact match (1 of 6 right: it varies),
    at k=5 an exact match of 0 for every query (nothing to correlate with); and P@1 of each label method (the label
    of its top passage) so that k=1 has measures to correlate. The first-hour user's run of issue 34."""
    import dataclasses

    run = build_small_run()
    labels = {(label.method, label.query_id, label.passage_id): label.value for label in run.labels}
    top = {ranking.query_id: ranking.passages[0].passage_id for ranking in run.rankings}
    p_at_1 = [MeasureValue(method, "P@1", query_id, float(labels[method, query_id, passage] > 0))
              for method in LABEL_METHODS for query_id, passage in top.items()]
    e2e = [*(dataclasses.replace(o, k=1) for o in run.e2e_outputs),
           *(dataclasses.replace(o, score=0.0) for o in run.e2e_outputs)]
    return dataclasses.replace(run, e2e_outputs=e2e, measure_values=[*run.measure_values, *p_at_1])
