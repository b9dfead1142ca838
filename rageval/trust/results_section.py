"""docs/results.md's "Trust" section: PPI, PPI++ and the human-only interval checked on real human labels.

The shipped HotpotQA runs carry a human judgement of every retrieved passage: HotpotQA's crowd workers marked the
supporting paragraphs of each question (Yang et al. 2018), stored as the run's ``gold`` labels (1: a supporting
paragraph, 0: any other retrieved passage). So the people's share of relevant passages over the whole run is known,
and each label method's estimate can be checked against it:

1. draw a uniform sample of ``n`` of the run's retrieved passages (seeded, without replacement);
2. take the crowd's judgement of each sampled passage as the people's label;
3. estimate the share of relevant passages with PPI, PPI++ (Angelopoulos et al. 2023) and the human labels alone,
   each automatic label method being the prediction (every method of the run but ``gold`` and its copy
   ``gold_page``), intervals bounded to [0, 1] as everywhere (:data:`rageval.trust.ppi.BOUNDS_RULE`);
4. repeat ``draws`` times: coverage is the share of draws whose 95% interval holds the true share; width the mean
   interval width.

One draw per run goes the whole way a user's labels go (:func:`end_to_end_draw`): the sample is the run's shared
sample (``AnnotationStore.create_sample``), the judgements are written as a CSV and brought in by
``rageval annotations import``'s function, and ``rageval trust``'s report gives the estimates; they must equal the
direct computation on the same passages. Beside the real labels, the same draws on the simulated population of
``tests/trust/test_coverage.py`` (3,000 passages, 20% relevant, a method with recall 0.7 and specificity 0.95).

The same check on **stratified** samples, as an annotation queue draws them (``rageval queue create --plan
stratified --by contains_answer --allocation equal``): the passages split by ``contains_answer``'s label, ``n / 2``
drawn uniformly from each, and every estimator's stratified form (:func:`rageval.trust.ppi.stratified_estimate`:
per-stratum estimates weighted by the strata's sizes). One draw per run goes through a real queue
(:func:`end_to_end_queue_draw`): ``QueueStore.create_queue``, the crowd's judgements saved as the queue's labels,
``rageval trust --queue``'s report against the direct computation on the queue's items.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rageval.trust.ppi import (
    ESTIMATORS,
    HUMAN_ONLY,
    PPI,
    PPI_PLUS_PLUS,
    Estimate,
    StratumData,
    bounded,
    estimate,
    stratified_estimate,
)

if TYPE_CHECKING:
    from rageval.trust.report import TrustReport

#: The runs checked (under the shipped runs folder) and the label that holds the crowd's judgement.
RUNS = ("demo/hotpotqa-bm25-gemma3_270m.sqlite", "demo/hotpotqa-candidates-gemma3_270m.sqlite")
REFERENCE = "gold"
NOT_PREDICTIONS = ("gold", "gold_page")  # the reference itself and its page-level copy
SIZES = (30, 60, 100)
DRAWS = 500
#: The stratified check: the label method the samples are stratified by (equal allocation) and the sizes.
STRATIFY_BY = "contains_answer"
STRATIFIED_SIZES = (30, 60)
NAMES = {PPI: "PPI", PPI_PLUS_PLUS: "PPI++", HUMAN_ONLY: "human only"}


@dataclass(frozen=True)
class Coverage:
    """One (run, method, n, estimator): the share of ``draws`` intervals holding ``truth``, their mean width, the
    mean estimate, and the method's agreement with people over the whole run (Cohen's kappa)."""

    run: str
    method: str
    n: int
    estimator: str
    draws: int
    coverage: float
    width: float
    mean_estimate: float
    truth: float
    kappa: float
    no_interval: int = 0  # draws whose sample gave no interval (every sampled judgement the same: a point)


def read_population(run_path: str | Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The crowd's 0/1 judgement of every retrieved passage of the run and each method's 0/1 label
    (:func:`rageval.trust.report.auto_labels`), aligned."""
    from rageval.store.runs import RunReader
    from rageval.trust.report import auto_labels, ranked_items

    with RunReader(run_path) as reader:
        population = ranked_items(reader.rankings())
        methods = reader.label_methods()
        labels = reader.labels()
    auto = auto_labels(population, labels, methods)
    people = auto[REFERENCE].to_numpy(dtype=float)
    return people, {m: auto[m].to_numpy(dtype=float) for m in methods if m not in NOT_PREDICTIONS}


