"""NLI training/test pairs for the citation-entailment model: splits kept apart, 2-way labels, scores."""

from __future__ import annotations

import pytest

from rageval.attribution.nli_data import (
    entails,
    held_out_pairs,
    label_counts,
    load_pairs,
    score_predictions,
    training_pairs,
)


@pytest.fixture(scope="module")
def pairs():
    return {"train": training_pairs(), "test": held_out_pairs()}


def test_no_test_row_is_ever_trained_on(pairs):
    train, test = pairs["train"], pairs["test"]
    assert train and all(p.split in ("train", "dev") for p in train)
    trained = {(p.source, p.id) for p in train}
    held_out = {(p.source, p.id) for ps in test.values() for p in ps}
    assert held_out and not trained & held_out
    texts = {(p.premise, p.hypothesis) for p in train}
    assert sum((p.premise, p.hypothesis) in texts for ps in test.values() for p in ps) == 0


def test_every_source_with_a_test_split_is_reported(pairs):
    # glue_rte ships train/dev only; every other file has its own test split (data/README.md)
    assert set(pairs["test"]) == {"snli", "fever", "climate_fever", "covidfact", "healthver", "fever_docnli",
                                  "mnli_docnli", "mctest", "drop", "control", "summedits", "vitaminc", "anli"}
    assert len(pairs["test"]["snli"]) == 9824 and len(pairs["test"]["covidfact"]) == 401
    assert len(pairs["test"]["vitaminc"]) == 55197 - 3  # 3 repeat FEVER training pairs word for word


def test_two_way_labels(pairs):
    counts = label_counts(pairs["train"])
    assert counts["entailment"] > 0 and set(counts) > {"entailment"}
    assert {entails(p) for p in pairs["train"]} == {0, 1}
    assert all(entails(p) == (p.label == "entailment") for p in pairs["train"][:1000])


def test_unknown_source_is_an_error():
    with pytest.raises(ValueError, match="unknown NLI source"):
        load_pairs(("test",), sources=["multi_nli"])


def test_score_predictions_by_hand():
    scores = score_predictions([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])
    assert scores.n == 5 and scores.accuracy == pytest.approx(3 / 5)
    assert scores.precision == pytest.approx(2 / 3) and scores.recall == pytest.approx(2 / 3)
    assert scores.f1 == pytest.approx(2 / 3)
    assert score_predictions([0, 0], [0, 0]).f1 == 0.0
    with pytest.raises(ValueError, match="2 gold labels but 1 predictions"):
        score_predictions([0, 1], [1])
