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
from tests.app_helpers import captions, frame_with, vega_charts
from tests.engine.test_annotations import make_small_attribution_run
from tests.run_fixtures import LABEL_METHODS, make_small_run
from tests.ui.test_app import start
from ui.format import METHOD_NAMES, escape_markdown
from ui.theme import METHOD_COLOURS

REPO = Path(__file__).resolve().parents[2]
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


def sample_items(runs: Path) -> list[tuple[str, str]]:
    """The (query, passage) items of the run's newest sample, in queue order, read from the file itself."""
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        return connection.execute(
            "SELECT query_id, passage_id FROM sample_items WHERE sample_id = (SELECT MAX(id) FROM samples) "
            "ORDER BY position").fetchall()


def draw(app, size: int, seed: int = 0):
    app.number_input(key="annotate.sample.size").set_value(size)
    app.number_input(key="annotate.sample.seed").set_value(seed)
    app.button[[b.label for b in app.button].index("Start: draw the sample")].click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def badge(app) -> str:
    """The item's coloured badge (``st.badge`` is Markdown: ``:green-badge[...]``), without its leading colon."""
    return next(m.value for m in app.markdown if "-badge[Your label" in m.value).lstrip(":")


def progress_text(app) -> str:
    """The progress bar's text, its Markdown escapes removed."""
    return app.get("progress")[0].proto.text.replace("\\", "")


def decide(app, label: str):
    """Click the queue's button for ``label`` (1, 0, unsure, skipped, previous, next)."""
    app.button(key=f"annotate.queue.{label}").click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_sample_queue_labels_with_progress_against_the_sample_and_kappa(runs):
    app = start(ANNOTATE)
    assert app.title[0].value == "Annotate"
    assert "Enter your name" in app.info[0].value and not [b for b in app.button if b.key]  # nothing to click yet
    assert not (runs / ANNOTATIONS_FILE).exists()

    app.text_input(key=NAME_WIDGET).input("Ada Lovelace").run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["annotator"] == "Ada Lovelace"
    assert "Start by drawing the sample" in app.info[0].value
    assert app.number_input(key="annotate.sample.size").value == 30  # default 50, capped at the run's 6 x 5
    draw(app, 8, seed=3)
    items = sample_items(runs)
    assert len(items) == 8 and len(set(items)) == 8
    assert "0 of 8 sampled passages done by Ada Lovelace" in progress_text(app)  # the sample, not the 30 passages
    assert app.query_params["item"] == "1"
    with RunReader(runs / "fixture.sqlite") as reader:
        first_question = reader.query(items[0][0]).text
    assert app.subheader[0].value == escape_markdown(first_question)
    assert badge(app) == "blue-badge[Your label: not labelled yet]"
    assert all("<script>" not in m.value and "<b>" not in m.value for m in app.markdown)

    # A note typed before the label is saved with it; the next pending item opens (auto-advance).
    app.text_input(key="annotate.note.1.0").input("says 1901 outright").run()
    decide(app, "1")
    assert saved_rows(runs) == [("fixture", "passage", *items[0], 1, "Ada Lovelace")]
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        assert connection.execute("SELECT status, note FROM labels").fetchall() == [("labelled", "says 1901 outright")]
    assert app.query_params["item"] == "2" and "1 of 8 sampled passages done" in progress_text(app)
    decide(app, "0")
    decide(app, "previous")
    assert badge(app) == "red-badge[Your label: not useful]"  # the chosen label by colour
    decide(app, "next")
    decide(app, "unsure")
    decide(app, "skipped")
    assert "4 of 8 sampled passages done by Ada Lovelace (2 labelled, 1 unsure, 1 skipped)" in progress_text(app)
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        stored = connection.execute("SELECT query_id, passage_id, label, status FROM labels ORDER BY id").fetchall()
    assert stored == [(*items[0], 1, "labelled"), (*items[1], 0, "labelled"), (*items[2], None, "unsure"),
                      (*items[3], None, "skipped")]
    assert app.radio(key="annotate.view.widget").value == "pending"

    # Kappa: over the two 0/1 labels only (unsure and skipped left out, as the caption says), as sklearn computes.
    table = frame_with(app, "Cohen's kappa").set_index("Labels")
    with RunReader(runs / "fixture.sqlite") as reader:
        labels = reader.labels().set_index(["method", "query_id", "passage_id"])["value"]
    for method in LABEL_METHODS:
        theirs = [int(labels.get((method, *item), 0)) for item in items[:2]]
        assert table.at[METHOD_NAMES[method], "n"] == 2
        if len(set(theirs)) > 1:
            assert table.at[METHOD_NAMES[method], "Cohen's kappa"] == pytest.approx(cohen_kappa_score([1, 0], theirs))
    assert "2 marked unsure or skipped are left out" in captions(app)
    # The kappa chart (Vega-Lite): one bar per method whose kappa is defined, the table's numbers, method colours.
    defined = table[table["Cohen's kappa"].notna()]
    spec, bars = next((s, d) for s, d in vega_charts(app) if s.get("title", "").startswith("Cohen's kappa"))
    assert list(bars["method"]) == list(defined.index) and spec["encoding"]["x"]["sort"] == list(defined.index)
    assert list(bars["kappa"]) == pytest.approx(list(defined["Cohen's kappa"])) and set(bars["n"]) == {2}
    colours = dict(zip(spec["encoding"]["color"]["scale"]["domain"], spec["encoding"]["color"]["scale"]["range"]))
    assert all(colours[METHOD_NAMES[m]] == METHOD_COLOURS[m] for m in LABEL_METHODS if METHOD_NAMES[m] in colours)
    assert spec["title"] == "Cohen's kappa between Ada Lovelace's labels and each automatic method"
    downloads = {button.proto.label for button in app.get("download_button")}
    assert downloads == {"Download CSV (every label)", "Download TREC qrels"}


