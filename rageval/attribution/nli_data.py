"""The NLI pairs an entailment model for citation checking is trained and tested on (SPEC §3, issue 5).

Every shipped ``nli/*.jsonl.gz`` file keeps its own split: rows with ``split == "test"`` are held out for the
per-source test report and never reach training; ``train`` and ``dev`` rows train (``dev`` also selects).
Labels are mapped 2-way, as AutoAIS needs them (TRUE, Honovich et al. 2022): ``entailment`` -> 1, every other
label (``neutral``, ``contradiction``, ``not_entailment``) -> 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rageval.data import NLI_FILES, read_nli_pairs
from rageval.data.loaders import NliPair
from rageval.paths import DATA_DIR

ENTAILMENT = "entailment"


def entails(pair: NliPair) -> int:
    """The 2-way label: 1 for entailment, 0 otherwise."""
    return int(pair.label == ENTAILMENT)


def load_pairs(splits: Sequence[str], data_dir: Path = DATA_DIR, sources: Sequence[str] | None = None
               ) -> dict[str, list[NliPair]]:
    """The pairs of ``splits`` per source (file order), for ``sources`` (default: every shipped file)."""
    names = list(NLI_FILES) if sources is None else list(sources)
    unknown = sorted(set(names) - set(NLI_FILES))
    if unknown:
        raise ValueError(f"unknown NLI source(s) {unknown}; expected some of {sorted(NLI_FILES)}")
    return {name: read_nli_pairs(Path(data_dir) / NLI_FILES[name], splits=set(splits)) for name in names}


def training_pairs(data_dir: Path = DATA_DIR, sources: Sequence[str] | None = None) -> list[NliPair]:
    """Every ``train`` and ``dev`` pair of the chosen sources; no ``test`` row, ever."""
    return [p for pairs in load_pairs(("train", "dev"), data_dir, sources).values() for p in pairs]


def held_out_pairs(data_dir: Path = DATA_DIR, sources: Sequence[str] | None = None) -> dict[str, list[NliPair]]:
    """The held-out ``test`` pairs per source (sources without a test split are left out).

    A test pair whose premise and hypothesis are also a train/dev pair of *any* shipped source is left out (3
    VitaminC test pairs repeat FEVER training pairs word for word), so no score is measured on a trained-on pair.
    """
    trained = {(p.premise, p.hypothesis) for p in training_pairs(data_dir)}
    held_out = {name: [p for p in pairs if (p.premise, p.hypothesis) not in trained]
                for name, pairs in load_pairs(("test",), data_dir, sources).items()}
    return {name: pairs for name, pairs in held_out.items() if pairs}


@dataclass(frozen=True)
class EntailmentScores:
    """Accuracy and the entailment class's precision, recall and F1 of 2-way predictions on ``n`` pairs."""

    n: int
    accuracy: float
    precision: float
    recall: float
    f1: float


def score_predictions(gold: Sequence[int], predicted: Sequence[int]) -> EntailmentScores:
    """Accuracy = mean(gold == predicted); P/R/F1 of class 1 (0 where undefined)."""
    if len(gold) != len(predicted):
        raise ValueError(f"score_predictions: {len(gold)} gold labels but {len(predicted)} predictions")
    if not gold:
        raise ValueError("score_predictions: no pairs")
    true_positive = sum(g == 1 and p == 1 for g, p in zip(gold, predicted))
    predicted_positive, gold_positive = sum(p == 1 for p in predicted), sum(g == 1 for g in gold)
    precision = true_positive / predicted_positive if predicted_positive else 0.0
    recall = true_positive / gold_positive if gold_positive else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = sum(g == p for g, p in zip(gold, predicted)) / len(gold)
    return EntailmentScores(len(gold), accuracy, precision, recall, f1)


def label_counts(pairs: Sequence[NliPair]) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for pair in pairs:
        counts[pair.label] = counts.get(pair.label, 0) + 1
    return counts
