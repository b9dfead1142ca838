"""Citation and correctness metrics of attributed answers (Djeddal et al., CIKM 2024, §2.5; SPEC §3).

An attributed answer A^att is a list of statements a_i, each with its cited passage numbers C_i, answered from the
input passages P = {d_1..d_k} (numbered from 1 as the prompt showed them). NLI(premise, hypothesis) ∈ {0, 1} is an
entailment decision (:mod:`rageval.attribution.nli`); premises are passages formatted as ALCE formats them
(``"Title: <title>\\n<text>"``, the text alone when the passage has no title).

* AutoAIS_cit(A)  = avg_i max_{c ∈ C_i} NLI(d_c, a_i)              (Eq. 1; 0 for a statement citing nothing valid)
* AutoAIS_pssg(A) = avg_i max_{d ∈ P} NLI(d, a_i)                  (Eq. 2; 0 when P is empty)
* ALCE citation recall (Gao et al., 2023): rec_i = NLI(concat(C_i), a_i) over at most the first 3 citations;
  a statement with no citation, or citing a number that is not an input passage, gets 0. Recall = avg_i rec_i.
* ALCE citation precision: a citation c of statement i counts as precise unless rec_i = 0, or (|C_i| > 1,
  NLI(d_c, a_i) = 0 and NLI(concat(C_i \\ {c}), a_i) = 1: it can be removed without losing support). Precision =
  precise citations / citations, where, as ALCE's ``eval.py`` counts them, *citations* are the (first 3) citations
  of the statements whose citations all name input passages: a statement citing a number that is not an input
  passage adds nothing to the denominator (and nothing precise), so ``[(1,), (9,)]`` with one passage that
  supports statement 0 scores precision 1/1 (0 when no statement cites only input passages).
* Citation overlap against the gold citations (Eq. 3), on passage identities: P = |C_gold ∩ C_gen| / |C_gen|,
  R = |C_gold ∩ C_gen| / |C_gold| (0 when the denominator set is empty).

An answer with no statement (empty text) scores 0 on every citation metric; ``statements = 0`` marks it so that
aggregates can leave it out. Correctness (BLEU, ROUGE-L P/R/F, BERTScore P/R/F) compares the answer without its
citation markers with every gold answer and keeps the best value of each metric (§2.5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

ALCE_MAX_CITATIONS = 3
CITATION_METRICS = ("autoais_cit", "autoais_pssg", "alce_recall", "alce_precision")
CORRECTNESS_METRICS = ("bleu", "rougeL_p", "rougeL_r", "rougeL_f", "bertscore_p", "bertscore_r", "bertscore_f")


@dataclass(frozen=True)
class InputPassage:
    """A passage the generator saw, under the number answers cite it by."""

    number: int
    passage_id: str
    title: str
    text: str

    @property
    def premise(self) -> str:
        return format_passage(self.title, self.text)


def format_passage(title: str, text: str) -> str:
    """ALCE's premise format: ``"Title: <title>\\n<text>"``, or the text alone without a title."""
    return f"Title: {title}\n{text}" if title.strip() else text


def premise_of(passages: Mapping[int, InputPassage], numbers: Sequence[int]) -> str:
    """The concatenation of the numbered passages' premises, one per line block (ALCE's joint passage)."""
    return "\n".join(passages[n].premise for n in numbers)


# ------------------------------------------------------------------------------------------ NLI requests


PremiseKey = tuple[int, tuple[int, ...]]  # (statement index, passage numbers concatenated as the premise)


def capped_citations(citations: Sequence[int], passages: Mapping[int, InputPassage]) -> tuple[int, ...] | None:
    """The first :data:`ALCE_MAX_CITATIONS` citations, or None when any citation is not an input passage."""
    if any(n not in passages for n in citations):
        return None
    return tuple(citations[:ALCE_MAX_CITATIONS])


def required_premises(statement_citations: Sequence[Sequence[int]],
                      passages: Mapping[int, InputPassage]) -> set[PremiseKey]:
    """Every (statement, passage set) whose NLI decision the metrics need beyond the single-passage matrix.

    ALCE needs the joint premise of each statement's (capped) citations and, for precision, each leave-one-out
    subset; subsets of one passage are matrix cells and are not listed.
    """
    needed: set[PremiseKey] = set()
    for index, citations in enumerate(statement_citations):
        cited = capped_citations(citations, passages)
        if not cited or len(cited) < 2:
            continue
        needed.add((index, cited))
        if len(cited) > 2:
            needed.update((index, tuple(n for n in cited if n != left_out)) for left_out in cited)
    return needed


