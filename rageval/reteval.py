"""LLM-retEval: judge a retriever by whether its top-k yields the answer the gold passages yield.

Alinejad et al., "Evaluating the Retrieval Component in LLM-Based Question Answering Systems" (2024):

1. the RAG LLM answers the question from the retrieved top-k passages;
2. the same LLM answers it from the gold passages alone, ``n`` times at temperature > 0 (the paper: 3 times at
   0.5) so that several correct answers of a multi-answer question are covered: the *semi-gold* answers;
3. a judge says **Yes** when the top-k answer matches the semi-gold answers, else **No**.

The LLM-retEval score at k is the mean of the Yes verdicts over queries. Next to it the paper reports Recall@k,
Precision@k and F1@k against the gold passages and the QA accuracy of the top-k answer against the dataset's
gold answers (the same judge, references = gold answers).

Judges (the judge is a setting; each returns its verdict with the evidence behind it):

- ``llm``: the RAG LLM (or any generator) asked with a few-shot prompt in the spirit of GPT4-Eval
  (Kamalloo et al., ACL 2023) whether the candidate is correct given the reference answers;
- ``em``: SQuAD exact match against any reference;
- ``token_f1``: SQuAD token F1 against the best reference >= a threshold (default 0.5);
- ``cosine``: cosine of MiniLM sentence embeddings against the best reference >= a threshold (default 0.8).

Failure cases (the paper's Section 4.1, SPEC §2) are decided by the explicit rules of
:func:`classify_failures` over stored facts only, each with a human-readable reason. A-C are failures of the
classic recall metric, D-F failures of LLM-retEval.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from rageval.generation.base import DecodingSettings, Generator
from rageval.generation.transformers_backend import sample_seed
from rageval.prompts import ANSWER_JUDGE_FEW_SHOT, PromptTemplate, build_judge_prompt, parse_yes_no
from rageval.stats.correlation import spearman_rho
from rageval.store import FailureCase, SemiGoldOutput, Verdict
from rageval.text_metrics import _token_f1_single, exact_match, normalize_answer, token_f1
from rageval.types import Passage, Query

#: What a verdict compares the top-k answer with.
SEMI_GOLD = "semi_gold"        # the semi-gold answers: this is LLM-retEval
GOLD_ANSWERS = "gold_answers"  # the dataset's gold answers: this is QA accuracy ("GPT-Eval" in the paper)

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

#: Decoding of the judge and relevance prompts: the reply's first word is all that is read.
SHORT_REPLY = DecodingSettings(max_new_tokens=3)


# ------------------------------------------------------------------------------------------------ judges


@dataclass(frozen=True)
class JudgeResult:
    verdict: bool
    evidence: str


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
    """Yes when the normalised candidate equals a normalised reference (SQuAD exact match)."""

    name = "em"

    def judge_many(self, questions, references, candidates) -> list[JudgeResult]:
        results = []
        for refs, candidate in zip(references, candidates):
            matched = [r for r in refs if exact_match(candidate, [r])]
            evidence = (f"'{candidate}' equals reference '{matched[0]}' after normalisation" if matched
                        else f"'{candidate}' equals none of {_quoted(refs)} after normalisation")
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
    """Asks ``generator`` the few-shot answer-judge prompt; a reply that does not start with Yes/No counts as No
    (the evidence says so)."""

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
            evidence = f"{self.generator.model_id} replied '{reply.strip()}'"
            if parsed is None:
                evidence += " (neither Yes nor No: counted as No)"
            results.append(JudgeResult(bool(parsed), evidence))
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


def _quoted(values: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


# --------------------------------------------------------------------------------------------- semi-gold


@dataclass(frozen=True)
class SemiGoldSettings:
    """How the semi-gold answers are drawn (the paper: 3 samples at temperature 0.5)."""

    samples: int = 3
    temperature: float = 0.5
    seed: int = 0
    max_new_tokens: int = 16

    def decoding(self, sample: int) -> DecodingSettings:
        """Sample ``sample``'s own seeded decoding settings: each sample is an ordinary, cacheable call."""
        return DecodingSettings(max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                seed=sample_seed(self.seed, sample))


def sample_semi_gold(queries: Sequence[Query], gold_passages: Mapping[str, Sequence[Passage]], generator: Generator,
                     build_prompt: Callable[[str, Sequence[Passage]], str], settings: SemiGoldSettings = SemiGoldSettings(),
                     batch_size: int = 64) -> list[SemiGoldOutput]:
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


# --------------------------------------------------------------------------------------- retrieval facts


