"""The Generator interface: a batch of prompts in, one short answer per prompt out.

Everything that runs the RAG LLM (eRAG labels, end-to-end scores, the dashboard) depends only on this
protocol, so a fake, a cached wrapper and a transformers model are interchangeable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class DecodingSettings:
    """How to decode: greedy when ``temperature == 0`` (the eRAG setting), else sampling seeded by ``seed``.

    ``stop`` strings end an answer; the text from the first stop string on is dropped.
    """

    max_new_tokens: int = 16
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = ("\n",)

    def __post_init__(self) -> None:
        # Accept a list for convenience but store a tuple, so settings stay hashable and canonical.
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.max_new_tokens < 1:
            raise ValueError(f"DecodingSettings.max_new_tokens: expected >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"DecodingSettings.temperature: expected >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"DecodingSettings.top_p: expected in (0, 1], got {self.top_p}")
        if any(not s for s in self.stop):
            raise ValueError("DecodingSettings.stop: empty stop strings are not allowed")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def as_dict(self) -> dict:
        """Plain JSON-serialisable form (``stop`` as a list), used in cache keys and result metadata."""
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@runtime_checkable
class Generator(Protocol):
    """A text generator for RAG answers.

    ``generate`` returns exactly one answer per prompt, in prompt order, with the stop strings applied
    (text from the first stop string on removed) and surrounding whitespace stripped.
    ``model_id`` names the model precisely enough to key a cache and to be stored with results.
    """

    @property
    def model_id(self) -> str: ...

    def generate(self, prompts: Sequence[str], settings: DecodingSettings) -> list[str]: ...


def apply_stop(text: str, stop: Sequence[str]) -> str:
    """Cut ``text`` at the earliest occurrence of any stop string, then strip surrounding whitespace.

    Leading whitespace is stripped *before* searching, so an answer that opens with a newline
    (``"\\nParis\\n"``) is not cut to nothing by a newline stop string.
    """
    text = text.lstrip()
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=len(text))
    return text[:cut].strip()


_CAPITALISED_SPAN = re.compile(r"[A-Z0-9][\w'-]*(?:\s+[A-Z0-9][\w'-]*)*")
def first_capitalised_span(prompt: str) -> str:
    """The fake model's answer: the first run of capitalised (or numeric) words in the prompt's first passage.

    Only the prompt's final block (after the last blank line) is read, so few-shot examples are ignored; in the
    layout of :func:`rageval.prompts.build_qa_prompt` that block holds the given passages and the question.
    The first ``"Passage:"`` line is used, or the question line when there is no passage (closed book).
    ``"unknown"`` if that line has no capitalised or numeric word.
    """
    final_block = prompt.rsplit("\n\n", 1)[-1]
    lines = final_block.splitlines()
    passage_lines = [line[len("Passage:"):] for line in lines if line.startswith("Passage:")]
    question_lines = [line[len("Question:"):] for line in lines if line.startswith("Question:")]
    body = (passage_lines or question_lines or [final_block])[0]
    match = _CAPITALISED_SPAN.search(body)
    return match.group(0) if match else "unknown"


class FakeGenerator:
    """A deterministic stand-in for an LLM, for tests: answers with ``rule(prompt)``.

    The default rule is :func:`first_capitalised_span`, so a prompt built around a passage that starts
    with its answer entity (``"Paris is the capital..."``) is answered correctly, and other passages are
    not. ``max_new_tokens`` is honoured as a word limit and stop strings are applied like a real model.
    ``calls`` counts ``generate`` calls and ``prompts_seen`` counts prompts, so tests can check caching.
    """

    def __init__(self, rule: Callable[[str], str] = first_capitalised_span, model_id: str = "fake:first-span/v1"):
        self._rule = rule
        self._model_id = model_id
        self.calls = 0
        self.prompts_seen = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    def generate(self, prompts: Sequence[str], settings: DecodingSettings) -> list[str]:
        self.calls += 1
        self.prompts_seen += len(prompts)
        answers = []
        for prompt in prompts:
            raw = " ".join(self._rule(prompt).split(" ")[: settings.max_new_tokens])
            answers.append(apply_stop(raw, settings.stop))
        return answers