def test_done_view_previous_next_and_the_reveal_after_a_query_is_finished(runs):
    app = draw(start(ANNOTATE, annotator="Ada"), 30, seed=0)  # every passage: each query's 5 are consecutive
    items = sample_items(runs)
    first_query = items[0][0]
    assert [q for q, _ in items[:5]] == [first_query] * 5
    assert not any(df.value.columns.str.contains("Revealed").any() for df in app.dataframe)
    decide(app, "next")  # j: move without labelling
    assert app.query_params["item"] == "2"
    decide(app, "previous")
    assert app.query_params["item"] == "1"
    for label in ("1", "0", "0", "1"):
        decide(app, label)
    assert "Revealed" not in " ".join(m.value for m in app.markdown)  # one of the query's five still pending
    decide(app, "0")
    # The query's five sampled passages are done: each method's label is shown beside hers.
    assert any("Revealed: the automatic labels on" in m.value for m in app.markdown)
    reveal = frame_with(app, "Your note")
    assert list(reveal["You"]) == ["useful", "not useful", "not useful", "useful", "not useful"]
    with RunReader(runs / "fixture.sqlite") as reader:
        labels = reader.labels().set_index(["method", "query_id", "passage_id"])["value"]
    for method in LABEL_METHODS:
        expected = ["✓" if labels.get((method, *item), 0) >= 0.5 else "✗" for item in items[:5]]
        assert list(reveal[METHOD_NAMES[method]]) == expected, method

    # One-click relabel from the reveal; the Done view lists the five and can revise them.
    app.button(key="annotate.reveal.1.yes").click().run()
    assert saved_rows(runs)[-1] == ("fixture", "passage", *items[1], 1, "Ada")
    assert list(frame_with(app, "Your note")["You"])[1] == "useful"
    app.radio(key="annotate.view.widget").set_value("done").run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["view"] == "done" and "Done item 1 of 5" in captions(app)
    decide(app, "0")  # relabel in Done: the next done item opens
    assert saved_rows(runs)[-1] == ("fixture", "passage", *items[0], 0, "Ada")
    assert app.query_params["item"] == "2"


def test_the_sample_is_shared_by_annotators_with_fleiss_and_krippendorff(runs):
    app = draw(start(ANNOTATE, annotator="Ada"), 6, seed=1)
    for label in ("1", "0", "1", "0", "1", "1"):
        decide(app, label)
    assert "6 of 6 sampled passages done" in progress_text(app)
    bob = start(ANNOTATE, annotator="Bob")  # another annotator: the same sample, his own progress
    assert "0 of 6 sampled passages done by Bob" in progress_text(bob)
    for label in ("1", "0", "0", "0", "1", "1"):
        decide(bob, label)
    between = frame_with(bob, "Annotator A")
    assert between.at[0, "n"] == 6
    assert between.at[0, "Cohen's kappa"] == pytest.approx(cohen_kappa_score([1, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 1]))
    # Two annotators: Fleiss' kappa is Scott's pi, (p_o - p_e) / (1 - p_e) with p_e from the pooled shares:
    # p_o = 5/6, 7 of 12 labels are 1, p_e = (7/12)^2 + (5/12)^2 = 74/144, pi = 46/70 = 0.657.
    assert {m.label: m.value for m in bob.metric}["Fleiss' kappa (2 annotators)"] == "0.657"
    cy = start(ANNOTATE, annotator="Cy")
    for label in ("1", "1", "1", "0", "1", "0"):
        decide(cy, label)
    metrics = {m.label: m.value for m in cy.metric}
    # By hand (Fleiss 1971): counts per item (0s, 1s) = (0,3) (2,1) (1,2) (3,0) (0,3) (1,2); P_i = 1, 1/3, 1/3, 1,
    # 1, 1/3, so P_bar = 2/3; p_1 = 11/18, P_e = (11/18)^2 + (7/18)^2 = 170/324; kappa = 46/154 = 0.299.
    assert metrics["Fleiss' kappa (3 annotators)"] == "0.299"
    assert "Krippendorff's alpha (nominal)" in metrics
    assert "over the 6 items all 3 annotators labelled" in captions(cy).replace("\\", "")


