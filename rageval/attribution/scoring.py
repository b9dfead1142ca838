"""Score attributed answers: the statement × passage entailment matrix, citation and correctness metrics, and
agreement with HAGRID's human attributability labels (Djeddal et al., CIKM 2024, §2.5 and §3.2.3).

Every NLI decision a set of answers needs is requested in two batched calls (the single-passage matrix, then ALCE's
joint premises), so a run scores thousands of statements in minutes on a CPU. Identical (premise, statement) pairs
are scored once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rageval.attribution.metrics import (
    CitationScores,
    InputPassage,
    PremiseKey,
    citation_overlap,
    citation_scores,
    correctness,
    premise_of,
    required_premises,
)
from rageval.attribution.nli import EntailmentModel, checker_threshold


@dataclass(frozen=True)
class StatementRecord:
    """One statement: text without markers (the NLI hypothesis), cited numbers, the raw sentence, the human label."""

    text: str
    citations: tuple[int, ...]
    raw: str
    human_attributable: int | None = None


@dataclass(frozen=True)
class AnswerRecord:
    """An answer of one scenario for one query, with what scoring it needs.

    ``passages``: the input passages by the number the answer cites them with. ``gold_citations``: the passage ids
    the gold answers cite (overlap; empty: overlap not computed, e.g. when no gold answer cites anything).
    ``references``: gold answer texts (correctness; empty: not scored).
    """

    scenario: str
    query_id: str
    answer_id: str
    text: str
    statements: tuple[StatementRecord, ...]
    passages: Mapping[int, InputPassage]
    gold_citations: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    human_attributable: int | None = None
    human_informative: int | None = None
    score_citations: bool = True

    def cited_passage_ids(self) -> list[str]:
        return list(dict.fromkeys(self.passages[n].passage_id for s in self.statements for n in s.citations
                                  if n in self.passages))


@dataclass
class ScoredAnswer:
    """An answer with its matrix of p(passage ⊨ statement) (rows: statements; columns: ``sorted(passages)``),
    its citation scores (None when the scenario has no citations) and its metric values."""

    answer: AnswerRecord
    probabilities: list[list[float]]
    citations: CitationScores | None
    metrics: dict[str, float] = field(default_factory=dict)


def entailment_matrices(answers: Sequence[AnswerRecord], model: EntailmentModel) -> list[list[list[float]]]:
    """p(passage ⊨ statement) for every answer's statements × ``sorted(passages)``, in one batched call."""
    pairs: dict[tuple[str, str], int] = {}
    cells: list[list[list[int]]] = []
    for answer in answers:
        numbers = sorted(answer.passages)
        cells.append([[pairs.setdefault((answer.passages[n].premise, s.text), len(pairs)) for n in numbers]
                      for s in answer.statements])
    probabilities = model.entailment_probabilities(list(pairs)) if pairs else []
    return [[[probabilities[i] for i in row] for row in matrix] for matrix in cells]


def joint_decisions(answers: Sequence[AnswerRecord], model: EntailmentModel,
                    threshold: float | None = None) -> list[dict[PremiseKey, int]]:
    """ALCE's joint-premise NLI decisions each answer needs (:func:`required_premises`), in one batched call, at
    ``threshold`` (default: the checker's own)."""
    threshold = checker_threshold(model) if threshold is None else threshold
    pairs: dict[tuple[str, str], int] = {}
    wanted: list[dict[PremiseKey, int]] = []
    for answer in answers:
        keys = required_premises([s.citations for s in answer.statements], answer.passages)
        wanted.append({key: pairs.setdefault((premise_of(answer.passages, key[1]),
                                              answer.statements[key[0]].text), len(pairs)) for key in keys})
    probabilities = model.entailment_probabilities(list(pairs)) if pairs else []
    return [{key: int(probabilities[i] >= threshold) for key, i in keys.items()} for keys in wanted]


