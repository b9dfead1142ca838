"""The sampling plan: Neyman allocation over strata of the method's label x the methods' agreement, computed here
by hand (n_h proportional to N_h * sqrt(p_h (1 - p_h)), p_h smoothed), new items drawn only from unlabelled
passages of their stratum, and the design it returns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rageval.stats.design import UNIFORM, SamplingDesign, Stratum
from rageval.trust.inputs import TrustInputs
from rageval.trust.plan import plan_next, stratum_names


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
