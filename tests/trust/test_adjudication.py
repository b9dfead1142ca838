"""The people's label of a queue item reaches ``rageval trust``: an adjudicated label is the item's label;
otherwise the majority of the queue's own annotators; a tie is unresolved (listed, never counted as 0), and labels
given outside the queue (an imported third annotator) do not vote (issue 41, item 1)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore
from rageval.cli import main
from rageval.queue_plans import UNIFORM_PLAN, QueuePlan
from rageval.queues import ADJUDICATED, MAJORITY, TIE, QueueStore, resolve_item_labels
from rageval.store import RunReader
from rageval.trust.inputs import LABEL_RULE
from rageval.trust.report import trust_report
from tests.run_fixtures import make_small_run

RUN = "small"
SIZE = 8


@pytest.fixture
def two_people(tmp_path):
    """A uniform queue of 8 passages, each labelled by both of its annotators (a, b): they agree on every item but
    the first, where a says 0 and b says 1."""
    path = make_small_run(tmp_path / f"{RUN}.sqlite")
    with RunReader(path) as reader:
        labels = reader.labels()
    population = labels.loc[labels["method"] == "gold", ["query_id", "passage_id"]].drop_duplicates()
    queues = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = queues.create_queue("two people", RUN, "passage", population.reset_index(drop=True), labels,
                                   QueuePlan(UNIFORM_PLAN, SIZE, seed=1), 2, ["a", "b"], "", "admin")
    items = queues.items(queue_id)
    agreed = {}
    for position, q, p in zip(items["position"], items["query_id"], items["passage_id"]):
        value = int(position) % 2  # 0, 1, 0, 1, ...: position 0 is the disputed one
        for person in ("a", "b"):
            queues.save_label(queue_id, int(position), person, (1 if person == "b" else 0) if position == 0 else value)
        agreed[(q, p)] = value
    first = (items["query_id"][0], items["passage_id"][0])
    return path, queues, queue_id, first, agreed


def test_a_tie_is_unresolved_and_an_adjudication_decides_it(two_people, capsys):
    path, queues, queue_id, first, agreed = two_people
    store = AnnotationStore(queues.path)
    # A third person's imported label of the disputed passage (outside the queue) must not break the tie.
    store.save_passage_labels(RUN, [(first[0], first[1], 0, "c")])

    before = trust_report(path, store, compare_runs=False)
    counted = [v for key, v in agreed.items() if key != first]
    human_only = before.methods["gold"].estimates["human_only"]["label_share"]
    assert before.n_human == SIZE - 1 and human_only.estimate == pytest.approx(np.mean(counted))
    assert [(u["query_id"], u["passage_id"], u["ones"], u["zeros"]) for u in before.unresolved] == [
        (first[0], first[1], 1, 1)]
    assert before.adjudicated == 0

    queues.adjudicate(queue_id, 0, 1, "lead", note="useful: names the film")
    assert main(["trust", str(path), "--annotations", str(store.path), "--json", "--plan", "0"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["human"]["labels_used"] == SIZE and after["human"]["unresolved"] == []
    assert after["human"]["adjudicated"] == 1 and after["human"]["label_rule"] == LABEL_RULE
    expected = np.mean([1, *counted])
    assert after["methods"]["gold"]["human_only"]["label_share"]["estimate"] == pytest.approx(expected)


def test_the_text_report_says_the_rule_and_lists_the_tie(two_people, capsys):
    path, queues, _, first, _ = two_people
    assert main(["trust", str(path), "--annotations", str(queues.path), "--plan", "0"]) == 0
    out = capsys.readouterr().out
    assert "label rule: in an annotation queue: an adjudicated label is the item's label" in out
    assert f"{first[0]}\t{first[1]}\t1 said 1, 1 said 0 (queue 1, item 0)" in out


def test_resolve_item_labels_reads_only_the_assigned_annotators(two_people):
    _, queues, queue_id, _, _ = two_people
    resolved = resolve_item_labels(queues.latest_decisions(queue_id), queues.assignments(queue_id),
                                   queues.current_adjudications(queue_id))
    assert list(resolved["basis"]) == [TIE] + [MAJORITY] * (SIZE - 1)
    assert resolved["label"].isna().tolist() == [True] + [False] * (SIZE - 1)
    # Only annotator a's vote is left on item 0 once b is not among its assigned annotators: a majority of one.
    only_a = queues.assignments(queue_id).query("not (position == 0 and annotator == 'b')")
    alone = resolve_item_labels(queues.latest_decisions(queue_id), only_a, queues.current_adjudications(queue_id))
    assert (alone.loc[0, "basis"], int(alone.loc[0, "label"])) == (MAJORITY, 0)
    queues.adjudicate(queue_id, 3, 0, "lead")  # an adjudication overrides even an agreed majority
    labels = queues.item_labels(queue_id).set_index("position")
    assert (labels.at[3, "basis"], int(labels.at[3, "label"])) == (ADJUDICATED, 0)
