"""Does a model answer in a judge's format? Before an LLM-judge labelling job (UMBRELA, the yes/no relevance, a team's
own judge file) spends hours, ask the model about a few of the run's passages with the judge's own prompt and count
the replies its parser can read (UMBRELA: "##final score: N", N in 0-3): "this model answered 3 of 5 in UMBRELA's
format". A small model that rarely does would leave most passages unlabelled (an unread reply is never a grade 0).

The passages asked about are the first ``n`` (query, passage) pairs of the run's top-k in run order, so the probe is
the same for the same run and model (and its replies come from the LLM-call cache the second time).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rageval.generation.base import DecodingSettings, Generator

PROBE_PASSAGES = 5


@dataclass(frozen=True)
class FormatProbe:
    """``answered`` of ``asked`` replies were in UMBRELA's format; ``replies``: (query_id, passage_id, reply, grade
    or None) of each."""

    model_id: str
    method: str
    asked: int
    answered: int
    replies: tuple[tuple[str, str, str, float | None], ...]

    @property
    def sentence(self) -> str:
        from rageval.labelmethods import method_kind

        return (f"this model ({self.model_id}) answered {self.answered} of {self.asked} in "
                f"{method_kind(self.method).display}'s format")

    @property
    def rate(self) -> float:
        return self.answered / self.asked if self.asked else float("nan")


def probe_judge(run_path: str | os.PathLike, generator: Generator, method: str, n: int = PROBE_PASSAGES,
                k: int | None = None, decoding: DecodingSettings | None = None) -> FormatProbe:
    """Ask ``generator`` the judge of ``method`` (a registered judge: :func:`rageval.erag.baselines.judge_of`)
    about the first ``n`` top-``k`` passages of the run (module docstring) and count the replies its parser reads.
    ``decoding``: the job's (default: the judge's own length), so the replies a cache keeps are the job's."""
    from rageval.erag.baselines import judge_of
    from rageval.erag.labels import generate_in_batches, top_k
    from rageval.store.runs import RunReader

    judge = judge_of(method)
    with RunReader(run_path) as reader:
        k = k or reader.main_k() or int(reader.settings().get("k") or 10)
        rankings = reader.rankings()
        queries = {q.query_id: q for q in reader.queries()}
        pairs = [(qid, pid) for qid in reader.query_ids() for pid in top_k(rankings[qid], k)][:n] \
            if rankings else []
        passages = reader.passages(pid for _, pid in pairs)
    prompts = [judge.build_prompt(queries[q], passages[p]) for q, p in pairs]
    decoding = decoding or DecodingSettings(max_new_tokens=judge.max_new_tokens)
    replies = generate_in_batches(generator, prompts, decoding, 8, None) if prompts else []
    rows = tuple((q, p, reply, judge.parse(reply)) for (q, p), reply in zip(pairs, replies))
    return FormatProbe(generator.model_id, method, len(rows), sum(1 for r in rows if r[3] is not None), rows)
