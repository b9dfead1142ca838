"""The NLI model rageval trains and ships (issue 17): which rows train and which calibrate, the cache key over the
recipe and the data's contents, resumable training, and the shipped fp16 form read back."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil

import pytest

from rageval.attribution import nli_training as t
from rageval.attribution.nli_data import load_pairs
from rageval.data import NLI_FILES, NON_COMMERCIAL_NLI_SOURCES
from rageval.errors import RagevalError
from rageval.paths import DATA_DIR

PAIRS = [("The vaccine was approved in 2021.", "The vaccine was approved."), ("A cat sat.", "A dog ran.")]
TINY = t.NliTrainingConfig(sources=("glue_rte", "covidfact"), max_pairs_per_source=24, source_caps=(),
                           calibration_sources=("covidfact",), calibration_pairs_per_source=30, batch_size=8,
                           trainable_layers=1, max_length=96, max_hypothesis_tokens=32)


def _triple(pair) -> tuple[str, str, float]:
    return (pair.hypothesis, pair.premise, float(pair.label == "entailment"))


def test_no_test_row_and_no_calibration_row_is_trained_on():
    config = dataclasses.replace(t.NliTrainingConfig(), max_pairs_per_source=None, source_caps=())
    examples = set(t.nli_training_examples(config))
    rows = load_pairs(("train", "dev", "test"), sources=config.files())
    test_only = {_triple(p) for pairs in rows.values() for p in pairs if p.split == "test"}
    calibration = {_triple(p) for p in t.calibration_pairs(config)}
    trainable = {_triple(p) for pairs in rows.values() for p in pairs if p.split != "test"}
    assert examples <= trainable
    assert not examples & (test_only - trainable)
    assert not examples & calibration
    # every calibration row is a dev row of a calibration source
    assert {p.split for p in t.calibration_pairs(config)} == {"dev"}
    assert {p.source for p in t.calibration_pairs(config)} >= {"summedits"}


def test_the_shipped_recipe_learns_from_no_non_commercial_source():
    assert not set(t.NliTrainingConfig().sources) & NON_COMMERCIAL_NLI_SOURCES
    assert not set(t.NliTrainingConfig().calibration_sources) & NON_COMMERCIAL_NLI_SOURCES


def test_caps_are_seeded_samples_per_source():
    capped = t.nli_training_examples(TINY)
    assert len(capped) == 24 * 2
    assert capped == t.nli_training_examples(TINY)
    other_seed = t.nli_training_examples(dataclasses.replace(TINY, seed=1))
    assert other_seed != capped


def test_the_legacy_recipe_trains_on_the_old_rows():
    """The issue-5 model trained on every train and dev row of its six sources (capped at 5,000, seeded)."""
    config = dataclasses.replace(t.LEGACY_NLI_CONFIG, max_pairs_per_source=None)
    rows = load_pairs(("train", "dev"), sources=t.LEGACY_SOURCES)
    assert len(t.nli_training_examples(config)) == sum(len(pairs) for pairs in rows.values())
    assert t.calibration_pairs(config) == []


def _copy_sources(destination, sources) -> None:
    for source in sources:
        target = destination / NLI_FILES[source]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA_DIR / NLI_FILES[source], target)


def test_the_model_id_hashes_the_data_contents_not_the_folder(tmp_path):
    _copy_sources(tmp_path / "a", TINY.files())
    _copy_sources(tmp_path / "b", TINY.files())
    assert TINY.model_id(tmp_path / "a") == TINY.model_id(tmp_path / "b") == TINY.model_id(DATA_DIR)
    changed = tmp_path / "b" / NLI_FILES["glue_rte"]
    with gzip.open(changed, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    first = json.loads(lines[0])
    first["label"] = "entailment" if first["label"] != "entailment" else "not_entailment"
    with gzip.open(changed, "wt", encoding="utf-8") as handle:
        handle.write("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert TINY.model_id(tmp_path / "b") != TINY.model_id(tmp_path / "a")
    assert dataclasses.replace(TINY, lr=2e-4).model_id(tmp_path / "a") != TINY.model_id(tmp_path / "a")
    with pytest.raises(RagevalError, match="missing"):
        TINY.model_id(tmp_path / "nowhere")


def test_train_cache_calibrate_ship_and_reload(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(t, "SHIPPED_NLI_DIR", tmp_path / "shipped")
    steps: list[tuple[int, int]] = []
    trained = t.load_or_train_nli(TINY, progress=lambda done, total: steps.append((done, total)))
    assert steps[-1] == (6, 6)
    directory = t.nli_model_dir(TINY)
    assert directory.is_relative_to(tmp_path / "cache") and (directory / t.TRAINING_LOG_NAME).is_file()
    assert not directory.with_name(directory.name + ".checkpoint").exists()
    log = json.loads((directory / t.TRAINING_LOG_NAME).read_text())
    assert set(log["data"]) == {"glue_rte", "covidfact"}
    reloaded = t.load_or_train_nli(TINY, progress=lambda done, total: pytest.fail("must not retrain"))
    assert reloaded.entailment_probabilities(PAIRS) == pytest.approx(trained.entailment_probabilities(PAIRS),
                                                                     abs=1e-5)

    # a changed data folder is other data: a new model is trained, not the cached one reused
    _copy_sources(tmp_path / "data", TINY.files())
    other = tmp_path / "data" / NLI_FILES["covidfact"]
    with gzip.open(other, "rt", encoding="utf-8") as handle:
        rows = handle.read().splitlines()
    with gzip.open(other, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(rows[:-1]) + "\n")
    retrained: list[int] = []
    t.load_or_train_nli(TINY, data_dir=tmp_path / "data", progress=lambda done, total: retrained.append(done))
    assert retrained and t.nli_model_dir(TINY, tmp_path / "data") != directory

    shipped = t.ship_nli_model(reloaded, TINY, DATA_DIR, training=log)
    recipe = json.loads((shipped / t.RECIPE_NAME).read_text())
    # trainable_layers=1: only the head and the top layer changed (the shipped file holds nothing else)
    assert recipe["trained_parameters"] and all(name.startswith(("head.", "encoder.encoder.layer.5."))
                                                for name in recipe["trained_parameters"])
    from_repo = t.load_or_train_nli(TINY, progress=lambda done, total: pytest.fail("shipped: must not train"))
    assert from_repo.threshold == recipe["threshold"]
    assert from_repo.entailment_probabilities(PAIRS) == pytest.approx(reloaded.entailment_probabilities(PAIRS),
                                                                      abs=2e-3)  # fp16 weights
    (shipped / t.RECIPE_NAME).write_text(json.dumps({**recipe, "trained_parameters": ["head.weight"]}))
    with pytest.raises(RagevalError, match="do not match"):
        t.load_shipped_nli(shipped)


def test_evaluate_reports_each_held_out_source(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    model = t.load_or_train_nli(TINY)
    report = t.evaluate_nli(model, sources=("covidfact", "glue_rte"), max_pairs_per_source=20)
    assert set(report) == {"covidfact"}  # GLUE RTE ships no test split
    assert report["covidfact"].n == 20 and 0.0 <= report["covidfact"].accuracy <= 1.0
