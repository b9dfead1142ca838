"""Everything ``rageval trust RUN`` and the dashboard say about how far a run's automatic labels can be trusted:
for each automatic label method, the prediction-powered estimates (PPI, PPI++) of each measure at the run's main
k beside the human-only one, and the method's calibration against people (:mod:`rageval.trust.calibration`).

**Items and labels.** The population is the run's retrieved passages (query, passage, rank). A method's label of a
passage is 1 when its stored value is at least :data:`rageval.annotations.USEFUL_THRESHOLD` (0.5: graded eRAG
labels are cut there), 0 otherwise, and 0 when the method stored none (qrels' reading; PPI stays valid for any
fixed labelling, a missing label only makes it less useful). The people's label of an item (:data:`LABEL_RULE`,
said in ``--json`` as ``human.label_rule``): in an annotation queue, its adjudicated label, else the majority of the
queue's own annotators of the item (:data:`rageval.queues.QUEUE_LABEL_RULE`); outside a queue, the majority of
every annotator's latest 0/1 label; with ``annotator``, that person's label. A tie is unresolved: listed
(``human.unresolved``), never counted as 0. "unsure" and "skipped" are left out (treated as missing at random).

**Measures at the main k** (:data:`MEASURES`), every one in [0, 1]:

- ``label_share``: the share of retrieved passages that are relevant (unit: the passage);
- ``P@k``: the mean over queries of the share of relevant passages among the top k. It is a passage mean in
  disguise, ``mean_q P@k = (top-k passages / (queries * k)) * share of relevant among top-k passages``, so it is
  estimated from passage labels (unit: the passage; any passage sample supports it);
- ``Hit@k`` and the Findings page's 2 x 2 cells (:func:`rageval.findings.compute_gold_answer_table`, with *gold
  retrieved* read as *a relevant passage in the top k*, by the method or by people, and *answer right* as the E2E
  score at k >= :data:`rageval.findings.RIGHT_THRESHOLD`; over the queries with an E2E score): per-query measures
  that are not linear in passage labels (unit: the query). Only queries whose top-k passages are all labelled
  count; under a uniform passage sample, when every query has the same number of top-k passages, those queries are
  a uniform sample of queries. A uniform sample of a few hundred passages rarely completes a query, so these are
  often "not available": label whole queries for them.

**Sampling design** (:class:`rageval.stats.design.SamplingDesign`): given by the caller, or an annotation queue's
(:func:`queue_design`: ``rageval trust --queue N``, else the run's newest passage queue with a decision; uniform, or
stratified with the stratum of every item, which PPI needs); else the run's newest shared sample of the
Annotate page (:class:`rageval.store.annotations.Sample`): uniform, its labelled items the human sample; else, when
labels exist but no sample, a convenience sample: reported as not supporting an unbiased estimate (no estimate;
the calibration is then only a description of the labelled items). Labels of items outside the design are left
out of the estimates.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rageval.errors import RagevalError
from rageval.findings import RIGHT_THRESHOLD
from rageval.stats.design import CONVENIENCE, STRATIFIED, UNIFORM, SamplingDesign, Stratum
from rageval.trust.calibration import Calibration, RankAgreement, calibrate, query_agreement, rank_agreement
from rageval.trust.inputs import LABEL_RULE, TrustInputs
from rageval.trust.plan import plan_next, strata_rule
from rageval.trust.ppi import (
    BOUNDS_RULE,
    CONFIDENCE,
    ESTIMATORS,
    HUMAN_ONLY,
    PPI,
    PPI_PLUS_PLUS,
    Estimate,
    StratumData,
    bounded,
    stratified_estimate,
    undefined,
)

if TYPE_CHECKING:
    import pandas as pd

    from rageval.annotations import AnnotationStore

LABEL_SHARE = "label_share"
ONE_ANNOTATOR_RULE = "one annotator's latest label"
NO_UNBIASED = "does not support an unbiased estimate"
#: The 2 x 2 cells, by key: (relevant passage in the top k, answer right).
CELLS = {"cell_hit_right": (True, True), "cell_hit_wrong": (True, False), "cell_miss_right": (False, True),
         "cell_miss_wrong": (False, False)}
#: What each measure key means, for the page and the CLI.
CELL_WORDS = {"cell_hit_right": "relevant retrieved, answer right",
              "cell_hit_wrong": "relevant retrieved, answer wrong",
              "cell_miss_right": "no relevant retrieved, answer right",
              "cell_miss_wrong": "no relevant retrieved, answer wrong"}


def measure_names(k: int) -> list[str]:
    """The measures of a report at ``k``, in display order."""
    return [LABEL_SHARE, f"P@{k}", f"Hit@{k}", *(f"{cell}@{k}" for cell in CELLS)]


@dataclass(frozen=True)
class MethodTrust:
    """One automatic method: its automatic value of each measure over every item (``auto``), the three estimates
    per measure (``estimates[estimator][measure]``), its calibration against people and its agreement per query
    and per run."""

    method: str
    auto: dict[str, float]
    estimates: dict[str, dict[str, Estimate]]
    calibration: Calibration
    per_query: RankAgreement
    per_run: RankAgreement

    def as_dict(self) -> dict:
        return {"kappa": _clean(self.calibration.kappa),
                "auto": {m: _clean(v) for m, v in self.auto.items()},
                **{name: {m: e.as_dict() for m, e in self.estimates[name].items()} for name in ESTIMATORS},
                "calibration": {**self.calibration.as_dict(), "per_passage_kappa": _clean(self.calibration.kappa),
                                "per_query": self.per_query.as_dict(), "per_run": self.per_run.as_dict()}}


@dataclass(frozen=True)
class TrustReport:
    """What :func:`trust_report` gathers for a run (``as_dict``: the ``rageval trust --json`` shape)."""

    run: str
    k: int
    design: SamplingDesign
    methods: dict[str, MethodTrust]
    n_items: int
    n_queries: int
    n_human: int  # human-labelled items the estimates use
    n_labelled: int  # every item of the run with a 0/1 human label (any design)
    annotators: tuple[str, ...]
    runs_compared: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    confidence: float = CONFIDENCE
    measures: tuple[str, ...] = field(default_factory=tuple)
    plan: dict[str, Any] | None = None  # the next items to label (plan_items), when asked for
    label_rule: str = LABEL_RULE
    unresolved: tuple[dict, ...] = ()  # ties: listed, not counted (TrustInputs.unresolved)
    adjudicated: int = 0  # items whose label is an adjudication

    @property
    def supports_estimate(self) -> bool:
        return self.design.supports_unbiased_estimate

    def as_dict(self) -> dict:
        design = {"plan": self.design.plan, "source": self.design.source,
                  "supports_unbiased_estimate": self.supports_estimate,
                  "strata": [{"name": s.name, "population": s.population, "sampled": s.sampled,
                              "weight": _clean(s.weight)} for s in self.design.strata]}
        if not self.supports_estimate:
            design["note"] = f"labels gathered without a random sample: {NO_UNBIASED}"
        return {"run": self.run, "k": self.k, "design": design, "confidence": self.confidence,
                "bounds_rule": BOUNDS_RULE,
                "measures": list(self.measures), "items": self.n_items, "queries": self.n_queries,
                "human": {"labels_used": self.n_human, "items_labelled": self.n_labelled,
                          "annotators": list(self.annotators), "label_rule": self.label_rule,
                          "adjudicated": self.adjudicated, "unresolved": list(self.unresolved)},
                "runs_compared": list(self.runs_compared), "notes": list(self.notes),
                "methods": {m: t.as_dict() for m, t in self.methods.items()},
                **({"plan": self.plan} if self.plan is not None else {})}


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


# --- the tables a report is computed from --------------------------------------------------------------------

def ranked_items(rankings: Mapping[str, Any]) -> pd.DataFrame:
    """query_id, passage_id, rank (1 first) of every retrieved passage of a run's rankings (a passage listed twice
    in a ranking counts once, at its first rank)."""
    import pandas as pd

    rows = [(query_id, passage_id, rank) for query_id, ranking in rankings.items()
            for rank, passage_id in enumerate(ranking.passage_ids, start=1)]
    frame = pd.DataFrame(rows, columns=["query_id", "passage_id", "rank"])
    return frame.drop_duplicates(["query_id", "passage_id"]).reset_index(drop=True)


def auto_labels(population: pd.DataFrame, labels: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Each method's 0/1 label of every item of ``population`` (module docstring), one column per method."""
    import numpy as np
    import pandas as pd

    from rageval.annotations import USEFUL_THRESHOLD

    keys = population[["query_id", "passage_id"]]
    columns = {}
    for method in methods:
        theirs = labels.loc[labels["method"] == method, ["query_id", "passage_id", "value"]].dropna(subset=["value"])
        theirs = theirs.drop_duplicates(["query_id", "passage_id"], keep="last")
        merged = keys.merge(theirs, on=["query_id", "passage_id"], how="left")
        columns[method] = (merged["value"].to_numpy(dtype=float) >= USEFUL_THRESHOLD).astype(np.int64)
    return pd.DataFrame(columns, index=population.index)


