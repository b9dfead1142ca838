"""Prompts for attributed answers from a base (non-chat) LLM: closed-book (scenario G) and with numbered passages
that the answer cites inline (scenario RTG; Djeddal et al., CIKM 2024, §2.3; ALCE's prompt shape, Gao et al. 2023).

Layout of the citation prompt (blank line between blocks)::

    <instruction>

    [1] Title: <title>
    <text>
    [2] ...
    Question: <example question>
    Answer: <example answer citing [1] and [2]>

    [1] Title: <title of input passage 1>
    <text>
    ...
    Question: <question>
    Answer:

The answer is decoded greedily until the end of its line (the examples' answers are one line each). The closed-book
prompt has the same examples without passages or citations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rageval.generation.base import DecodingSettings
from rageval.prompts import PromptTemplate

# One line: every example answer is one line, and after it the 270M model goes on inventing "[3] Title: ..." passages.
ANSWER_DECODING = DecodingSettings(max_new_tokens=96, stop=("\n",))


@dataclass(frozen=True)
class AttributedExample:
    """A worked example: passages (title, text), a question, an answer citing the passages and the same answer
    without citations (for the closed-book prompt)."""

    passages: tuple[tuple[str, str], ...]
    question: str
    answer: str
    closed_book_answer: str


_EXAMPLES = (
    AttributedExample(
        passages=(("Penicillin", "Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming at "
                                 "St Mary's Hospital in London. He noticed that a mould had killed the bacteria "
                                 "around it."),
                  ("History of penicillin", "Howard Florey and Ernst Chain turned penicillin into a medicine in "
                                            "1940, and mass production began during the Second World War.")),
        question="Who discovered penicillin?",
        answer="Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming [1]. Howard Florey "
               "and Ernst Chain later turned it into a medicine, and mass production began during the Second "
               "World War [2].",
        closed_book_answer="Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming. Howard "
                           "Florey and Ernst Chain later turned it into a medicine."),
    AttributedExample(
        passages=(("Mount Kilimanjaro", "Mount Kilimanjaro is a dormant volcano in Tanzania. At 5,895 metres above "
                                        "sea level it is the highest mountain in Africa."),
                  ("Tanzania", "Tanzania is a country in East Africa. Its capital is Dodoma and its largest city is "
                               "Dar es Salaam.")),
        question="What is the highest mountain in Africa?",
        answer="The highest mountain in Africa is Mount Kilimanjaro, a dormant volcano in Tanzania that rises "
               "5,895 metres above sea level [1].",
        closed_book_answer="The highest mountain in Africa is Mount Kilimanjaro, a dormant volcano in Tanzania."),
)

CITATION_FEW_SHOT = PromptTemplate(
    name="attributed-answer",
    version="1",
    instruction="Answer the question in one to three sentences using the numbered passages. After each sentence, "
                "cite the passage that supports it with its number in brackets, like [1].",
    examples=_EXAMPLES,
)

CLOSED_BOOK_FEW_SHOT = PromptTemplate(
    name="closed-book-answer",
    version="1",
    instruction="Answer the question in one to three sentences.",
    examples=_EXAMPLES,
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _numbered(passages: Sequence[tuple[str, str]]) -> list[str]:
    return [f"[{number}] Title: {_one_line(title)}\n{_one_line(text)}" if title.strip()
            else f"[{number}] {_one_line(text)}" for number, (title, text) in enumerate(passages, start=1)]


def build_attributed_prompt(question: str, passages: Sequence[tuple[str, str]],
                            template: PromptTemplate = CITATION_FEW_SHOT) -> str:
    """The citation prompt for ``question`` over ``passages`` ((title, text), cited as [1], [2], ... in order)."""
    blocks = [_one_line(template.instruction)]
    blocks.extend("\n".join([*_numbered(example.passages), f"Question: {_one_line(example.question)}",
                             f"Answer: {_one_line(example.answer)}"]) for example in template.examples)
    blocks.append("\n".join([*_numbered(passages), f"Question: {_one_line(question)}", "Answer:"]))
    return "\n\n".join(blocks)


def build_closed_book_prompt(question: str, template: PromptTemplate = CLOSED_BOOK_FEW_SHOT) -> str:
    """The closed-book prompt (scenario G): the examples' answers without passages or citations."""
    blocks = [_one_line(template.instruction)]
    blocks += [f"Question: {_one_line(ex.question)}\nAnswer: {_one_line(ex.closed_book_answer)}"
               for ex in template.examples]
    blocks.append(f"Question: {_one_line(question)}\nAnswer:")
    return "\n\n".join(blocks)
