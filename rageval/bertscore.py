"""BERTScore with MiniLM (Zhang et al., "BERTScore: Evaluating Text Generation with BERT", ICLR 2020).

Each text becomes the unit vectors x_i (candidate) and y_j (reference) of its word pieces, here from the last
layer of all-MiniLM-L6-v2 (the one encoder model shipped offline). Greedy matching by cosine similarity:

    P = mean_i max_j x_i . y_j,    R = mean_j max_i x_i . y_j,    F = 2PR / (P + R)

Differences from the reference implementation, stated so that numbers are read correctly: no idf weighting,
no baseline rescaling, and MiniLM's last layer instead of a tuned layer of a larger model. Compare these scores with
each other, not with published BERTScore values. An empty candidate or reference scores 0; F is clipped to
[0, 1] (float rounding can put identical texts a hair above 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def greedy_match(candidate: np.ndarray, reference: np.ndarray) -> tuple[float, float, float]:
    """BERTScore (P, R, F) of two ``[tokens, dim]`` matrices of unit vectors (zeros when either is empty)."""
    if len(candidate) == 0 or len(reference) == 0:
        return 0.0, 0.0, 0.0
    similarity = candidate @ reference.T
    precision = min(1.0, float(similarity.max(axis=1).mean()))
    recall = min(1.0, float(similarity.max(axis=0).mean()))
    if precision + recall <= 0:
        return precision, recall, 0.0
    return precision, recall, min(1.0, 2 * precision * recall / (precision + recall))


def greedy_match_f1(candidate: np.ndarray, reference: np.ndarray) -> float:
    """BERTScore F1 of two ``[tokens, dim]`` matrices of unit vectors (0.0 when either is empty)."""
    return greedy_match(candidate, reference)[2]


class BertScorer:
    """BERTScore F1 of predictions against gold answers (maximised over the answers), MiniLM by default.

    Token vectors are memoised per text, so scoring many outputs against the same answers encodes each
    answer once.
    """

    def __init__(self, encoder=None):
        if encoder is None:
            from rageval.retrieval.dense import MiniLMEncoder

            encoder = MiniLMEncoder()
        self.encoder = encoder
        self.model_id = f"bertscore-f1:{encoder.model_id}:last-layer:no-idf"
        self._vectors: dict[str, np.ndarray] = {}

    def _ensure(self, texts: Sequence[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vectors in zip(missing, self.encoder.token_vectors(missing)):
                self._vectors[text] = vectors

    def score_many(self, predictions: Sequence[str], gold_answers: Sequence[Sequence[str]]) -> list[float]:
        """``[max_g F1(prediction_i, g) for g in gold_answers_i]`` for every i."""
        if len(predictions) != len(gold_answers):
            raise ValueError(f"BertScorer.score_many: {len(predictions)} predictions but "
                             f"{len(gold_answers)} answer lists")
        self._ensure([p.strip() for p in predictions] + [g.strip() for gs in gold_answers for g in gs])
        return [max((greedy_match_f1(self._vectors[p.strip()], self._vectors[g.strip()]) for g in gs), default=0.0)
                for p, gs in zip(predictions, gold_answers)]

    def precision_recall_f1(self, prediction: str, gold_answers: Sequence[str]) -> tuple[float, float, float]:
        """(P, R, F), each maximised over ``gold_answers`` on its own (as the attribution paper reports them)."""
        self._ensure([prediction.strip()] + [g.strip() for g in gold_answers])
        scores = [greedy_match(self._vectors[prediction.strip()], self._vectors[g.strip()]) for g in gold_answers]
        precision, recall, f1 = (max((s[i] for s in scores), default=0.0) for i in range(3))
        return precision, recall, f1

    def __call__(self, prediction: str, gold_answers: Sequence[str]) -> float:
        return self.score_many([prediction], [gold_answers])[0]
