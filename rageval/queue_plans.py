"""How an annotation queue's items are drawn: the sampling plans (uniform, stratified by a label method, oversampling
where the label methods disagree), :class:`QueuePlan`, the strata and their allocation, the draw itself
(:func:`draw_items`, seeded) and the assignment of items to annotators with overlap. Pure functions on frames: the
queues themselves are kept by :class:`rageval.queues.QueueStore`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rageval.agreement import method_labels_of
from rageval.store.annotations import ITEM_COLUMNS, KINDS, normalise_annotator

if TYPE_CHECKING:
    import pandas as pd

UNIFORM_PLAN, STRATIFIED_PLAN, DISAGREEMENT_PLAN = "uniform", "stratified", "disagreement"
PLANS = (UNIFORM_PLAN, STRATIFIED_PLAN, DISAGREEMENT_PLAN)
EQUAL, PROPORTIONAL = "equal", "proportional"
ALLOCATIONS = (EQUAL, PROPORTIONAL)
#: How much likelier an item where one method dissents is to be drawn than one where all methods agree.
DEFAULT_OVERSAMPLE = 4.0
#: The one stratum of a uniform queue.
ALL_ITEMS = "all items"


@dataclass(frozen=True)
class QueuePlan:
    """How a queue's items are drawn: ``plan`` (:data:`PLANS`), ``size`` items, ``seed``; for ``stratified`` the
    label method to stratify by and the ``allocation`` (:data:`ALLOCATIONS`); for ``disagreement`` the
    ``oversample`` factor."""

    plan: str
    size: int
    seed: int = 0
    stratify_by: str = ""
    allocation: str = PROPORTIONAL
    oversample: float = DEFAULT_OVERSAMPLE

    def __post_init__(self) -> None:
        if self.plan not in PLANS:
            raise ValueError(f"unknown sampling plan {self.plan!r}; expected one of {', '.join(PLANS)}")
        if int(self.size) < 1:
            raise ValueError(f"a queue needs at least 1 item, got size {self.size}")
        if self.plan == STRATIFIED_PLAN and not self.stratify_by:
            raise ValueError("a stratified queue needs the label method to stratify by")
        if self.allocation not in ALLOCATIONS:
            raise ValueError(f"unknown allocation {self.allocation!r}; expected one of {', '.join(ALLOCATIONS)}")
        if not self.oversample >= 1:
            raise ValueError(f"oversample must be at least 1 (1: no oversampling), got {self.oversample}")

    def settings(self) -> dict:
        """What the queue's row stores (JSON): the parameters this plan uses."""
        if self.plan == STRATIFIED_PLAN:
            return {"stratify_by": self.stratify_by, "allocation": self.allocation}
        if self.plan == DISAGREEMENT_PLAN:
            return {"oversample": float(self.oversample)}
        return {}

    def describe(self) -> str:
        """``stratified by erag:em (proportional), seed 3``."""
        if self.plan == STRATIFIED_PLAN:
            how = f"stratified by {self.stratify_by} ({self.allocation})"
        elif self.plan == DISAGREEMENT_PLAN:
            how = f"disagreement of the label methods (oversampled x{self.oversample:g}, stratified)"
        else:
            how = "uniform random"
        return f"{how}, seed {self.seed}"


def canonical_items(population: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The population's distinct items in a canonical order (passages: query, rank, passage; statements: scenario,
    query, answer, statement), so the same population and seed always give the same queue."""
    columns = list(ITEM_COLUMNS[kind])
    if kind == "passage":
        frame = population[[*columns, "rank"]] if "rank" in population.columns else population[columns].assign(rank=0)
        frame = frame.drop_duplicates(columns).sort_values(["query_id", "rank", "passage_id"], kind="stable")
    else:
        frame = population[columns].drop_duplicates().sort_values(columns, kind="stable")
    frame = frame.reset_index(drop=True)
    for column in columns:
        frame[column] = frame[column].astype("int64") if column == "statement" else frame[column].astype(str)
    return frame


def stratum_of_label(method: str, label: float | None) -> str:
    """A stratified queue's stratum name: ``erag:em=1``, ``erag:em=0``, ``erag:em unlabelled``."""
    return f"{method} unlabelled" if label is None or label != label else f"{method}={int(label)}"