def score_answers(answers: Sequence[AnswerRecord], model: EntailmentModel, bert_scorer=None,
                  threshold: float | None = None) -> list[ScoredAnswer]:
    """Matrix, citation metrics, overlap and, for answers with ``references``, correctness (BLEU and ROUGE-L; also
    BERTScore when a ``bert_scorer`` is given); decisions at ``threshold`` (default: the checker's own)."""
    threshold = checker_threshold(model) if threshold is None else threshold
    matrices = entailment_matrices(answers, model)
    joints = joint_decisions(answers, model, threshold)
    scored = []
    for answer, matrix, joint in zip(answers, matrices, joints):
        metrics: dict[str, float] = {}
        citations = None
        if answer.score_citations:
            decisions = [[int(p >= threshold) for p in row] for row in matrix]
            citations = citation_scores([s.citations for s in answer.statements], answer.passages, decisions,
                                        joint.__getitem__)
            metrics.update(citations.as_dict())
            if answer.gold_citations:
                metrics["overlap_p"], metrics["overlap_r"] = citation_overlap(answer.cited_passage_ids(),
                                                                              answer.gold_citations)
        if answer.references:
            plain = " ".join(s.text for s in answer.statements)
            metrics.update(correctness(plain, answer.references, bert_scorer))
        scored.append(ScoredAnswer(answer, matrix, citations, metrics))
    return scored


# ------------------------------------------------------------------------------------------ agreement


@dataclass(frozen=True)
class Agreement:
    """How an automatic score agrees with a human 0/1 label over ``n`` items."""

    level: str  # "answer" or "sentence"
    score: str
    n: int
    pearson: float
    spearman: float
    accuracy: float  # of the score thresholded at 0.5 (the NLI verdict) against the human label
    human_positive_rate: float
    model_positive_rate: float


def agreement(level: str, score: str, human: Sequence[int], automatic: Sequence[float]) -> Agreement:
    """Pearson and Spearman between ``automatic`` and ``human``, and accuracy of ``automatic >= 0.5``.

    Correlations are NaN when either side is constant (undefined).
    """
    import math

    from scipy.stats import pearsonr, spearmanr

    if len(human) != len(automatic):
        raise ValueError(f"agreement({score}): {len(human)} human labels but {len(automatic)} scores")
    n = len(human)
    constant = n < 2 or len(set(human)) < 2 or len(set(automatic)) < 2
    pearson = math.nan if constant else float(pearsonr(automatic, human).statistic)
    spearman = math.nan if constant else float(spearmanr(automatic, human).statistic)
    verdicts = [int(a >= 0.5) for a in automatic]
    return Agreement(level, score, n, pearson, spearman,
                     sum(v == h for v, h in zip(verdicts, human)) / n if n else math.nan,
                     sum(human) / n if n else math.nan, sum(verdicts) / n if n else math.nan)


def human_agreement(scored: Sequence[ScoredAnswer]) -> list[Agreement]:
    """Agreement of AutoAIS_cit, ALCE recall and precision (answer level) and of the statement's NLI verdict
    (sentence level: max over its citations; and p(entail) of its best cited passage) with the human labels."""
    answer_rows = [s for s in scored if s.citations is not None and s.answer.human_attributable is not None
                   and s.citations.statements]
    human = [s.answer.human_attributable for s in answer_rows if s.answer.human_attributable is not None]
    result = [agreement("answer", name, human, [getattr(s.citations, name) for s in answer_rows])
              for name in ("autoais_cit", "alce_recall", "alce_precision", "autoais_pssg")]
    sentence_human, sentence_verdict, sentence_probability = [], [], []
    for s in scored:
        if s.citations is None:
            continue
        numbers = sorted(s.answer.passages)
        for index, statement in enumerate(s.answer.statements):
            if statement.human_attributable is None:
                continue
            cited = [numbers.index(n) for n in statement.citations if n in s.answer.passages]
            sentence_human.append(statement.human_attributable)
            sentence_verdict.append(float(s.citations.statement_supported[index]))
            sentence_probability.append(max((s.probabilities[index][j] for j in cited), default=0.0))
    result.append(agreement("sentence", "nli_verdict_cited", sentence_human, sentence_verdict))
    result.append(agreement("sentence", "p_entail_cited", sentence_human, sentence_probability))
    return result
