"""LLM-retEval's failure cases A-F (Alinejad et al., 2024, §4.1), decided by explicit rules over stored facts.

A-C are failures of the classic recall metric (it says fail where the answer is right, or pass where the LLM was
misled); D-F are failures of LLM-retEval itself (the gold passages do not yield a right answer, the semi-gold
samples miss some answers, the judge compared wrongly). :func:`classify_failures` gives every category that
applies to one query at one k with a human-readable reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rageval.reteval.judges import SEMI_GOLD, quote_list
from rageval.store import FailureCase, Verdict
from rageval.text_metrics import _token_f1_single, normalize_answer
from rageval.types import Passage, Query

RECALL_FAILURES = ("A", "B", "C")
RETEVAL_FAILURES = ("D", "E", "F")
CATEGORY_NAMES = {
    "A": "not all correct passages annotated",
    "B": "corpus/label mismatch (another version of the gold passage)",
    "C": "distraction by retrieved passages",
    "D": "LLM cannot answer from the gold passages",
    "E": "semi-gold answers cover only some correct answers",
    "F": "judge compared wrongly",
}


def matched_gold_answers(answer: str, gold_answers: Sequence[str]) -> list[str]:
    """The gold answers ``answer`` gets right: equal after normalisation, or contained in it on token bounds
    (the gold-answer check the failure rules use)."""
    padded = f" {normalize_answer(answer)} "
    matched = []
    for gold in gold_answers:
        g = normalize_answer(gold)
        if g and (padded.strip() == g or f" {g} " in padded):
            matched.append(gold)
    return matched


def text_overlap(a: str, b: str) -> float:
    """Token F1 between two passages' normalised texts (multiset overlap): 1.0 for identical texts."""
    return _token_f1_single(normalize_answer(a).split(), normalize_answer(b).split())


@dataclass(frozen=True)
class QueryFacts:
    """The stored facts the failure rules read for one query at one k."""

    query_id: str
    k: int
    gold_answers: tuple[str, ...]
    gold_passages: tuple[Passage, ...]
    retrieved: tuple[Passage, ...]  # the top-k, best first
    answer: str                     # the RAG LLM's answer from the top-k
    semi_gold: tuple[str, ...]      # its answers from the gold passages
    verdict: bool                   # the judge's verdict, top-k answer vs semi-gold answers


#: Rule B: a retrieved passage with a gold passage's title and at least this text overlap is another version.
NEAR_DUPLICATE_OVERLAP = 0.5


