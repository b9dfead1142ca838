"""LLM-retEval's judges: does the top-k answer match the reference answers? (Alinejad et al., 2024, §3)

A judge says **Yes** when the RAG LLM's answer from the top-k matches the references: the semi-gold answers
(:data:`SEMI_GOLD`, the answers the same LLM gives from the gold passages: this verdict is LLM-retEval) or the
dataset's gold answers (:data:`GOLD_ANSWERS`: QA accuracy, "GPT-Eval" in the paper). Each verdict keeps its
evidence. The judge is a setting:

- ``llm``: the RAG LLM (or any generator) asked with a few-shot prompt in the spirit of GPT4-Eval
  (Kamalloo et al., ACL 2023) whether the candidate is correct given the reference answers;
- ``em``: SQuAD exact match against any reference (a leading yes/no answers a bare yes/no);
- ``token_f1``: SQuAD token F1 against the best reference >= a threshold (default 0.5);
- ``cosine``: cosine of MiniLM sentence embeddings against the best reference >= a threshold (default 0.8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from rageval.generation.base import DecodingSettings, Generator
from rageval.prompts import ANSWER_JUDGE_FEW_SHOT, PromptTemplate, build_judge_prompt, parse_yes_no
from rageval.reteval.semi_gold import distinct_answers
from rageval.store import Verdict
from rageval.store.records import UnparsedAnswer
from rageval.text_metrics import exact_match, token_f1, yes_no_answers
from rageval.types import Query

#: What a verdict compares the top-k answer with.
SEMI_GOLD = "semi_gold"        # the semi-gold answers: this is LLM-retEval
GOLD_ANSWERS = "gold_answers"  # the dataset's gold answers: this is QA accuracy ("GPT-Eval" in the paper)

#: Decoding of the judge and relevance prompts: the reply's first word is all that is read.
SHORT_REPLY = DecodingSettings(max_new_tokens=3)


@dataclass(frozen=True)
class JudgeResult:
    """A judge's verdict with its evidence; ``verdict`` None when an LLM's reply could not be read (``evidence``
    is then the reply as given, and ``model`` the model that gave it)."""

    verdict: bool | None
    evidence: str
    model: str = ""


class Judge(Protocol):
    """Says whether each candidate answer matches its reference answers, with evidence."""

    name: str

    def judge_many(self, questions: Sequence[str], references: Sequence[Sequence[str]],
                   candidates: Sequence[str]) -> list[JudgeResult]: ...


def _best_reference(candidate: str, references: Sequence[str], score: Callable[[str, str], float]
                    ) -> tuple[float, str]:
    scored = [(score(candidate, reference), reference) for reference in references]
    return max(scored, key=lambda pair: pair[0], default=(0.0, ""))


class ExactMatchJudge:
    """Yes when the normalised candidate equals a normalised reference (SQuAD exact match), or when one of the two
    is a bare yes/no and the other starts with that word (:func:`rageval.text_metrics.yes_no_answers`: "Yes, both
    are women's magazines." answers "yes")."""

    name = "em"

    def judge_many(self, questions, references, candidates) -> list[JudgeResult]:
        results = []
        for refs, candidate in zip(references, candidates):
            matched = [r for r in refs if exact_match(candidate, [r])]
            leading = [r for r in refs if not matched and yes_no_answers(candidate, r)]
            if matched:
                evidence = f"'{candidate}' equals reference '{matched[0]}' after normalisation"
            elif leading:
                evidence = f"'{candidate}' and reference '{leading[0]}' give the same yes/no as their first word"
            else:
                evidence = f"'{candidate}' equals none of {quote_list(refs)} after normalisation"
            matched = matched or leading
            results.append(JudgeResult(bool(matched), evidence))
        return results


class TokenF1Judge:
    """Yes when the SQuAD token F1 against the best reference reaches ``threshold``."""

    name = "token_f1"

    def __init__(self, threshold: float = 0.5):
        if not 0 < threshold <= 1:
            raise ValueError(f"TokenF1Judge.threshold: expected a value in (0, 1], got {threshold}")
        self.threshold = threshold

    def judge_many(self, questions, references, candidates) -> list[JudgeResult]:
        results = []
        for refs, candidate in zip(references, candidates):
            value, best = _best_reference(candidate, refs, lambda c, r: token_f1(c, [r]))
            results.append(JudgeResult(value >= self.threshold,
                                       f"token F1 {value:.2f} with '{best}' (threshold {self.threshold:g})"))
        return results


class EmbeddingJudge:
    """Yes when the cosine of MiniLM sentence embeddings with the best reference reaches ``threshold``."""

    name = "cosine"

    def __init__(self, threshold: float = 0.8, encoder=None):
        if not -1 <= threshold <= 1:
            raise ValueError(f"EmbeddingJudge.threshold: expected a value in [-1, 1], got {threshold}")
        if encoder is None:
            from rageval.retrieval.dense import MiniLMEncoder

            encoder = MiniLMEncoder()
        self.threshold = threshold
        self.encoder = encoder

    def judge_many(self, questions, references, candidates) -> list[JudgeResult]:
        texts = list(dict.fromkeys([c.strip() for c in candidates] + [r.strip() for refs in references for r in refs]))
        vectors = dict(zip(texts, self.encoder.encode(texts))) if texts else {}
        results = []
        for refs, candidate in zip(references, candidates):
            value, best = _best_reference(candidate, refs,
                                          lambda c, r: float(vectors[c.strip()] @ vectors[r.strip()]))
            results.append(JudgeResult(value >= self.threshold,
                                       f"cosine {value:.2f} with '{best}' (threshold {self.threshold:g})"))
        return results


class LLMJudge:
    """Asks ``generator`` the few-shot answer-judge prompt; a reply that does not start with Yes/No is unparsed
    (verdict None), never No."""

    name = "llm"

    def __init__(self, generator: Generator, template: PromptTemplate = ANSWER_JUDGE_FEW_SHOT,
                 decoding: DecodingSettings = SHORT_REPLY, batch_size: int = 64):
        self.generator = generator
        self.template = template
        self.decoding = decoding
        self.batch_size = batch_size

    def judge_many(self, questions, references, candidates) -> list[JudgeResult]:
        prompts = [build_judge_prompt(q, [r.strip() for r in refs if r.strip()], c, self.template)
                   for q, refs, c in zip(questions, references, candidates)]
        replies: list[str] = []
        for start in range(0, len(prompts), self.batch_size):
            replies.extend(self.generator.generate(prompts[start:start + self.batch_size], self.decoding))
        results = []
        for reply in replies:
            parsed = parse_yes_no(reply)
            if parsed is None:
                results.append(JudgeResult(None, reply, self.generator.model_id))
            else:
                results.append(JudgeResult(parsed, f"{self.generator.model_id} replied '{reply.strip()}'"))
        return results


JUDGE_NAMES = ("llm", "em", "token_f1", "cosine")


def make_judge(name: str, *, generator: Generator | None = None, encoder=None, f1_threshold: float = 0.5,
               cosine_threshold: float = 0.8) -> Judge:
    """The judge called ``name`` (one of :data:`JUDGE_NAMES`)."""
    if name == "llm":
        if generator is None:
            raise ValueError("the llm judge needs a generator")
        return LLMJudge(generator)
    if name == "em":
        return ExactMatchJudge()
    if name == "token_f1":
        return TokenF1Judge(f1_threshold)
    if name == "cosine":
        return EmbeddingJudge(cosine_threshold, encoder)
    raise ValueError(f"unknown judge {name!r}; choose one of {', '.join(JUDGE_NAMES)}")


def quote_list(values: Sequence[str]) -> str:
    """``['a', 'b']``: values quoted for an evidence or reason text."""
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def unparsed_judge(judge: str, reference: str) -> str:
    """The ``judge`` of an :class:`~rageval.store.records.UnparsedAnswer` of a verdict: ``llm/semi_gold``."""
    return f"{judge}/{reference}"


def judge_answers(judge: Judge, queries: Sequence[Query], answers_at_k: Mapping[int, Mapping[str, str]],
                  semi_gold: Mapping[str, Sequence[str]]) -> tuple[list[Verdict], list[UnparsedAnswer]]:
    """The judge's verdicts on every query's top-k answer, against the semi-gold answers and the gold answers, and
    the replies it could not read (no verdict; item ``k=<k>``)."""
    verdicts: list[Verdict] = []
    unparsed: list[UnparsedAnswer] = []
    for k, answers in sorted(answers_at_k.items()):
        judged = [q for q in queries if q.query_id in answers and q.query_id in semi_gold]
        for reference, refs in ((SEMI_GOLD, [distinct_answers(semi_gold[q.query_id]) for q in judged]),
                                (GOLD_ANSWERS, [list(q.answers) for q in judged])):
            results = judge.judge_many([q.text for q in judged], refs, [answers[q.query_id] for q in judged])
            verdicts.extend(Verdict(judge.name, reference, q.query_id, k, r.verdict, r.evidence)
                            for q, r in zip(judged, results) if r.verdict is not None)
            unparsed.extend(UnparsedAnswer(unparsed_judge(judge.name, reference), r.model, q.query_id, f"k={k}",
                                           r.evidence) for q, r in zip(judged, results) if r.verdict is None)
    return verdicts, unparsed