def human_labels(store: AnnotationStore, run: str, annotator: str | None = None
                 ) -> tuple[pd.DataFrame, tuple[str, ...], tuple[dict, ...]]:
    """The people's 0/1 passage labels of ``run`` outside any queue's rule (the majority of every annotator's
    latest label, or one ``annotator``'s): query_id, passage_id, label, labelled_at (the latest label time of the
    item, for :func:`interval_by_label_count`); the annotators behind them; and the ties (query_id, passage_id,
    ones, zeros, where), left out."""
    import pandas as pd

    from rageval.annotations import labelled_only, latest_labels

    latest = latest_labels(store.labels(run, "passage"), "passage", annotator)
    rows = labelled_only(latest)
    names = tuple(sorted(rows["annotator"].unique()))
    if rows.empty:
        return pd.DataFrame({"query_id": pd.Series(dtype=object), "passage_id": pd.Series(dtype=object),
                             "label": pd.Series(dtype="int64"), "labelled_at": pd.Series(dtype=object)}), names, ()
    votes = rows.groupby(["query_id", "passage_id"]).agg(ones=("label", "sum"), count=("label", "size"),
                                                         labelled_at=("labelled_at", "max")).reset_index()
    tie = 2 * votes["ones"] == votes["count"]
    ties = tuple({"query_id": str(q), "passage_id": str(p), "ones": int(o), "zeros": int(c - o),
                  "where": "all labels"}
                 for q, p, o, c in zip(*(votes.loc[tie, col] for col in ("query_id", "passage_id", "ones", "count"))))
    kept = votes[~tie]
    human = pd.DataFrame({"query_id": kept["query_id"], "passage_id": kept["passage_id"],
                          "label": (2 * kept["ones"] > kept["count"]).astype("int64"),
                          "labelled_at": kept["labelled_at"]})
    return human.sort_values(["query_id", "passage_id"]).reset_index(drop=True), names, ties