@dataclass(frozen=True)
class CitationScores:
    """Citation metrics of one answer, and the counts behind them."""

    autoais_cit: float
    autoais_pssg: float
    alce_recall: float
    alce_precision: float
    statements: int
    citations: int  # ALCE precision's denominator: capped citations of statements citing only input passages
    invalid_citations: int
    uncited_statements: int
    statement_supported: tuple[int, ...]  # per statement: AutoAIS_cit's max over its citations
    statement_recall: tuple[int, ...]  # per statement: ALCE's joint-premise decision

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in (*CITATION_METRICS, "statements", "citations",
                                                       "invalid_citations", "uncited_statements")}


def citation_scores(statement_citations: Sequence[Sequence[int]], passages: Mapping[int, InputPassage],
                    matrix: Sequence[Sequence[int]], joint: Callable[[PremiseKey], int]) -> CitationScores:
    """The citation metrics of one answer (module docstring).

    ``matrix[i][j]``: NLI(passage ``sorted(passages)[j]``, statement i) ∈ {0, 1}.
    ``joint((i, numbers))``: NLI(concat of ``numbers``, statement i) for the keys :func:`required_premises` lists.
    """
    numbers = sorted(passages)
    column = {n: j for j, n in enumerate(numbers)}
    supported, recalls = [], []
    precise = total_citations = invalid = uncited = 0
    for index, citations in enumerate(statement_citations):
        row = matrix[index] if numbers else []
        valid = [n for n in citations if n in column]
        invalid += len(citations) - len(valid)
        uncited += not citations
        supported.append(max((row[column[n]] for n in valid), default=0))
        cited = capped_citations(citations, passages)
        if not cited:
            recall = 0
        elif len(cited) == 1:
            recall = row[column[cited[0]]]
        else:
            recall = joint((index, cited))
        recalls.append(int(recall))
        # ALCE's denominator: only the capped citations of a statement whose citations are all input passages.
        total_citations += len(cited) if cited else 0
        if not recall or not cited:  # no recall without valid citations
            continue
        if len(cited) == 1:
            precise += 1
            continue
        for left_out in cited:
            rest = tuple(n for n in cited if n != left_out)
            rest_entails = row[column[rest[0]]] if len(rest) == 1 else joint((index, rest))
            precise += not (row[column[left_out]] == 0 and rest_entails == 1)
    count = len(statement_citations)
    pssg = [max(matrix[i], default=0) if numbers else 0 for i in range(count)]
    mean = (lambda values: sum(values) / count) if count else (lambda values: 0.0)
    return CitationScores(
        autoais_cit=mean(supported), autoais_pssg=mean(pssg), alce_recall=mean(recalls),
        alce_precision=precise / total_citations if total_citations else 0.0, statements=count,
        citations=total_citations, invalid_citations=invalid, uncited_statements=uncited,
        statement_supported=tuple(int(s) for s in supported), statement_recall=tuple(recalls))


def citation_overlap(generated: Sequence[str], gold: Sequence[str]) -> tuple[float, float]:
    """(precision, recall) of the cited passage ids against the gold citations (Eq. 3; sets, 0 when empty)."""
    generated_set, gold_set = set(generated), set(gold)
    common = len(generated_set & gold_set)
    return (common / len(generated_set) if generated_set else 0.0, common / len(gold_set) if gold_set else 0.0)


# ------------------------------------------------------------------------------------------ correctness


def bleu(candidate: str, references: Sequence[str]) -> float:
    """Sentence BLEU (sacrebleu defaults: 13a tokenisation, exponential smoothing), best over the references, 0-100."""
    from sacrebleu.metrics import BLEU

    scorer = BLEU(effective_order=True)
    return max((scorer.sentence_score(candidate, [reference]).score for reference in references), default=0.0)


def rouge_l_prf(candidate: str, references: Sequence[str]) -> tuple[float, float, float]:
    """ROUGE-L (P, R, F) on SQuAD-normalised words, each maximised over the references on its own."""
    from rageval.text_metrics import rouge_l_scores

    scores = [rouge_l_scores(candidate, reference) for reference in references]
    precision, recall, f1 = (max((s[i] for s in scores), default=0.0) for i in range(3))
    return precision, recall, f1


def correctness(candidate: str, references: Sequence[str], bert_scorer=None) -> dict[str, float]:
    """BLEU, ROUGE-L P/R/F and BERTScore P/R/F of ``candidate`` (markers removed) against the gold answers; without
    a ``bert_scorer`` the BERTScore values are left out (not set to 0)."""
    rouge = rouge_l_prf(candidate, references)
    values = dict(zip(CORRECTNESS_METRICS, (bleu(candidate, references), *rouge)))
    if bert_scorer is not None:
        bert = bert_scorer.precision_recall_f1(candidate, references) if candidate.strip() else (0.0, 0.0, 0.0)
        values.update(zip(CORRECTNESS_METRICS[4:], bert))
    return values