def test_statements_an_annotator_who_labels_like_autoais_gets_kappa_1_and_uncited_ones_are_not_judged(runs):
    """Issue 15: uncited statements were stored as "not supported" by the NLI methods while the page said they are
    not judged. Now they have no buttons and no kappa counts them."""
    make_small_attribution_run(runs / "attribution" / "hagrid-test.sqlite", uncited_last=True)
    # hagrid:3129's first answer: statements 1-4 cite [1] [2] [2] [3, 5] (AutoAIS: 1 0 0 0), statement 5 cites
    # nothing here (tests/test_annotations.make_small_attribution_run).
    app = start(ANNOTATE, annotator="Ada", mode="statements", query="hagrid:3129", answer="0")
    assert app.query_params["run"] == "hagrid-test" and app.query_params["scenario"] == "gold-answer"
    assert app.selectbox(key="annotate.scenario.widget").format_func("gold-answer") == "gold-answer (16 cited)"
    keys = {b.key for b in app.button if b.key}
    assert {f"annotate.statement.{i}.yes" for i in range(4)} <= keys and "annotate.statement.4.yes" not in keys
    assert "Not judged: it cites no passage" in captions(app)
    assert "0 of 16 statements with a citation" in app.get("progress")[0].proto.text
    for statement, label in ((0, "yes"), (1, "no"), (2, "no"), (3, "no")):  # exactly what AutoAIS says
        app.button(key=f"annotate.statement.{statement}.{label}").click().run()
    app.button(key="annotate.statement.3.unsure").click().run()  # changes her mind on the last: unsure
    assert not app.exception, [e.value for e in app.exception]
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        rows = connection.execute("SELECT run, kind, scenario, query_id, answer_id, statement, label, status "
                                  "FROM labels").fetchall()
    assert rows[0] == ("hagrid-test", "statement", "gold-answer", "hagrid:3129", "0", 0, 1, "labelled")
    assert rows[-1][-2:] == (None, "unsure")
    table = frame_with(app, "Cohen's kappa").set_index("Labels")
    assert list(table.index) == ["NLI: a citation supports it (AutoAIS)", "NLI: citations jointly support it (ALCE)",
                                 "HAGRID's annotators"]
    assert table.at["NLI: a citation supports it (AutoAIS)", "n"] == 3  # the unsure one is left out
    assert table.at["NLI: a citation supports it (AutoAIS)", "Cohen's kappa"] == 1.0
    assert "1 marked unsure or skipped are left out" in captions(app)
    assert {b.proto.label for b in app.get("download_button")} == {"Download CSV (every label)"}  # qrels: passages


def test_a_foreign_file_in_place_of_the_annotation_file_is_an_error(runs):
    shutil.copy(runs / "fixture.sqlite", runs / ANNOTATIONS_FILE)
    app = start(ANNOTATE, annotator="Ada")
    assert "annotations.sqlite: not a rageval annotation file" in app.error[0].value.replace("\\", "")  # escaped
    assert not [b for b in app.button if b.key]


def test_a_sample_or_label_that_cannot_be_saved_says_so(runs, monkeypatch):
    blocker = runs / "not-a-folder"
    blocker.write_text("a file where the annotation file's folder should be")
    monkeypatch.setenv("RAGEVAL_ANNOTATIONS", str(blocker / ANNOTATIONS_FILE))
    app = start(ANNOTATE, annotator="Ada")
    assert not app.error
    draw(app, 5)
    assert f"{blocker / ANNOTATIONS_FILE}: the sample was not saved" in app.error[0].value
    assert "Start by drawing the sample" in app.info[0].value

    make_small_attribution_run(runs / "attribution" / "hagrid-test.sqlite")
    app = start(ANNOTATE, annotator="Ada", mode="statements")
    app.button(key="annotate.statement.0.yes").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert f"{blocker / ANNOTATIONS_FILE}: the label was not saved" in app.error[0].value
    assert "Your label: none yet" in captions(app) and not (runs / ANNOTATIONS_FILE).exists()


def test_annotate_says_the_provenance_once_under_the_heading(runs):
    """Issue 42: the provenance line followed 6 captions of Annotate; now it is said once, under the heading."""
    app = start(ANNOTATE, annotator="Ada")
    draw(app, 4)
    lines = [c.value for c in app.caption if c.value.startswith(escape_markdown("Run "))]
    assert len(lines) == 1
    marker = lines[0].split(" · ", 1)[1][:30]
    assert [c.value for c in app.caption].count(lines[0]) == 1
    assert sum(marker in c.value for c in app.caption) == 1
    make_small_attribution_run(runs / "attribution" / "hagrid-test.sqlite", uncited_last=True)
    app = start(ANNOTATE, annotator="Ada", mode="statements", query="hagrid:3129", answer="0")
    line = next(c.value for c in app.caption if c.value.startswith(escape_markdown("Run hagrid-test")))
    assert sum(line.split(" · ", 1)[1][:30] in c.value for c in app.caption) == 1