def queue_human_labels(inputs: TrustInputs, store: AnnotationStore, queue_id: int) -> TrustInputs:
    """``inputs`` with the people's labels of queue ``queue_id``'s items decided by the queue's rule
    (:data:`rageval.queues.QUEUE_LABEL_RULE`: adjudicated, else the majority of its own annotators, a tie
    unresolved) instead of the majority of everyone; items outside the queue keep theirs."""
    import pandas as pd

    from rageval.queues import ADJUDICATED, TIE, QueueStore

    resolved = QueueStore(store.path).item_labels(queue_id)
    queue_keys = set(zip(resolved["query_id"].astype(str), resolved["passage_id"].astype(str)))
    others = inputs.human[[(str(q), str(p)) not in queue_keys
                           for q, p in zip(inputs.human["query_id"], inputs.human["passage_id"])]]
    counted = resolved[resolved["basis"] != TIE]
    from_queue = pd.DataFrame({"query_id": counted["query_id"].astype(str),
                               "passage_id": counted["passage_id"].astype(str),
                               "label": counted["label"].astype("int64"), "labelled_at": counted["labelled_at"]})
    ties = resolved[resolved["basis"] == TIE]
    unresolved = tuple(u for u in inputs.unresolved if (u["query_id"], u["passage_id"]) not in queue_keys) + tuple(
        {"query_id": str(q), "passage_id": str(p), "ones": int(o), "zeros": int(z), "where": f"queue {queue_id}",
         "position": int(pos)}
        for q, p, o, z, pos in zip(ties["query_id"], ties["passage_id"], ties["ones"], ties["zeros"],
                                   ties["position"]))
    human = pd.concat([others, from_queue], ignore_index=True) if len(others) else from_queue.reset_index(drop=True)
    from dataclasses import replace

    return replace(inputs, human=human, unresolved=unresolved,
                   adjudicated=int((resolved["basis"] == ADJUDICATED).sum()))


def sample_design(sample: Any, population: int) -> SamplingDesign:
    """The uniform design of a shared sample (:class:`rageval.store.annotations.Sample`): one stratum, the run's
    ``population`` retrieved passages, the sample's items; ``sampled`` is set to the labelled items later."""
    items: dict[Hashable, str] = dict.fromkeys(zip(sample.items["query_id"], sample.items["passage_id"]), "all")
    return SamplingDesign(UNIFORM, (Stratum("all", population, len(items)),), items,
                          f"shared sample {sample.id} (seed {sample.seed}, {sample.size} passages, drawn by "
                          f"{sample.created_by} {sample.created_at})")


# --- the report ----------------------------------------------------------------------------------------------

def _passage_strata(inputs: TrustInputs, design: SamplingDesign, domain, sampled, human_values,
                    population_strata: Mapping[Hashable, str] | None, method: str) -> list[StratumData] | str:
    """The strata of a passage measure on the items ``domain`` (a boolean mask over the population), or why
    they cannot be formed."""
    import numpy as np

    f_all = inputs.auto[method].to_numpy(dtype=float)
    if design.plan == UNIFORM:
        mask = domain & sampled
        return [StratumData("all", human_values[mask], f_all[mask], f_all[domain])]
    keys = list(zip(inputs.population["query_id"], inputs.population["passage_id"]))
    if population_strata is None:
        return ("the stratified design does not say which stratum each unlabelled passage is in "
                "(population_strata), which PPI needs")
    names = np.array([population_strata.get(key, "") for key in keys], dtype=object)
    strata = []
    for stratum in design.strata:
        in_stratum = domain & (names == stratum.name)
        mask = in_stratum & sampled
        strata.append(StratumData(stratum.name, human_values[mask], f_all[mask], f_all[in_stratum]))
    return strata


