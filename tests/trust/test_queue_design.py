"""The trust report weighs labels by an annotation queue's plan (rageval.queues): a stratified queue's labels give
the population-weighted estimates, checked against ppi-python per stratum and against the weighted mean by hand."""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import ppi_mean_pointestimate

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore
from rageval.cli import main
from rageval.queue_plans import EQUAL, STRATIFIED_PLAN, QueuePlan
from rageval.queues import QueueStore
from rageval.store import RunReader
from rageval.trust.report import trust_report
from tests.run_fixtures import build_small_run, make_small_run

RUN = "small"
FLIPPED = {1, 4}  # positions of the queue where the person disagrees with contains_answer


@pytest.fixture
def stratified_queue(tmp_path):
    run = build_small_run()
    path = make_small_run(tmp_path / f"{RUN}.sqlite")
    with RunReader(path) as reader:
        labels = reader.labels()
    population = labels.loc[labels["method"] == "contains_answer", ["query_id", "passage_id"]].reset_index(drop=True)
    queues = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = queues.create_queue("by contains", RUN, "passage", population, labels,
                                   QueuePlan(STRATIFIED_PLAN, 10, seed=3, stratify_by="contains_answer",
                                             allocation=EQUAL), 1, ["ann"], "", "admin")
    contains = {(x.query_id, x.passage_id): int(x.value) for x in run.labels if x.method == "contains_answer"}
    items = queues.items(queue_id)
    person = {}
    for i, (position, q, p) in enumerate(zip(items["position"], items["query_id"], items["passage_id"])):
        person[(q, p)] = contains[(q, p)] ^ (i in FLIPPED)
        queues.save_label(queue_id, int(position), "ann", person[(q, p)])
    return run, path, AnnotationStore(tmp_path / ANNOTATIONS_FILE), queue_id, person, contains


def test_a_stratified_queue_is_the_design_and_its_estimates_are_weighted(stratified_queue):
    run, path, store, queue_id, person, contains = stratified_queue
    report = trust_report(path, store, compare_runs=False)
    assert report.design.plan == "stratified" and f"queue {queue_id}" in report.design.source
    population = [(r.query_id, p.passage_id) for r in run.rankings for p in r.passages]
    strata = {key: contains[key] for key in population}
    n = len(population)
    # The human-only label share: each stratum's mean, weighted by the stratum's share of the population.
    by_hand = sum(sum(strata[k] == s for k in population) / n
                  * np.mean([y for key, y in person.items() if strata[key] == s]) for s in (0, 1))
    assert report.methods["gold"].estimates["human_only"]["label_share"].estimate == pytest.approx(by_hand)
    # PPI: per stratum, ppi-python's point estimate from the stratum's labels and automatic labels, then weighted.
    gold = {(x.query_id, x.passage_id): float(x.value >= 0.5) for x in run.labels if x.method == "gold"}
    expected = 0.0
    for s in (0, 1):
        members = [k for k in population if strata[k] == s]
        labelled = [k for k in members if k in person]
        y = np.array([person[k] for k in labelled], dtype=float)
        f_labelled = np.array([gold.get(k, 0.0) for k in labelled])
        f_all = np.array([gold.get(k, 0.0) for k in members])
        expected += len(members) / n * float(ppi_mean_pointestimate(y, f_labelled, f_all, lam=1)[0])
    assert report.methods["gold"].estimates["ppi"]["label_share"].estimate == pytest.approx(expected)


def test_trust_queue_flag_names_an_unknown_queue_in_one_line(stratified_queue, capsys):
    _, path, store, queue_id, _, _ = stratified_queue
    code = main(["trust", str(path), "--annotations", str(store.path), "--queue", str(queue_id + 5)])
    captured = capsys.readouterr()
    assert code != 0 and f"no passage queue {queue_id + 5}" in captured.err and "Traceback" not in captured.err