def dissent_stratum(dissenting: int) -> str:
    """A disagreement queue's stratum name for ``dissenting`` methods against the majority."""
    if dissenting == 0:
        return "methods agree"
    return "1 method dissents" if dissenting == 1 else f"{dissenting} methods dissent"


def compute_strata(items: pd.DataFrame, method_labels: pd.DataFrame, plan: QueuePlan, kind: str
                   ) -> tuple[list[str], dict[str, float]]:
    """The stratum of each of ``items`` (:func:`canonical_items`) under ``plan``, and each stratum's relative
    sampling rate (1 for uniform and stratified; ``1 + (oversample - 1) d`` for the disagreement stratum ``d``).
    ``method_labels``: long format (method, item columns, value), a run's automatic labels; a value counts as 1
    from :data:`rageval.annotations.USEFUL_THRESHOLD` (:func:`rageval.agreement.method_labels_of`)."""
    columns = list(ITEM_COLUMNS[kind])
    keys = list(zip(*(items[c] for c in columns)))
    if plan.plan == UNIFORM_PLAN:
        return [ALL_ITEMS] * len(items), {ALL_ITEMS: 1.0}
    if plan.plan == STRATIFIED_PLAN:
        of_method = method_labels[method_labels["method"] == plan.stratify_by]
        if of_method.empty:
            known = ", ".join(sorted(set(method_labels["method"]))) or "none"
            raise ValueError(f"the run has no label method {plan.stratify_by!r} to stratify by (its methods: {known})")
        labelled = method_labels_of(items, of_method, kind)
        found = dict(zip(zip(*(labelled[c] for c in columns)), labelled["method_label"]))
        names = [stratum_of_label(plan.stratify_by, found.get(key)) for key in keys]
        return names, dict.fromkeys(sorted(set(names)), 1.0)
    labelled = method_labels_of(items, method_labels, kind)
    if labelled.empty:
        raise ValueError("the run has no automatic labels on these items, so no disagreement to sample by")
    votes = labelled.groupby(columns)["method_label"].agg(["sum", "count"])
    dissent = {key if isinstance(key, tuple) else (key,): int(min(s, c - s))
               for key, s, c in zip(votes.index, votes["sum"], votes["count"])}
    levels = [dissent.get(key, 0) for key in keys]
    names = [dissent_stratum(d) for d in levels]
    rates = {dissent_stratum(d): 1.0 + (plan.oversample - 1.0) * d for d in sorted(set(levels))}
    return names, rates


def allocate(populations: dict[str, int], shares: dict[str, float], size: int) -> dict[str, int]:
    """How many items to draw from each stratum: ``size`` split in proportion to ``shares`` (each target capped at
    the stratum's population, the excess shared among the others), rounded by largest remainder (ties: stratum
    name), and at least 1 item per non-empty stratum, so every stratum keeps a positive sampling rate. ``size`` is
    at most the total population; a ValueError when it is below the number of non-empty strata."""
    strata = sorted(name for name, count in populations.items() if count > 0)
    total = sum(populations[name] for name in strata)
    size = min(int(size), total)
    if size < len(strata):
        raise ValueError(f"a sample of {size} cannot keep an item in each of the {len(strata)} strata "
                         f"({', '.join(strata)}): every stratum needs a positive sampling rate for the weights to "
                         "be unbiased; draw at least that many")
    target: dict[str, float] = {}
    open_strata = list(strata)
    left = float(size)
    while open_strata:  # water-filling: cap the strata whose share exceeds their population
        weight = sum(shares[name] for name in open_strata)
        scale = left / weight if weight > 0 else 0.0
        capped = [name for name in open_strata if scale * shares[name] >= populations[name]]
        if not capped:
            for name in open_strata:
                target[name] = scale * shares[name]
            break
        for name in capped:
            target[name] = float(populations[name])
            left -= populations[name]
            open_strata.remove(name)
    counts = {name: min(populations[name], max(1, math.floor(target[name] + 1e-9))) for name in strata}
    while sum(counts.values()) < size:
        name = min((n for n in strata if counts[n] < populations[n]), key=lambda n: (counts[n] - target[n], n))
        counts[name] += 1
    while sum(counts.values()) > size:
        name = min((n for n in strata if counts[n] > 1), key=lambda n: (target[n] - counts[n], n))
        counts[name] -= 1
    return counts