def classify_failures(facts: QueryFacts, near_duplicate_overlap: float = NEAR_DUPLICATE_OVERLAP
                      ) -> list[tuple[str, str]]:
    """Every failure category (A-F) that applies, each with its reason, by these rules:

    - hit = a gold passage is in the top-k; a = the top-k answer passes the gold-answer check
      (:func:`matched_gold_answers`); s = some semi-gold answer passes it.
    - **B**: not hit, a, and a retrieved passage has a gold passage's title (case-insensitive) and text overlap
      >= ``near_duplicate_overlap`` with it (recall says fail, yet another version of the gold passage answered).
    - **A**: not hit, a, and not B.
    - **C**: hit, not a, s, and the judge says the answer differs from the semi-gold answers (the gold passages
      do yield a correct answer, so the other retrieved passages misled the LLM).
    - **D**: not s (no semi-gold answer is correct).
    - **E**: a and s, the judge says No, and the gold answers the top-k answer matches are disjoint from those
      the semi-gold answers match (the samples covered other answers only).
    - **F**: the verdict disagrees with what the gold-answer check implies: Yes expected when a and s share a
      matched gold answer, No expected when exactly one of a, s holds (undecided when neither holds).
    """
    gold_ids = {p.passage_id for p in facts.gold_passages}
    hit = any(p.passage_id in gold_ids for p in facts.retrieved)
    answer_matches = matched_gold_answers(facts.answer, facts.gold_answers)
    semi_matches = {g for s in facts.semi_gold for g in matched_gold_answers(s, facts.gold_answers)}
    a, s = bool(answer_matches), bool(semi_matches)
    semi = quote_list(list(dict.fromkeys(s.strip() for s in facts.semi_gold)))  # as said, even "The" or ""
    said = "Yes" if facts.verdict else "No"
    cases: list[tuple[str, str]] = []

    near_duplicate = None
    if not hit and a:
        for rank, passage in enumerate(facts.retrieved, start=1):
            for gold in facts.gold_passages:
                if passage.title.strip().lower() == gold.title.strip().lower() and passage.title.strip():
                    overlap = text_overlap(passage.text, gold.text)
                    if overlap >= near_duplicate_overlap:
                        near_duplicate = (rank, passage, gold, overlap)
                        break
            if near_duplicate:
                break
    if near_duplicate:
        rank, passage, gold, overlap = near_duplicate
        cases.append(("B", f"gold passage {gold.passage_id} is not in the top-{facts.k}, but rank {rank} "
                           f"({passage.passage_id}) has the same title '{gold.title}' and text overlap "
                           f"{overlap:.2f} with it, and the answer '{facts.answer}' matches gold answer "
                           f"'{answer_matches[0]}'"))
    elif not hit and a:
        cases.append(("A", f"no gold passage ({', '.join(sorted(gold_ids))}) in the top-{facts.k}, yet the answer "
                           f"'{facts.answer}' matches gold answer '{answer_matches[0]}'"))
    if hit and not a and s and not facts.verdict:
        cases.append(("C", f"a gold passage is in the top-{facts.k}, but the answer '{facts.answer}' matches no gold "
                           f"answer of {quote_list(facts.gold_answers)}, while the semi-gold answers {semi} from the "
                           f"gold passages do, and the judge found the two differ"))
    if not s:
        cases.append(("D", f"no semi-gold answer {semi} from the gold passages matches a gold answer of "
                           f"{quote_list(facts.gold_answers)}"))
    if a and s and not facts.verdict and not (set(answer_matches) & semi_matches):
        cases.append(("E", f"the answer '{facts.answer}' matches gold answer '{answer_matches[0]}', which none of "
                           f"the semi-gold answers {semi} gives (they match {quote_list(sorted(semi_matches))}); "
                           f"the judge said No"))
    if a and s and set(answer_matches) & semi_matches and not facts.verdict:
        shared = sorted(set(answer_matches) & semi_matches)[0]
        cases.append(("F", f"the judge said No, but the answer '{facts.answer}' and the semi-gold answers {semi} "
                           f"both match gold answer '{shared}'"))
    elif a != s and facts.verdict:
        right, wrong = (f"the answer '{facts.answer}'", f"the semi-gold answers {semi}") if a else \
            (f"the semi-gold answers {semi}", f"the answer '{facts.answer}'")
        cases.append(("F", f"the judge said {said}, but {right} match a gold answer and {wrong} do not"))
    return cases


def find_failure_cases(queries: Sequence[Query], retrieved: Mapping[str, Sequence[Passage]],
                       gold_passages: Mapping[str, Sequence[Passage]], answers_at_k: Mapping[int, Mapping[str, str]],
                       semi_gold: Mapping[str, Sequence[str]], verdicts: Sequence[Verdict]) -> list[FailureCase]:
    """:func:`classify_failures` for every (judge, query, k) with a semi-gold verdict."""
    by_key = {(v.judge, v.query_id, v.k): v.verdict for v in verdicts if v.reference == SEMI_GOLD}
    by_id = {q.query_id: q for q in queries}
    cases: list[FailureCase] = []
    for (judge, query_id, k), verdict in sorted(by_key.items()):
        query = by_id[query_id]
        facts = QueryFacts(query_id, k, tuple(query.answers), tuple(gold_passages[query_id]),
                           tuple(retrieved[query_id][:k]), answers_at_k[k][query_id], tuple(semi_gold[query_id]),
                           verdict)
        cases.extend(FailureCase(judge, query_id, k, category, reason)
                     for category, reason in classify_failures(facts))
    return cases