def _query_units(inputs: TrustInputs, sampled, human_values, method: str):
    """Per query (run order): its passages (all, top k), how many the human sample labels, the relevant ones by
    people (among the sampled) and by the method, whether all its passages (``complete_all``) or its top-k ones
    (``complete``) are in the human sample, and its E2E score; and why query measures are not available from a
    passage sample, if so."""
    import numpy as np
    import pandas as pd

    top = (inputs.population["rank"] <= inputs.k).to_numpy()
    human = np.where(sampled, human_values, np.nan)
    method_values = inputs.auto[method].to_numpy(dtype=float)
    frame = pd.DataFrame({"query_id": inputs.population["query_id"].to_numpy(), "top": top.astype(float),
                          "human": human, "human_top": np.where(top, human, np.nan),
                          "method": method_values, "method_top": method_values * top})
    grouped = frame.groupby("query_id", sort=False).agg(
        size_all=("method", "size"), size=("top", "sum"), labelled_all=("human", "count"),
        labelled=("human_top", "count"), human_all=("human", "sum"), human_top=("human_top", "sum"),
        method_all=("method", "sum"), method_top=("method_top", "sum"))
    grouped = grouped.reindex(list(inputs.queries)).fillna(0)
    grouped["complete"] = (grouped["labelled"] == grouped["size"]) & (grouped["size"] > 0)
    grouped["complete_all"] = (grouped["labelled_all"] == grouped["size_all"]) & (grouped["size_all"] > 0)
    grouped["human"] = (grouped["human_top"] > 0).astype(float)  # Hit@k (meaningful where complete)
    grouped["method"] = (grouped["method_top"] > 0).astype(float)
    grouped["e2e"] = [inputs.e2e.get(q, math.nan) for q in grouped.index]
    reason = ""
    if grouped["size"].nunique() > 1:
        reason = ("the queries have different numbers of top-k passages, so fully labelled queries are not a "
                  "uniform sample of queries")
    return grouped, reason


def query_sample_design(query_ids: Sequence[str], n_queries: int, source: str) -> SamplingDesign:
    """A uniform sample of whole queries (every retrieved passage of each to be labelled): the design of a
    query-level sample, whose items are query ids. Every measure is then a mean over queries."""
    items: dict[Hashable, str] = dict.fromkeys((str(q) for q in query_ids), "all")
    return SamplingDesign(UNIFORM, (Stratum("all", n_queries, len(items)),), items, source)


def is_query_design(design: SamplingDesign) -> bool:
    """Whether the design samples whole queries (its items are query ids) rather than passages."""
    return bool(design.item_strata) and all(isinstance(key, str) for key in design.item_strata)


