"""rageval.measures.columnar: the table/TREC-file path must equal the dict path and pytrec_eval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from rageval.errors import DataError
from rageval.measures import (
    columnar,
    compute_measures,
    compute_measures_from_frames,
    compute_measures_from_run,
    parse_measure,
    read_trec_qrels,
    read_trec_run,
    write_trec_qrels,
    write_trec_run,
)
from tests.test_measures import FRACTIONAL_QRELS, MEASURES, TREC_MEASURES, random_case, reference_values, trec_order


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


# ----------------------------------------------------------------------------------------------
# TREC files
# ----------------------------------------------------------------------------------------------


@pytest.fixture(params=["arrow", "pandas-c"])
def parser(request, monkeypatch):
    """Run a file test twice: with the Arrow fast path, and with pandas' C parser alone (no pyarrow)."""
    if request.param == "pandas-c":
        monkeypatch.setattr(columnar, "_parse_arrow", lambda path, layout: None)
    return request.param


def test_trec_files_give_pytrec_eval_values(tmp_path, parser):
    run, qrels = random_case(6, graded=True)  # empty rankings have no line in the file
    run_path = write_trec_run(run_frame(run), tmp_path / "run.trec")
    qrels_path = write_trec_qrels(qrels_frame(qrels), tmp_path / "qrels.trec")
    ours = compute_measures_from_frames(MEASURES, read_trec_run(run_path), read_trec_qrels(qrels_path))
    with open(run_path) as run_file, open(qrels_path) as qrels_file:
        reference = pytrec_eval.RelevanceEvaluator(
            pytrec_eval.parse_qrel(qrels_file), TREC_MEASURES
        ).evaluate(pytrec_eval.parse_run(run_file))
    assert set(reference) <= set(ours["query_id"])
    for name in ("P@5", "R@5", "AP", "nDCG@5", "nDCG", "RR", "Rprec", "Hit@5"):
        key = {"P@5": "P_5", "R@5": "recall_5", "AP": "map", "nDCG@5": "ndcg_cut_5", "nDCG": "ndcg",
               "RR": "recip_rank", "Rprec": "Rprec", "Hit@5": "success_5"}[name]
        values = ours[ours["measure"] == name].set_index("query_id")["value"]
        for query_id, expected in reference.items():
            assert values[query_id] == pytest.approx(expected[key], abs=1e-12), (name, query_id)


def test_run_round_trip_keeps_ids_as_strings_and_scores_exactly(tmp_path, parser):
    scores = [0.1, 1 / 3, 1e-300, -2.5, -2.5, 123456789.123456789]
    frame = pd.DataFrame({
        "query_id": ["007", "007", "NA", "nan", "nan", "301"],
        "passage_id": ["01", "1", "null", "d9", "d10", "-"],
        "score": scores,
    })
    path = write_trec_run(frame, tmp_path / "run.trec", tag="bm25")
    lines = path.read_text().splitlines()
    # trec_eval order within a query: 1/3 before 0.1; d9 before d10 (tied at -2.5, so by id, strcmp).
    assert lines[:2] == ["007 Q0 1 1 0.3333333333333333 bm25", "007 Q0 01 2 0.1 bm25"]
    assert [line.split()[3] for line in lines] == ["1", "2", "1", "1", "2", "1"]
    back = read_trec_run(path)
    assert list(back.columns) == ["query_id", "passage_id", "score"]
    expected = frame.iloc[[1, 0, 2, 3, 4, 5]].reset_index(drop=True)  # file order is trec order
    assert back.astype({"query_id": str, "passage_id": str}).to_dict("list") == expected.to_dict("list")
    assert all(isinstance(value, str) for value in back["query_id"].tolist() + back["passage_id"].tolist())


def test_qrels_round_trip_integral_and_fractional_labels(tmp_path, parser):
    integral = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "passage_id": ["a", "b", "a"], "label": [1, 0, 2]})
    path = write_trec_qrels(integral, tmp_path / "qrels.trec")
    assert path.read_text().splitlines() == ["q1 0 a 1", "q1 0 b 0", "q2 0 a 2"]  # trec_eval wants ints
    back = read_trec_qrels(path)
    assert back["label"].tolist() == [1.0, 0.0, 2.0] and back["query_id"].tolist() == ["q1", "q1", "q2"]
    fractional = integral.assign(label=[0.25, 1 / 3, 1.0])
    back = read_trec_qrels(write_trec_qrels(fractional, tmp_path / "erag.qrels"))
    assert back["label"].tolist() == [0.25, 1 / 3, 1.0]


@pytest.mark.parametrize(
    "text",
    [
        "q1\tQ0\td1\t1\t0.5\tbm25\nq1\tQ0\td2\t2\t0.25\tbm25\n",  # tabs
        "q1  Q0 d1 1 0.5   bm25\n q1 Q0 d2 2 0.25 bm25 \n",  # repeated, leading and trailing spaces
        "q1 Q0 d1 1 0.5 bm25\r\n\r\n\nq1 Q0 d2 2 0.25 bm25\r\n",  # CRLF and blank lines
    ],
    ids=["tabs", "spaces", "crlf-blank-lines"],
)
def test_any_whitespace_layout_reads_the_same(tmp_path, parser, text):
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    frame = read_trec_run(path)
    assert frame.to_dict("list") == {"query_id": ["q1", "q1"], "passage_id": ["d1", "d2"], "score": [0.5, 0.25]}