def recall_precision_f1(retrieved_ids: Sequence[str], gold_ids: Sequence[str], k: int) -> tuple[float, float, float]:
    """Recall@k = |G ∩ R_k| / |G|, Precision@k = |G ∩ R_k| / k, F1@k their harmonic mean (0 when both are 0)."""
    gold = set(gold_ids)
    if not gold:
        return 0.0, 0.0, 0.0
    found = len(gold & set(retrieved_ids[:k]))
    recall, precision = found / len(gold), found / k
    f1 = 2 * recall * precision / (recall + precision) if found else 0.0
    return recall, precision, f1


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
    semi = _quoted(list(dict.fromkeys(s.strip() for s in facts.semi_gold)))  # as said, even "The" or ""
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
                           f"answer of {_quoted(facts.gold_answers)}, while the semi-gold answers {semi} from the "
                           f"gold passages do, and the judge found the two differ"))
    if not s:
        cases.append(("D", f"no semi-gold answer {semi} from the gold passages matches a gold answer of "
                           f"{_quoted(facts.gold_answers)}"))
    if a and s and not facts.verdict and not (set(answer_matches) & semi_matches):
        cases.append(("E", f"the answer '{facts.answer}' matches gold answer '{answer_matches[0]}', which none of "
                           f"the semi-gold answers {semi} gives (they match {_quoted(sorted(semi_matches))}); "
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


# ------------------------------------------------------------------------------------------ run & report


@dataclass(frozen=True)
class RetEvalSettings:
    ks: tuple[int, ...] = (1, 5, 10)
    semi_gold: SemiGoldSettings = SemiGoldSettings()
    judges: tuple[str, ...] = JUDGE_NAMES
    f1_threshold: float = 0.5
    cosine_threshold: float = 0.8

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def judge_answers(judge: Judge, queries: Sequence[Query], answers_at_k: Mapping[int, Mapping[str, str]],
                  semi_gold: Mapping[str, Sequence[str]]) -> list[Verdict]:
    """The judge's verdicts on every query's top-k answer, against the semi-gold answers and the gold answers."""
    verdicts: list[Verdict] = []
    for k, answers in sorted(answers_at_k.items()):
        judged = [q for q in queries if q.query_id in answers and q.query_id in semi_gold]
        for reference, refs in ((SEMI_GOLD, [distinct_answers(semi_gold[q.query_id]) for q in judged]),
                                (GOLD_ANSWERS, [list(q.answers) for q in judged])):
            results = judge.judge_many([q.text for q in judged], refs, [answers[q.query_id] for q in judged])
            verdicts.extend(Verdict(judge.name, reference, q.query_id, k, r.verdict, r.evidence)
                            for q, r in zip(judged, results))
    return verdicts


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


def reteval_table(queries: pd.DataFrame, rankings: Mapping[str, Sequence[str]], verdicts: pd.DataFrame,
                  failure_cases: pd.DataFrame, e2e: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The paper's Tables 1-2 for one judge: per k, failure counts per category, Recall/Precision/F1@k, the
    LLM-retEval score, QA accuracy (judge vs gold answers), QA exact match, and Spearman's rho between the
    per-query LLM-retEval verdict and Recall@k on ALL queries and on Refined (no A-C failure at that k).

    ``queries``: columns query_id, answers (JSON or list), gold_passage_ids (list); ``rankings``: query id -> ids.
    """
    rows = []
    mine = verdicts[verdicts["judge"] == judge]
    cases = failure_cases[failure_cases["judge"] == judge]
    for k in sorted(mine["k"].unique()):
        at_k = mine[mine["k"] == k]
        semi = at_k[at_k["reference"] == SEMI_GOLD].set_index("query_id")["verdict"].astype(float)
        gold = at_k[at_k["reference"] == GOLD_ANSWERS].set_index("query_id")["verdict"].astype(float)
        ids = [q for q in queries["query_id"] if q in semi.index]
        gold_ids = dict(zip(queries["query_id"], queries["gold_passage_ids"]))
        if not ids:
            continue
        rpf = np.array([recall_precision_f1(rankings.get(q, []), gold_ids[q], int(k)) for q in ids])
        k_cases = cases[cases["k"] == k]
        recall_failed = set(k_cases[k_cases["category"].isin(RECALL_FAILURES)]["query_id"])
        refined = [i for i, q in enumerate(ids) if q not in recall_failed]
        verdict = semi.loc[ids].to_numpy()
        e2e_k = e2e[e2e["k"] == k].set_index("query_id")["score"]
        row = {"k": int(k), "n": len(ids)}
        for category in RECALL_FAILURES + RETEVAL_FAILURES:
            row[category] = int((k_cases["category"] == category).sum())
        row["recall_failures"] = len(recall_failed)
        row["reteval_failures"] = int(k_cases[k_cases["category"].isin(RETEVAL_FAILURES)]["query_id"].nunique())
        row.update({"recall": rpf[:, 0].mean(), "precision": rpf[:, 1].mean(), "f1": rpf[:, 2].mean(),
                    "llm_reteval": verdict.mean(), "qa_accuracy": gold.loc[ids].mean(),
                    "qa_em": e2e_k.reindex(ids).mean(),
                    "rho_all": spearman_rho(verdict, rpf[:, 0]),
                    "rho_refined": spearman_rho(verdict[refined], rpf[refined, 0]) if len(refined) > 1 else np.nan,
                    "n_refined": len(refined)})
        rows.append(row)
    return pd.DataFrame(rows)
