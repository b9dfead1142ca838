"""The annotation queues (rageval/queues.py): sampling plans and their designs, assignment with overlap, next item,
progress, agreement (against statsmodels, scikit-learn and the krippendorff package), adjudication, export, the
v2 -> v3 upgrade of the annotation file, and many writers at once.

The population is synthetic (40 questions x 10 retrieved passages, three label methods whose labels are drawn from
a seeded generator), so the strata are large enough to check allocations; expected counts are recomputed here from
the population, never copied from the module's output."""

from __future__ import annotations

import csv
import io
import itertools
import math
import multiprocessing
import sqlite3
from collections import Counter

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore, latest_labels
from rageval.queue_plans import (
    DISAGREEMENT_PLAN,
    EQUAL,
    PROPORTIONAL,
    STRATIFIED_PLAN,
    UNIFORM_PLAN,
    QueuePlan,
    allocate,
    assign_annotators,
    draw_items,
)
from rageval.queues import EXPORT_COLUMNS, QueueStore, queue_sampling_design
from rageval.stats.design import STRATIFIED
from rageval.store import ANNOTATION_APPLICATION_ID
from rageval.store.schemas import ANNOTATIONS, ANNOTATIONS_SCHEMA_V2

RUN = "synthetic"
METHODS = ("erag:em", "contains_answer", "gold")


