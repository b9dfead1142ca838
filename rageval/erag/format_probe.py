"""Does a model answer in UMBRELA's format? Before an UMBRELA labelling job spends hours, ask the model about a few of
the run's passages with UMBRELA's own prompt and count the replies :func:`rageval.prompts.parse_umbrela` can read
("##final score: N", N in 0-3): "this model answered 3 of 5 in UMBRELA's format". A small model that rarely does
would leave most passages unlabelled (an unread reply is never a grade 0).

The passages asked about are the first ``n`` (query, passage) pairs of the run's top-k in run order, so the probe is
the same for the same run and model (and its replies come from the LLM-call cache the second time).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rageval.generation.base import Generator

PROBE_PASSAGES = 5


@dataclass(frozen=True)
class FormatProbe:
    """``answered`` of ``asked`` replies were in UMBRELA's format; ``replies``: (query_id, passage_id, reply, grade
    or None) of each."""

    model_id: str
    asked: int
    answered: int
    replies: tuple[tuple[str, str, str, float | None], ...]

    @property
    def sentence(self) -> str:
        return (f"this model ({self.model_id}) answered {self.answered} of {self.asked} in UMBRELA's format "
                "('##final score: 0-3')")

    @property
    def rate(self) -> float:
        return self.answered / self.asked if self.asked else float("nan")


def probe_umbrela(run_path: str | os.PathLike, generator: Generator, n: int = PROBE_PASSAGES,
                  k: int | None = None) -> FormatProbe:
    """Ask ``generator`` UMBRELA's question about the first ``n`` top-``k`` passages of the run (module docstring)
    and count the replies in its format."""
    from rageval.erag.baselines import UMBRELA_GRADED
    from rageval.erag.labels import generate_in_batches, top_k
    from rageval.store.runs import RunReader

    with RunReader(run_path) as reader:
        k = k or reader.main_k() or int(reader.settings().get("k") or 10)
        rankings = reader.rankings()
        queries = {q.query_id: q for q in reader.queries()}
        pairs = [(qid, pid) for qid in reader.query_ids() for pid in top_k(rankings[qid], k)][:n] \
            if rankings else []
        passages = reader.passages(pid for _, pid in pairs)
    prompts = [UMBRELA_GRADED.build_prompt(queries[q].text, passages[p], UMBRELA_GRADED.template) for q, p in pairs]
    replies = generate_in_batches(generator, prompts, UMBRELA_GRADED.decoding, 8, None) if prompts else []
    rows = tuple((q, p, reply, UMBRELA_GRADED.parse(reply)) for (q, p), reply in zip(pairs, replies))
    return FormatProbe(generator.model_id, len(rows), sum(1 for r in rows if r[3] is not None), rows)
