"""rageval.measures.columnar: the table path must equal the dict path and pytrec_eval (TREC files: test_trec.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rageval.measures import (
    compute_measures,
    compute_measures_from_frames,
    compute_measures_from_run,
    parse_measure,
)
from tests.measures.test_measures import FRACTIONAL_QRELS, MEASURES, random_case, reference_values


def run_frame(run: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = [(q, p, s) for q, scores in run.items() for p, s in scores.items()]
    return pd.DataFrame(rows, columns=["query_id", "passage_id", "score"]).astype({"score": float})


def qrels_frame(qrels: dict[str, dict[str, float]]) -> pd.DataFrame:
    rows = [(q, p, label) for q, labels in qrels.items() for p, label in labels.items()]
    return pd.DataFrame(rows, columns=["query_id", "passage_id", "label"])


# ----------------------------------------------------------------------------------------------
# Same values as the dict path and as pytrec_eval
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded012"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_frames_equal_the_dict_path_and_pytrec_eval(seed, graded):
    # random_case: tied scores, an empty ranking every 10th query, a judged query never retrieved
    # (q5), queries whose judgments are all 0, and an unjudged query in the run.
    run, qrels = random_case(seed, graded)
    ours = compute_measures_from_frames(MEASURES, run_frame(run), qrels_frame(qrels))
    # Same labels through the same kernels: equal to the last bit, not just approximately.
    pd.testing.assert_frame_equal(ours, compute_measures_from_run(MEASURES, run, qrels), check_exact=True)
    for name in MEASURES:
        values = ours[ours["measure"] == name].set_index("query_id")["value"]
        reference = reference_values(run, qrels, parse_measure(name))
        for query_id, value in values.items():
            assert value == pytest.approx(reference.get(query_id, 0.0), abs=1e-12), (name, query_id)


def test_row_order_of_the_tables_does_not_matter():
    run, qrels = random_case(5, graded=True)
    expected = compute_measures_from_run(MEASURES, run, qrels)
    shuffled_run = run_frame(run).sample(frac=1.0, random_state=0)  # queries no longer grouped
    shuffled_qrels = qrels_frame(qrels).sample(frac=1.0, random_state=1)
    queries = list(qrels)  # the default order would follow the shuffled qrels
    ours = compute_measures_from_frames(MEASURES, shuffled_run, shuffled_qrels, queries=queries)
    pd.testing.assert_frame_equal(ours, expected, check_exact=True)


def test_ties_are_broken_by_passage_id_descending_as_strings():
    # trec_eval: score desc, then strcmp(docno) desc: a, d9, d10, b (as in test_measures).
    run = run_frame({"q": {"d10": 1.0, "a": 2.0, "d9": 1.0, "b": 0.5}})
    for relevant, rank in [("a", 1), ("d9", 2), ("d10", 3), ("b", 4)]:
        qrels = qrels_frame({"q": {relevant: 1}})
        assert compute_measures_from_frames(["RR"], run, qrels)["value"].item() == 1 / rank


def test_fractional_labels_follow_the_dict_path():
    run = run_frame({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})  # ranks a, b, c as FRACTIONAL_RANKING
    qrels = qrels_frame(FRACTIONAL_QRELS)
    graded = ["P@2", "P@4", "Hit@3", "nDCG@2", "nDCG"]
    pd.testing.assert_frame_equal(
        compute_measures_from_frames(graded, run, qrels),
        compute_measures(graded, {"q": ["a", "b", "c"]}, FRACTIONAL_QRELS),
        check_exact=True,
    )
    with pytest.raises(ValueError, match=r"AP@2: query 'q' has a fractional label; AP takes binary labels only"):
        compute_measures_from_frames(["AP@2"], run, qrels)


def test_query_set_and_defaults_match_compute_measures():
    run = run_frame({"q1": {"a": 1.0}, "not_judged": {"a": 1.0}, "empty_scores": {}})
    qrels = qrels_frame({"q1": {"a": 1}, "q2": {"a": 1}})
    by_default = compute_measures_from_frames(["P@1"], run, qrels)
    assert by_default["query_id"].tolist() == ["q1", "q2"] and by_default["value"].tolist() == [1.0, 0.0]
    chosen = compute_measures_from_frames(["P@1", "nDCG@3"], run, qrels, queries=["q2", "unknown", "q1"])
    assert chosen["query_id"].tolist() == ["q2", "unknown", "q1"] * 2
    assert chosen["value"].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 1.0]


def test_empty_tables_give_defaults_or_no_rows():
    empty_run = run_frame({})
    qrels = qrels_frame({"q": {"a": 1}})
    assert compute_measures_from_frames(["P@5", "Rprec"], empty_run, qrels)["value"].tolist() == [0.0, 0.0]
    assert compute_measures_from_frames(["P@5"], run_frame({"q": {"a": 1.0}}), qrels_frame({})).empty


def test_numeric_id_columns_match_string_ids():
    run = pd.DataFrame({"query_id": [1, 1], "passage_id": [10, 20], "score": [0.1, 0.2]})
    qrels = pd.DataFrame({"query_id": ["1"], "passage_id": ["10"], "label": [1]})
    assert compute_measures_from_frames(["RR"], run, qrels)["value"].tolist() == [0.5]


@pytest.mark.parametrize(
    ("run", "qrels", "message"),
    [
        ({"query_id": ["q", "q"], "passage_id": ["a", "a"], "score": [1.0, 0.5]}, None,
         "ranking of query 'q' lists a passage id more than once"),
        (None, {"query_id": ["q", "q"], "passage_id": ["a", "a"], "label": [1, 0]},
         "qrels of query 'q' judge passage 'a' more than once"),
        ({"query_id": ["q", "r"], "passage_id": ["a", "a"], "score": [1.0, np.nan]}, None,
         "run: query 'r' has a score that is not finite: nan"),
        (None, {"query_id": ["q"], "passage_id": ["a"], "label": ["yes"]},
         "qrels: query 'q', passage 'a': label 'yes' is not a number"),
        ({"query_id": ["q"], "passage_id": ["a"]}, None, r"run table lacks column\(s\) \['score'\]"),
        ({"query_id": ["q", None], "passage_id": ["a", "b"], "score": [1.0, 0.5]}, None,
         "run table, row 1: query_id is missing"),
    ],
    ids=["duplicate-passage", "duplicate-judgment", "nan-score", "label-not-number", "no-score", "missing-id"],
)
def test_bad_tables_are_refused_naming_the_query(run, qrels, message):
    run = pd.DataFrame(run or {"query_id": ["q", "r"], "passage_id": ["a", "a"], "score": [1.0, 0.5]})
    qrels = pd.DataFrame(qrels or {"query_id": ["q", "r"], "passage_id": ["a", "a"], "label": [1, 0]})
    with pytest.raises(ValueError, match=message):
        compute_measures_from_frames(["P@1"], run, qrels)


def test_inputs_are_not_mutated():
    run = run_frame({"q": {"a": 0.5, "b": 0.5}})
    qrels = qrels_frame({"q": {"b": 1}})
    run_before, qrels_before = run.copy(), qrels.copy()
    compute_measures_from_frames(["P@1", "nDCG"], run, qrels)
    pd.testing.assert_frame_equal(run, run_before)
    pd.testing.assert_frame_equal(qrels, qrels_before)


def test_categorical_ids_in_any_category_order_give_the_same_values():
    # Categories sorted (not first-seen), unused categories, numeric categories: codes are renumbered as needed.
    run, qrels = random_case(3, graded=True)
    expected = compute_measures_from_run(MEASURES, run, qrels)
    run_table, qrels_table = run_frame(run), qrels_frame(qrels)
    for column in ("query_id", "passage_id"):
        values = sorted(set(run_table[column]) | set(qrels_table[column]))
        categories = pd.CategoricalDtype(["unused"] + values[::-1])
        run_table[column] = run_table[column].astype(categories)
        qrels_table[column] = qrels_table[column].astype(categories)
    pd.testing.assert_frame_equal(compute_measures_from_frames(MEASURES, run_table, qrels_table), expected,
                                  check_exact=True)


def test_many_relevant_passages_per_query_and_uneven_rankings():
    # Rows with 0..60 positive judgments and rankings of 0..80 passages: every block size of the rank count.
    rng = np.random.default_rng(7)
    run, qrels = {}, {}
    for q in range(60):
        n = int(rng.integers(0, 80))
        run[f"q{q}"] = {f"d{i}": float(rng.integers(0, 5)) for i in rng.permutation(200)[:n]}
        qrels[f"q{q}"] = {f"d{i}": int(rng.integers(0, 3)) for i in rng.permutation(200)[:q]}
    expected = compute_measures_from_run(MEASURES, run, qrels)
    ours = compute_measures_from_frames(MEASURES, run_frame(run), qrels_frame(qrels), queries=list(qrels))
    pd.testing.assert_frame_equal(ours, expected, check_exact=True)  # (q0 has no judgment row: named)
    for name in MEASURES:
        values = expected[expected["measure"] == name].set_index("query_id")["value"]
        reference = reference_values(run, qrels, parse_measure(name))
        for query_id, value in values.items():
            assert value == pytest.approx(reference.get(query_id, 0.0), abs=1e-12), (name, query_id)


def test_blocks_of_any_size_give_the_same_values(monkeypatch):
    # The dicts are read in blocks of queries and the ranks counted in blocks of rows; one row or one query at a
    # time must give what one block gives.
    from rageval.measures import compute as compute_module
    from rageval.measures import ranks

    run, qrels = random_case(4, graded=True)
    expected = compute_measures_from_run(MEASURES, run, qrels)
    monkeypatch.setattr(ranks, "_BLOCK_CELLS", 1)
    monkeypatch.setattr(ranks, "_STRETCH_CELLS", 7)
    monkeypatch.setattr(compute_module, "_QUERY_BLOCK_CELLS", 5)
    pd.testing.assert_frame_equal(compute_measures_from_run(MEASURES, run, qrels), expected, check_exact=True)
    pd.testing.assert_frame_equal(compute_measures_from_frames(MEASURES, run_frame(run), qrels_frame(qrels),
                                                               queries=list(qrels)), expected, check_exact=True)


def test_numpy_huge_page_hint_is_off_during_a_computation_and_restored_after():
    from numpy._core import multiarray

    from rageval.measures.compute import without_huge_pages

    before = multiarray._set_madvise_hugepage(True)
    try:
        with without_huge_pages():
            assert multiarray._set_madvise_hugepage(False) is False
        assert multiarray._set_madvise_hugepage(True) is True
    finally:
        multiarray._set_madvise_hugepage(before)