def test_empty_file_reads_as_an_empty_table(tmp_path, parser):
    path = tmp_path / "empty.trec"
    path.write_text("\n\n")
    frame = read_trec_run(path)
    assert list(frame.columns) == ["query_id", "passage_id", "score"] and frame.empty
    path.write_text("")
    assert read_trec_qrels(path).empty


GOOD_RUN_LINE = "q1 Q0 d1 1 0.5 bm25\n"


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("q1 Q0 d2 2 0.4\n", "expected 6 whitespace-separated fields 'query_id Q0 passage_id rank score tag', found 5"),
        ("q1 Q0 d2 2 0.4 bm25 extra\n", "expected 6 whitespace-separated fields .*, found 7"),
        ("q1 Q0 d2 2 high bm25\n", "field 'score': expected a finite number, found 'high'"),
        ("q1 Q0 d2 2 nan bm25\n", "field 'score': expected a finite number, found 'nan'"),
        ("q1 Q0 d2 2 -inf bm25\n", "field 'score': expected a finite number, found '-inf'"),
        ("q1  Q0 d2 2 0.4\n", "found 5"),  # a missing tag hidden behind a double space
    ],
    ids=["short", "long", "not-a-number", "nan", "inf", "double-space-short"],
)
def test_malformed_run_line_is_named(tmp_path, parser, bad_line, message):
    path = tmp_path / "run.trec"
    # The bad line is line 4: two good lines and a blank line before it (blank lines still count).
    path.write_text(GOOD_RUN_LINE * 2 + "\n" + bad_line + GOOD_RUN_LINE)
    with pytest.raises(DataError, match=message) as error:
        read_trec_run(path)
    assert error.value.line == 4 and error.value.path == str(path)
    assert str(error.value).startswith(f"{path}, line 4: ")


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("q1 0 d2\n", "expected 4 whitespace-separated fields 'query_id iteration passage_id label', found 3"),
        ("q1 0 d2 relevant\n", "field 'label': expected a number, found 'relevant'"),
    ],
)
def test_malformed_qrels_line_is_named(tmp_path, parser, bad_line, message):
    path = tmp_path / "qrels.trec"
    path.write_text("q1 0 d1 1\n" + bad_line)
    with pytest.raises(DataError, match=message) as error:
        read_trec_qrels(path)
    assert error.value.line == 2


def test_file_that_is_not_utf8_is_named(tmp_path, parser):
    path = tmp_path / "run.trec"
    path.write_bytes(GOOD_RUN_LINE.encode() + b"q1 Q0 d\xff 2 0.4 bm25\n")
    with pytest.raises(DataError, match="line 2: expected UTF-8 text"):
        read_trec_run(path)


def test_writers_refuse_what_cannot_be_read_back(tmp_path):
    with pytest.raises(ValueError, match="cannot write passage_id 'has space'"):
        write_trec_run(pd.DataFrame({"query_id": ["q"], "passage_id": ["has space"], "score": [1.0]}), tmp_path / "r")
    with pytest.raises(ValueError, match="run tag 'my tag'"):
        write_trec_run(run_frame({"q": {"a": 1.0}}), tmp_path / "r", tag="my tag")
    with pytest.raises(ValueError, match="query 'q' has a score that is not finite"):
        write_trec_run(pd.DataFrame({"query_id": ["q"], "passage_id": ["a"], "score": [math.inf]}), tmp_path / "r")


def test_written_rank_order_is_trec_order(tmp_path):
    # write_trec_run orders lines as trec_order (written independently in test_measures) does;
    # empty rankings have no lines.
    run, _ = random_case(7, graded=False)
    path = write_trec_run(run_frame(run), tmp_path / "run.trec")
    back = read_trec_run(path)
    assert {q: group["passage_id"].tolist() for q, group in back.groupby("query_id", sort=False)} == \
        {q: trec_order(scores) for q, scores in run.items() if scores}
    # The table read back holds categoricals in first-seen order, not string order; written again
    # (shuffled, so queries come in another order) every line, rank included, is the same.
    again = write_trec_run(back.sample(frac=1.0, random_state=0), tmp_path / "again.trec")
    assert sorted(again.read_text().splitlines()) == sorted(path.read_text().splitlines())


@pytest.mark.parametrize("separator", [" ", "\t"])
def test_cleanly_delimited_files_take_the_fast_path(tmp_path, monkeypatch, separator):
    # The Arrow reader alone must read what write_trec_run writes (and tab-separated MS MARCO style
    # files); pandas' whitespace mode is about half as fast, so it is kept for irregular files.
    def refuse(path, layout):
        raise AssertionError("fell back to the slower parser")

    monkeypatch.setattr(columnar, "_parse_c", refuse)
    path = tmp_path / "run.trec"
    path.write_text(separator.join(["007", "Q0", "d1", "1", "0.5", "bm25"]) + "\n")
    assert read_trec_run(path).astype(str).to_dict("list") == {
        "query_id": ["007"], "passage_id": ["d1"], "score": ["0.5"],
    }
