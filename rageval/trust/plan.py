"""Which passages to label next so that the prediction-powered interval narrows most.

The run's retrieved passages are split into strata by the automatic labels: the target method's label (0 or 1) and
whether the label methods agree on the passage (all the same, or split). Within a stratum the people's label varies
around a share ``p_h``; the stratified estimate's variance is ``sum_h (N_h / N)^2 S_h^2 / n_h`` with
``S_h^2 = p_h (1 - p_h)`` (the variance of the human label minus the stratum's constant automatic label), which for
a total of ``n`` labels is smallest with Neyman's allocation (Neyman 1934; Cochran, *Sampling Techniques*, 5.5)::

    n_h = n * N_h S_h / sum_g N_g S_g

``p_h`` is estimated from the labels the stratum already has, smoothed as ``(relevant + 1) / (labelled + 2)`` so a
stratum with no label (or no disagreement yet) still gets some; every stratum first gets the 2 labels a variance
needs (the stratified estimate is undefined without them). The plan adds ``budget`` labels: each stratum gets
what it lacks of its Neyman share (largest remainders, at most its unlabelled passages), drawn uniformly at random
(seeded) from its unlabelled passages. Because the labels a uniform sample put in a stratum are a uniform sample of
it, and the new ones are drawn uniformly from the rest, each stratum's labelled passages remain a uniform sample of
it: the result is a stratified design (:class:`rageval.stats.design.SamplingDesign`) with weights
``N_h / n_h``, which :func:`rageval.trust.report.build_report` takes with the strata of every passage.

That holds for labels of a uniform sample only. A stratified queue's labels are a uniform sample of each of the
queue's strata, not of the plan's (a queue stratified by another method cuts across them, with other inclusion
probabilities in each part), so under a stratified design the plan's strata are crossed with the design's
(``<queue stratum> · <plan stratum>``): within each cell the labels are again a uniform sample, and the plan and
its design stay unbiased. Without the stratum of every passage, no label of a stratified design counts.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rageval.stats.design import STRATIFIED, SamplingDesign, Stratum
from rageval.trust.inputs import TrustInputs
from rageval.trust.ppi import MIN_LABELS_PER_STRATUM

if TYPE_CHECKING:
    import pandas as pd


#: Joins a stratified design's stratum and the plan's own in a cell's name (``c=1 · a=0, methods agree``).
CELL_JOIN = " · "


def strata_rule(names: Iterable[object]) -> str:
    """What the plan's strata are, in words, from their names: the design's strata crossed with the plan's own
    (cells), or the plan's own."""
    crossed = any(CELL_JOIN in str(name) for name in names)
    return ("the design's stratum x the method's label x the methods' agreement" if crossed
            else "the method's label x the methods' agreement")


@dataclass(frozen=True)
class Plan:
    """The next ``items`` to label (query_id, passage_id, rank, stratum, in labelling order), the ``allocation``
    per stratum (stratum, population, labelled, share, sd, target, add), the design once they are labelled, and
    the stratum of every passage (what the report needs to use that design)."""

    method: str
    items: pd.DataFrame
    allocation: pd.DataFrame
    design: SamplingDesign
    population_strata: Mapping[Hashable, str]


def stratum_names(inputs: TrustInputs, method: str) -> list[str]:
    """The stratum of every passage of ``inputs.population``: ``METHOD=0|1, methods agree|split``."""
    labels = inputs.auto.to_numpy()
    split = (labels.min(axis=1) != labels.max(axis=1)) if labels.shape[1] > 1 else [False] * len(labels)
    own = inputs.auto[method].to_numpy()
    return [f"{method}={int(v)}, methods {'split' if s else 'agree'}" for v, s in zip(own, split)]


def _largest_remainders(wanted: list[float], budget: int, caps: list[int]) -> list[int]:
    """Integers summing to ``min(budget, sum(caps))`` near ``wanted`` (scaled to the budget), each at most its cap."""
    total = sum(wanted)
    room = min(budget, sum(caps))
    if total <= 0:
        wanted = [float(c) for c in caps]
        total = sum(wanted) or 1.0
    shares = [w * room / total for w in wanted]
    counts = [min(math.floor(s), c) for s, c in zip(shares, caps)]
    order = sorted(range(len(shares)), key=lambda i: shares[i] - math.floor(shares[i]), reverse=True)
    while sum(counts) < room:
        progressed = False
        for i in order:
            if sum(counts) >= room:
                break
            if counts[i] < caps[i]:
                counts[i] += 1
                progressed = True
        if not progressed:
            break
    return counts