def build_report(inputs: TrustInputs, design: SamplingDesign | None = None, *,
                 population_strata: Mapping[Hashable, str] | None = None, confidence: float = CONFIDENCE,
                 other_runs: Mapping[str, tuple[float, Mapping[str, float]]] | None = None) -> TrustReport:
    """The :class:`TrustReport` of ``inputs`` under ``design`` (None: convenience). ``other_runs``: for the per-run
    agreement, each other annotated run's people's P@k and each method's automatic P@k."""
    import numpy as np

    k = inputs.k
    population = inputs.population
    keys = list(zip(population["query_id"], population["passage_id"]))
    human = {(q, p): int(v) for q, p, v in zip(inputs.human["query_id"], inputs.human["passage_id"],
                                                 inputs.human["label"])}
    labelled = np.array([key in human for key in keys], dtype=bool)
    human_values = np.array([human.get(key, 0) for key in keys], dtype=float)
    notes: list[str] = []
    if design is None:
        design = SamplingDesign(CONVENIENCE, (), {}, "labels without a sample" if human else "no human labels")
    by_query = is_query_design(design)
    in_design = np.array([(key[0] if by_query else key) in design.item_strata for key in keys], dtype=bool)
    sampled = labelled & in_design if design.supports_unbiased_estimate else np.zeros(len(keys), dtype=bool)
    if by_query and design.plan == UNIFORM:
        notes.append("a sample of whole queries: every measure is a mean over the queries whose passages are all "
                     "labelled (label_share weighs each query by its number of passages)")
    elif design.plan == UNIFORM and design.strata:
        design = SamplingDesign(UNIFORM, (Stratum("all", len(keys), int(sampled.sum())),), design.item_strata,
                                design.source)
        if int(in_design.sum()) > int(sampled.sum()):
            notes.append(f"{int(sampled.sum()):,} of the sample's {int(in_design.sum()):,} passages are labelled; "
                         "the labelled ones count as a uniform sample when they are labelled in the queue's order "
                         "or at random")
    elif design.plan == STRATIFIED:
        counts = {s.name: 0 for s in design.strata}
        for key, is_sampled in zip(keys, sampled):
            if is_sampled:
                counts[design.item_strata[key]] = counts.get(design.item_strata[key], 0) + 1
        design = SamplingDesign(STRATIFIED, tuple(Stratum(s.name, s.population, counts.get(s.name, 0))
                                                  for s in design.strata), design.item_strata, design.source)
    outside = int((labelled & ~in_design).sum())
    if outside and design.supports_unbiased_estimate:
        notes.append(f"{outside:,} labelled passages outside the {design.plan} sample are left out of the estimates "
                     "(they count in the calibration only when no sample exists)")
    n_queries = len(inputs.queries)
    top = (population["rank"] <= k).to_numpy()
    p_scale = int(top.sum()) / (n_queries * k) if n_queries else math.nan
    measures = measure_names(k)
    weights = _item_weights(design, keys, sampled)
    other_runs = other_runs or {}
    methods: dict[str, MethodTrust] = {}
    for method in inputs.auto.columns:
        f_all = inputs.auto[method].to_numpy(dtype=float)
        auto = {LABEL_SHARE: float(f_all.mean()) if len(f_all) else math.nan,
                f"P@{k}": float(f_all[top].sum() / (n_queries * k)) if n_queries else math.nan}
        estimates: dict[str, dict[str, Estimate]] = {name: {} for name in ESTIMATORS}
        units, unit_reason = _query_units(inputs, sampled, human_values, method)
        if not by_query:
            for measure, domain, scale in ((LABEL_SHARE, np.ones(len(keys), dtype=bool), 1.0),
                                           (f"P@{k}", top, p_scale)):
                strata = (_passage_strata(inputs, design, domain, sampled, human_values, population_strata, method)
                          if design.supports_unbiased_estimate else f"a {design.plan} sample {NO_UNBIASED}")
                for name in ESTIMATORS:
                    if isinstance(strata, str):
                        estimates[name][measure] = undefined(strata, int(labelled.sum()), len(keys))
                    else:
                        estimates[name][measure] = bounded(
                            _scaled(stratified_estimate(name, strata, confidence), scale))
        auto[f"Hit@{k}"] = float(units["method"].mean()) if len(units) else math.nan
        scored = units[np.isfinite(units["e2e"].to_numpy(dtype=float))]
        right = scored["e2e"].to_numpy(dtype=float) >= RIGHT_THRESHOLD
        query_measures = {f"Hit@{k}": (units, units["human"].to_numpy(), units["method"].to_numpy(), "complete")}
        if by_query:  # the passage measures as query means: relevant passages / mean passages per query; P@k
            mean_size = float(units["size_all"].mean()) if len(units) else math.nan
            query_measures = {
                LABEL_SHARE: (units, units["human_all"].to_numpy() / mean_size,
                              units["method_all"].to_numpy() / mean_size, "complete_all"),
                f"P@{k}": (units, units["human_top"].to_numpy() / k, units["method_top"].to_numpy() / k, "complete"),
                **query_measures}
        for cell, (hit, answer) in CELLS.items():
            method_cell = _cell(scored["method"].to_numpy(dtype=float), right, hit, answer)
            query_measures[f"{cell}@{k}"] = (scored, _cell(scored["human"].to_numpy(dtype=float), right, hit, answer),
                                             method_cell, "complete")
            auto[f"{cell}@{k}"] = float(method_cell.mean()) if len(scored) else math.nan
        for measure, (table, y_all, f_q, which) in query_measures.items():
            complete = table[which].to_numpy(dtype=bool)
            reason = (f"a {design.plan} sample {NO_UNBIASED}" if not design.supports_unbiased_estimate else
                      "a stratified passage sample does not make a sample of queries" if design.plan == STRATIFIED
                      else "" if by_query else unit_reason)
            if not reason and complete.sum() < 2:
                reason = (f"{int(complete.sum())} quer{'y has' if complete.sum() == 1 else 'ies have'} all top-{k} "
                          "passages labelled: label whole queries for this measure")
            for name in ESTIMATORS:
                if reason:
                    estimates[name][measure] = undefined(reason, int(complete.sum()), len(table))
                else:
                    stratum = StratumData("all", y_all[complete].astype(float), f_q[complete].astype(float),
                                          np.asarray(f_q, dtype=float))
                    estimates[name][measure] = bounded(stratified_estimate(name, [stratum], confidence))
        # calibration: the items the estimates use; without a sample, every labelled item (a description)
        chosen = sampled if design.supports_unbiased_estimate else labelled
        calibration = calibrate(human_values[chosen].astype(int), f_all[chosen].astype(int),
                                weights[chosen] if design.plan == STRATIFIED else None,
                                method_share_all=auto[LABEL_SHARE])
        per_query_items: dict[str, list[tuple[int, int]]] = {}
        for q, h, m in zip(population["query_id"].to_numpy()[chosen & top], human_values[chosen & top],
                           f_all[chosen & top]):
            per_query_items.setdefault(q, []).append((int(h), int(m)))
        people_runs = [inputs_human_p_at_k(human_values, labelled, top, n_queries, k)] + \
            [entry[0] for entry in other_runs.values() if method in entry[1]]
        method_runs = [auto[f"P@{k}"]] + [entry[1][method] for entry in other_runs.values() if method in entry[1]]
        per_run = rank_agreement(people_runs, method_runs, "runs")
        methods[method] = MethodTrust(method, auto, estimates, calibration, query_agreement(per_query_items), per_run)
    if by_query and design.plan == UNIFORM and methods:
        complete_queries = int(next(iter(methods.values())).estimates[HUMAN_ONLY][f"Hit@{k}"].n_human)
        design = SamplingDesign(UNIFORM, (Stratum("all", n_queries, complete_queries),), design.item_strata,
                                design.source)
    return TrustReport(inputs.run, k, design, methods, len(keys), n_queries, int(sampled.sum()), int(labelled.sum()),
                       inputs.annotators, tuple(other_runs), tuple(notes), confidence, tuple(measures))


def _cell(hits, right, hit: bool, answer: bool):
    """1 for the queries in the cell (a relevant passage retrieved or not, answer right or not), 0 for the others;
    NaN hits (a query not fully labelled) stay out of every cell (0) and are not used."""
    return ((hits == (1 if hit else 0)) & (right == answer)).astype(float)


