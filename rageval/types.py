"""The records every part of rageval passes around: plain frozen dataclasses, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """A retrievable unit of text (a Wikipedia passage), identified by a stable id."""

    passage_id: str
    title: str
    text: str
    source: str = ""  # which shipped file it came from, e.g. "nq_oracle", "hotpotqa"

    def as_document(self) -> str:
        """Title and text as the LLM and the BM25 index see them."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class Query:
    """A question with its downstream ground truth (answers) and gold passage ids, if any."""

    query_id: str
    text: str
    answers: tuple[str, ...] = ()
    gold_passage_ids: tuple[str, ...] = ()
    dataset: str = ""


@dataclass(frozen=True)
class ScoredPassage:
    passage_id: str
    score: float


@dataclass(frozen=True)
class Ranking:
    """A retriever's ranked list for one query, best first."""

    query_id: str
    passages: tuple[ScoredPassage, ...]

    @property
    def passage_ids(self) -> tuple[str, ...]:
        return tuple(p.passage_id for p in self.passages)
