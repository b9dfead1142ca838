"""The trust report of a real small run (6 NQ questions x 5 passages, tests/run_fixtures.py) with human labels:
the estimates equal ppi-python's on the same arrays built here from the run's own records, the design is read from
the Annotate page's shared sample (uniform), labels without one are a convenience sample with no estimate, the
plan's stratified design is used with its strata, and ``rageval trust --json`` prints the documented shape."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from rageval.annotations import AnnotationStore
from rageval.cli import main
from rageval.trust.plan import plan_next
from rageval.trust.report import NO_UNBIASED, build_report, design_of, read_inputs, trust_report
from tests.run_fixtures import K, build_small_run, make_small_run

FLIPPED = {0, 7, 13}  # the positions (in ranking order) where the person disagrees with contains_answer


@pytest.fixture
def labelled(tmp_path):
    """The run, and an annotation file where a person labelled every retrieved passage (a shared sample of all
    30): relevant = contains-answer, except at FLIPPED."""
    run = build_small_run()
    path = make_small_run(tmp_path / "small.sqlite")
    items = [(r.query_id, p.passage_id, rank) for r in run.rankings for rank, p in enumerate(r.passages, start=1)]
    contains = {(x.query_id, x.passage_id): x.value for x in run.labels if x.method == "contains_answer"}
    person = [int(contains[(q, p)]) ^ (i in FLIPPED) for i, (q, p, _) in enumerate(items)]
    store = AnnotationStore(tmp_path / "annotations.sqlite")
    store.create_sample("small", pd.DataFrame(items, columns=["query_id", "passage_id", "rank"]), len(items), 3,
                        "tester")
    store.save_passage_labels("small", [(q, p, y, "ann") for (q, p, _), y in zip(items, person)])
    return run, path, store, items, person


def method_values(run, items, method):
    stored = {(x.query_id, x.passage_id): x.value for x in run.labels if x.method == method}
    return np.array([float(stored.get((q, p), 0.0) >= 0.5) for q, p, _ in items])


def test_passage_estimates_equal_ppi_python(labelled):
    run, path, store, items, person = labelled
    report = trust_report(path, store)
    assert report.design.plan == "uniform" and report.n_human == 30 and report.k == K
    y = np.array(person, dtype=float)
    for method in ("erag:em", "gold"):
        f = method_values(run, items, method)
        ours = report.methods[method].estimates
        assert ours["ppi"]["label_share"].estimate == pytest.approx(
            float(ppi_mean_pointestimate(y, f, f, lam=1)[0]))
        low, high = ppi_mean_ci(y, f, f, alpha=0.05)
        assert (ours["ppi_plus_plus"]["label_share"].low, ours["ppi_plus_plus"]["label_share"].high) == \
            pytest.approx((float(low[0]), float(high[0])))
        low, high = classical_mean_ci(y, alpha=0.05)
        assert (ours["human_only"][f"P@{K}"].low, ours["human_only"][f"P@{K}"].high) == pytest.approx((low, high))
        assert report.methods[method].auto["label_share"] == pytest.approx(f.mean())


def test_query_measures_from_fully_labelled_queries(labelled):
    run, path, store, items, person = labelled
    report = trust_report(path, store)
    hits = pd.DataFrame({"query": [q for q, _, _ in items], "y": person,
                         "f": method_values(run, items, "erag:em")}).groupby("query", sort=False).max()
    ours = report.methods["erag:em"].estimates
    assert ours["human_only"][f"Hit@{K}"].estimate == pytest.approx(hits["y"].mean())
    assert ours["ppi"][f"Hit@{K}"].estimate == pytest.approx(float(ppi_mean_pointestimate(
        hits["y"].to_numpy(float), hits["f"].to_numpy(float), hits["f"].to_numpy(float), lam=1)[0]))
    cells = [ours["human_only"][f"{c}@{K}"].estimate for c in
             ("cell_hit_right", "cell_hit_wrong", "cell_miss_right", "cell_miss_wrong")]
    assert sum(cells) == pytest.approx(1.0)


def test_labels_without_a_sample_are_a_convenience_sample(tmp_path):
    run = build_small_run()
    path = make_small_run(tmp_path / "small.sqlite")
    store = AnnotationStore(tmp_path / "annotations.sqlite")
    store.save_passage_labels("small", [(r.query_id, r.passages[0].passage_id, 1, "ann") for r in run.rankings])
    report = trust_report(path, store)
    assert report.design.plan == "convenience" and not report.supports_estimate
    shown = report.as_dict()
    assert shown["design"]["supports_unbiased_estimate"] is False and NO_UNBIASED in shown["design"]["note"]
    share = shown["methods"]["gold"]["ppi"]["label_share"]
    assert share["estimate"] is None and NO_UNBIASED in share["reason"]
    assert shown["methods"]["gold"]["calibration"]["n"] == 6  # still described: the labelled passages


def test_a_partly_labelled_sample_leaves_query_measures_out_with_the_reason(labelled):
    _run, path, store, items, _person = labelled
    store.create_sample("small", pd.DataFrame(items, columns=["query_id", "passage_id", "rank"]), 8, 11, "tester")
    report = trust_report(path, store)
    assert report.design.strata[0].sampled == 8  # the labels of the newest sample only
    assert report.methods["gold"].estimates["ppi"]["label_share"].n_human == 8
    assert "label whole queries" in report.methods["gold"].estimates["ppi"][f"Hit@{K}"].reason
    assert any("outside the uniform sample" in note for note in report.notes)
    planned = trust_report(path, store, plan_size=5, plan_method="gold").plan
    assert planned["method"] == "gold" and planned["size"] == 5
    sampled = set(zip(store.latest_sample("small").items["query_id"], store.latest_sample("small").items["passage_id"]))
    assert not sampled & {(i["query_id"], i["passage_id"]) for i in planned["items"]}  # the sample's are labelled


def test_the_plan_adds_items_by_stratum_and_its_design_is_used(labelled):
    _run, path, store, items, _person = labelled
    store.create_sample("small", pd.DataFrame(items, columns=["query_id", "passage_id", "rank"]), 12, 5, "tester")
    inputs = read_inputs(path, store)
    design = design_of(store, "small", len(inputs.population), None)
    plan = plan_next(inputs, design, "erag:em", budget=8, seed=1)
    assert len(plan.items) == 8 and plan.allocation["add"].sum() == 8
    labelled_now = {(q, p) for q, p in zip(inputs.human["query_id"], inputs.human["passage_id"])}
    sampled_now = {k for k in design.item_strata if k in labelled_now}
    assert not sampled_now & set(zip(plan.items["query_id"], plan.items["passage_id"]))  # new items only
    assert sum(s.population for s in plan.design.strata) == 30
    assert sum(s.sampled for s in plan.design.strata) == 20
    report = build_report(inputs, plan.design, population_strata=plan.population_strata)
    assert report.design.plan == "stratified" and report.n_human == 20
    # stratified human-only estimate by hand: sum_h N_h / N * mean of the stratum's labels
    human = dict(zip(zip(inputs.human["query_id"], inputs.human["passage_id"]), inputs.human["label"]))
    expected = 0.0
    for stratum in plan.design.strata:
        values = [human[k] for k, s in plan.design.item_strata.items() if s == stratum.name]
        expected += stratum.population / 30 * np.mean(values) if stratum.population else 0.0
    assert all(s.sampled >= 2 for s in report.design.strata)  # the plan gives every stratum a variance
    assert report.methods["gold"].estimates["human_only"]["label_share"].estimate == pytest.approx(expected)


def test_trust_json_has_the_documented_shape(labelled, capsys):
    _run, path, store, _items, _person = labelled
    assert main(["trust", str(path), "--json", "--annotations", str(store.path)]) == 0
    def no_nan(token):
        raise AssertionError(f"{token} in the JSON: not valid JSON")

    shown = json.loads(capsys.readouterr().out, parse_constant=no_nan)
    assert shown["run"] == "small" and shown["k"] == K and shown["design"]["plan"] == "uniform"
    method = shown["methods"]["erag:em"]
    assert set(method) >= {"kappa", "ppi", "ppi_plus_plus", "human_only", "calibration"}
    assert set(method["ppi"]["label_share"]) >= {"estimate", "low", "high", "n_human", "n_auto"}
    assert method["ppi"]["label_share"]["n_human"] == 30 and method["ppi"]["label_share"]["n_auto"] == 30
    assert shown["plan"]["method"] == "erag:em" and shown["plan"]["size"] == 0  # every passage is labelled
    assert main(["trust", str(path), "--annotations", str(store.path)]) == 0
    text = capsys.readouterr().out
    assert "sampling design: uniform" in text and "calibration against people" in text


def test_per_run_agreement_orders_the_annotated_runs_of_the_folder(tmp_path):
    """Three runs of the same questions whose erag:em labels differ, each with human labels on 10 passages: the
    per-run tau is scipy's Kendall tau-b between the people's and the method's P@k over the three runs."""
    import dataclasses

    from scipy.stats import kendalltau

    from rageval.store import Label, write_run

    base = build_small_run()
    store = AnnotationStore(tmp_path / "annotations.sqlite")
    items = [(r.query_id, p.passage_id) for r in base.rankings for p in r.passages]
    people, method = [], []
    for name, erag_value, relevant in (("a", None, 4), ("b", 0.0, 1), ("c", 1.0, 9)):
        labels = base.labels if erag_value is None else [
            x if x.method != "erag:em" else Label(x.method, x.query_id, x.passage_id, erag_value) for x in base.labels]
        write_run(dataclasses.replace(base, labels=labels), tmp_path / f"{name}.sqlite")
        store.save_passage_labels(name, [(q, p, int(i < relevant), "ann") for i, (q, p) in enumerate(items[:10])])
        people.append(relevant / 10)
        erag = [x.value for x in labels if x.method == "erag:em" and (x.query_id, x.passage_id) in set(items)]
        method.append(sum(v >= 0.5 for v in erag) / len(items))
    report = trust_report(tmp_path / "a.sqlite", store, methods=["erag:em", "gold"])
    assert set(report.runs_compared) == {"b", "c"}
    agreement = report.methods["erag:em"].per_run
    assert agreement.n == 3
    assert agreement.tau == pytest.approx(kendalltau(people, method, variant="b").statistic)
    assert "the method's values are the same" in report.methods["gold"].per_run.reason  # gold is the same in all


