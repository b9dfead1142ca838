"""AppTest tests of the Queues page (app_pages/12_Queues.py) and the Annotate page's "My queue" on the fixture run
(tests/run_fixtures.py), each test in its own runs folder. What the pages saved is read back from the SQLite file
itself; the agreement shown is recomputed with scikit-learn from those rows."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from rageval.annotations import ANNOTATIONS_FILE
from tests.app_helpers import frame_with
from tests.run_fixtures import make_small_run
from tests.ui.test_app import start

REPO = Path(__file__).resolve().parents[2]
QUEUES = str(REPO / "app_pages" / "12_Queues.py")
ANNOTATE = str(REPO / "app_pages" / "9_Annotate.py")
TEAM = ("Ada", "Bob", "Cy")


@pytest.fixture(scope="module")
def built_run(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("queues-build") / "fixture.sqlite")


@pytest.fixture
def runs(built_run, tmp_path, monkeypatch) -> Path:
    shutil.copy(built_run, tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return tmp_path


def rows(runs: Path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(runs / ANNOTATIONS_FILE) as connection:
        found = connection.execute(sql, params).fetchall()
    connection.close()
    return found


def create(app, name: str = "check", size: int = 6, overlap: int = 2, plan: str = "uniform"):
    app.text_input(key="queues.create.name").input(name)
    app.selectbox(key="queues.create.plan").set_value(plan)
    app.number_input(key="queues.create.size").set_value(size)
    app.number_input(key="queues.create.overlap").set_value(overlap)
    app.number_input(key="queues.create.seed").set_value(4)
    app.text_area(key="queues.create.annotators").input("\n".join(TEAM))
    app.button[[b.label for b in app.button].index("Create the queue")].click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def label_my_queue(annotator: str, decide, guideline: str = "Useful means") -> list[int]:
    """Open Annotate as ``annotator`` (My queue is the default mode), label every assigned item with
    ``decide(position)``, and return the positions in the order they opened."""
    app = start(ANNOTATE, annotator=annotator)
    assert app.sidebar.selectbox[0].value == "queue"  # "My queue" opens by default for an annotator with a queue
    assert guideline in " ".join(t.value for t in app.text)  # the queue's guidelines
    opened = []
    while True:
        captions = [c.value for c in app.caption if "queue item" in c.value]
        if not captions:
            break
        position = int(captions[0].split("queue item ")[1].split(" ")[0].replace(",", "")) - 1
        opened.append(position)
        app.button(key=f"annotate.queue.{decide(position)}").click().run()
        assert not app.exception, [e.value for e in app.exception]
        assert len(opened) < 20
    assert any("is done" in s.value for s in app.success)
    return opened


def test_create_a_queue_label_it_in_my_queue_and_adjudicate(runs):
    app = start(QUEUES, annotator="Admin")
    assert app.title[0].value == "Queues"
    create(app)
    assert any("Queue 1 'check' created" in s.value.replace("\\", "") for s in app.success)
    [(queue_id, name, run, plan, size, overlap, created_by)] = rows(
        runs, "SELECT id, name, run, plan, size, overlap, created_by FROM queues")
    assert (name, run, plan, size, overlap, created_by) == ("check", "fixture", "uniform", 6, 2, "Admin")
    assigned = rows(runs, "SELECT position, annotator FROM queue_assignments ORDER BY position, annotator")
    assert len(assigned) == 12 and {a for _, a in assigned} == set(TEAM)
    progress = frame_with(app, "Assigned").set_index("Annotator")
    assert list(progress["Assigned"]) == [4, 4, 4] and list(progress["Done"]) == [0, 0, 0]
    listed = frame_with(app, "Labels assigned")
    assert listed.iloc[0][["Queue", "Name", "Items", "Labels done", "Labels assigned"]].tolist() == [
        queue_id, "check", 6, 0, 12]

    # Each annotator labels their items in "My queue": Ada says 1 everywhere, Bob 0 on even positions, Cy 0.
    votes = {"Ada": lambda p: 1, "Bob": lambda p: 0 if p % 2 == 0 else 1, "Cy": lambda p: 0}
    for annotator, decide in votes.items():
        opened = label_my_queue(annotator, decide)
        assert sorted(opened) == sorted(p for p, a in assigned if a == annotator)
    stored = rows(runs, "SELECT ql.position, l.annotator, l.label, l.run, l.kind FROM queue_labels ql JOIN labels l "
                        "ON l.id = ql.label_id ORDER BY ql.position, l.annotator")
    assert [(p, a, v) for p, a, v, _, _ in stored] == [(p, a, votes[a](p)) for p, a in assigned]
    assert {(r, k) for *_, r, k in stored} == {("fixture", "passage")}  # ordinary label rows of the run

    app = start(QUEUES, annotator="Admin")
    progress = frame_with(app, "Assigned").set_index("Annotator")
    assert list(progress["Done"]) == [4, 4, 4]
    assert frame_with(app, "Labels assigned").iloc[0][["Labels done", "Items complete"]].tolist() == [12, 6]
    pairs = frame_with(app, "Annotator A").set_index(["Annotator A", "Annotator B"])
    by_item: dict[int, dict[str, int]] = {}
    for position, annotator, label, _, _ in stored:
        by_item.setdefault(position, {})[annotator] = label
    for first, second in (("Ada", "Bob"), ("Ada", "Cy"), ("Bob", "Cy")):
        shared = [p for p in by_item if first in by_item[p] and second in by_item[p]]
        assert pairs.at[(first, second), "n"] == len(shared)
        a, b = [by_item[p][first] for p in shared], [by_item[p][second] for p in shared]
        if len(set(a) | set(b)) > 1:  # kappa is defined
            assert float(pairs.at[(first, second), "Cohen's kappa"]) == pytest.approx(cohen_kappa_score(a, b))

    # Adjudication: every disagreeing item is listed with each annotator's label; one adjudicated as useful.
    differing = sorted(p for p, v in by_item.items() if len(set(v.values())) > 1)
    buttons = sorted({int(b.key.split(".")[2]) for b in app.button if b.key and b.key.startswith("queues.adjudicate.")})
    assert buttons == differing and differing
    position = differing[0]
    before = rows(runs, "SELECT * FROM labels ORDER BY id")
    app.text_input(key=f"queues.adjudication_note.{queue_id}.{position}").input("names the answer")
    app.button(key=f"queues.adjudicate.{position}.1").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert rows(runs, "SELECT queue_id, position, label, adjudicator, note FROM adjudications") == [
        (queue_id, position, 1, "Admin", "names the answer")]
    assert rows(runs, "SELECT * FROM labels ORDER BY id") == before  # no one's label changed
    assert any("Adjudicated: useful by Admin" in m.value for m in app.markdown)

    # The export keeps the plan, the strata, the annotators and the adjudicated label.
    [download] = [d for d in app.get("download_button") if d.proto.label.startswith("Download the queue")]
    assert download.proto.label == "Download the queue's labels (CSV)"


def test_an_annotator_without_a_queue_has_no_my_queue_mode(runs):
    app = create(start(QUEUES, annotator="Admin"))
    assert app.selectbox(key="queues.create.plan").value == "uniform"
    other = start(ANNOTATE, annotator="Dora")  # not one of the queue's annotators
    assert list(other.sidebar.selectbox[0].options) == ["Passages: useful or not",
                                                        "Statements: supported or not"]


def test_a_stratified_queue_shows_its_strata_with_their_weights(runs):
    app = start(QUEUES, annotator="Admin")
    app.selectbox(key="queues.create.stratify_by").set_value("gold")
    create(app, size=10, overlap=1, plan="stratified")
    strata = frame_with(app, "Inclusion weight").set_index("Stratum")
    found = dict(rows(runs, "SELECT stratum, population FROM queue_strata"))
    assert dict(strata["Items in the run"]) == found and sum(found.values()) == 30
    sampled = dict(rows(runs, "SELECT stratum, sampled FROM queue_strata"))
    for name, row in strata.iterrows():
        assert row["Inclusion weight"] == pytest.approx(found[name] / sampled[name])
    assert "no overlap" in " ".join(i.value for i in app.info)


def test_a_queue_over_statements_is_labelled_in_my_queue(runs):
    from tests.engine.test_annotations import make_small_attribution_run

    make_small_attribution_run(runs / "attribution" / "hagrid-test.sqlite")
    app = start(QUEUES, annotator="Admin", kind="statement", run="hagrid-test")
    create(app, name="statements", size=3, overlap=1)  # Ada, Bob and Cy get one statement each
    [(kind, run, size)] = rows(runs, "SELECT kind, run, size FROM queues")
    assert (kind, run, size) == ("statement", "hagrid-test", 3)
    [(position,)] = rows(runs, "SELECT position FROM queue_assignments WHERE annotator = 'Ada'")
    assert label_my_queue("Ada", lambda p: "unsure", guideline="Supported means") == [position]
    [item] = rows(runs, "SELECT scenario, query_id, answer_id, statement FROM queue_items WHERE position = ?",
                  position)
    saved = rows(runs, "SELECT l.kind, l.scenario, l.query_id, l.answer_id, l.statement, l.status, l.annotator "
                       "FROM labels l JOIN queue_labels ql ON ql.label_id = l.id")
    assert saved == [("statement", *item, "unsure", "Ada")]
