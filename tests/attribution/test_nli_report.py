"""The checker-transfer report (issue 17): HAGRID split by query, protocols, resumable evaluations, LOSO recipes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from rageval.attribution import nli_report as r
from rageval.attribution import nli_training as t
from rageval.data import HAGRID_FILE, read_hagrid
from rageval.paths import DATA_DIR


class OverlapChecker:
    """p(supported) = share of the hypothesis' words found in the premise: a checker with no model to load."""

    model_id = "overlap"
    threshold = 0.6

    def __init__(self):
        self.calls = 0

    def entailment_probabilities(self, pairs):
        self.calls += 1
        out = []
        for premise, hypothesis in pairs:
            words = set(premise.lower().split())
            tokens = hypothesis.lower().split()
            out.append(sum(w in words for w in tokens) / max(1, len(tokens)))
        return out


def test_hagrid_halves_split_by_query_and_keep_every_labelled_cited_sentence():
    records = read_hagrid(DATA_DIR / HAGRID_FILE)
    halves = {record.query_id: r.hagrid_half(record.query_id) for record in records}
    assert set(halves.values()) == {"dev", "test"}
    assert 0.4 < sum(h == "test" for h in halves.values()) / len(halves) < 0.6
    test, dev = r.hagrid_human_pairs(half="test"), r.hagrid_human_pairs(half="dev")
    assert {p.gold for p in test} == {0, 1}
    # 2,388 human-labelled sentences in all (data/README.md); only the cited ones with text are scored
    assert 0 < len(test) + len(dev) <= 2388
    assert not any(re.search(r"\[\d+(, ?\d+)*\]", p.hypothesis) for p in test)  # citation markers removed


def test_evaluations_match_sklearn_and_resume_from_the_partial_file(tmp_path):
    checker = OverlapChecker()
    entry = r.CheckerEntry("overlap", checker, ("covidfact",), "word overlap")
    partial = r.PartialReport(tmp_path / "partial.json")
    results = r.evaluate_checker(entry, partial, sources=("covidfact", "healthver"), pairs_per_source=120,
                                 hagrid=False, log=lambda message: None)
    assert [(e["data"], e["protocol"]) for e in results] == [("covidfact", "in-distribution"),
                                                             ("healthver", "zero-shot")]
    from rageval.attribution.nli_data import held_out_pairs

    rows = r.sample_rows(held_out_pairs(sources=("healthver",))["healthver"], 120)
    p = np.array(checker.entailment_probabilities([(x.premise, x.hypothesis) for x in rows]))
    gold = [x.gold for x in rows]
    assert results[1]["n"] == 120
    assert results[1]["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(gold, p >= 0.6))
    assert results[1]["roc_auc"] == pytest.approx(roc_auc_score(gold, p))
    calls = checker.calls
    again = r.evaluate_checker(entry, r.PartialReport(tmp_path / "partial.json"), sources=("covidfact", "healthver"),
                               pairs_per_source=120, hagrid=False, log=lambda message: None)
    assert again == results and checker.calls == calls  # nothing scored twice


def test_a_leave_one_source_out_recipe_neither_trains_nor_calibrates_on_its_source():
    base = t.NliTrainingConfig()
    for source in r.LOSO_SOURCES:
        config = r.loso_config(base, source)
        assert source not in config.sources and source not in config.calibration_sources
        examples = t.nli_training_examples(config)
        assert len(examples) <= r.LOSO_PAIRS_PER_SOURCE * len(config.sources)


def test_the_report_refuses_evaluations_of_undescribed_checkers():
    from rageval.errors import RagevalError

    with pytest.raises(RagevalError, match="does not describe"):
        r.build_report({}, [{"checker": "x"}])