def plan_next(inputs: TrustInputs, design: SamplingDesign | None, method: str, budget: int, seed: int = 0, *,
              population_strata: Mapping[Hashable, str] | None = None) -> Plan:
    """The plan (module docstring) for ``method``'s estimates: ``budget`` more passages of ``inputs``' run, given
    the labels already in ``design`` (None or a convenience design: none count). A stratified ``design`` needs
    ``population_strata``, the design's stratum of every passage (the report's), to cross its strata with the
    plan's."""
    import numpy as np
    import pandas as pd

    if budget < 1:
        raise ValueError(f"a plan needs at least 1 label to add, got {budget}")
    if method not in inputs.auto.columns:
        raise ValueError(f"no label method {method!r} among {', '.join(inputs.auto.columns)}")
    population = inputs.population
    keys = list(zip(population["query_id"], population["passage_id"]))
    names = np.array(stratum_names(inputs, method), dtype=object)
    human = {(q, p): int(v) for q, p, v in zip(inputs.human["query_id"], inputs.human["passage_id"],
                                                 inputs.human["label"])}
    in_design: Mapping[Hashable, str] = (design.item_strata if design is not None and
                                         design.supports_unbiased_estimate else {})
    crossed = design is not None and design.plan == STRATIFIED and bool(in_design)
    if crossed and population_strata is None:
        in_design = {}  # the cells cannot be told: the design's labels cannot count (the report refuses them too)
    elif crossed and population_strata is not None:
        names = np.array([f"{population_strata.get(key, '?')}{CELL_JOIN}{name}" for key, name in zip(keys, names)],
                         dtype=object)
    sampled = np.array([key in human and key in in_design for key in keys], dtype=np.bool_)
    values = np.array([human.get(key, 0) for key in keys], dtype=float)
    strata = sorted(set(names))
    rows = []
    for name in strata:
        in_stratum = names == name
        size, labelled = int(in_stratum.sum()), int((in_stratum & sampled).sum())
        share = (values[in_stratum & sampled].sum() + 1) / (labelled + 2)
        rows.append({"stratum": name, "population": size, "labelled": labelled, "share": share,
                     "sd": math.sqrt(share * (1 - share))})
    allocation = pd.DataFrame(rows)
    total = int(sampled.sum()) + budget
    weight = allocation["population"] * allocation["sd"]
    allocation["target"] = total * weight / weight.sum()
    caps = [int(p - n) for p, n in zip(allocation["population"], allocation["labelled"])]
    # first what each stratum needs for a variance at all (2 labels, MIN_LABELS_PER_STRATUM), then Neyman's shares
    needed = [min(max(0, min(MIN_LABELS_PER_STRATUM, int(p)) - int(n)), c)
              for p, n, c in zip(allocation["population"], allocation["labelled"], caps)]
    needed = _largest_remainders([float(x) for x in needed], budget, needed) if sum(needed) > budget else needed
    lacking = [max(0.0, t - n - x) for t, n, x in zip(allocation["target"], allocation["labelled"], needed)]
    rest = _largest_remainders(lacking, budget - sum(needed), [c - x for c, x in zip(caps, needed)])
    allocation["add"] = [x + r for x, r in zip(needed, rest)]
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for name, add in zip(allocation["stratum"], allocation["add"]):
        if add:
            pool = np.flatnonzero((names == name) & np.logical_not(sampled))
            chosen.extend(int(i) for i in rng.choice(pool, size=int(add), replace=False))
    items = population.iloc[sorted(chosen, key=lambda i: (str(names[i]), keys[i]))].copy()
    items["stratum"] = names[items.index.to_numpy()]
    item_strata: dict[Hashable, str] = {key: str(names[i]) for i, key in enumerate(keys) if sampled[i]}
    item_strata.update({keys[i]: str(names[i]) for i in chosen})
    within = " within the design's strata" if crossed and population_strata is not None else ""
    design_after = SamplingDesign(
        STRATIFIED, tuple(Stratum(r.stratum, int(r.population), int(r.labelled + r.add))
                          for r in allocation.itertuples()), item_strata,
        f"Neyman allocation by {method}'s label and the methods' agreement{within} (seed {seed})")
    plan_strata: dict[Hashable, str] = {key: str(name) for key, name in zip(keys, names)}
    return Plan(method, items.reset_index(drop=True), allocation, design_after, plan_strata)
