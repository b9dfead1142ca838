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
from rageval.text_metrics import YES_NO, _token_f1_single, normalize_answer, yes_no_answers
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


def gold_answer_matches(answer: str, gold_answers: Sequence[str]) -> list[tuple[str, str]]:
    """``(gold answer, how)`` for each gold answer ``answer`` gets right by the gold-answer check the failure rules
    use: ``"equals"`` (equal after normalisation), ``"starts with"`` (a yes/no gold answer: the answer's first
    word, so "Yes, but no more" answers "yes" only) or ``"contains"`` (contained in it as whole words)."""
    normal = normalize_answer(answer)
    matched = []
    for gold in gold_answers:
        g = normalize_answer(gold)
        if g and normal == g:
            matched.append((gold, "equals"))
        elif g in YES_NO:
            if yes_no_answers(answer, gold):
                matched.append((gold, "starts with"))
        elif g and f" {g} " in f" {normal} ":
            matched.append((gold, "contains"))
    return matched


def matched_gold_answers(answer: str, gold_answers: Sequence[str]) -> list[str]:
    """The gold answers ``answer`` gets right: equal after normalisation, or contained in it on token bounds
    (the gold-answer check the failure rules use)."""
    return [gold for gold, _ in gold_answer_matches(answer, gold_answers)]


def _how(how: str, gold: str) -> str:
    """``equals gold answer 'X' after normalisation`` / ``starts with gold answer 'yes'`` / ``contains gold answer
    'X' as words``."""
    if how == "equals":
        return f"equals gold answer '{gold}' after normalisation"
    return f"starts with gold answer '{gold}'" if how == "starts with" else f"contains gold answer '{gold}' as words"


def _answer_match(answer: str, gold_answers: Sequence[str], gold: str | None = None) -> str:
    """``the answer 'A' equals gold answer 'G' after normalisation``: what the check compared, and how; the match
    with ``gold`` when given, else the first."""
    matches = gold_answer_matches(answer, gold_answers)
    g, how = next((m for m in matches if m[0] == gold), matches[0])
    return f"the answer '{answer}' {_how(how, g)}"


def _semi_matches(semi_gold: Sequence[str], gold_answers: Sequence[str], gold: str | None = None) -> str:
    """Which distinct semi-gold answers pass the check and how (for ``gold`` when given), and which pass it for no
    gold answer: ``semi-gold answer 'S' contains gold answer 'G' as words (1 of 2 distinct semi-gold answers;
    ['T'] matches no gold answer)``. Only what was compared is quoted, never more."""
    distinct = list(dict.fromkeys(s.strip() for s in semi_gold))
    passing, failing = [], []
    for answer in distinct:
        matches = gold_answer_matches(answer, gold_answers)
        chosen = [m for m in matches if gold is None or m[0] == gold] or matches
        if chosen:
            passing.append(f"semi-gold answer '{answer}' {_how(chosen[0][1], chosen[0][0])}")
        else:
            failing.append(answer)
    text = " and ".join(passing)
    if len(distinct) > 1:
        rest = f"; {quote_list(failing)} {'matches' if len(failing) == 1 else 'match'} no gold answer" if failing \
            else ""
        text += f" ({len(passing)} of {len(distinct)} distinct semi-gold answers{rest})"
    return text


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
    evidence: str = ""              # the judge's own evidence for it (what it compared, how, the value)


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
    if facts.evidence:
        said += f" ({facts.evidence})"
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
                           f"{overlap:.2f} with it, and {_answer_match(facts.answer, facts.gold_answers)}"))
    elif not hit and a:
        cases.append(("A", f"no gold passage ({', '.join(sorted(gold_ids))}) in the top-{facts.k}, yet "
                           f"{_answer_match(facts.answer, facts.gold_answers)}"))
    if hit and not a and s and not facts.verdict:
        cases.append(("C", f"a gold passage is in the top-{facts.k}, but the answer '{facts.answer}' matches no gold "
                           f"answer of {quote_list(facts.gold_answers)}, while the semi-gold answers {semi} from the "
                           f"gold passages do, and the judge found the two differ"))
    if not s:
        cases.append(("D", f"no semi-gold answer {semi} from the gold passages matches a gold answer of "
                           f"{quote_list(facts.gold_answers)}"))
    if a and s and not facts.verdict and not (set(answer_matches) & semi_matches):
        cases.append(("E", f"{_answer_match(facts.answer, facts.gold_answers)}, which none of the semi-gold "
                           f"answers {semi} gives (they match {quote_list(sorted(semi_matches))}); the judge said "
                           f"{said}"))
    if a and s and set(answer_matches) & semi_matches and not facts.verdict:
        shared = sorted(set(answer_matches) & semi_matches)[0]
        cases.append(("F", f"the judge said {said}, but by the gold-answer check "
                           f"{_answer_match(facts.answer, facts.gold_answers, shared)}, and "
                           f"{_semi_matches(facts.semi_gold, facts.gold_answers, shared)}"))
    elif a != s and facts.verdict:
        if a:
            right = _answer_match(facts.answer, facts.gold_answers)
            wrong = f"no semi-gold answer of {semi} matches a gold answer of {quote_list(facts.gold_answers)}"
        else:
            right = _semi_matches(facts.semi_gold, facts.gold_answers)
            wrong = f"the answer '{facts.answer}' matches no gold answer of {quote_list(facts.gold_answers)}"
        cases.append(("F", f"the judge said {said}, but by the gold-answer check {right}, while {wrong}"))
    return cases


def find_failure_cases(queries: Sequence[Query], retrieved: Mapping[str, Sequence[Passage]],
                       gold_passages: Mapping[str, Sequence[Passage]], answers_at_k: Mapping[int, Mapping[str, str]],
                       semi_gold: Mapping[str, Sequence[str]], verdicts: Sequence[Verdict]) -> list[FailureCase]:
    """:func:`classify_failures` for every (judge, query, k) with a semi-gold verdict."""
    by_key = {(v.judge, v.query_id, v.k): (v.verdict, v.evidence) for v in verdicts if v.reference == SEMI_GOLD}
    by_id = {q.query_id: q for q in queries}
    cases: list[FailureCase] = []
    for (judge, query_id, k), (verdict, evidence) in sorted(by_key.items()):
        query = by_id[query_id]
        facts = QueryFacts(query_id, k, tuple(query.answers), tuple(gold_passages[query_id]),
                           tuple(retrieved[query_id][:k]), answers_at_k[k][query_id], tuple(semi_gold[query_id]),
                           verdict, evidence)
        cases.extend(FailureCase(judge, query_id, k, category, reason)
                     for category, reason in classify_failures(facts))
    return cases