def draw_items(population: pd.DataFrame, method_labels: pd.DataFrame, plan: QueuePlan, kind: str
               ) -> tuple[pd.DataFrame, dict[str, tuple[int, int]]]:
    """The queue's items under ``plan``: position (the labelling order: grouped by question), item columns,
    stratum; and each stratum's (population, sampled). Within a stratum the items drawn are the first of a seeded
    permutation (``numpy.random.default_rng(seed)``, strata in name order), so the draw is uniform there."""
    import numpy as np
    import pandas as pd

    if kind not in KINDS:
        raise ValueError(f"unknown item kind {kind!r}; expected one of {', '.join(KINDS)}")
    items = canonical_items(population, kind)
    if items.empty:
        raise ValueError("the run has no items of this kind to draw a queue from")
    names, rates = compute_strata(items, method_labels, plan, kind)
    items = items.assign(stratum=names)
    populations = items["stratum"].value_counts().to_dict()
    equal = plan.plan == STRATIFIED_PLAN and plan.allocation == EQUAL
    shares = {name: rates[name] * (1.0 if equal else populations[name]) for name in populations}
    counts = allocate(populations, shares, plan.size)
    rng = np.random.default_rng(int(plan.seed))
    chosen = []
    for name in sorted(counts):
        members = items[items["stratum"] == name]
        chosen.append(members.iloc[rng.permutation(len(members))[:counts[name]]])
    drawn = pd.concat(chosen).reset_index(drop=True)
    drawn = drawn.iloc[rng.permutation(len(drawn))].reset_index(drop=True)  # questions in a random order
    first_reached = {q: i for i, q in reversed(list(enumerate(drawn["query_id"])))}
    order = ["_query_order", "rank", "passage_id"] if kind == "passage" else ["_query_order", *ITEM_COLUMNS[kind]]
    drawn = drawn.assign(_query_order=drawn["query_id"].map(first_reached)).sort_values(order, kind="stable")
    drawn = drawn[[*ITEM_COLUMNS[kind], "stratum"]].reset_index(drop=True)
    drawn.insert(0, "position", range(len(drawn)))
    return drawn, {name: (int(populations[name]), int(counts[name])) for name in sorted(populations)}


def assign_annotators(n_items: int, annotators: Sequence[str], overlap: int, seed: int = 0) -> list[list[str]]:
    """The annotators of each of ``n_items`` items: ``overlap`` distinct ones each, balanced (each annotator gets
    ``floor`` or ``ceil`` of ``n_items x overlap / len(annotators)`` items) and deterministic (see the module)."""
    import numpy as np

    names = sorted({normalise_annotator(a) for a in annotators if normalise_annotator(a)})
    if overlap < 1:
        raise ValueError(f"the overlap must be at least 1 (annotators per item), got {overlap}")
    if overlap > len(names):
        raise ValueError(f"an overlap of {overlap} needs at least {overlap} distinct annotators, got {len(names)}"
                         + (f" ({', '.join(names)})" if names else ""))
    order = {name: int(r) for name, r in zip(names, np.random.default_rng([int(seed), 1]).permutation(len(names)))}
    load = dict.fromkeys(names, 0)
    together: dict[frozenset[str], int] = {}
    assigned = []
    for _ in range(n_items):
        chosen: list[str] = []
        for _ in range(overlap):
            candidate = min((n for n in names if n not in chosen), key=lambda n: (
                load[n], sum(together.get(frozenset((n, c)), 0) for c in chosen), order[n]))
            chosen.append(candidate)
        for i, first in enumerate(chosen):
            load[first] += 1
            for second in chosen[i + 1:]:
                together[frozenset((first, second))] = together.get(frozenset((first, second)), 0) + 1
        assigned.append(sorted(chosen))
    return assigned
