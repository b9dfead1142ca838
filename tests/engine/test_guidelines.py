"""The annotation guideline fits the data (issue 41, item 6): a run has its own guideline (a default per task type:
multi-hop runs are asked whether a passage states a needed fact, not whether it alone answers), editable, and each
label is stored with the guideline it was given under (annotation file v4)."""

from __future__ import annotations

import sqlite3

from rageval.annotations import ANNOTATIONS_FILE, MULTI_HOP, SINGLE_HOP, AnnotationStore, default_guideline, task_type
from rageval.queue_plans import UNIFORM_PLAN, QueuePlan
from rageval.queues import QueueStore
from rageval.store import RunReader
from rageval.store.annotations import PassageItem
from rageval.store.schemas import ANNOTATIONS
from rageval.trust.imports import import_labels
from tests.run_fixtures import make_small_run


def test_the_default_guideline_follows_the_task_type():
    assert task_type({"dataset": "hotpotqa"}) == MULTI_HOP and task_type({"dataset": "nq_open"}) == SINGLE_HOP
    assert "alone" in default_guideline("passage", SINGLE_HOP)
    assert "comparison" in default_guideline("passage", MULTI_HOP) and "even when another passage is needed" in \
        default_guideline("passage", MULTI_HOP)


def test_each_label_keeps_the_guideline_it_was_given_under(tmp_path):
    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    assert store.guideline("run", "passage", MULTI_HOP) == default_guideline("passage", MULTI_HOP)
    store.save_label("run", PassageItem("q1", "a"), 1, "ada", guideline="shown default")
    store.set_guideline("run", "passage", "Useful: names the bridge entity.", "lead")
    store.save_label("run", PassageItem("q1", "b"), 0, "ada", guideline="shown default")
    store.save_passage_labels("run", [("q1", "c", 1, "bo")], guideline="shown default")
    labels = store.labels("run").set_index("passage_id")["guideline"]
    assert labels["a"] == "shown default"  # none was set: the default the page showed
    assert labels["b"] == labels["c"] == "Useful: names the bridge entity."  # the run's, once set
    assert store.guideline("run", "passage") == "Useful: names the bridge entity." and store.version() == 4
    assert ANNOTATIONS.version == 4


def test_queue_labels_keep_the_queue_guideline_and_imports_the_run_default(tmp_path):
    path = make_small_run(tmp_path / "small.sqlite")
    with RunReader(path) as reader:
        labels = reader.labels()
    population = labels.loc[labels["method"] == "gold", ["query_id", "passage_id"]].drop_duplicates()
    queues = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = queues.create_queue("q", "small", "passage", population.reset_index(drop=True), labels,
                                   QueuePlan(UNIFORM_PLAN, 3), 1, ["ada"], "Queue rule: useful if it names it.", "lead")
    queues.save_label(queue_id, 0, "ada", 1)
    queues.save_labels(queue_id, [(1, "ada", 0, "")])
    item = queues.items(queue_id).iloc[2]
    csv_path = tmp_path / "labels.csv"
    csv_path.write_text(f"query_id,passage_id,label\n{item['query_id']},{item['passage_id']},1\n")
    import_labels(path, csv_path, AnnotationStore(queues.path), "bo")
    with sqlite3.connect(queues.path) as connection:
        rows = connection.execute("SELECT annotator, guideline FROM labels ORDER BY id").fetchall()
    connection.close()
    assert rows == [("ada", "Queue rule: useful if it names it."), ("ada", "Queue rule: useful if it names it."),
                    ("bo", default_guideline("passage", SINGLE_HOP))]  # the fixture run is NQ: single-hop