def synthetic_run(n_queries: int = 40, k: int = 10, seed: int = 11) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(population: query_id, passage_id, rank; method labels: method, query_id, passage_id, value)."""
    rng = np.random.default_rng(seed)
    population = pd.DataFrame([(f"q{q:02d}", f"p{q:02d}-{r}", r) for q in range(n_queries) for r in range(1, k + 1)],
                              columns=["query_id", "passage_id", "rank"])
    truth = rng.random(len(population)) < 0.3
    rows = []
    for method, noise in zip(METHODS, (0.1, 0.25, 0.05)):
        flips = rng.random(len(population)) < noise
        for (q, p, _), value in zip(population.itertuples(index=False), truth ^ flips):
            if method == "gold" and q == "q00":
                continue  # gold never judged q00: its passages are "gold unlabelled"
            rows.append((method, q, p, float(value)))
    return population, pd.DataFrame(rows, columns=["method", "query_id", "passage_id", "value"])


@pytest.fixture(scope="module")
def run_frames():
    return synthetic_run()


def method_label(labels: pd.DataFrame, method: str) -> dict[tuple[str, str], int]:
    theirs = labels[labels["method"] == method]
    return {(q, p): int(v >= 0.5) for q, p, v in zip(theirs["query_id"], theirs["passage_id"], theirs["value"])}


def dissent(labels: pd.DataFrame) -> dict[tuple[str, str], int]:
    votes: dict[tuple[str, str], list[int]] = {}
    for method in METHODS:
        for key, value in method_label(labels, method).items():
            votes.setdefault(key, []).append(value)
    return {key: min(sum(v), len(v) - sum(v)) for key, v in votes.items()}


# --- plans ------------------------------------------------------------------------------------------------------

def test_uniform_plan_draws_distinct_items_with_one_stratum_and_is_reproducible(run_frames):
    population, labels = run_frames
    items, strata = draw_items(population, labels, QueuePlan(UNIFORM_PLAN, 25, seed=3), "passage")
    assert len(items) == 25 and len(set(zip(items["query_id"], items["passage_id"]))) == 25
    assert strata == {"all items": (400, 25)}
    assert list(items["position"]) == list(range(25))
    again, _ = draw_items(population.sample(frac=1, random_state=5), labels, QueuePlan(UNIFORM_PLAN, 25, seed=3),
                          "passage")
    pd.testing.assert_frame_equal(items, again)  # the population's row order does not matter
    other, _ = draw_items(population, labels, QueuePlan(UNIFORM_PLAN, 25, seed=4), "passage")
    assert set(zip(other["query_id"], other["passage_id"])) != set(zip(items["query_id"], items["passage_id"]))
    queries = list(items["query_id"])  # grouped by question: each question's items are consecutive
    assert len([q for i, q in enumerate(queries) if i == 0 or queries[i - 1] != q]) == len(set(queries))


@pytest.mark.parametrize("allocation", [PROPORTIONAL, EQUAL])
def test_stratified_plan_strata_counts_and_weights_are_exact(run_frames, allocation, tmp_path):
    population, labels = run_frames
    truth = method_label(labels, "erag:em")
    expected_population = Counter(f"erag:em={truth[(q, p)]}" for q, p in zip(population["query_id"],
                                                                              population["passage_id"]))
    size = 60
    store = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = store.create_queue("by em", RUN, "passage", population, labels,
                                  QueuePlan(STRATIFIED_PLAN, size, seed=2, stratify_by="erag:em",
                                            allocation=allocation), 1, ["ada"], "", "admin")
    design = store.sampling_design(queue_id)
    assert design.plan == STRATIFIED and design.supports_unbiased_estimate
    assert {s.name: s.population for s in design.strata} == dict(expected_population)
    sampled = {s.name: s.sampled for s in design.strata}
    assert sum(sampled.values()) == size
    total = sum(expected_population.values())
    for name, count in expected_population.items():
        ideal = size * count / total if allocation == PROPORTIONAL else size / len(expected_population)
        assert abs(sampled[name] - ideal) < 1, (name, sampled, ideal)
    # Each item sits in the stratum of its own label, and the strata's item counts are the sampled counts.
    items = store.items(queue_id)
    assert Counter(items["stratum"]) == Counter(sampled)
    for key, stratum in design.item_strata.items():
        assert stratum == f"erag:em={truth[key]}"
    for stratum in design.strata:
        assert stratum.weight == stratum.population / stratum.sampled
        weights = set(items.loc[items["stratum"] == stratum.name, "inclusion_weight"])
        assert weights == {stratum.population / stratum.sampled}
    assert queue_sampling_design(store.path, queue_id) == design


def test_a_stratum_the_method_never_judged_is_its_own_stratum(run_frames):
    population, labels = run_frames
    items, strata = draw_items(population, labels, QueuePlan(STRATIFIED_PLAN, 30, stratify_by="gold"), "passage")
    assert strata["gold unlabelled"][0] == 10  # q00's ten passages
    assert set(items.loc[items["query_id"] == "q00", "stratum"]) <= {"gold unlabelled"}


def test_disagreement_plan_oversamples_disagreement_but_every_stratum_keeps_a_positive_rate(run_frames):
    population, labels = run_frames
    levels = dissent(labels)
    expected = Counter(levels.get((q, p), 0) for q, p in zip(population["query_id"], population["passage_id"]))
    plan = QueuePlan(DISAGREEMENT_PLAN, 40, seed=1, oversample=4.0)
    _, strata = draw_items(population, labels, plan, "passage")
    names = {0: "methods agree", 1: "1 method dissents"}
    assert {name: p for name, (p, _) in strata.items()} == {names[d]: n for d, n in expected.items()}
    rates = {name: n / p for name, (p, n) in strata.items()}
    assert all(rate > 0 for rate in rates.values())
    # Allocation in proportion to population x (1 + 3 d): the dissent stratum's rate is about 4 times the other's.
    assert rates["1 method dissents"] / rates["methods agree"] == pytest.approx(4.0, rel=0.35)


def test_weighted_estimates_from_the_disagreement_plan_are_unbiased(run_frames):
    """Over many seeds, the inclusion-weighted (Horvitz-Thompson) mean of a 0/1 item value equals the population
    mean, while the plain sample mean is pulled towards the oversampled stratum."""
    population, labels = run_frames
    em, contains = method_label(labels, "erag:em"), method_label(labels, "contains_answer")
    # Any item value works; this one (two methods differ on the item) differs between the strata, so bias shows.
    value = {key: int(em[key] != contains[key]) for key in zip(population["query_id"], population["passage_id"])}
    truth = sum(value.values()) / len(value)
    weighted, plain = [], []
    for seed in range(120):
        items, strata = draw_items(population, labels, QueuePlan(DISAGREEMENT_PLAN, 40, seed=seed), "passage")
        weight = items["stratum"].map({s: p / n for s, (p, n) in strata.items()})
        ys = np.array([value[key] for key in zip(items["query_id"], items["passage_id"])])
        weighted.append(float((weight * ys).sum() / len(value)))
        plain.append(float(ys.mean()))
    assert np.mean(weighted) == pytest.approx(truth, abs=3 * np.std(weighted) / math.sqrt(120))
    assert abs(np.mean(plain) - truth) > 3 * np.std(plain) / math.sqrt(120)  # the oversampling shows unweighted


def test_allocation_caps_small_strata_and_refuses_a_size_below_the_strata():
    assert allocate({"a": 2, "b": 100}, {"a": 1.0, "b": 1.0}, 20) == {"a": 2, "b": 18}  # equal, a capped at 2
    assert allocate({"a": 5, "b": 5}, {"a": 1.0, "b": 1.0}, 50) == {"a": 5, "b": 5}  # everything
    assert allocate({"a": 1000, "b": 3}, {"a": 1000.0, "b": 3.0}, 10) == {"a": 9, "b": 1}  # b keeps one item
    with pytest.raises(ValueError, match="positive sampling rate"):
        allocate({"a": 10, "b": 10, "c": 10}, {"a": 1.0, "b": 1.0, "c": 1.0}, 2)


# --- assignment -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_items, annotators, overlap", [(20, 4, 2), (31, 5, 3), (7, 3, 3), (10, 6, 1)])
def test_every_item_goes_to_exactly_n_distinct_annotators_balanced(n_items, annotators, overlap):
    names = [f"a{i}" for i in range(annotators)]
    assigned = assign_annotators(n_items, names, overlap, seed=9)
    assert len(assigned) == n_items
    assert all(len(people) == overlap == len(set(people)) for people in assigned)
    load = Counter(person for people in assigned for person in people)
    share = n_items * overlap / annotators
    assert set(load) == set(names) and all(math.floor(share) <= n <= math.ceil(share) for n in load.values())
    assert assign_annotators(n_items, list(reversed(names)), overlap, seed=9) == assigned  # deterministic
    if overlap == 2 and n_items >= 2 * math.comb(annotators, 2):
        shared = Counter(tuple(sorted(people)) for people in assigned)
        assert set(shared) == set(itertools.combinations(names, 2))  # every pair shares items: pairwise kappa


def test_overlap_larger_than_the_team_is_refused():
    with pytest.raises(ValueError, match="needs at least 3 distinct annotators"):
        assign_annotators(5, ["ada", "bob", " ada "], 3)


# --- labelling ----------------------------------------------------------------------------------------------------

@pytest.fixture
def queue(tmp_path, run_frames):
    population, labels = run_frames
    store = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = store.create_queue("check", RUN, "passage", population, labels, QueuePlan(UNIFORM_PLAN, 12, seed=1),
                                  2, ["ada", "bob", "cy"], "Useful = answers it alone.", "admin")
    return store, queue_id


def test_changes_counts_every_queue_and_adjudication(tmp_path, queue, run_frames):
    """The dashboard's cache key of the queues (:meth:`QueueStore.changes`) moves with every queue created and every
    adjudication, and is 0 for an annotation file without queues."""
    assert QueueStore(tmp_path / "other.sqlite").changes() == 0
    store, queue_id = queue
    first = store.changes()
    assert first > 0
    store.adjudicate(queue_id, 0, 1, "admin")
    adjudicated = store.changes()
    assert adjudicated != first
    population, labels = run_frames
    store.create_queue("second", RUN, "passage", population, labels, QueuePlan(UNIFORM_PLAN, 4, seed=2), 1,
                       ["ada"], "", "admin")
    assert store.changes() not in (first, adjudicated)


def test_next_item_walks_the_assigned_items_then_the_skipped_ones(queue):
    store, queue_id = queue
    mine = list(store.assignments(queue_id).query("annotator == 'ada'")["position"])
    assert len(mine) == 8  # 12 x 2 / 3
    assert store.next_item(queue_id, "ada") == mine[0]
    store.save_label(queue_id, mine[0], "ada", 1)
    store.save_label(queue_id, mine[1], "ada", "skipped")
    store.save_label(queue_id, mine[2], "ada", "unsure", note="ambiguous")
    assert store.next_item(queue_id, "ada") == mine[3]
    for position in mine[3:]:
        store.save_label(queue_id, position, "ada", 0)
    assert store.next_item(queue_id, "ada") == mine[1]  # only the skipped one is left
    store.save_label(queue_id, mine[1], "ada", 1)
    assert store.next_item(queue_id, "ada") is None
    progress = store.progress(queue_id).set_index("annotator")
    assert progress.loc["ada"].to_dict() == {"assigned": 8, "labelled": 7, "unsure": 1, "skipped": 0, "pending": 0,
                                             "done": 8}
    assert progress.loc["bob", "pending"] == 8 and store.queue_progress(queue_id)["done"] == 8
    other = int(store.assignments(queue_id).query("annotator == 'bob'")["position"].iloc[0])
    if other not in mine:
        with pytest.raises(ValueError, match="not assigned to ada"):
            store.save_label(queue_id, other, "ada", 1)
    # A queue label is an ordinary label row: the Annotate page's views read it.
    rows = AnnotationStore(store.path).labels(RUN, "passage")
    assert len(rows) == 9 and set(rows["annotator"]) == {"ada"}
    assert store.queues_of("ada")[0].guidelines == "Useful = answers it alone."


def simulate(store, queue_id, seed: int, unsure_share: float = 0.0) -> None:
    rng = np.random.default_rng(seed)
    items = store.items(queue_id)
    truth = dict(zip(items["position"], rng.random(len(items)) < 0.5))
    for position, annotator in store.assignments(queue_id).itertuples(index=False):
        draw = rng.random()
        label = "unsure" if draw < unsure_share else int(truth[position] ^ (rng.random() < 0.2))
        store.save_label(queue_id, int(position), annotator, label)


@pytest.mark.parametrize("annotators, overlap", [(3, 3), (4, 2), (5, 3)])
def test_agreement_matches_statsmodels_sklearn_and_krippendorff(tmp_path, run_frames, annotators, overlap):
    population, labels = run_frames
    store = QueueStore(tmp_path / ANNOTATIONS_FILE)
    names = [f"annotator {i}" for i in range(annotators)]
    queue_id = store.create_queue("agree", RUN, "passage", population, labels, QueuePlan(UNIFORM_PLAN, 40, seed=5),
                                  overlap, names, "", "admin")
    simulate(store, queue_id, seed=annotators, unsure_share=0.1)
    result = store.agreement(queue_id)
    with sqlite3.connect(store.path) as connection:  # the labels as the file holds them, read independently
        rows = connection.execute("SELECT ql.position, l.annotator, l.label FROM queue_labels ql JOIN labels l ON "
                                  "l.id = ql.label_id WHERE l.status = 'labelled'").fetchall()
    connection.close()
    by_item: dict[int, dict[str, int]] = {}
    for position, annotator, label in rows:
        by_item.setdefault(position, {})[annotator] = label
    full = [v for v in by_item.values() if len(v) == overlap]
    table = np.array([[sum(1 for x in v.values() if x == 0), sum(1 for x in v.values() if x == 1)] for v in full])
    assert result.fleiss_items == len(full) > 0
    assert result.fleiss == pytest.approx(statsmodels_fleiss(table, method="fleiss"))
    matrix = np.array([[by_item[p].get(a, np.nan) for p in sorted(by_item)] for a in names], dtype=float)
    assert result.alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))
    pairs = result.pairs.set_index(["annotator_a", "annotator_b"])
    for first, second in itertools.combinations(names, 2):
        shared = [p for p in sorted(by_item) if first in by_item[p] and second in by_item[p]]
        assert pairs.at[(first, second), "n"] == len(shared)
        a, b = [by_item[p][first] for p in shared], [by_item[p][second] for p in shared]
        if len(shared) and len(set(a) | set(b)) > 1:
            assert pairs.at[(first, second), "kappa"] == pytest.approx(cohen_kappa_score(a, b))


def test_adjudication_is_stored_apart_and_keeps_every_label(queue):
    store, queue_id = queue
    simulate(store, queue_id, seed=2, unsure_share=0.2)
    with sqlite3.connect(store.path) as connection:
        before = connection.execute("SELECT * FROM labels ORDER BY id").fetchall()
    connection.close()
    found = store.disagreements(queue_id)
    latest = store.latest_decisions(queue_id)
    decisions = latest.assign(d=[str(int(v)) if s == "labelled" else s for s, v in zip(latest["status"],
                                                                                        latest["label"])])
    differing = {p for p, d in decisions.groupby("position")["d"] if d.nunique() > 1}
    assert set(found["position"]) == differing and differing
    position = int(found["position"].iloc[0])
    assert len(found[found["position"] == position]) == 2  # each annotator's label and note
    store.adjudicate(queue_id, position, 1, "admin", note="the passage names it")
    store.adjudicate(queue_id, position, 0, "admin2", note="on second reading, no")
    with sqlite3.connect(store.path) as connection:
        after = connection.execute("SELECT * FROM labels ORDER BY id").fetchall()
        adjudicated = connection.execute("SELECT position, label, adjudicator, note FROM adjudications").fetchall()
    connection.close()
    assert after == before  # no one's label overwritten, none added
    assert adjudicated == [(position, 1, "admin", "the passage names it"), (position, 0, "admin2",
                                                                            "on second reading, no")]
    again = store.disagreements(queue_id)
    assert set(again.loc[again["position"] == position, "adjudicated_label"]) == {0}
    assert set(again.loc[again["position"] == position, "adjudicated_by"]) == {"admin2"}
    with pytest.raises(ValueError, match="adjudicated label is 1"):
        store.adjudicate(queue_id, position, "unsure", "admin")  # type: ignore[arg-type]


def test_export_keeps_annotator_ids_plan_stratum_weight_and_adjudication(tmp_path, run_frames):
    population, labels = run_frames
    store = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = store.create_queue("export", RUN, "passage", population, labels,
                                  QueuePlan(STRATIFIED_PLAN, 20, seed=7, stratify_by="contains_answer",
                                            allocation=EQUAL), 2, ["ada@x.org", "bob@x.org"], "", "admin")
    simulate(store, queue_id, seed=3)
    store.save_label(queue_id, 0, store.assignments(queue_id).query("position == 0")["annotator"].iloc[0], 0)
    store.adjudicate(queue_id, 0, 1, "admin")
    rows = list(csv.DictReader(io.StringIO(store.export_csv(queue_id))))
    assert tuple(rows[0]) == EXPORT_COLUMNS
    assert {"queue", "plan", "stratum", "inclusion_weight", "annotator", "label", "adjudicated_label"} <= set(rows[0])
    assert len(rows) == 40  # one row per (item, annotator): the latest decision of each
    strata = {s.name: s for s in store.sampling_design(queue_id).strata}
    assert sum(s.sampled for s in strata.values()) == 20  # items drawn, not labels: each item has two labels
    assert Counter(row["stratum"] for row in rows) == {name: 2 * s.sampled for name, s in strata.items()}
    for row in rows:
        assert row["queue"] == str(queue_id) and row["plan"] == "stratified" and row["design"] == "stratified"
        assert row["annotator"] in {"ada@x.org", "bob@x.org"}
        assert float(row["inclusion_weight"]) == pytest.approx(strata[row["stratum"]].population
                                                               / strata[row["stratum"]].sampled)
        assert row["adjudicated_label"] == ("1" if row["position"] == "0" else "")


# --- the file ---------------------------------------------------------------------------------------------------

def test_a_v2_file_is_upgraded_to_v3_in_place_and_keeps_every_row(tmp_path, run_frames):
    """A file written by the v2 schema (labels with status, samples), made here with that schema's SQL."""
    path = tmp_path / ANNOTATIONS_FILE
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA application_id = {ANNOTATION_APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 2")
        connection.executescript(ANNOTATIONS_SCHEMA_V2)
        connection.execute("INSERT INTO meta VALUES ('schema_version', '2')")
        connection.executemany(
            "INSERT INTO labels (run, kind, query_id, passage_id, label, status, annotator, labelled_at, note) "
            "VALUES (?, 'passage', ?, ?, ?, ?, 'Ada', '2026-01-01T00:00:00.000000+00:00', ?)",
            [(RUN, "q00", "p00-1", 1, "labelled", "old"), (RUN, "q00", "p00-2", None, "unsure", "?")])
        connection.execute("INSERT INTO samples (run, kind, size, seed, population, created_by, created_at) VALUES "
                           "(?, 'passage', 1, 0, 400, 'Ada', '2026-01-01T00:00:00+00:00')", (RUN,))
        connection.execute("INSERT INTO sample_items VALUES (1, 0, 'q00', 'p00-1')")
    connection.close()

    def dump() -> dict[str, list]:
        with sqlite3.connect(path) as connection:
            return {t: connection.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                    for t in ("labels", "samples", "sample_items")}

    before = dump()
    store = QueueStore(path)
    assert store.queues() == [] and AnnotationStore(path).version() == 2  # read as it is
    population, labels = run_frames
    queue_id = store.create_queue("after", RUN, "passage", population, labels, QueuePlan(UNIFORM_PLAN, 4), 1,
                                  ["Ada"], "", "admin")
    assert AnnotationStore(path).version() == ANNOTATIONS.version == 4  # v2 -> v3 -> v4 in one transaction
    # every row kept; labels gained the guideline column last (v4), empty for labels given before it existed
    assert dump() == {**before, "labels": [(*row, "") for row in before["labels"]]}
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "4"
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    connection.close()
    store.save_label(queue_id, 0, "Ada", 1)
    assert len(AnnotationStore(path).labels(RUN)) == 3 and AnnotationStore(path).latest_sample(RUN).size == 1


def _label_all(path: str, queue_id: int, annotator: str, errors) -> None:
    """One annotator's session in its own process: open the next item, label it, until none is left."""
    try:
        store = QueueStore(path)
        while (position := store.next_item(queue_id, annotator)) is not None:
            store.save_label(queue_id, position, annotator, position % 2, note=f"by {annotator}")
            AnnotationStore(path).labels(RUN)  # and read, as the page does after a label
    except Exception as error:  # any failure is reported to the test, which then fails
        errors.put(f"{annotator}: {type(error).__name__}: {error}")


def test_eight_processes_labelling_one_queue_at_once_lose_nothing(tmp_path, run_frames):
    population, labels = run_frames
    path = tmp_path / ANNOTATIONS_FILE
    store = QueueStore(path)
    names = [f"annotator{i}" for i in range(8)]
    queue_id = store.create_queue("busy", RUN, "passage", population, labels, QueuePlan(UNIFORM_PLAN, 48, seed=2),
                                  4, names, "", "admin")
    context = multiprocessing.get_context("fork")
    errors = context.Queue()
    workers = [context.Process(target=_label_all, args=(str(path), queue_id, name, errors)) for name in names]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == [] and all(worker.exitcode == 0 for worker in workers)
    assignments = store.assignments(queue_id)
    decisions = store.decisions(queue_id)
    assert len(assignments) == 48 * 4 and len(decisions) == 48 * 4  # each assignment labelled exactly once
    assert set(zip(decisions["position"], decisions["annotator"])) == set(zip(assignments["position"],
                                                                              assignments["annotator"]))
    assert list(decisions["label"]) == [p % 2 for p in decisions["position"]]
    assert len(latest_labels(AnnotationStore(path).labels(RUN), "passage")) == 48 * 4
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    connection.close()


def test_a_queue_over_statements(tmp_path):
    population = pd.DataFrame({"scenario": ["s"] * 6, "query_id": ["q1"] * 3 + ["q2"] * 3,
                               "answer_id": ["a"] * 6, "statement": [0, 1, 2, 0, 1, 2]})
    labels = population.assign(method="nli:autoais", value=[1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    store = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = store.create_queue("statements", RUN, "statement", population, labels,
                                  QueuePlan(STRATIFIED_PLAN, 4, stratify_by="nli:autoais", allocation=EQUAL), 2,
                                  ["ada", "bob"], "", "admin")
    design = store.sampling_design(queue_id)
    assert {s.name: (s.population, s.sampled) for s in design.strata} == {"nli:autoais=0": (2, 2),
                                                                          "nli:autoais=1": (4, 2)}
    assert all(len(key) == 4 and isinstance(key[3], int) for key in design.item_strata)
    position = store.next_item(queue_id, "ada")
    store.save_label(queue_id, position, "ada", 1)
    stored = AnnotationStore(store.path).labels(RUN, "statement")
    assert len(stored) == 1 and stored["scenario"].iloc[0] == "s"
    assert design.plan == STRATIFIED and store.queue(queue_id).kind == "statement"
