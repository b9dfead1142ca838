"""A finding (one sentence about a run, with what proves it) and the sentences about an LLM judge's unread answers.

Kept apart from :mod:`rageval.findings` so that ``rageval info RUN`` words a run's unread answers without importing
pandas and numpy (a run with unread answers cost 0.6 s of CPU for that import alone, 26x starting Python).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One sentence about the run, with what proves it: ``kind`` (``correlation``, ``two_by_two``,
    ``label_share``, ``failures``) and ``target``, the facts a link to the proving page needs (method, measure,
    k, judge, the cell)."""

    kind: str
    text: str
    target: dict[str, Any] = field(default_factory=dict)


#: How a sentence names what an LLM-retEval judge compared an answer with (``llm/semi_gold``).
_REFERENCE_WORDS = {"semi_gold": "the semi-gold answers", "gold_answers": "the gold answers"}


def _judge_words(judge: str, judge_name: Callable[[str], str]) -> str:
    llm_judge, reference = judge.split("/", 1)
    return f"LLM-retEval judge {judge_name(llm_judge)} against {_REFERENCE_WORDS.get(reference, reference)}"


def unparsed_finding(judge: str, model: str, unparsed: int, answers: int, name: Callable[[str], str] = str,
                     judge_name: Callable[[str], str] = str) -> Finding | None:
    """"3 of 40 answers of the judge MODEL could not be parsed (LLM relevance): ..."; None when every answer was
    read. ``judge``: a label method (its queries with an unread answer have no value for its measures) or an
    LLM-retEval judge and reference, ``llm/semi_gold`` (those verdicts are missing). The counts are
    :meth:`rageval.store.RunReader.unparsed_counts`'."""
    if unparsed <= 0:
        return None
    if "/" in judge:
        what = f"{_judge_words(judge, judge_name)}: those verdicts are missing, not No"
    else:
        what = (f"{name(judge)}: those passages have no label, not a No or a 0, and the queries with one are left "
                f"out of {name(judge)}'s measures and correlations")
    text = f"{unparsed:,} of {answers:,} answers of the judge {model} could not be parsed ({what})."
    return Finding("unparsed", text, {"judge": judge, "unparsed": unparsed, "answers": answers})


def counted_as_no_finding(judge: str, model: str, count: int, answers: int, name: Callable[[str], str] = str,
                          judge_name: Callable[[str], str] = str) -> Finding | None:
    """The same sentence for the unread answers an older rageval stored as No
    (:meth:`rageval.store.RunReader.counted_as_no`): they are in this run's measures; None when there are none."""
    if count <= 0:
        return None
    if "/" in judge:
        what, counted = _judge_words(judge, judge_name), "its LLM-retEval scores count them as No"
    else:
        what, counted = name(judge), "its measures count those passages as not relevant"
    text = (f"{count:,} of {answers:,} answers of the judge {model} could not be parsed ({what}); the rageval that "
            f"built this run stored them as No, so {counted} (a run built now leaves them out).")
    return Finding("counted_as_no", text, {"judge": judge, "unparsed": count, "answers": answers})
