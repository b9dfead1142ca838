"""Downstream text metrics: SQuAD exact match and token F1, answer accuracy, ROUGE-L, answer containment.

Exact match and F1 follow the official SQuAD v1.1 evaluation script (Rajpurkar et al., EMNLP 2016):
both strings are normalised (lower-cased, punctuation removed, the articles *a/an/the* removed, whitespace
collapsed) and the score against several gold answers is the maximum over them. eRAG (Salemi & Zamani,
SIGIR 2024) uses exact match of the LLM's answer as the per-passage relevance label.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD answer normalisation: lower-case, drop ASCII punctuation, drop articles, collapse whitespace.

    The steps run in the SQuAD order (lower, punctuation, articles, whitespace), so ``"The  U.S.A."``
    becomes ``"usa"``.
    """
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def exact_match(prediction: str, gold_answers: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0 (0.0 with no answers).

    EM(p, G) = max_{g in G} [normalize(p) == normalize(g)].
    """
    normalized = normalize_answer(prediction)
    return float(any(normalized == normalize_answer(gold) for gold in gold_answers))


#: Gold answers a yes/no question has: a leading yes/no of the prediction answers them (:func:`yes_no_answers`).
YES_NO = frozenset({"yes", "no"})


def yes_no_answers(prediction: str, reference: str) -> bool:
    """True when one side normalises to just "yes" or "no" and the other's first normalised word is that word:
    "Yes, both are women's magazines." answers the gold answer "yes" (LLM-retEval's ``em`` judge and the failure
    rules' gold-answer check; the E2E score and eRAG labels stay strict SQuAD exact match, :func:`exact_match`)."""
    p, r = normalize_answer(prediction), normalize_answer(reference)
    if r in YES_NO:
        return p.split(" ", 1)[0] == r
    if p in YES_NO:
        return r.split(" ", 1)[0] == p
    return False


def _token_f1_single(prediction_tokens: list[str], gold_tokens: list[str]) -> float:
    """F1 of the token multiset overlap; 1.0 when both are empty, 0.0 when exactly one is (SQuAD v2 rule)."""
    if not prediction_tokens or not gold_tokens:
        return float(prediction_tokens == gold_tokens)
    common = Counter(prediction_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(prediction_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, gold_answers: Sequence[str]) -> float:
    """SQuAD token F1, maximised over the gold answers (0.0 with no answers).

    With P = |overlap| / |pred tokens| and R = |overlap| / |gold tokens| on normalised whitespace tokens
    (overlap counted as a multiset intersection), F1 = 2PR / (P + R).
    """
    prediction_tokens = normalize_answer(prediction).split()
    return max(
        (_token_f1_single(prediction_tokens, normalize_answer(gold).split()) for gold in gold_answers),
        default=0.0,
    )


def accuracy(predicted_labels: Sequence[str], gold_labels: Sequence[str]) -> float:
    """Fraction of positions where the predicted label equals the gold label (exact string match).

    Raises ValueError if the two sequences differ in length or are empty.
    """
    if len(predicted_labels) != len(gold_labels):
        raise ValueError(
            f"accuracy: {len(predicted_labels)} predicted labels but {len(gold_labels)} gold labels"
        )
    if not gold_labels:
        raise ValueError("accuracy: no labels given")
    return sum(p == g for p, g in zip(predicted_labels, gold_labels)) / len(gold_labels)


def contains_answer(passage_text: str, gold_answers: Sequence[str]) -> bool:
    """True if some normalised gold answer occurs in the normalised passage on whole-token boundaries.

    ``"Paris"`` is contained in ``"... in Paris, France"`` but not in ``"Parisian"``. Answers that
    normalise to the empty string (e.g. ``"the"``) never match.
    """
    passage = f" {normalize_answer(passage_text)} "
    for gold in gold_answers:
        answer = normalize_answer(gold)
        if answer and f" {answer} " in passage:
            return True
    return False


def answer_accuracy(prediction: str, gold_answers: Sequence[str]) -> float:
    """1.0 if some normalised gold answer occurs in the normalised prediction on whole-token boundaries.

    The lenient "accuracy" of open-domain QA with generative readers (e.g. Mallen et al., ACL 2023): a
    verbose but correct answer counts, which exact match would reject.
    """
    return float(contains_answer(prediction, gold_answers))


class _SquadTokenizer:
    """Tokens for ROUGE: the SQuAD-normalised words (Unicode-aware, unlike rouge-score's default tokenizer,
    which keeps only ``[a-z0-9]`` and so scores a Japanese or accented answer as empty or wrongly equal)."""

    @staticmethod
    def tokenize(text: str) -> list[str]:
        return normalize_answer(text).split()


_ROUGE_SCORER = None


def _rouge_scorer():
    global _ROUGE_SCORER
    if _ROUGE_SCORER is None:
        from rouge_score.rouge_scorer import RougeScorer

        _ROUGE_SCORER = RougeScorer(["rougeL"], tokenizer=_SquadTokenizer())
    return _ROUGE_SCORER


def rouge_l_scores(prediction: str, reference: str) -> tuple[float, float, float]:
    """ROUGE-L (precision, recall, F-measure) of ``prediction`` against one ``reference`` (same tokens as rouge_l)."""
    score = _rouge_scorer().score(reference, prediction)["rougeL"]
    return score.precision, score.recall, score.fmeasure


def rouge_l(prediction: str, gold_answers: Sequence[str]) -> float:
    """ROUGE-L F-measure (longest common subsequence; Lin, 2004), maximised over the gold answers.

    Computed by Google's ``rouge-score`` package on SQuAD-normalised words (no stemming), 0.0 with no answers.
    """
    return max((rouge_l_scores(prediction, gold)[2] for gold in gold_answers), default=0.0)