def inputs_human_p_at_k(human_values, labelled, top, n_queries: int, k: int) -> float:
    """The people's P@k of a run from its labelled top-k passages (their share of relevant, scaled as P@k is):
    the value the per-run ordering compares."""
    mask = labelled & top
    if not mask.any() or not n_queries:
        return math.nan
    return float(human_values[mask].mean() * top.sum() / (n_queries * k))


def _item_weights(design: SamplingDesign, keys: Sequence[Hashable], sampled) -> Any:
    """Each item's design weight (population / sampled of its stratum; 1 outside a stratified design)."""
    import numpy as np

    if design.plan != STRATIFIED:
        return np.ones(len(keys))
    weight = {s.name: s.weight for s in design.strata}
    return np.array([weight.get(design.item_strata.get(key, ""), 1.0) if s else 1.0 for key, s in zip(keys, sampled)])


def _scaled(estimate: Estimate, scale: float) -> Estimate:
    if scale == 1.0:
        return estimate
    return Estimate(estimate.estimate * scale, estimate.low * scale, estimate.high * scale, estimate.se * scale,
                    estimate.n_human, estimate.n_auto, estimate.lam, estimate.confidence, estimate.reason)


# --- reading a run --------------------------------------------------------------------------------------------

def read_inputs(run_path: str | os.PathLike, store: AnnotationStore, *, annotator: str | None = None,
                k: int | None = None, methods: Sequence[str] | None = None) -> TrustInputs:
    """:class:`TrustInputs` of a run file and the annotation file: every label method of the run but ``gold``'s
    relatives are kept (gold is an automatic method here like the others), at the run's main k unless ``k``."""
    from rageval.errors import RagevalError
    from rageval.store.runs import RunReader

    run = Path(run_path).stem
    with RunReader(run_path) as reader:
        k = k if k is not None else reader.main_k()
        if k is None:
            k = int(reader.settings().get("k") or 10)
        population = ranked_items(reader.rankings())
        available = reader.label_methods()
        chosen = list(methods) if methods else available
        unknown = [m for m in chosen if m not in available]
        if unknown:
            raise RagevalError(f"{run_path}: no label method {', '.join(unknown)} in this run (it has "
                               f"{', '.join(available) or 'none'})")
        labels = reader.labels()
        table = reader.query_table(k)
    human, names, ties = human_labels(store, run, annotator)
    e2e = {str(q): (float(s) if s is not None else math.nan) for q, s in zip(table["query_id"], table["e2e_score"])}
    return TrustInputs(run, int(k), population, auto_labels(population, labels, chosen), human, e2e,
                       [str(q) for q in table["query_id"]], names, ties,
                       ONE_ANNOTATOR_RULE if annotator is not None else LABEL_RULE)


def design_of(store: AnnotationStore, run: str, population: int, design: SamplingDesign | None
              ) -> SamplingDesign | None:
    """The design a report uses: ``design`` if given, else the run's newest shared sample (uniform), else None
    (convenience)."""
    if design is not None:
        return design
    sample = store.latest_sample(run)
    return sample_design(sample, population) if sample is not None else None


def queue_design(store: AnnotationStore, run_path: str | os.PathLike, population: pd.DataFrame,
                 queue_id: int | None = None) -> tuple[SamplingDesign, dict[Hashable, str]] | None:
    """The design of an annotation queue over the run's passages (:mod:`rageval.queues`): queue ``queue_id``, else
    the newest passage queue of the run with a decision in it; with the stratum of every passage of ``population``
    under the queue's plan (what a stratified estimate weighs by). None when there is no such queue. A ValueError
    when ``queue_id`` is not a passage queue of this run."""
    from rageval.queue_plans import canonical_items, compute_strata
    from rageval.queues import QueueStore
    from rageval.store.runs import RunReader

    run = Path(run_path).stem
    queues = QueueStore(store.path)
    if queue_id is not None:
        chosen = [q for q in queues.queues(run) if q.id == queue_id and q.kind == "passage"]
        if not chosen:
            raise RagevalError(f"{store.path}: no passage queue {queue_id} over run {run!r}")
    else:
        chosen = [q for q in sorted(queues.queues(run), key=lambda q: q.id, reverse=True)
                  if q.kind == "passage" and queues.queue_progress(q.id)["done"]][:1]
    if not chosen:
        return None
    queue = chosen[0]
    items = canonical_items(population, "passage")
    with RunReader(run_path) as reader:
        labels = reader.labels()
    names, _ = compute_strata(items, labels, queue.plan, "passage")
    return queues.sampling_design(queue.id), dict(zip(zip(items["query_id"], items["passage_id"]), names))


