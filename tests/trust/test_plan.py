"""The sampling plan: Neyman allocation over strata of the method's label x the methods' agreement, computed here
by hand (n_h proportional to N_h * sqrt(p_h (1 - p_h)), p_h smoothed), new items drawn only from unlabelled
passages of their stratum, and the design it returns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rageval.stats.design import STRATIFIED, UNIFORM, SamplingDesign, Stratum
from rageval.trust.inputs import TrustInputs
from rageval.trust.plan import plan_next, strata_rule, stratum_names


def inputs(seed: int = 0, n: int = 2000, labelled: int = 200):
    rng = np.random.default_rng(seed)
    population = pd.DataFrame({"query_id": [f"q{i // 10}" for i in range(n)],
                               "passage_id": [f"p{i}" for i in range(n)], "rank": [i % 10 + 1 for i in range(n)]})
    a = (rng.random(n) < 0.2).astype(int)
    b = np.where(rng.random(n) < 0.8, a, 1 - a)
    truth = np.where(rng.random(n) < 0.85, a, 1 - a)
    chosen = rng.choice(n, size=labelled, replace=False)
    human = pd.DataFrame({"query_id": population["query_id"].iloc[chosen].to_numpy(),
                          "passage_id": population["passage_id"].iloc[chosen].to_numpy(), "label": truth[chosen]})
    keys = list(zip(human["query_id"], human["passage_id"]))
    design = SamplingDesign(UNIFORM, (Stratum("all", n, labelled),), dict.fromkeys(keys, "all"), "test")
    return TrustInputs("r", 10, population, pd.DataFrame({"a": a, "b": b}), human, {}, []), design


def test_neyman_allocation_by_hand():
    data, design = inputs()
    plan = plan_next(data, design, "a", budget=150, seed=3)
    names = np.array(stratum_names(data, "a"))
    labelled = dict(zip(zip(data.human["query_id"], data.human["passage_id"]), data.human["label"]))
    keys = list(zip(data.population["query_id"], data.population["passage_id"]))
    total = len(labelled) + 150
    rows = {}
    for name in sorted(set(names)):
        members = [k for k, s in zip(keys, names) if s == name]
        ys = [labelled[k] for k in members if k in labelled]
        p = (sum(ys) + 1) / (len(ys) + 2)
        rows[name] = (len(members), len(ys), len(members) * math.sqrt(p * (1 - p)))
    weight = sum(w for _, _, w in rows.values())
    allocation = plan.allocation.set_index("stratum")
    for name, (size, n_h, w) in rows.items():
        assert allocation.at[name, "population"] == size and allocation.at[name, "labelled"] == n_h
        assert allocation.at[name, "target"] == pytest.approx(total * w / weight)
        # every stratum short of its Neyman share gets about the shortfall (rounding, and the budget's scaling)
        assert allocation.at[name, "add"] >= 0
    assert allocation["add"].sum() == 150 and len(plan.items) == 150
    new = set(zip(plan.items["query_id"], plan.items["passage_id"]))
    assert not new & set(labelled)  # only unlabelled passages
    stratum_of = dict(zip(keys, names))
    assert all(stratum_of[k] == s for k, s in zip(zip(plan.items["query_id"], plan.items["passage_id"]),
                                                  plan.items["stratum"]))
    # the design once labelled: every stratum's labelled + added, weights N_h / n_h
    for stratum in plan.design.strata:
        assert stratum.sampled == allocation.at[stratum.name, "labelled"] + allocation.at[stratum.name, "add"]
    assert plan.design.plan == "stratified" and len(plan.design.item_strata) == 200 + 150


def test_the_plan_favours_the_strata_where_people_and_method_disagree():
    data, design = inputs(seed=1)
    plan = plan_next(data, design, "a", budget=100, seed=0)
    allocation = plan.allocation.set_index("stratum")
    # relative to its size, the split stratum (methods disagree: people's label is least predictable) gets more
    per_item = allocation["target"] / allocation["population"]
    assert per_item["a=0, methods split"] > per_item["a=0, methods agree"]


def stratified_queue(seed: int, n: int = 1200):
    """Three methods; a queue stratified by method ``c`` that oversamples c=1 (60 of its passages against 40 of
    c=0), and people whose labels follow ``c``: the plan's own strata (by ``a`` and the methods' agreement) cut
    across the queue's, in which the labels are uniform samples with very different inclusion probabilities."""
    rng = np.random.default_rng(seed)
    population = pd.DataFrame({"query_id": [f"q{i // 10}" for i in range(n)],
                               "passage_id": [f"p{i}" for i in range(n)], "rank": [i % 10 + 1 for i in range(n)]})
    structure = np.random.default_rng(99)  # the run is the same in every draw; only the queue's sample varies
    a = (structure.random(n) < 0.5).astype(int)
    b = np.where(structure.random(n) < 0.7, a, 1 - a)
    c = (structure.random(n) < 0.2).astype(int)
    truth = np.where(structure.random(n) < 0.9, c, 1 - c)
    keys = list(zip(population["query_id"], population["passage_id"]))
    queue_stratum = {key: f"c={int(v)}" for key, v in zip(keys, c)}
    chosen = [*rng.choice(np.flatnonzero(c == 1), size=60, replace=False),
              *rng.choice(np.flatnonzero(c == 0), size=40, replace=False)]
    human = pd.DataFrame({"query_id": population["query_id"].iloc[chosen].to_numpy(),
                          "passage_id": population["passage_id"].iloc[chosen].to_numpy(), "label": truth[chosen]})
    design = SamplingDesign(STRATIFIED, (Stratum("c=1", int(c.sum()), 60), Stratum("c=0", int(n - c.sum()), 40)),
                            {keys[i]: queue_stratum[keys[i]] for i in chosen}, "queue 1 'by c'")
    inputs = TrustInputs("r", 10, population, pd.DataFrame({"a": a, "b": b, "c": c}), human, {}, [])
    return inputs, design, queue_stratum, dict(zip(keys, truth.tolist()))


