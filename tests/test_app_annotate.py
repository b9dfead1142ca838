"""AppTest tests of the annotation page (app_pages/9_Annotate.py) on the fixture run (tests/run_fixtures.py) and a small
attributed-answer run (tests/test_annotations.make_small_attribution_run), each test in its own runs folder so the
annotation file starts empty. What the page saved is read back from the SQLite file itself; kappa is recomputed with
scikit-learn from the run's own labels."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from rageval.annotations import ANNOTATIONS_FILE
from rageval.store import RunReader
from tests.app_helpers import captions, frame_with
from tests.run_fixtures import INJECTION, LABEL_METHODS, N_QUERIES, K, make_small_run
from tests.test_annotations import make_small_attribution_run
from tests.test_app import start
from ui.render import METHOD_NAMES, escape_markdown

REPO = Path(__file__).resolve().parent.parent
ANNOTATE = str(REPO / "app_pages" / "9_Annotate.py")
NAME_WIDGET = "annotate.annotator.widget"


@pytest.fixture(scope="module")
def built_run(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("annotate-build") / "fixture.sqlite")


@pytest.fixture
def runs(built_run, tmp_path, monkeypatch) -> Path:
    """A fresh runs folder holding a copy of the fixture run (and no annotation file yet)."""
    shutil.copy(built_run, tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return tmp_path


def saved_rows(runs: Path) -> list[tuple]:
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        return connection.execute("SELECT run, kind, query_id, passage_id, label, annotator FROM labels ORDER BY id"
                                  ).fetchall()


def ranking(runs: Path, query_id: str) -> list[str]:
    with RunReader(runs / "fixture.sqlite") as reader:
        return list(reader.rankings()[query_id].passage_ids)


def test_label_two_passages_saved_in_sqlite_with_kappa(runs):
    app = start(ANNOTATE)
    assert app.title[0].value == "Annotate"
    assert "Enter your name" in app.info[0].value and not [b for b in app.button if b.key]  # nothing to click yet
    assert not (runs / ANNOTATIONS_FILE).exists()

    app.text_input(key=NAME_WIDGET).input("Ada Lovelace").run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["annotator"] == "Ada Lovelace" and app.query_params["query"] == "nq:0"
    assert "0 of 30 retrieved passages" in app.get("progress")[0].proto.text  # 6 queries x K=5 passages
    # The injection passage of the fixture (nq:0, rank 3) is shown as text, never as Markdown or HTML.
    assert INJECTION in [t.value for t in app.text][2]
    assert all("<script>" not in m.value and "<b>" not in m.value for m in app.markdown)

    app.button(key="annotate.passage.1.yes").click().run()
    app.button(key="annotate.passage.2.no").click().run()
    assert not app.exception, [e.value for e in app.exception]
    first, second = ranking(runs, "nq:0")[:2]
    assert saved_rows(runs) == [("fixture", "passage", "nq:0", first, 1, "Ada Lovelace"),
                                ("fixture", "passage", "nq:0", second, 0, "Ada Lovelace")]
    assert "2 of 30 retrieved passages" in app.get("progress")[0].proto.text
    assert escape_markdown("Your label: useful") in captions(app)
    assert escape_markdown("Your label: not useful") in captions(app)

    table = frame_with(app, "Cohen's kappa").set_index("Labels")
    with RunReader(runs / "fixture.sqlite") as reader:
        labels = reader.labels().set_index(["method", "query_id", "passage_id"])["value"]
    assert sorted(table.index) == sorted(METHOD_NAMES[m] for m in LABEL_METHODS)
    for method in LABEL_METHODS:
        theirs = [int(labels[method, "nq:0", first]), int(labels[method, "nq:0", second])]
        assert table.at[METHOD_NAMES[method], "n"] == 2
        assert table.at[METHOD_NAMES[method], "Cohen's kappa"] == pytest.approx(cohen_kappa_score([1, 0], theirs))
    assert len(app.get("plotly_chart")) == 1
    downloads = {button.proto.label for button in app.get("download_button")}
    assert downloads == {"Download CSV (every label)", "Download TREC qrels"}


def test_relabel_keeps_history_latest_wins_and_disagreements_link_to_the_inspector(runs):
    app = start(ANNOTATE, annotator="Ada", query="nq:0")
    assert app.text_input(key=NAME_WIDGET).value == "Ada"
    app.button(key="annotate.passage.1.yes").click().run()
    app.button(key="annotate.passage.1.no").click().run()  # changes her mind: the latest label counts
    rows = saved_rows(runs)
    assert [row[4] for row in rows] == [1, 0] and len({row[3] for row in rows}) == 1
    assert escape_markdown("Your label: not useful") in captions(app) and "changed once" in captions(app)

    # nq:0's rank 1 is its own gold passage and contains the answer (tests/run_fixtures.py): every method says 1,
    # so every method disagrees with her 0, and each row links to the query inspector on nq:0.
    found = frame_with(app, "Open")
    assert sorted(found["Labels"]) == sorted(METHOD_NAMES[m] for m in LABEL_METHODS)
    assert set(found["Open"]) == {"Query_inspector?run=fixture&query=nq%3A0"}
    assert set(found["You"]) == {"✗ not useful"}
    table = frame_with(app, "Cohen's kappa")
    assert (table["Cohen's kappa"] == 0).all() and (table["n"] == 1).all()  # sklearn: cohen_kappa_score([0], [1]) == 0

    # Back to useful: she and every method now give their one item the same label, so kappa is undefined (0/0),
    # the table says why instead of failing, and nothing disagrees.
    app.button(key="annotate.passage.1.yes").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert [row[4] for row in saved_rows(runs)] == [1, 0, 1] and "changed 2 times" in captions(app)
    table = frame_with(app, "Cohen's kappa")
    assert table["Cohen's kappa"].isna().all() and table["Why undefined"].str.contains("the label 1").all()
    assert not any("Open" in df.value.columns for df in app.dataframe)
    assert escape_markdown("None: on every item Ada labelled, each method agrees.") in captions(app)


def test_next_query_and_shared_link(runs):
    with RunReader(runs / "fixture.sqlite") as reader:
        question = reader.query("nq:1").text
    app = start(ANNOTATE, annotator="Ada", query="nq:1")
    assert app.subheader[0].value == escape_markdown(question)
    app.button[[b.label for b in app.button].index("Next ▶")].click().run()
    assert app.query_params["query"] == "nq:2"
    app.button(key="annotate.passage.5.yes").click().run()
    assert saved_rows(runs) == [("fixture", "passage", "nq:2", ranking(runs, "nq:2")[K - 1], 1, "Ada")]
    assert f"1 of {N_QUERIES * K} retrieved passages" in app.get("progress")[0].proto.text


def test_statements_of_an_attribution_run(runs):
    make_small_attribution_run(runs / "attribution" / "hagrid-test.sqlite")
    app = start(ANNOTATE, annotator="Ada", mode="statements")
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["run"] == "hagrid-test" and app.query_params["scenario"] == "gold-answer"
    app.button(key="annotate.statement.0.yes").click().run()
    app.button(key="annotate.statement.1.no").click().run()
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        rows = connection.execute("SELECT run, kind, scenario, query_id, answer_id, statement, label FROM labels"
                                  ).fetchall()
    query_id, answer_id = app.query_params["query"], app.query_params["answer"]
    assert rows == [("hagrid-test", "statement", "gold-answer", query_id, answer_id, 0, 1),
                    ("hagrid-test", "statement", "gold-answer", query_id, answer_id, 1, 0)]
    table = frame_with(app, "Cohen's kappa").set_index("Labels")
    assert list(table.index) == ["NLI: a citation supports it (AutoAIS)", "NLI: citations jointly support it (ALCE)",
                                 "HAGRID's annotators"]
    assert (table["n"] == 2).all()
    assert {b.proto.label for b in app.get("download_button")} == {"Download CSV (every label)"}  # qrels: passages


def test_a_foreign_file_in_place_of_the_annotation_file_is_an_error(runs):
    shutil.copy(runs / "fixture.sqlite", runs / ANNOTATIONS_FILE)
    app = start(ANNOTATE, annotator="Ada")
    assert "annotations.sqlite: not a rageval annotation file" in app.error[0].value.replace("\\", "")  # escaped
    assert not [b for b in app.button if b.key]


def test_a_label_that_cannot_be_saved_says_so(runs, monkeypatch):
    blocker = runs / "not-a-folder"
    blocker.write_text("a file where the annotation file's folder should be")
    monkeypatch.setenv("RAGEVAL_ANNOTATIONS", str(blocker / ANNOTATIONS_FILE))
    app = start(ANNOTATE, annotator="Ada")
    assert not app.error
    app.button(key="annotate.passage.1.yes").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert f"{blocker / ANNOTATIONS_FILE}: the label was not saved" in app.error[0].value
    assert "Your label: none yet" in captions(app) and not (runs / ANNOTATIONS_FILE).exists()