def other_annotated_runs(store: AnnotationStore, run_path: Path, methods: Sequence[str], k: int
                         ) -> dict[str, tuple[float, dict[str, float]]]:
    """The other runs of ``run_path``'s folder that have human passage labels: each one's people's P@k (from its
    labelled top-k passages) and each method's automatic P@k, for the per-run ordering."""
    import numpy as np

    from rageval.errors import RagevalError

    labelled_runs = set(store.labels(kind="passage")["run"])
    found: dict[str, tuple[float, dict[str, float]]] = {}
    for path in sorted(run_path.parent.glob("*.sqlite")):
        if path.stem == run_path.stem or path.stem not in labelled_runs:
            continue
        try:
            inputs = read_inputs(path, store, k=k)
        except RagevalError:
            continue  # not a run file (the annotation file itself), or unreadable: not compared
        keys = list(zip(inputs.population["query_id"], inputs.population["passage_id"]))
        human = {(q, p): int(v) for q, p, v in zip(inputs.human["query_id"], inputs.human["passage_id"],
                                                     inputs.human["label"])}
        labelled = np.array([key in human for key in keys], dtype=bool)
        values = np.array([human.get(key, 0) for key in keys], dtype=float)
        top = (inputs.population["rank"] <= k).to_numpy()
        n_queries = len(inputs.queries)
        people = inputs_human_p_at_k(values, labelled, top, n_queries, k)
        auto = {m: float(inputs.auto[m].to_numpy()[top].sum() / (n_queries * k)) for m in methods
                if m in inputs.auto.columns and n_queries}
        if math.isfinite(people):
            found[path.stem] = (people, auto)
    return found


@dataclass(frozen=True)
class Basis:
    """What a report's numbers rest on: the inputs (the people's labels decided by :data:`LABEL_RULE`, a queue's
    items by its rule), the design (None: convenience), the stratum of every passage a stratified design needs, and
    the queue behind it (None: not a queue)."""

    inputs: TrustInputs
    design: SamplingDesign | None
    population_strata: Mapping[Hashable, str] | None = None
    queue_id: int | None = None


SHARED_SAMPLE = "sample"


def available_bases(store: AnnotationStore, run: str) -> dict[str, str]:
    """The designs a run's estimates can rest on, newest queue first: ``queue:N`` for each passage queue of the run
    with a decision, ``sample`` for its newest shared sample; each with its description."""
    from rageval.queues import QueueStore

    queues = QueueStore(store.path)
    found = {f"queue:{q.id}": q.source for q in sorted(queues.queues(run), key=lambda q: q.id, reverse=True)
             if q.kind == "passage" and queues.queue_progress(q.id)["done"]}
    sample = store.latest_sample(run)
    if sample is not None:
        found[SHARED_SAMPLE] = (f"shared sample {sample.id} (uniform, seed {sample.seed}, {sample.size:,} passages, "
                                f"drawn by {sample.created_by} {sample.created_at})")
    return found


def report_basis(store: AnnotationStore, run_path: str | os.PathLike, inputs: TrustInputs, *,
                 queue_id: int | None = None, design: SamplingDesign | None = None,
                 population_strata: Mapping[Hashable, str] | None = None, annotator: str | None = None,
                 basis: str = "") -> Basis:
    """The one choice of a report's basis, for ``rageval trust`` and the pages: ``design`` when given (and no
    ``queue_id``), else queue ``queue_id`` or the run's newest passage queue with a decision (:func:`queue_design`;
    its items labelled by the queue's rule unless one ``annotator`` is asked for), else the run's newest shared
    sample (:func:`design_of`), else None. ``basis`` (a key of :func:`available_bases`) picks one: ``queue:N``,
    or ``sample`` (the shared sample even when a queue exists)."""
    if basis.startswith("queue:"):
        try:
            queue_id = int(basis.partition(":")[2])
        except ValueError:
            raise RagevalError(f"basis {basis!r}: expected queue:N or {SHARED_SAMPLE}") from None
    elif basis not in ("", SHARED_SAMPLE):
        raise RagevalError(f"basis {basis!r}: expected queue:N or {SHARED_SAMPLE}")
    chosen_queue = None
    if basis != SHARED_SAMPLE and (design is None or queue_id is not None):
        found = queue_design(store, run_path, inputs.population, queue_id)
        if found is not None:
            design, population_strata = found
            chosen_queue = queue_id if queue_id is not None else queue_of_design(design)
            if annotator is None and chosen_queue is not None:
                inputs = queue_human_labels(inputs, store, chosen_queue)
    return Basis(inputs, design_of(store, inputs.run, len(inputs.population), design), population_strata,
                 chosen_queue)


def queue_of_design(design: SamplingDesign) -> int | None:
    """The queue id a queue's design names in its source (``queue 3 'name' (...)``), else None."""
    import re

    found = re.match(r"queue (\d+) ", design.source or "")
    return int(found.group(1)) if found else None


def report_from_basis(basis: Basis, *, confidence: float = CONFIDENCE,
                      other_runs: Mapping[str, tuple[float, Mapping[str, float]]] | None = None) -> TrustReport:
    """:func:`build_report` on a :class:`Basis`, with the label rule, the unresolved ties and the number of
    adjudicated items said."""
    from dataclasses import replace

    report = build_report(basis.inputs, basis.design, population_strata=basis.population_strata,
                          confidence=confidence, other_runs=other_runs)
    return replace(report, label_rule=basis.inputs.label_rule, unresolved=basis.inputs.unresolved,
                   adjudicated=basis.inputs.adjudicated)