def test_under_a_stratified_queue_the_plan_crosses_its_strata_with_the_queues():
    data, design, queue_stratum, _ = stratified_queue(0)
    plan = plan_next(data, design, "a", budget=40, seed=0, population_strata=queue_stratum)
    keys = list(zip(data.population["query_id"], data.population["passage_id"]))
    own = dict(zip(keys, stratum_names(data, "a")))
    labelled = set(zip(data.human["query_id"], data.human["passage_id"]))
    for row in plan.allocation.itertuples():  # each cell lies in one queue stratum, its counts those of the cell
        members = [k for k in keys if f"{queue_stratum[k]} · {own[k]}" == row.stratum]
        assert row.population == len(members) and row.labelled == len(labelled.intersection(members))
    for item in plan.items.itertuples():
        key = (item.query_id, item.passage_id)
        assert item.stratum == f"{queue_stratum[key]} · {own[key]}"
    assert "within the design's strata" in plan.design.source
    assert strata_rule(plan.allocation["stratum"]).startswith("the design's stratum x")  # what the pages say
    uniform_data, uniform_design = inputs()
    assert strata_rule(plan_next(uniform_data, uniform_design, "a", budget=5).allocation["stratum"]) == \
        "the method's label x the methods' agreement"
    # without the stratum of every passage, a stratified design's labels cannot be placed in cells: none count
    assert plan_next(data, design, "a", budget=40, seed=0).allocation["labelled"].sum() == 0


def test_the_plans_design_keeps_a_stratified_queues_labels_unbiased():
    """The whole loop, 200 times: a queue stratified by c (c=1 oversampled), the plan's 40 next items labelled,
    and the human-only share under the plan's design (build_report, the plan's stratum of every passage). Crossed
    with the queue's strata, its mean is the true share; weighing the queue's labels as a uniform sample of the
    plan's own strata (the old rule) leans towards c=1, which the queue oversampled."""
    from rageval.trust.report import HUMAN_ONLY, LABEL_SHARE, build_report

    estimates, true_share = [], 0.0
    for seed in range(200):
        data, design, queue_stratum, truth = stratified_queue(seed)
        true_share = float(np.mean(list(truth.values())))
        plan = plan_next(data, design, "a", budget=40, seed=seed, population_strata=queue_stratum)
        new = plan.items[["query_id", "passage_id"]].assign(
            label=[truth[key] for key in zip(plan.items["query_id"], plan.items["passage_id"])])
        after = TrustInputs(data.run, data.k, data.population, data.auto[["a"]],
                            pd.concat([data.human, new], ignore_index=True), {}, [])
        report = build_report(after, plan.design, population_strata=plan.population_strata)
        estimates.append(report.methods["a"].estimates[HUMAN_ONLY][LABEL_SHARE].estimate)
    assert abs(np.mean(estimates) - true_share) < 0.015, (np.mean(estimates), true_share)
