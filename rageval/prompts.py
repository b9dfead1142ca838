"""The few-shot QA prompt for base (non-chat) LLMs, kept as data so that its hash can key caches and results.

Layout (one blank line between blocks; every field on one line)::

    <instruction>

    Title: <example title>
    Passage: <example passage>
    Question: <example question>
    Answer: <example answer>

    ... (more examples)

    Title: <title of passage 1>
    Passage: <text of passage 1>
    ... (one Title/Passage pair per given passage, none for closed-book)
    Question: <question>
    Answer:

The model is decoded greedily and stopped at the first newline (eRAG, Salemi & Zamani, SIGIR 2024, runs the
LLM on each retrieved passage alone with exactly this kind of prompt).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rageval.types import Passage


@dataclass(frozen=True)
class FewShotExample:
    """One worked example: a short passage, an NQ-style question about it and its short answer."""

    title: str
    passage: str
    question: str
    answer: str


@dataclass(frozen=True)
class PromptTemplate:
    """A named, versioned prompt: instruction plus few-shot examples. ``content_hash`` identifies it.

    ``examples`` are frozen dataclasses of the task's own shape (:class:`FewShotExample` for QA; sub-query
    generation has its own): the hash covers every field of every example.
    """

    name: str
    version: str
    instruction: str
    examples: tuple[Any, ...]

    @property
    def content_hash(self) -> str:
        """sha256 (hex, first 16 digits) of the canonical JSON of every field: changes whenever the text does."""
        canonical = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    @property
    def identifier(self) -> str:
        """``name@version#hash``, the string stored with results."""
        return f"{self.name}@{self.version}#{self.content_hash}"


QA_FEW_SHOT = PromptTemplate(
    name="qa-fewshot",
    version="1",
    instruction="Answer the question using only the passage: copy the shortest phrase from the passage that answers it.",
    examples=(
        FewShotExample(
            title="Mount Kilimanjaro",
            passage="Mount Kilimanjaro is a dormant volcano in Tanzania. At 5,895 metres above sea level it is "
                    "the highest mountain in Africa.",
            question="what is the highest mountain in africa",
            answer="Mount Kilimanjaro",
        ),
        FewShotExample(
            title="Penicillin",
            passage="Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming at St Mary's "
                    "Hospital in London.",
            question="who discovered penicillin",
            answer="Alexander Fleming",
        ),
        FewShotExample(
            title="Apollo 11",
            passage="Apollo 11 was the first crewed mission to land on the Moon. Neil Armstrong and Buzz Aldrin "
                    "landed the lunar module Eagle on 20 July 1969.",
            question="when did the first humans land on the moon",
            answer="20 July 1969",
        ),
    ),
)


def _one_line(text: str) -> str:
    """Collapse all whitespace (newlines included): a newline is the answer's stop string and block separator."""
    return " ".join(text.split())


def _passage_block(title: str, text: str) -> str:
    return f"Title: {_one_line(title)}\nPassage: {_one_line(text)}"


def build_qa_prompt(question: str, passages: Sequence[Passage], template: PromptTemplate = QA_FEW_SHOT) -> str:
    """The full prompt for ``question`` given zero, one or many ``passages`` (see the module docstring).

    The few-shot examples always carry one passage each; the final block lists the given passages in
    order, so eRAG (one passage) and end-to-end RAG (the top-k list) share the same template.
    """
    blocks = [_one_line(template.instruction)]
    for ex in template.examples:
        blocks.append(
            f"{_passage_block(ex.title, ex.passage)}\nQuestion: {_one_line(ex.question)}\nAnswer: {_one_line(ex.answer)}"
        )
    final = [_passage_block(p.title, p.text) for p in passages]
    final.append(f"Question: {_one_line(question)}\nAnswer:")
    blocks.append("\n".join(final))
    return "\n\n".join(blocks)