def coverage_of(y: np.ndarray, predictions: dict[str, np.ndarray], sizes: Sequence[int], draws: int, seed: int,
                run: str) -> list[Coverage]:
    """Coverage and width of every estimator for every method and sample size (module docstring); each size's
    draws are shared by the methods (the same samples)."""
    from rageval.agreement import cohen_kappa

    truth = float(y.mean())
    rows = []
    for n in (n for n in sizes if n < len(y)):  # a sample as large as the run is no sample (a tiny run has none)
        rng = np.random.default_rng([seed, n])
        samples = [rng.choice(len(y), size=n, replace=False) for _ in range(draws)]
        for method, f in predictions.items():
            kappa = cohen_kappa(y.astype(int).tolist(), f.astype(int).tolist()).kappa
            for name in ESTIMATORS:
                found = [bounded(estimate(name, y[s], f[s], f)) for s in samples]
                rows.append(_coverage(run, method, n, name, found, truth, kappa))
    return rows


def _coverage(run: str, method: str, n: int, name: str, found: Sequence[Estimate], truth: float,
              kappa: float) -> Coverage:
    """One row from the draws' estimates: over those with a finite interval, the share holding ``truth``, the mean
    width and the mean estimate; the others counted."""
    finite = [e for e in found if math.isfinite(e.low) and math.isfinite(e.high)]
    return Coverage(run, method, n, name, len(finite),
                    float(np.mean([e.covers(truth) for e in finite])) if finite else math.nan,
                    float(np.mean([e.width for e in finite])) if finite else math.nan,
                    float(np.mean([e.estimate for e in finite])) if finite else math.nan,
                    truth, kappa, len(found) - len(finite))


def strata_of(by: np.ndarray) -> list[np.ndarray]:
    """The passages of each stratum of a 0/1 label (the passages labelled 0, then those labelled 1)."""
    return [np.flatnonzero(by == value) for value in (0.0, 1.0)]


def stratified_draw(y: np.ndarray, f: np.ndarray, strata: Sequence[np.ndarray], sample: Sequence[np.ndarray],
                    name: str) -> Estimate:
    """Estimator ``name`` on one stratified sample (``sample[h]``: the passages drawn from ``strata[h]``)."""
    return bounded(stratified_estimate(name, [StratumData(str(h), y[drawn], f[drawn], f[members])
                                              for h, (members, drawn) in enumerate(zip(strata, sample))]))


