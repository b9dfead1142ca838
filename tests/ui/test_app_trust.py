"""AppTest tests of the trust views: the Annotate page's PPI intervals beside the human-only ones (with the number
of labels, the chart over the label count, the calibration and the plan's next items), and the Findings page's
sentence, on the fixture run (6 NQ questions x 5 passages) with human labels written to the annotation file. The
expected numbers are computed here with ppi-python from the run's own labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore
from tests.app_helpers import captions, frame_with, vega_charts
from tests.run_fixtures import K, build_small_run, make_small_run
from tests.ui.test_app import HOME, start
from ui.format import METHOD_NAMES

ANNOTATE = str(Path(__file__).resolve().parents[2] / "app_pages" / "9_Annotate.py")
LABELLED = 20  # of the 30 passages of the sample


def plain(text: str) -> str:
    return text.replace("\\", "")


@pytest.fixture
def labelled_runs(tmp_path, monkeypatch):
    """A runs folder with the fixture run, a shared sample of all its 30 passages, and the first LABELLED of them
    (in queue order) labelled by "Ada": relevant = contains-answer, two of them flipped."""
    run = build_small_run()
    make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    monkeypatch.delenv("RAGEVAL_ANNOTATIONS", raising=False)
    items = pd.DataFrame([(r.query_id, p.passage_id, rank) for r in run.rankings
                          for rank, p in enumerate(r.passages, start=1)], columns=["query_id", "passage_id", "rank"])
    store = AnnotationStore(tmp_path / ANNOTATIONS_FILE)
    store.create_sample("fixture", items, len(items), seed=4, created_by="Ada")
    queue = store.latest_sample("fixture").items
    contains = {(x.query_id, x.passage_id): int(x.value) for x in run.labels if x.method == "contains_answer"}
    chosen = list(zip(queue["query_id"], queue["passage_id"]))[:LABELLED]
    person = [contains[key] ^ (i in (1, 6)) for i, key in enumerate(chosen)]
    store.save_passage_labels("fixture", [(q, p, y, "Ada") for (q, p), y in zip(chosen, person)])
    erag = {(x.query_id, x.passage_id): float(x.value >= 0.5) for x in run.labels if x.method == "erag:em"}
    everything = list(zip(items["query_id"], items["passage_id"]))
    return (np.array(person, dtype=float), np.array([erag.get(k, 0.0) for k in chosen]),
            np.array([erag.get(k, 0.0) for k in everything]))


def test_annotate_shows_ppi_beside_the_human_only_interval_with_the_label_count(labelled_runs):
    y, f, f_all = labelled_runs
    app = start(ANNOTATE, annotator="Ada", run="fixture")
    table = frame_with(app, "PPI").set_index("Method")
    row = table.loc[METHOD_NAMES["erag:em"]]
    point = float(ppi_mean_pointestimate(y, f, f_all, lam=1)[0])
    low, high = ppi_mean_ci(y, f, f_all, alpha=0.05, lam=1)
    assert row["PPI"] == f"{point:.3f} [{max(float(low[0]), 0):.2f}, {min(float(high[0]), 1):.2f}]"
    human_low, human_high = classical_mean_ci(y, alpha=0.05)
    assert row["Human labels only"] == f"{y.mean():.3f} [{max(human_low, 0):.2f}, {min(human_high, 1):.2f}]"
    assert row["Human labels"] == LABELLED and row["Automatic labels"] == 30
    assert row["Automatic"] == pytest.approx(f_all.mean())
    assert "Uniform sample (shared sample" in plain(captions(app)) and f"{LABELLED} of its passages" in captions(app)
    # the chart over the label count: three estimators, n up to every label
    chart = next((spec, data) for spec, data in vega_charts(app) if "as labels arrive" in spec.get("title", ""))
    assert set(chart[1]["estimator"]) == {"PPI", "PPI++", "Human labels only"}
    assert chart[1]["n"].max() == LABELLED
    # the calibration table and the plan's next items (unlabelled passages of the sample's run)
    calibration = frame_with(app, "Rogan–Gladen share").set_index("Method")
    assert calibration.loc[METHOD_NAMES["erag:em"], "n"] == LABELLED
    plan = frame_with(app, "Stratum")
    assert 0 < len(plan) <= 30 - LABELLED


def test_findings_says_what_the_human_labels_make_of_the_automatic_measure(labelled_runs):
    y, f, f_all = labelled_runs
    app = start(HOME, run="fixture")
    sentence = next(plain(m.value) for m in app.markdown if "from automatic labels" in m.value)
    point = float(ppi_mean_pointestimate(y, f, f_all, lam=1)[0])
    low, high = ppi_mean_ci(y, f, f_all, alpha=0.05, lam=1)
    expected = (f"eRAG EM P@{K} {f_all.mean():.2f} from automatic labels; with {LABELLED} human labels {point:.2f} "
                f"[{max(float(low[0]), 0):.2f}, {min(float(high[0]), 1):.2f}] (PPI, uniform sample")
    assert sentence.startswith(expected), sentence
    link = next(link for link in app.get("page_link") if link.proto.label == "See the human labels")
    assert "Annotate" in link.proto.page


def test_findings_says_labels_without_a_sample_support_no_estimate(tmp_path, monkeypatch):
    run = build_small_run()
    make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    monkeypatch.delenv("RAGEVAL_ANNOTATIONS", raising=False)
    AnnotationStore(tmp_path / ANNOTATIONS_FILE).save_passage_labels(
        "fixture", [(r.query_id, r.passages[0].passage_id, 1, "Ada") for r in run.rankings])
    app = start(HOME, run="fixture")
    sentence = next(plain(m.value) for m in app.markdown if "from automatic labels" in m.value)
    assert "the 6 human labels were not drawn at random" in sentence
    assert "does not support an unbiased estimate" in sentence or "do not support" in sentence


def stratified_fixture_queue(tmp_path, monkeypatch, name: str, annotators: list[str]):
    """The fixture run in a fresh runs folder and a queue of 12 of its passages stratified by contains_answer, each
    to every one of ``annotators``: (the QueueStore, the queue's id, the run's passages)."""
    from rageval.queue_plans import STRATIFIED_PLAN, QueuePlan
    from rageval.queues import QueueStore
    from rageval.store import RunReader

    path = make_small_run(tmp_path / "fixture.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    monkeypatch.delenv("RAGEVAL_ANNOTATIONS", raising=False)
    with RunReader(path) as reader:
        labels = reader.labels()
    population = labels.loc[labels["method"] == "gold", ["query_id", "passage_id"]].drop_duplicates()
    queues = QueueStore(tmp_path / ANNOTATIONS_FILE)
    queue_id = queues.create_queue(name, "fixture", "passage", population.reset_index(drop=True), labels,
                                   QueuePlan(STRATIFIED_PLAN, 12, seed=2, stratify_by="contains_answer"),
                                   len(annotators), annotators, "", "admin")
    return queues, queue_id, population


def test_annotate_says_the_label_rule_lists_a_tie_and_charts_a_queue(tmp_path, monkeypatch):
    """A stratified queue of 12 passages, two annotators each, who disagree on the first item: the page says how a
    passage's label is decided, lists the tie, and draws the intervals as the queue's labels arrive."""
    queues, queue_id, population = stratified_fixture_queue(tmp_path, monkeypatch, "q", ["ada", "bo"])
    for position in queues.items(queue_id)["position"]:
        for person in ("ada", "bo"):
            value = (person == "bo") if position == 0 else int(position) % 3 == 0
            queues.save_label(queue_id, int(position), person, int(value))
    items = pd.DataFrame(population.assign(rank=1).to_numpy(), columns=["query_id", "passage_id", "rank"])
    AnnotationStore(queues.path).create_sample("fixture", items, 10, seed=1, created_by="ada")
    app = start(ANNOTATE, annotator="ada", run="fixture", mode="passages")
    text = plain(captions(app))
    assert "The people's label of a passage: in an annotation queue: an adjudicated label" in text
    assert "1 passage is unresolved (a tie)" in text and f"queue {queue_id}" in text
    ties = frame_with(app, "Said 1")
    assert len(ties) == 1 and ties.iloc[0]["Where"] == f"queue {queue_id}, item 0"
    chart = next((spec, data) for spec, data in vega_charts(app) if "as labels arrive" in spec.get("title", ""))
    assert chart[1]["n"].max() == 11  # the 12 items but the tie
    # the basis is said (the queue, its items and annotators each) and can be switched to the shared sample
    assert f"queue {queue_id} 'q' (stratified by contains_answer (proportional), seed 2; 12 items, 2 annotators " \
           "each)" in text
    picker = next(box for box in app.selectbox if box.label == "Estimates rest on")
    assert picker.options[0].startswith(f"queue {queue_id}") and picker.options[1].startswith("shared sample")
    # the people's share: the labelled passages' raw share beside the design-weighted one (they differ here)
    calibration = frame_with(app, "Rogan–Gladen share").iloc[0]
    assert calibration["People's share of the labelled"] == pytest.approx(
        (calibration["Both relevant"] + calibration["People only"]) / calibration["n"])
    assert calibration["People's share (weighted)"] != pytest.approx(calibration["People's share of the labelled"])
    sample_view = start(ANNOTATE, annotator="ada", run="fixture", mode="passages", basis="sample")
    assert "Uniform sample (shared sample" in plain(captions(sample_view))


def test_the_glossary_explains_the_words_of_the_trust_views():
    """PPI, PPI++, Rogan–Gladen, Cohen's and Fleiss' kappa, Krippendorff's alpha, stratified sample and Neyman
    allocation each have an entry with its source, and the Glossary page shows them under their anchors."""
    from ui import glossary, navigation

    wanted = {"ppi", "ppi-plus-plus", "rogan-gladen", "kappa", "fleiss-kappa", "krippendorff-alpha",
              "stratified-sample", "neyman-allocation"}
    assert wanted <= set(glossary.by_anchor()) and all(glossary.by_anchor()[a].source for a in wanted)
    app = start(str(Path(__file__).resolve().parents[2] / navigation.GLOSSARY))
    assert wanted <= {h.proto.anchor for h in app.subheader}


def test_a_stratum_without_variance_gives_no_interval_and_the_page_says_why(tmp_path, monkeypatch):
    """A stratified queue whose people judged every item not relevant: each stratum's sample shows no variance,
    so the estimates keep their point but no interval (a zero variance would make it a point, far too narrow), and
    Annotate and Findings say why instead of showing a bare number."""
    queues, queue_id, population = stratified_fixture_queue(tmp_path, monkeypatch, "flat", ["ada"])
    queues.save_labels(queue_id, [(int(p), "ada", 0, "") for p in queues.items(queue_id)["position"]])
    items = pd.DataFrame(population.assign(rank=1).to_numpy(), columns=["query_id", "passage_id", "rank"])
    AnnotationStore(queues.path).create_sample("fixture", items, 10, seed=1, created_by="ada")  # Annotate opens on it
    app = start(ANNOTATE, annotator="ada", run="fixture", mode="passages")
    text = plain(captions(app))
    assert "No interval: every stratum's sample shows no variance" in text
    estimates = frame_with(app, "PPI++")
    assert all(not any(c in str(cell) for c in "[]") for cell in estimates["PPI"])  # the estimate alone
    home = start(HOME, run="fixture")
    sentence = " ".join(m.value for m in home.markdown) + " " + captions(home)
    assert "no interval yet: every stratum's sample shows no variance" in plain(sentence)
