"""``rageval annotations import``: TREC qrels and CSV labels become ordinary rows of the annotation file, in one
transaction; every bad line is one error naming the file, the line and the field, and writes nothing."""

from __future__ import annotations

import pytest

from rageval.annotations import AnnotationStore, latest_labels
from rageval.cli import main
from rageval.errors import DataError, RagevalError
from rageval.trust.imports import import_labels
from tests.run_fixtures import build_small_run, make_small_run


@pytest.fixture
def run_path(tmp_path):
    return make_small_run(tmp_path / "small.sqlite")


def retrieved():
    run = build_small_run()
    return [(r.query_id, p.passage_id) for r in run.rankings for p in r.passages]


def test_csv_labels_become_rows_with_their_annotators(run_path, tmp_path):
    items = retrieved()
    lines = ["query_id,passage_id,label,annotator"] + [f"{q},{p},{i % 2},{'ann' if i < 4 else 'bob'}"
                                                        for i, (q, p) in enumerate(items[:6])]
    (tmp_path / "labels.csv").write_text("\n".join(lines) + "\n")
    store = AnnotationStore(tmp_path / "annotations.sqlite")
    result = import_labels(run_path, tmp_path / "labels.csv", store)
    assert (result.labels, result.relevant, result.annotators) == (6, 3, {"ann": 4, "bob": 2})
    rows = store.labels("small", "passage")
    assert len(rows) == 6 and set(rows["status"]) == {"labelled"}
    assert list(rows["label"]) == [0, 1, 0, 1, 0, 1]
    assert set(rows["note"]) == {"imported from labels.csv"}
    assert len(latest_labels(rows, "passage", "bob")) == 2


def test_qrels_graded_labels_under_the_given_annotator(run_path, tmp_path):
    items = retrieved()
    qrels = "\n".join(f"{q} 0 {p} {grade}" for (q, p), grade in zip(items[:4], (0, 1, 2, 3)))
    (tmp_path / "judged.qrels").write_text(qrels + "\n")
    store = AnnotationStore(tmp_path / "annotations.sqlite")
    assert import_labels(run_path, tmp_path / "judged.qrels", store, "assessor", relevant_from=2).relevant == 2
    rows = store.labels("small")
    assert list(rows["label"]) == [0, 0, 1, 1] and set(rows["annotator"]) == {"assessor"}
    with pytest.raises(RagevalError, match="pass --annotator"):
        import_labels(run_path, tmp_path / "judged.qrels", store)


@pytest.mark.parametrize(("line", "field", "message"), [
    ("nq:0,{p},yes,ann", "label", "expected an integer label"),
    ("nq:0,,1,ann", "passage_id", "empty"),
    ("nq:999,{p},1,ann", "query_id", "not a query of the run"),
    ("nq:0,no-such-passage,1,ann", "passage_id", "not retrieved for query"),
    ("nq:0,{p},1,", "annotator", "no --annotator"),
])
def test_a_bad_line_names_file_line_and_field_and_writes_nothing(run_path, tmp_path, line, field, message):
    first = [p for q, p in retrieved() if q == "nq:0"]
    good = [f"nq:0,{p},1,ann" for p in first[:2]]
    (tmp_path / "bad.csv").write_text("\n".join(["query_id,passage_id,label,annotator", *good,
                                                 line.format(p=first[2])]) + "\n")
    store = AnnotationStore(tmp_path / "annotations.sqlite")
    with pytest.raises(DataError) as error:
        import_labels(run_path, tmp_path / "bad.csv", store)
    assert error.value.line == 4 and error.value.field == field and message in str(error.value)
    assert str(tmp_path / "bad.csv") in str(error.value)
    assert store.labels().empty  # the two good lines were not written either


def test_a_missing_column_and_no_annotator_are_errors(run_path, tmp_path):
    (tmp_path / "cols.csv").write_text("query_id,label\nnq:0,1\n")
    with pytest.raises(DataError, match="lacks passage_id"):
        import_labels(run_path, tmp_path / "cols.csv", AnnotationStore(tmp_path / "a.sqlite"))
    (tmp_path / "anon.csv").write_text("query_id,passage_id,label\nnq:0,x,1\n")
    with pytest.raises(DataError, match="no annotator column"):
        import_labels(run_path, tmp_path / "anon.csv", AnnotationStore(tmp_path / "a.sqlite"))


def test_the_command_imports_and_reports_errors_in_one_line(run_path, tmp_path, capsys):
    q, p = retrieved()[0]
    (tmp_path / "one.csv").write_text(f"query_id,passage_id,label\n{q},{p},1\n")
    store = tmp_path / "annotations.sqlite"
    assert main(["annotations", "import", str(run_path), str(tmp_path / "one.csv"), "--annotator", "cli",
                 "--annotations", str(store)]) == 0
    assert "imported 1 labels (1 relevant)" in capsys.readouterr().out
    (tmp_path / "two.csv").write_text(f"query_id,passage_id,label\n{q},{p},maybe\n")
    assert main(["annotations", "import", str(run_path), str(tmp_path / "two.csv"), "--annotator", "cli",
                 "--annotations", str(store)]) == 2
    err = capsys.readouterr().err
    assert "two.csv, line 2, field 'label'" in err and "Traceback" not in err
    assert len(AnnotationStore(store).labels()) == 1