def stratified_coverage_of(y: np.ndarray, predictions: dict[str, np.ndarray], by: np.ndarray,
                           sizes: Sequence[int], draws: int, seed: int, run: str) -> list[Coverage]:
    """:func:`coverage_of` on samples stratified by the 0/1 label ``by`` with equal allocation (``n / 2`` from each
    stratum, uniformly, without replacement); a size a stratum cannot give is left out."""
    from rageval.agreement import cohen_kappa

    truth = float(y.mean())
    strata = strata_of(by)
    rows: list[Coverage] = []
    for n in sizes:
        per = (n // 2, n - n // 2)
        if any(k > len(members) for k, members in zip(per, strata)):
            continue
        rng = np.random.default_rng([seed, n, 1])
        samples = [[rng.choice(members, size=k, replace=False) for members, k in zip(strata, per)]
                   for _ in range(draws)]
        for method, f in predictions.items():
            kappa = cohen_kappa(y.astype(int).tolist(), f.astype(int).tolist()).kappa
            rows.extend(_coverage(run, method, n, name, [stratified_draw(y, f, strata, s, name) for s in samples],
                                  truth, kappa) for name in ESTIMATORS)
    return rows


def simulated_population(seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """tests/trust/test_coverage.py's population: 3,000 passages, 20% relevant to people, a method with recall 0.7
    and specificity 0.95."""
    rng = np.random.default_rng(seed)
    y = (rng.random(3000) < 0.2).astype(float)
    f = np.where(y == 1, rng.random(3000) < 0.7, rng.random(3000) < 0.05).astype(float)
    return y, {"simulated method": f}


def end_to_end_draw(run_path: str | Path, n: int, seed: int) -> float:
    """One draw through the user's path (module docstring); the largest absolute difference between ``rageval
    trust``'s label-share estimates and the direct computation on the same passages, over methods and
    estimators."""
    import pandas as pd

    from rageval.annotations import AnnotationStore
    from rageval.store.runs import RunReader
    from rageval.trust.imports import import_labels
    from rageval.trust.report import ranked_items, trust_report

    y, predictions = read_population(run_path)
    with RunReader(run_path) as reader:
        population = ranked_items(reader.rankings())
    run = Path(run_path).stem
    with tempfile.TemporaryDirectory() as folder:
        store = AnnotationStore(Path(folder) / "annotations.sqlite")
        store.create_sample(run, population, n, seed, "results")
        sample = store.latest_sample(run)
        assert sample is not None
        index = {key: i for i, key in enumerate(zip(population["query_id"], population["passage_id"]))}
        rows = [index[key] for key in zip(sample.items["query_id"], sample.items["passage_id"])]
        labels = pd.DataFrame({"query_id": sample.items["query_id"], "passage_id": sample.items["passage_id"],
                               "label": y[rows].astype(int), "annotator": "hotpotqa-crowd"})
        csv_path = Path(folder) / "crowd.csv"
        labels.to_csv(csv_path, index=False)
        import_labels(run_path, csv_path, store)
        report = trust_report(run_path, store, methods=list(predictions), compare_runs=False)
    sampled = np.array(rows)
    return _largest_difference(report, predictions,
                               lambda name, f: bounded(estimate(name, y[sampled], f[sampled], f)))


def _largest_difference(report: TrustReport, predictions: dict[str, np.ndarray],
                        direct: Callable[[str, np.ndarray], Estimate]) -> float:
    """The largest absolute difference between the report's label-share estimates (point and interval ends) and
    ``direct(estimator, prediction)``, over methods and estimators."""
    worst = 0.0
    for method, f in predictions.items():
        for name in ESTIMATORS:
            ours, theirs = report.methods[method].estimates[name]["label_share"], direct(name, f)
            for a, b in ((ours.estimate, theirs.estimate), (ours.low, theirs.low), (ours.high, theirs.high)):
                if math.isfinite(a) or math.isfinite(b):
                    worst = max(worst, abs(a - b))
    return worst


def end_to_end_queue_draw(run_path: str | Path, n: int, seed: int) -> float:
    """One stratified draw through a real queue (module docstring): the largest absolute difference between
    ``rageval trust --queue``'s label-share estimates and :func:`stratified_draw` on the queue's items."""
    from rageval.annotations import AnnotationStore
    from rageval.queue_plans import EQUAL, STRATIFIED_PLAN, QueuePlan
    from rageval.queues import QueueStore
    from rageval.store.runs import RunReader
    from rageval.trust.report import ranked_items, trust_report

    y, predictions = read_population(run_path)
    with RunReader(run_path) as reader:
        population, labels = ranked_items(reader.rankings()), reader.labels()
    index = {key: i for i, key in enumerate(zip(population["query_id"], population["passage_id"]))}
    with tempfile.TemporaryDirectory() as folder:
        store_path = Path(folder) / "annotations.sqlite"
        plan = QueuePlan(STRATIFIED_PLAN, n, seed, stratify_by=STRATIFY_BY, allocation=EQUAL)
        queues = QueueStore(store_path)
        queue_id = queues.create_queue("crowd", Path(run_path).stem, "passage", population, labels, plan, 1,
                                       ["hotpotqa-crowd"], "", "results")
        items = queues.items(queue_id)
        rows = [index[key] for key in zip(items["query_id"], items["passage_id"])]
        queues.save_labels(queue_id, [(int(p), "hotpotqa-crowd", int(y[i]), "")
                                      for p, i in zip(items["position"], rows)])
        report = trust_report(run_path, AnnotationStore(store_path), methods=list(predictions), compare_runs=False,
                              queue_id=queue_id)
    strata = strata_of(predictions[STRATIFY_BY])
    member_sets = [set(members.tolist()) for members in strata]
    drawn = [np.array([i for i in rows if i in members]) for members in member_sets]  # in the queue's order
    return _largest_difference(report, predictions, lambda name, f: stratified_draw(y, f, strata, drawn, name))


def _present_runs(runs_dir: Path) -> Iterator[tuple[Path, np.ndarray, dict[str, np.ndarray]]]:
    """Each of :data:`RUNS` under ``runs_dir`` that is there: its path, the crowd's judgements, the methods' labels."""
    for relative in RUNS:
        path = Path(runs_dir) / relative
        if path.is_file():
            yield path, *read_population(path)


def coverage_table(runs_dir: Path, sizes: Sequence[int] = SIZES, draws: int = DRAWS, seed: int = 0
                   ) -> tuple[list[Coverage], dict[str, float]]:
    """Every row of the section (the real runs present, then the simulated population at n = 300) and, per run,
    the end-to-end draw's largest difference."""
    rows: list[Coverage] = []
    checks: dict[str, float] = {}
    for path, y, predictions in _present_runs(runs_dir):
        rows += coverage_of(y, predictions, sizes, draws, seed, path.stem)
        checks[path.stem] = end_to_end_draw(path, max(sizes), seed)
    y, predictions = simulated_population()
    rows += coverage_of(y, predictions, (300,), draws, seed, "simulated (tests/trust/test_coverage.py)")
    return rows, checks


def stratified_table(runs_dir: Path, sizes: Sequence[int] = STRATIFIED_SIZES, draws: int = DRAWS, seed: int = 0
                     ) -> tuple[list[Coverage], dict[str, float]]:
    """The stratified rows of the real runs present (those with a :data:`STRATIFY_BY` label) and, per run, the
    end-to-end queue draw's largest difference."""
    rows: list[Coverage] = []
    checks: dict[str, float] = {}
    for path, y, predictions in _present_runs(runs_dir):
        if STRATIFY_BY not in predictions:
            continue
        rows += stratified_coverage_of(y, predictions, predictions[STRATIFY_BY], sizes, draws, seed, path.stem)
        checks[path.stem] = end_to_end_queue_draw(path, max(sizes), seed)
    return rows, checks


def _table(rows: Sequence[Coverage]) -> list[str]:
    """The Markdown table of coverage rows: one line per (run, method, n), the estimators side by side."""
    by_key = {(r.run, r.method, r.n, r.estimator): r for r in rows}
    groups = sorted({(r.run, r.method, r.n) for r in rows}, key=lambda g: (g[0].startswith("simulated"), g))
    table = []
    for run, method, n in groups:
        first = by_key[(run, method, n, PPI)]
        cells = []
        for name in ESTIMATORS:
            r = by_key[(run, method, n, name)]
            cells.append(f"{r.coverage:.3f} / {r.width:.3f}" if math.isfinite(r.coverage) else "-")
        missing = "/".join(str(by_key[(run, method, n, name)].no_interval) for name in ESTIMATORS)
        table.append([run, method, str(n), f"{first.kappa:.2f}" if math.isfinite(first.kappa) else "-",
                      f"{first.truth:.3f}", *cells, f"{first.mean_estimate:.3f}", missing])
    header = ["run", "method", "n", "kappa", "true share", *(f"{NAMES[e]} coverage / width" for e in ESTIMATORS),
              "PPI mean estimate", "draws without an interval (PPI/PPI++/human)"]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in table)]