def trust_report(run_path: str | os.PathLike, store: AnnotationStore, *, design: SamplingDesign | None = None,
                 population_strata: Mapping[Hashable, str] | None = None, annotator: str | None = None,
                 k: int | None = None, methods: Sequence[str] | None = None, compare_runs: bool = True,
                 confidence: float = CONFIDENCE, plan_size: int = 0, plan_method: str | None = None,
                 queue_id: int | None = None, basis: str = "") -> TrustReport:
    """Everything of this module for the run at ``run_path`` and the labels of ``store``: the basis
    (:func:`report_basis`: an annotation queue's design and label rule before the shared sample's), the estimates
    and calibration of every label method (or ``methods``), with ``compare_runs`` the per-run agreement over the
    annotated runs of the same folder, and with ``plan_size`` the next items to label for ``plan_method`` (default:
    :func:`headline_method`; :func:`next_plan`, the plan the Annotate page shows)."""
    inputs = read_inputs(run_path, store, annotator=annotator, k=k, methods=methods)
    chosen = report_basis(store, run_path, inputs, queue_id=queue_id, design=design,
                          population_strata=population_strata, annotator=annotator, basis=basis)
    others = other_annotated_runs(store, Path(run_path), list(inputs.auto.columns), inputs.k) if compare_runs else {}
    report = report_from_basis(chosen, confidence=confidence, other_runs=others)
    if plan_size > 0 and len(inputs.auto.columns):
        from dataclasses import replace

        from rageval.store.runs import RunReader

        with RunReader(run_path) as reader:
            label_metric = reader.settings().get("label_metric")
        target = plan_method or headline_method(list(inputs.auto.columns), label_metric) or ""
        report = replace(report, plan=plan_items(chosen, target, plan_size))
    return report


def next_plan(basis: Basis, method: str, size: int):
    """The one plan of the next items to label (:func:`rageval.trust.plan.plan_next`) on a report's basis, for
    ``rageval trust --plan`` and the Annotate page's "Label next": seeded by the number of people's labels, so both
    show the same items for the same labels (and a new label gives a new draw); a stratified queue's strata are
    crossed with the plan's."""
    return plan_next(basis.inputs, basis.design, method, size, seed=plan_seed(basis.inputs),
                     population_strata=basis.population_strata)


def plan_seed(inputs: TrustInputs) -> int:
    """The plan's seed: how many items have a people's label."""
    return len(inputs.human)


def plan_items(basis: Basis, method: str, size: int) -> dict[str, Any]:
    """The plan (:func:`next_plan`) as plain data: the method, its seed, the next ``size`` items (query_id,
    passage_id, rank, stratum) and the allocation per stratum."""
    plan = next_plan(basis, method, size)
    return {"method": method, "seed": plan_seed(basis.inputs), "size": len(plan.items),
            "strata": strata_rule(plan.allocation["stratum"]),
            "items": [{"query_id": str(r.query_id), "passage_id": str(r.passage_id), "rank": int(r.rank),
                       "stratum": str(r.stratum)} for r in plan.items.itertuples()],
            "allocation": [{"stratum": str(r.stratum), "population": int(r.population), "labelled": int(r.labelled),
                            "target": round(float(r.target), 3), "add": int(r.add)}
                           for r in plan.allocation.itertuples()]}


def interval_by_label_count(inputs: TrustInputs, design: SamplingDesign, method: str, measure: str = LABEL_SHARE,
                            steps: int = 8, confidence: float = CONFIDENCE,
                            population_strata: Mapping[Hashable, str] | None = None) -> pd.DataFrame:
    """How the intervals narrow as labels arrive: the report's estimates of ``measure`` (a passage measure) for
    ``method`` from the first n human labels in the order they were given (``labelled_at``), for ``steps`` values
    of n up to all of them. Columns n, estimator, estimate, low, high."""
    import numpy as np
    import pandas as pd

    human = inputs.human.sort_values("labelled_at", kind="stable") if "labelled_at" in inputs.human.columns \
        else inputs.human
    by_query = is_query_design(design)
    in_design = human[[(q if by_query else (q, p)) in design.item_strata
                       for q, p in zip(human["query_id"], human["passage_id"])]]
    total = len(in_design)
    rows = []
    if total < 2:
        return pd.DataFrame(columns=["n", "estimator", "estimate", "low", "high"])
    counts = sorted({int(c) for c in np.linspace(min(10, total), total, steps).round()} | {total})
    for n in counts:
        partial = TrustInputs(inputs.run, inputs.k, inputs.population, inputs.auto[[method]], in_design.iloc[:n],
                              inputs.e2e, inputs.queries, inputs.annotators)
        report = build_report(partial, design, population_strata=population_strata, confidence=confidence)
        for name in (PPI, PPI_PLUS_PLUS, HUMAN_ONLY):
            e = report.methods[method].estimates[name][measure]
            rows.append({"n": n, "estimator": name, "estimate": e.estimate, "low": e.low, "high": e.high})
    return pd.DataFrame(rows)


# --- the headline method (the report in words: rageval/trust/report_text.py) ------------------------------

def headline_method(methods: Sequence[str], label_metric: str | None = None) -> str | None:
    """The method a one-line summary speaks of: eRAG under the run's label metric, else the first eRAG method,
    else the first method; None without methods."""
    if label_metric and f"erag:{label_metric}" in methods:
        return f"erag:{label_metric}"
    return next((m for m in methods if m.startswith("erag:")), methods[0] if methods else None)


