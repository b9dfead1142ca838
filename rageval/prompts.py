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
import re
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
    instruction="Answer the question using only the passage: copy the shortest phrase from the passage that "
                "answers it.",
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
    blocks.extend(f"{_passage_block(ex.title, ex.passage)}\nQuestion: {_one_line(ex.question)}\n"
                  f"Answer: {_one_line(ex.answer)}" for ex in template.examples)
    final = [_passage_block(p.title, p.text) for p in passages]
    final.append(f"Question: {_one_line(question)}\nAnswer:")
    blocks.append("\n".join(final))
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------------------------------------------------
# Relevance judgement by the LLM (eRAG's baseline (c): "is this passage relevant?", after Thomas et al. 2023)


@dataclass(frozen=True)
class RelevanceExample:
    """One worked relevance judgement: a question, a passage and the verdict ``Yes`` or ``No``."""

    question: str
    title: str
    passage: str
    verdict: str


RELEVANCE_FEW_SHOT = PromptTemplate(
    name="relevance-yesno",
    version="2",
    # Relevance to the query as a searcher would judge it (Thomas et al. 2023), not "contains the answer",
    # which is baseline (a) already.
    instruction="Judge whether the passage is relevant to the question, that is, useful to someone who wants "
                "to answer it. Reply Yes or No.",
    examples=(
        RelevanceExample(
            question="who discovered penicillin",
            title="Penicillin",
            passage="Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming at St Mary's "
                    "Hospital in London.",
            verdict="Yes",
        ),
        RelevanceExample(
            question="what is the highest mountain in africa",
            title="Mount Everest",
            passage="Mount Everest, on the border of Nepal and China, is Earth's highest mountain above sea level.",
            verdict="No",
        ),
    ),
)


def build_relevance_prompt(question: str, passage: Passage, template: PromptTemplate = RELEVANCE_FEW_SHOT) -> str:
    """Ask whether ``passage`` is relevant to ``question``; the completion starts with ``Yes`` or ``No``."""
    blocks = [_one_line(template.instruction)]
    blocks.extend(f"Question: {_one_line(ex.question)}\n{_passage_block(ex.title, ex.passage)}\n"
                  f"Relevant: {ex.verdict}" for ex in template.examples)
    blocks.append(f"Question: {_one_line(question)}\n{_passage_block(passage.title, passage.text)}\nRelevant:")
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------------------------------------------------
# Answer-equivalence judge (LLM-retEval's comparison step, in the spirit of GPT4-Eval, Kamalloo et al. 2023)


@dataclass(frozen=True)
class JudgeExample:
    """One worked comparison: a question, the reference answers, a candidate answer and ``Yes``/``No``."""

    question: str
    references: tuple[str, ...]
    candidate: str
    verdict: str


ANSWER_JUDGE_FEW_SHOT = PromptTemplate(
    name="answer-judge",
    version="1",
    instruction="Here is a question, a set of reference answers separated by ' / ', and a candidate answer. "
                "Is the candidate answer correct according to the question and the reference answers? "
                "Reply Yes or No.",
    examples=(
        JudgeExample(question="who discovered penicillin", references=("Alexander Fleming", "Fleming"),
                     candidate="Sir Alexander Fleming", verdict="Yes"),
        JudgeExample(question="when did the first humans land on the moon", references=("20 July 1969",),
                     candidate="1972", verdict="No"),
        JudgeExample(question="what is the capital of australia", references=("Canberra",),
                     candidate="the city of Canberra", verdict="Yes"),
        JudgeExample(question="who wrote the novel frankenstein", references=("Mary Shelley",),
                     candidate="Percy Bysshe Shelley", verdict="No"),
    ),
)


def build_judge_prompt(question: str, references: Sequence[str], candidate: str,
                       template: PromptTemplate = ANSWER_JUDGE_FEW_SHOT) -> str:
    """Ask whether ``candidate`` answers ``question`` as ``references`` do; the completion starts Yes/No."""

    def block(q: str, refs: Sequence[str], cand: str) -> str:
        joined = " / ".join(_one_line(r) for r in refs) or "(none)"
        return f"Question: {_one_line(q)}\nReference answers: {joined}\nCandidate answer: {_one_line(cand)}\nCorrect:"

    blocks = [_one_line(template.instruction)]
    blocks += [f"{block(ex.question, ex.references, ex.candidate)} {ex.verdict}" for ex in template.examples]
    blocks.append(block(question, references, candidate))
    return "\n\n".join(blocks)


def parse_yes_no(completion: str) -> bool | None:
    """``True``/``False`` when the completion's first word is yes/no (any case, punctuation ignored), else ``None``."""
    words = completion.strip().split()
    first = words[0].strip(".,:;!\"'").lower() if words else ""
    return {"yes": True, "no": False}.get(first)


# ---------------------------------------------------------------------------------------------------------------
# Entailment by the LLM (the "llm" NLI backend of citation checking: does the passage support the claim?)