def trust_section(runs_dir: Path, sizes: Sequence[int] = SIZES, draws: int = DRAWS, seed: int = 0,
                  stratified_sizes: Sequence[int] = STRATIFIED_SIZES) -> list[str]:
    """The section's Markdown lines (empty when no HotpotQA run is present)."""
    rows, checks = coverage_table(runs_dir, sizes, draws, seed)
    if not checks:
        return []
    out = ["## Trust: PPI, PPI++ and human labels alone, checked on real human labels", "",
           f"HotpotQA's crowd marked each question's supporting paragraphs, so every retrieved passage of the shipped "
           f"HotpotQA runs has a human judgement (the run's `gold` label) and the people's true share of relevant "
           f"passages is known. Each row: {draws} uniform samples of n passages (without replacement, seed {seed}), "
           "the crowd's judgements of the sampled passages as the people's labels, the method's labels of every "
           "passage as the prediction; coverage = share of the 95% intervals that hold the true share, width = "
           "their mean width, estimate = their mean (bounded to [0, 1], as everywhere), over the draws that give an "
           "interval (a sample whose judgements are all the same, with a constant prediction, gives a point and no "
           "interval: counted in the last column). Kappa: the method against "
           "the crowd over all passages. `rageval.trust.results_section`; `rageval results` regenerates it.", ""]
    out += _table(rows)
    out += ["", "End to end (one draw of n = " + f"{max(sizes)} per run through `rageval annotations import` and "
            "`rageval trust`, against the direct computation on the same passages): largest difference "
            + ", ".join(f"{run} {value:.1e}" for run, value in checks.items()) + ".", "",
            "Lowest coverage over the real runs' methods, by n: " + "; ".join(
                f"{n}: {low.coverage:.3f} ({NAMES[low.estimator]}, {low.method} on {low.run})"
                for n, low in _lowest(rows, sizes).items()) + ". Normal intervals on a share near 0.2 need a few "
            "relevant passages in the sample: with n = 30 (about 5 of them) they under-cover.", "",
            "Reading: the intervals are built for an infinite population, so on a 300-passage run a sample of 100 "
            "gives some over-coverage (no finite-population correction); a method with little agreement (kappa near "
            "0) gives PPI no gain over the human labels alone, and PPI++ falls back towards them.", ""]
    strata_rows, strata_checks = stratified_table(runs_dir, stratified_sizes, draws, seed)
    if strata_rows:
        out += ["### Stratified samples, as an annotation queue draws them", "",
                f"The same check on samples stratified by `{STRATIFY_BY}`'s label with equal allocation (n / 2 "
                f"passages drawn uniformly from each stratum, seed {seed}; `rageval queue create --plan stratified "
                f"--by {STRATIFY_BY} --allocation equal`), every estimator in its stratified form (per-stratum "
                "estimates weighted by the strata's sizes). For the stratifying method itself the prediction is "
                "constant within each stratum, so PPI, PPI++ and the human labels alone coincide. A draw in which "
                "one stratum's sample shows no variance (15 passages all judged not relevant, say) gives no "
                "interval, as a uniform sample without variance does (last column): such a stratum would add "
                "nothing to the interval (with it, the human-only intervals of those draws held the true share in "
                "0-5% of them, the other draws' in 97-100%).", ""]
        out += _table(strata_rows)
        out += ["", "End to end (one draw of n = " + f"{max(stratified_sizes)} per run through a queue: "
                "`QueueStore.create_queue`, the crowd's judgements as its labels, `rageval trust --queue`, against "
                "the direct computation on the queue's items): largest difference "
                + ", ".join(f"{run} {value:.1e}" for run, value in strata_checks.items()) + ".", "",
                "Lowest coverage, by n: " + "; ".join(
                    f"{n}: {low.coverage:.3f} ({NAMES[low.estimator]}, {low.method} on {low.run})"
                    for n, low in _lowest(strata_rows, stratified_sizes).items()) + ".", ""]
    return out


def _lowest(rows: Sequence[Coverage], sizes: Sequence[int]) -> dict[int, Coverage]:
    """The row of lowest coverage of each sample size, over the real runs."""
    real = [r for r in rows if not r.run.startswith("simulated") and math.isfinite(r.coverage)]
    return {n: min((r for r in real if r.n == n), key=lambda r: r.coverage) for n in sizes
            if any(r.n == n for r in real)}