def test_a_sample_of_whole_queries_gives_every_measure_as_a_query_mean(labelled):
    """A design whose items are queries: 4 of the 6 queries sampled, all their passages labelled. Every measure is
    a mean over those queries, and PPI equals ppi-python's on the per-query values built here."""
    from rageval.trust.report import query_sample_design

    run, path, store, items, person = labelled
    inputs = read_inputs(path, store)
    chosen = ["nq:0", "nq:2", "nq:3", "nq:5"]
    report = build_report(inputs, query_sample_design(chosen, 6, "test: 4 queries"))
    assert report.design.strata[0].sampled == 4 and report.design.strata[0].population == 6
    frame = pd.DataFrame({"query": [q for q, _, _ in items], "y": person,
                          "f": method_values(run, items, "erag:em")})
    per_query = frame.groupby("query", sort=False).agg(y=("y", "sum"), f=("f", "sum"), n=("y", "size"))
    mean_size = per_query["n"].mean()
    y = (per_query.loc[chosen, "y"] / mean_size).to_numpy(float)
    f = (per_query.loc[chosen, "f"] / mean_size).to_numpy(float)
    f_all = (per_query["f"] / mean_size).to_numpy(float)
    ours = report.methods["erag:em"].estimates
    assert ours["ppi"]["label_share"].estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, f_all, lam=1)[0]))
    low, high = ppi_mean_ci(y, f, f_all, alpha=0.05, lam=1)
    # ppi-python's interval starts below 0 here: one rule (BOUNDS_RULE) sets it to 0, in the table, chart and JSON
    assert (ours["ppi"]["label_share"].low, ours["ppi"]["label_share"].high) == pytest.approx(
        (max(float(low[0]), 0.0), min(float(high[0]), 1.0)))
    assert ours["ppi"]["label_share"].clipped == (float(low[0]) < 0 or float(high[0]) > 1)
    hits = (frame.groupby("query", sort=False)["y"].max()).loc[chosen]
    assert ours["human_only"][f"Hit@{K}"].estimate == pytest.approx(hits.mean())
    assert ours["ppi"][f"Hit@{K}"].n_human == 4 and ours["ppi"][f"Hit@{K}"].n_auto == 6
