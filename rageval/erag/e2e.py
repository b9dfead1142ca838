"""End-to-end (E2E) evaluation, the reference eRAG is judged against (Salemi & Zamani, SIGIR 2024, §3.2).

The RAG LLM M answers from the whole top-k list in one prompt (in-prompt augmentation, best first) and the
answer is scored with the downstream metric E against the gold answers y:

    E2E_q@k = E(M(q, R_k), y)

eRAG's claim is that IR measures over its per-document labels correlate with E2E better than classic relevance
labels do; the run stores E2E at every k of the sweep so the correlation can be read at each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rageval.erag.labels import EragSettings, ProgressCallback, generate_in_batches, score_outputs, top_k
from rageval.generation.base import Generator
from rageval.store import E2EOutput
from rageval.types import Passage, Query, Ranking


def compute_e2e(queries: Sequence[Query], rankings: Mapping[str, Ranking], passages: Mapping[str, Passage],
                generator: Generator, settings: EragSettings,
                on_progress: ProgressCallback | None = None, k: int | None = None) -> list[E2EOutput]:
    """End-to-end outputs M(q, R_k) (the whole top-k in one prompt, best first) and their score E(., y), at
    ``k`` (default ``settings.k``)."""
    k = settings.k if k is None else k
    build = settings.prompt_builder(generator)
    prompts = [build(q.text, [passages[pid] for pid in top_k(rankings[q.query_id], k)]) for q in queries]
    outputs = generate_in_batches(generator, prompts, settings.decoding, settings.batch_size, on_progress)
    scores = score_outputs(settings.metric, outputs, [q.answers for q in queries])
    return [E2EOutput(q.query_id, k, out, float(score)) for q, out, score in zip(queries, outputs, scores)]
