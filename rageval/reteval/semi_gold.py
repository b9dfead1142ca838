"""LLM-retEval's semi-gold answers (Alinejad et al., 2024, §3).

The RAG LLM answers the question from the gold passages alone, ``n`` times at temperature > 0 (the paper: 3
times at 0.5), so that several correct answers of a multi-answer question are covered. These answers, not the
dataset's gold answers, are what the top-k answer is judged against: a retriever is good when its top-k lets
the LLM say what the gold passages let it say.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rageval.generation.base import DecodingSettings, Generator
from rageval.store import SemiGoldOutput
from rageval.text_metrics import normalize_answer
from rageval.types import Passage, Query


@dataclass(frozen=True)
class SemiGoldSettings:
    """How the semi-gold answers are drawn (the paper: 3 samples at temperature 0.5)."""

    samples: int = 3
    temperature: float = 0.5
    seed: int = 0
    max_new_tokens: int = 16

    def decoding(self, sample: int) -> DecodingSettings:
        """Sample ``sample``'s own seeded decoding settings: each sample is an ordinary, cacheable call."""
        from rageval.generation.transformers_backend import sample_seed  # not at import: the dashboard's pages

        return DecodingSettings(max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                seed=sample_seed(self.seed, sample))


def sample_semi_gold(queries: Sequence[Query], gold_passages: Mapping[str, Sequence[Passage]], generator: Generator,
                     build_prompt: Callable[[str, Sequence[Passage]], str],
                     settings: SemiGoldSettings = SemiGoldSettings(), batch_size: int = 64) -> list[SemiGoldOutput]:
    """``settings.samples`` answers per query from its gold passages alone (queries without gold are skipped)."""
    answerable = [q for q in queries if gold_passages.get(q.query_id)]
    prompts = [build_prompt(q.text, gold_passages[q.query_id]) for q in answerable]
    outputs: list[SemiGoldOutput] = []
    for sample in range(settings.samples):
        decoding = settings.decoding(sample)
        answers: list[str] = []
        for start in range(0, len(prompts), batch_size):
            answers.extend(generator.generate(prompts[start:start + batch_size], decoding))
        outputs.extend(SemiGoldOutput(q.query_id, sample, a) for q, a in zip(answerable, answers))
    return outputs


def distinct_answers(answers: Sequence[str]) -> list[str]:
    """Non-empty answers, first occurrence of each normalised form kept, in order."""
    seen, kept = set(), []
    for answer in answers:
        key = normalize_answer(answer)
        if key and key not in seen:
            seen.add(key)
            kept.append(answer.strip())
    return kept
