"""rageval.trec, the one TREC reader: its rules on every line, its three ways of reading agreeing with each other,
and every caller (measures, upload, pipeline, export) going through it."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from rageval import trec
from rageval.errors import DataError
from rageval.measures import compute_measures_from_files, compute_measures_from_frames, parse_measure
from rageval.trec import (
    QRELS,
    RUN,
    TrecLineError,
    parse_trec_line,
    read_trec_qrels,
    read_trec_run,
    read_trec_table,
    write_trec_qrels,
    write_trec_run,
)
from tests.measures.test_measures import MEASURES, TREC_MEASURES, random_case, trec_order
from tests.measures.test_measures_columnar import qrels_frame, run_frame

GOOD_RUN_LINE = "q1 Q0 d1 1 0.5 bm25\n"
RUN_FIELDS = "'query_id Q0 passage_id rank score tag'"
_ARROW = trec._read_delimited


@pytest.fixture(params=["arrow", "normalised", "line-by-line"])
def way(request, monkeypatch):
    """Run a file test three times: as read (Arrow on the file as it is, falling back as needed), with the file's
    blanks made regular first, and line by line in Python only."""
    if request.param == "normalised":
        monkeypatch.setattr(trec, "_read_delimited", lambda source, *args: _ARROW(source, *args)
                            if isinstance(source, bytes) else None)
    elif request.param == "line-by-line":
        monkeypatch.setattr(trec, "_read_delimited", lambda source, *args: None)
    return request.param


def write(tmp_path, data: bytes | str, name: str = "run.trec"):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def table_of(frame: pd.DataFrame) -> dict[str, list]:
    return frame.astype({"query_id": str, "passage_id": str}).to_dict("list")


# ----------------------------------------------------------------------------------------------
# Reading well-formed files
# ----------------------------------------------------------------------------------------------


def test_trec_files_give_pytrec_eval_values(tmp_path, way):
    run, qrels = random_case(6, graded=True)  # empty rankings have no line in the file
    run_path = write_trec_run(run_frame(run), tmp_path / "run.trec")
    qrels_path = write_trec_qrels(qrels_frame(qrels), tmp_path / "qrels.trec")
    ours = compute_measures_from_files(MEASURES, run_path, qrels_path)
    via_frames = compute_measures_from_frames(MEASURES, read_trec_run(run_path), read_trec_qrels(qrels_path))
    pd.testing.assert_frame_equal(ours, via_frames, check_exact=True)
    with open(run_path) as run_file, open(qrels_path) as qrels_file:
        reference = pytrec_eval.RelevanceEvaluator(
            pytrec_eval.parse_qrel(qrels_file), TREC_MEASURES
        ).evaluate(pytrec_eval.parse_run(run_file))
    assert set(reference) <= set(ours["query_id"])
    for name, key in {"P@5": "P_5", "R@5": "recall_5", "AP": "map", "nDCG@5": "ndcg_cut_5", "nDCG": "ndcg",
                      "RR": "recip_rank", "Rprec": "Rprec", "Hit@5": "success_5"}.items():
        values = ours[ours["measure"] == str(parse_measure(name))].set_index("query_id")["value"]
        for query_id, expected in reference.items():
            assert values[query_id] == pytest.approx(expected[key], abs=1e-12), (name, query_id)


def test_run_round_trip_keeps_ids_as_strings_and_scores_exactly(tmp_path, way):
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
    assert table_of(back) == expected.to_dict("list")
    assert all(isinstance(value, str) for value in back["query_id"].tolist() + back["passage_id"].tolist())


def test_qrels_round_trip_integral_and_fractional_labels(tmp_path, way):
    integral = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "passage_id": ["a", "b", "a"], "label": [1, 0, 2]})
    path = write_trec_qrels(integral, tmp_path / "qrels.trec")
    assert path.read_text().splitlines() == ["q1 0 a 1", "q1 0 b 0", "q2 0 a 2"]  # trec_eval wants ints
    back = read_trec_qrels(path)
    assert back["label"].tolist() == [1.0, 0.0, 2.0] and back["query_id"].tolist() == ["q1", "q1", "q2"]
    fractional = integral.assign(label=[0.25, 1 / 3, 1.0])
    back = read_trec_qrels(write_trec_qrels(fractional, tmp_path / "erag.qrels"))
    assert back["label"].tolist() == [0.25, 1 / 3, 1.0]


TWO_LINES = {"query_id": ["q1", "q1"], "passage_id": ["d1", "d2"], "score": [0.5, 0.25]}


@pytest.mark.parametrize(
    "text",
    [
        "q1\tQ0\td1\t1\t0.5\tbm25\nq1\tQ0\td2\t2\t0.25\tbm25\n",  # tabs (MS MARCO style)
        "q1  Q0 d1 1 0.5   bm25\n q1 Q0 d2 2 0.25 bm25 \n",  # repeated, leading and trailing spaces
        "q1 \tQ0\t d1 1 0.5 bm25\nq1\tQ0 d2 2 0.25\tbm25\n",  # tabs and spaces mixed
        "q1 Q0 d1 1 0.5 bm25\r\n\r\n\nq1 Q0 d2 2 0.25 bm25\r\n",  # CRLF and blank lines
        "q1 Q0 d1 1 0.5 bm25\rq1 Q0 d2 2 0.25 bm25\r",  # lone CR (old Mac) line ends
        "\ufeffq1 Q0 d1 1 0.5 bm25\n \t \nq1 Q0 d2 2 0.25 bm25",  # byte-order mark, a blank line, no final end
        "q1 Q0 d1 1 5E-1 bm25\nq1 Q0 d2 +2 2.5e-01 bm25\n",  # scientific notation, a signed rank
    ],
    ids=["tabs", "spaces", "mixed", "crlf-blank-lines", "cr", "bom-no-final-newline", "scientific"],
)
def test_any_whitespace_layout_reads_the_same(tmp_path, way, text):
    assert table_of(read_trec_run(write(tmp_path, text))) == TWO_LINES


def test_scores_read_exactly_as_float_does(tmp_path, way):
    texts = ["1e-3", "-2.5E+02", ".5", "5.", "+0.125", "1e-400", "123456789012345678901234567890", "0.1"]
    path = write(tmp_path, "".join(f"q1 Q0 d{i} {i + 1} {t} run\n" for i, t in enumerate(texts)))
    assert read_trec_run(path)["score"].tolist() == [float(t) for t in texts]


def test_empty_and_blank_files_read_as_empty_tables(tmp_path, way):
    for data in ("", "\n\n", " \t \r\n"):
        frame = read_trec_run(write(tmp_path, data))
        assert list(frame.columns) == ["query_id", "passage_id", "score"] and frame.empty
        assert read_trec_qrels(write(tmp_path, data, "qrels")).empty
        assert compute_measures_from_files(["P@1"], tmp_path / "run.trec", tmp_path / "qrels").empty


# ----------------------------------------------------------------------------------------------
# Broken lines: the file, the line, what was expected
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("q1 Q0 d2 2 0.4", f"expected 6 whitespace-separated fields {RUN_FIELDS}, found 5"),
        ("q1 Q0 d2 2 0.4 bm25 extra", f"expected 6 whitespace-separated fields {RUN_FIELDS}, found 7"),
        ("q1  Q0 d2 2 0.4", "found 5"),  # a missing tag hidden behind a double space
        ("q1 Q0 d2 2 high bm25", "field 'score': expected a finite number, found 'high'"),
        ("q1 Q0 d2 2 nan bm25", "field 'score': expected a finite number, found 'nan'"),
        ("q1 Q0 d2 2 -inf bm25", "field 'score': expected a finite number, found '-inf'"),
        ("q1 Q0 d2 2 1e400 bm25", "field 'score': expected a finite number, found '1e400'"),
        ("q1 Q0 d2 2 1_000 bm25", "field 'score': expected a finite number, found '1_000'"),
        ("q1 Q0 d2 2 0x1p3 bm25", "field 'score': expected a finite number, found '0x1p3'"),
        ("q1 Q0 d2 2 \u0661 bm25", "field 'score': expected a finite number, found '\u0661'"),  # Arabic-Indic 1
        ("q1 Q0 d2 second 0.4 bm25", "field 'rank': expected an integer, found 'second'"),
        ("q1 Q0 d2 2.0 0.4 bm25", "field 'rank': expected an integer, found '2.0'"),
        ("q1 Q0 d2 0x2 0.4 bm25", "field 'rank': expected an integer, found '0x2'"),
    ],
    ids=["short", "long", "double-space-short", "word", "nan", "inf", "overflow", "underscore", "hex",
         "non-ascii-digit", "rank-word", "rank-float", "rank-hex"],
)
def test_malformed_run_line_is_named(tmp_path, way, bad_line, message):
    # The bad line is line 4: two good lines and a blank line before it (blank lines still count).
    path = write(tmp_path, GOOD_RUN_LINE + "q1 Q0 d3 3 0.25 bm25\n\n" + bad_line + "\n" + "q2 Q0 d1 1 0.5 bm25\n")
    with pytest.raises(DataError) as error:
        read_trec_run(path)
    assert (error.value.path, error.value.line) == (str(path), 4)
    assert str(error.value).startswith(f"{path}, line 4: ") and message in str(error.value)


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("q1 0 d2", "expected 4 whitespace-separated fields 'query_id iteration passage_id relevance', found 3"),
        ("q1 0 d2 relevant", "field 'relevance': expected a finite number, found 'relevant'"),
        ("q1 0 d2 inf", "field 'relevance': expected a finite number, found 'inf'"),
    ],
)
def test_malformed_qrels_line_is_named(tmp_path, way, bad_line, message):
    path = write(tmp_path, "q1 0 d1 1\n" + bad_line + "\n", "qrels")
    with pytest.raises(DataError, match=message) as error:
        read_trec_qrels(path)
    assert error.value.line == 2


@pytest.mark.parametrize("wide_first", [True, False], ids=["line-1-has-7", "a-later-line-has-7"])
def test_an_extra_field_is_refused_on_any_line_and_ignored_on_every_line_when_asked(tmp_path, way, wide_first):
    # The old pandas fallback took its width from line 1: 7 fields on line 1 passed, 7 on a later line failed.
    wide, narrow = "q1 Q0 d1 1 0.5 bm25 comment", "q1 Q0 d2 2 0.25 bm25"
    lines = [wide, narrow, narrow.replace("d2", "d3")] if wide_first else [narrow, narrow.replace("d2", "d3"), wide]
    path = write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"expected 6 whitespace-separated fields {RUN_FIELDS}, found 7") as error:
        read_trec_run(path)
    assert error.value.line == (1 if wide_first else 3)
    read = read_trec_run(path, extra_fields="ignore")
    assert read["passage_id"].tolist() == [line.split()[2] for line in lines]
    assert read["score"].tolist() == [float(line.split()[4]) for line in lines]
    # Extra fields of any width, on some lines only: dropped; a short line is still an error.
    path = write(tmp_path, "q1 Q0 d1 1 0.5 bm25 a b c\nq1 Q0 d2 2 0.25 bm25\nq1\tQ0 d3 3 0.125 bm25 #\n")
    assert read_trec_run(path, extra_fields="ignore")["passage_id"].tolist() == ["d1", "d2", "d3"]
    path = write(tmp_path, "q1 Q0 d1 1 0.5 bm25 x\nq1 Q0 d2 2 0.25\n")
    with pytest.raises(DataError, match=f"line 2: expected at least 6 whitespace-separated fields {RUN_FIELDS}, "
                                        "found 5"):
        read_trec_run(path, extra_fields="ignore")
    qrels = write(tmp_path, "q1 0 d1 1 judge-7\nq1 0 d2 0\n", "qrels")
    assert read_trec_qrels(qrels, extra_fields="ignore")["label"].tolist() == [1.0, 0.0]
    with pytest.raises(DataError, match="line 1: expected 4 whitespace-separated fields"):
        read_trec_qrels(qrels)
    with pytest.raises(ValueError, match="extra_fields: expected one of error, ignore, got 'drop'"):
        read_trec_run(qrels, extra_fields="drop")  # type: ignore[arg-type]


def test_a_passage_twice_in_a_query_is_an_error_naming_both_lines(tmp_path, way):
    # An error rather than a silent choice: a dict (pytrec_eval's parse_run) would keep the last line.
    path = write(tmp_path, GOOD_RUN_LINE + "q2 Q0 d1 1 0.5 bm25\n\nq1 Q0 d2 2 0.4 bm25\nq1 Q0 d1 3 0.3 bm25\n")
    with pytest.raises(DataError, match=r"line 5: query 'q1' ranks passage 'd1' twice \(first on line 1\)"):
        read_trec_run(path)
    qrels = write(tmp_path, "q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 0\n", "qrels")
    with pytest.raises(DataError, match=r"line 3: query 'q1' judges passage 'd1' twice \(first on line 1\)"):
        read_trec_qrels(qrels)
    # The same passage in two queries, or the same query twice in separate blocks, is fine.
    path = write(tmp_path, GOOD_RUN_LINE + "q2 Q0 d1 1 0.5 bm25\nq1 Q0 d2 2 0.4 bm25\n")
    assert len(read_trec_run(path)) == 3


def test_file_that_is_not_utf8_is_named(tmp_path, way):
    path = write(tmp_path, GOOD_RUN_LINE.encode() + b"\n" + b"q1 Q0 d\xe9 2 0.4 bm25\n")
    with pytest.raises(DataError, match="line 3: expected UTF-8 text, found the byte 0xe9") as error:
        read_trec_run(path)
    assert "Windows-1252" in str(error.value)


def _mutations(rng: random.Random) -> list[str]:
    """Run lines, some broken or oddly spaced, to check that the three ways of reading always agree."""
    lines = []
    for number in range(40):
        fields = [f"q{number % 3}", "Q0", f"d{number}", str(number + 1), f"{rng.random():.3f}", "run"]
        kind = rng.randrange(14)
        if kind == 0:
            fields.append("extra")
        elif kind == 1:
            fields.pop(rng.randrange(6))
        elif kind == 2:
            fields[4] = rng.choice(["nan", "inf", "1_0", "x", "1e", "--1", "1e999", "0x1"])
        elif kind == 3:
            fields[3] = rng.choice(["one", "1.5", "", "+3"])
        elif kind == 4:
            fields[2] = "d0"  # a repeat of query 0's first passage, for some queries
        separators = [rng.choice([" ", " ", " ", "\t", "  ", " \t"]) for _ in fields[1:]]
        line = fields[0] + "".join(s + f for s, f in zip(separators, fields[1:]))
        if kind == 5:
            line = " " + line + "\t "
        lines.append(line)
        if kind == 6:
            lines.append(rng.choice(["", " ", "\t"]))
    ending = rng.choice(["\n", "\r\n", "\r"])
    return [ending.join(lines) + ending]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("extra_fields", ["error", "ignore"])
def test_the_three_ways_of_reading_agree_on_any_file(tmp_path, monkeypatch, seed, extra_fields):
    text = _mutations(random.Random(seed))[0]
    path = write(tmp_path, text)

    def outcome():
        try:
            return table_of(read_trec_run(path, extra_fields=extra_fields))
        except DataError as error:
            return str(error)

    arrow = outcome()
    monkeypatch.setattr(trec, "_read_delimited", lambda source, *args: _ARROW(source, *args)
                        if isinstance(source, bytes) else None)
    normalised = outcome()
    monkeypatch.setattr(trec, "_read_delimited", lambda source, *args: None)
    assert arrow == normalised == outcome()


def test_clean_files_take_the_fast_path_and_irregular_ones_no_python_loop(tmp_path, monkeypatch):
    def refuse(*args):
        raise AssertionError("read line by line")

    monkeypatch.setattr(trec, "_read_line_by_line", refuse)
    for separator in (" ", "\t"):
        path = write(tmp_path, separator.join(["007", "Q0", "d1", "1", "0.5", "bm25"]) + "\n")
        assert table_of(read_trec_run(path)) == {"query_id": ["007"], "passage_id": ["d1"], "score": [0.5]}
    path = write(tmp_path, "q1  Q0\td1 1 0.5 bm25 \n\tq1 Q0 d2 2 0.25 bm25\n")
    assert table_of(read_trec_run(path)) == TWO_LINES
    monkeypatch.setattr(trec, "_read_normalised", refuse)
    path = write(tmp_path, "q1 Q0 d1 1 0.5 bm25 c1\nq1 Q0 d2 2 0.25 bm25 c2\n")  # uniform extra width: fast
    assert table_of(read_trec_run(path, extra_fields="ignore")) == TWO_LINES


def test_parse_trec_line_is_the_line_rule():
    line = parse_trec_line(" q1\tQ0  d1 7 -1.5e2 bm25 ", RUN)
    assert line == trec.TrecLine(("q1", "Q0", "d1", "7", "-1.5e2", "bm25"), -150.0, 7)
    assert parse_trec_line("q 0 d 2", QRELS).value == 2.0
    with pytest.raises(TrecLineError, match="expected 4 whitespace-separated fields"):
        parse_trec_line("q 0 d 1 2", QRELS)
    assert parse_trec_line("q 0 d 1 2", QRELS, extra_fields="ignore").fields == ("q", "0", "d", "1")


def test_written_rank_order_is_trec_order(tmp_path):
    # write_trec_run orders lines as trec_order (written independently in test_measures) does;
    # empty rankings have no lines.
    run, _ = random_case(7, graded=False)
    path = write_trec_run(run_frame(run), tmp_path / "run.trec")
    back = read_trec_run(path)
    assert {q: group["passage_id"].tolist() for q, group in back.groupby("query_id", sort=False, observed=True)} \
        == {q: trec_order(scores) for q, scores in run.items() if scores}
    # The table read back holds categoricals in first-seen order, not string order; written again
    # (shuffled, so queries come in another order) every line, rank included, is the same.
    again = write_trec_run(back.sample(frac=1.0, random_state=0), tmp_path / "again.trec")
    assert sorted(again.read_text().splitlines()) == sorted(path.read_text().splitlines())


def test_writers_refuse_what_cannot_be_read_back(tmp_path):
    with pytest.raises(ValueError, match="cannot write passage_id 'has space'"):
        write_trec_run(pd.DataFrame({"query_id": ["q"], "passage_id": ["has space"], "score": [1.0]}), tmp_path / "r")
    with pytest.raises(ValueError, match="run tag 'my tag'"):
        write_trec_run(run_frame({"q": {"a": 1.0}}), tmp_path / "r", tag="my tag")
    with pytest.raises(ValueError, match="query 'q' has a score that is not finite"):
        write_trec_run(pd.DataFrame({"query_id": ["q"], "passage_id": ["a"], "score": [math.inf]}), tmp_path / "r")


def test_first_repeated_pair_finds_the_earliest_repeat_in_any_order():
    rng = np.random.default_rng(0)
    for _ in range(50):
        queries = rng.integers(0, 5, 40)
        passages = rng.integers(0, 30, 40)
        seen: dict[tuple[int, int], int] = {}
        expected = None
        for position, pair in enumerate(zip(queries.tolist(), passages.tolist())):
            if pair in seen:
                expected = (seen[pair], position)
                break
            seen[pair] = position
        assert trec.first_repeated_pair(queries, passages, 30) == expected


# ----------------------------------------------------------------------------------------------
# Every caller reads through it
# ----------------------------------------------------------------------------------------------


BROKEN_RUNS = [
    ("nq:0 Q0 nq_oracle:0 1 21.0 fx\nnq:0 Q0 nq_oracle:1 2 20.0 fx extra\n", 2, "found 7"),
    ("nq:0 Q0 nq_oracle:0 1 21.0 fx extra\nnq:0 Q0 nq_oracle:1 2 20.0 fx\n", 1, "found 7"),
    ("nq:0 Q0 nq_oracle:0 1 21.0 fx\r\n\r\nnq:0 Q0 nq_oracle:1 2 1_0 fx\r\n", 3, "field 'score'"),
    ("nq:0 Q0 nq_oracle:0 1 21.0 fx\nnq:0 Q0 nq_oracle:0 2 20.0 fx\n", 2, "ranks passage 'nq_oracle:0' twice"),
    ("nq:0 Q0 nq_oracle:0 1 21.0 fx\n\nnq:0 Q0 nq_oracle:\xe9 2 20.0 fx\n", 3, "expected UTF-8 text"),
]


@pytest.mark.parametrize(("text", "line", "said"), BROKEN_RUNS, ids=["7-later", "7-first", "crlf", "twice", "utf8"])
def test_the_same_broken_run_file_gives_the_same_line_and_message_everywhere(tmp_path, text, line, said):
    from rageval.upload.convert import convert_upload
    from rageval.upload.problems import UploadFile
    from tests.run_fixtures import build_small_run
    from tests.upload.test_upload import trec_files

    data = text.encode("latin-1")
    path = write(tmp_path, data)
    qrels = write(tmp_path, "nq:0 0 nq_oracle:0 1\n", "qrels")
    messages = []
    for read in (lambda: read_trec_run(path), lambda: compute_measures_from_files(["P@1"], path, qrels)):
        with pytest.raises(DataError) as error:
            read()
        assert error.value.line == line and said in str(error.value)
        messages.append(str(error.value).split(": ", 1)[1])
    files = {**trec_files(build_small_run()), "run": UploadFile(str(path), data)}
    result = convert_upload("trec", files)
    errors = [p for p in result.errors if p.file == str(path)]
    assert [(p.line, p.message) for p in errors][:1] == [(line, messages[0])]
    assert messages[0] == messages[1]


def test_the_pipeline_reads_qrels_through_it(tmp_path):
    from rageval.pipeline.sources import _read_qrels

    path = write(tmp_path, "q1 0 d1 1\nq1 0 d2 1 extra\n", "qrels")
    with pytest.raises(DataError) as error:
        _read_qrels(path, {})
    assert error.value.line == 2 and "expected 4 whitespace-separated fields" in str(error.value)
    with pytest.raises(DataError) as same:
        read_trec_qrels(path)
    assert str(same.value) == str(error.value)


def test_export_writes_qrels_the_reader_reads_back(tmp_path):
    from rageval.export import export_run
    from rageval.store import RunReader
    from tests.run_fixtures import make_small_run

    run_path = make_small_run(tmp_path / "small.sqlite")
    out = export_run(run_path, "labels", tmp_path / "gold.qrels", fmt="qrels", method="gold")
    table = read_trec_table(out, QRELS)
    read = table.frame()
    with RunReader(run_path) as reader:
        labels = reader.labels("gold")
    assert dict(zip(zip(read["query_id"].astype(str), read["passage_id"].astype(str)), read["label"])) == \
        dict(zip(zip(labels["query_id"], labels["passage_id"]), labels["value"]))


def test_fields_that_vary_between_lines_are_read_by_arrow_too(tmp_path, monkeypatch):
    # Q0 and tag are first read as "equal to line 1's"; lines that differ send the file to a second Arrow
    # reading with those fields as dictionaries, not to the slower paths.
    def refuse(*args):
        raise AssertionError("left Arrow")

    monkeypatch.setattr(trec, "_read_normalised", refuse)
    path = write(tmp_path, "q1 Q0 d1 1 0.5 bm25\nq1 0 d2 2 0.25 dense\nq2 Q0 d1 -3 1 false\n")
    assert table_of(read_trec_run(path))["passage_id"] == ["d1", "d2", "d1"]
    qrels = write(tmp_path, "q1 0 d1 1\nq1 1 d2 0\n", "qrels")
    assert read_trec_qrels(qrels)["label"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize(("ranks", "integers"), [
    (["1", "22", "-3", "+4", "007"], True), (["1", "-"], False), (["1", "+"], False), (["1", "2-"], False),
    (["1", "1+1"], False), (["1", "x"], False), (["1", "１"], False), (["1", "1.0"], False),
])
def test_rank_text_is_checked_as_the_line_rule_checks_it(ranks, integers):
    import pyarrow as pa

    column = pa.chunked_array([pa.array(ranks[:1]), pa.array(ranks[1:])])
    assert trec._all_integers(column) is integers
    assert all(trec._INTEGER.fullmatch(rank) for rank in ranks) is integers


@pytest.mark.parametrize("judged_only", [False, True])
def test_files_give_the_frames_values_for_every_measure_family(tmp_path, judged_only):
    # Every family, including those that read each ranked passage's judgment (bpref, infAP, judged_only): the
    # codes from the reader go through the same label builder as tables do.
    from tests.measures.test_measures_families import as_frames, measure_pairs
    from tests.measures.test_measures_families import random_case as family_case

    run, qrels = family_case(2)
    measures = list(measure_pairs(2, judged_only))
    run_path = write_trec_run(run_frame(run), tmp_path / "run.trec")
    qrels_path = write_trec_qrels(qrels_frame(qrels), tmp_path / "qrels.trec")
    expected = compute_measures_from_frames(measures, *as_frames(run, qrels))
    ours = compute_measures_from_files(measures, run_path, qrels_path)
    pd.testing.assert_frame_equal(ours.sort_values(["measure", "query_id"], ignore_index=True),
                                  expected.sort_values(["measure", "query_id"], ignore_index=True), check_exact=True)