@dataclass(frozen=True)
class EntailmentExample:
    """One worked entailment judgement: a premise passage, a claim and ``Yes`` (supported) or ``No``."""

    premise: str
    claim: str
    verdict: str


NLI_FEW_SHOT = PromptTemplate(
    name="nli-yesno",
    version="1",
    instruction="Does the passage fully support the claim? Reply Yes only if everything the claim states can be "
                "read in the passage; otherwise reply No.",
    examples=(
        EntailmentExample(
            premise="Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming at St Mary's "
                    "Hospital in London.",
            claim="Alexander Fleming discovered penicillin in 1928.", verdict="Yes"),
        EntailmentExample(
            premise="Mount Kilimanjaro is a dormant volcano in Tanzania.",
            claim="Mount Kilimanjaro is the highest mountain in Africa.", verdict="No"),
    ),
)


def build_nli_prompt(premise: str, claim: str, template: PromptTemplate = NLI_FEW_SHOT) -> str:
    """Ask whether ``premise`` supports ``claim``; the completion starts with ``Yes`` or ``No``."""
    blocks = [_one_line(template.instruction)]
    blocks += [f"Passage: {_one_line(ex.premise)}\nClaim: {_one_line(ex.claim)}\nSupported: {ex.verdict}"
               for ex in template.examples]
    blocks.append(f"Passage: {_one_line(premise)}\nClaim: {_one_line(claim)}\nSupported:")
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------------------------------------------------
# UMBRELA: graded 0-3 relevance (Upadhyay et al., "UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing
# RELevance Assessor", 2024; the assessor of TREC RAG 2024), after Thomas et al. 2023's Bing prompt.
#
# The published zero-shot prompt, word for word (trailing spaces included): castorini/umbrela, Apache-2.0,
# src/umbrela/prompts/qrel_zeroshot_bing.txt at commit 16cba3ebdfb79477850196695e06eef5ce96f339 (the same text is
# src/umbrela/prompts/prompt_templates/qrel_zeroshot_bing.yaml at 01cc3abfb11fdce82613cf4d58254bb52095c04e).
# ``{query}`` and ``{passage}`` are filled in by :func:`build_umbrela_prompt`; no example, no system message.

UMBRELA_ZERO_SHOT = PromptTemplate(
    name="umbrela-zeroshot-bing",
    version="1",
    instruction=(
        "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following "
        "meanings:\n"
        "0 = represent that the passage has nothing to do with the query, \n"
        "1 = represents that the passage seems related to the query but does not answer it, \n"
        "2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or "
        "hidden amongst extraneous information and \n"
        "3 = represents that the passage is dedicated to the query and contains the exact answer.\n"
        "\n"
        "Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not "
        "completely, category 2 if passage presents something very important related to the entire topic but also "
        "has some extra information and category 3 if the passage only and entirely refers to the topic. If none "
        "of the above satisfies give it category 0.\n"
        "\n"
        "Query: {query}\n"
        "Passage: {passage}\n"
        "\n"
        "Split this problem into steps:\n"
        "Consider the underlying intent of the search.\n"
        "Measure how well the content matches a likely intent of the query (M).\n"
        "Measure how trustworthy the passage is (T).\n"
        "Consider the aspects above and the relative importance of each, and decide on a final score (O). Final "
        "score must be an integer value only.\n"
        "Do not provide any code in result. Provide each score in the format of: ##final score: score without "
        "providing any reasoning."),
    examples=(),
)
#: UMBRELA's grades: 0 (nothing to do with the query) to 3 (dedicated to it, with the exact answer).
UMBRELA_GRADES = (0, 1, 2, 3)
#: UMBRELA's own relevance threshold (TREC RAG 2024 counts grades 2 and 3 as relevant): what the binary measures
#: (P, R, AP, RR, Hit, R-precision) and the agreement tables read; nDCG reads the grades.
UMBRELA_RELEVANT_GRADE = 2

_FINAL_SCORE = re.compile(r"##\s*final\s+score\s*:\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)


def build_umbrela_prompt(question: str, passage: Passage, template: PromptTemplate = UMBRELA_ZERO_SHOT) -> str:
    """UMBRELA's prompt with ``question`` and ``passage`` (its title, then its text, as the LLM sees every passage:
    :meth:`~rageval.types.Passage.as_document`) filled in; ``str.replace``, not ``str.format``, so braces in the
    passage stay as they are."""
    return template.instruction.replace("{query}", question.strip()).replace("{passage}",
                                                                             passage.as_document().strip())


def parse_umbrela(completion: str) -> int | None:
    """The grade of an UMBRELA answer: the number of its first ``##final score: N`` line when N is 0, 1, 2 or 3;
    None (unparsed) for anything else: no such line, a number out of range or not an integer. UMBRELA's own
    parser falls back to 0 for an answer it cannot read; here such an answer is "unparsed", never a grade."""
    match = _FINAL_SCORE.search(completion)
    if match is None:
        return None
    text = match.group(1)
    return int(text) if text.isdigit() and int(text) in UMBRELA_GRADES else None
