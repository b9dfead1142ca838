"""A simulated annotator on the shipped NQ run: does a PPI interval from 300 human labels cover what people would
say about every passage, and is it narrower than the human-only one? (issue 32, "Done when")

Noise model (documented, seeded): the simulated person's true judgement of a retrieved passage is *relevant* when
the passage is one of the query's gold passages (label method ``gold``) OR contains one of the gold answers
(``contains_answer``); the annotator reports that judgement but flips it with probability ``--flip`` (0.1),
independently per passage. The annotator is simulated on every one of the run's 3,000 retrieved passages, so "what
people would say if they had labelled everything" is known: the *simulated truth* of a measure is its value over
all passages under the annotator's (noisy) labels (the noise-free share is printed beside it). The annotator then
labels only a uniform sample of ``--labels`` passages: a shared sample of the Annotate page
(:meth:`rageval.annotations.AnnotationStore.create_sample`), whose labels are written to a CSV and brought in by
``rageval annotations import`` (:func:`rageval.trust.imports.import_labels`) into a temporary annotation file, and
:func:`rageval.trust.report.trust_report` computes everything ``rageval trust`` prints.

Printed: for each method the simulated truth, the automatic estimate, the PPI and PPI++ intervals (covers the
truth? width) and the human-only interval (width), then ``rageval trust``'s whole report (calibration table
included), then over ``--repeats`` fresh uniform samples the coverage and mean width of each interval (numpy only),
the interval with ``--plan`` more labels chosen by :func:`rageval.trust.plan.plan_next` (stratified), and, for
the per-query measures (Hit@k, the Findings page's 2 x 2 cells), which a passage sample of this size cannot give
(a query counts only when all its top-k passages are labelled), the same annotator labelling ``--queries`` whole
queries at random (a query sample, :func:`rageval.trust.report.query_sample_design`).

    PYTHONPATH=$PWD .venv/bin/python scripts/simulate_annotator.py
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rageval.annotations import AnnotationStore  # noqa: E402
from rageval.store.runs import RunReader  # noqa: E402
from rageval.trust import ppi  # noqa: E402
from rageval.trust.imports import import_labels  # noqa: E402
from rageval.trust.plan import plan_next  # noqa: E402
from rageval.trust.report import (  # noqa: E402
    LABEL_SHARE,
    auto_labels,
    build_report,
    design_of,
    other_annotated_runs,
    ranked_items,
    read_inputs,
    trust_report,
)
from rageval.trust.report_text import format_report  # noqa: E402

RUN = REPO / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"


def simulated_labels(run: Path, flip: float, seed: int):
    """The run's retrieved passages, every method's 0/1 labels of them, the noise-free truth and the annotator's
    labels of every passage (the noise model of the module docstring)."""
    with RunReader(run) as reader:
        population = ranked_items(reader.rankings())
        labels = reader.labels()
        methods = reader.label_methods()
        k = reader.main_k()
    auto = auto_labels(population, labels, methods)
    truth = ((auto["gold"] == 1) | (auto["contains_answer"] == 1)).to_numpy().astype(int)
    flips = np.random.default_rng(seed).random(len(truth)) < flip
    annotator = np.where(flips, 1 - truth, truth)
    return population, auto, truth, annotator, k


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=RUN)
    parser.add_argument("--labels", type=int, default=300, help="the uniform sample the annotator labels")
    parser.add_argument("--flip", type=float, default=0.1, help="the annotator's flip probability")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=1000, help="fresh samples for the coverage check")
    parser.add_argument("--plan", type=int, default=150, help="labels the plan adds (stratified)")
    parser.add_argument("--plan-method", default="erag:em", help="the method whose interval the plan narrows")
    parser.add_argument("--queries", type=int, default=30, help="whole queries labelled for the query measures")
    args = parser.parse_args(argv)

    population, auto, truth, annotator, k = simulated_labels(args.run, args.flip, args.seed)
    top = (population["rank"] <= k).to_numpy()
    n_queries = population["query_id"].nunique()
    people_share = float(annotator.mean())
    print(f"run {args.run.name}: {len(population):,} retrieved passages of {n_queries} queries, k={k}")
    print(f"noise model: relevant = gold OR contains-answer (noise-free share {truth.mean():.3f}); the annotator "
          f"flips each label with probability {args.flip} (seed {args.seed}); simulated truth (the annotator's "
          f"share over all {len(population):,} passages) {people_share:.3f}")

    with tempfile.TemporaryDirectory() as folder:
        store = AnnotationStore(Path(folder) / "annotations.sqlite")
        run_name = args.run.stem
        sample = store.create_sample(run_name, population, args.labels, seed=args.seed, created_by="simulated")
        items = store.latest_sample(run_name).items
        index = {key: i for i, key in enumerate(zip(population["query_id"], population["passage_id"]))}
        chosen = np.array([index[(q, p)] for q, p in zip(items["query_id"], items["passage_id"])])
        labels_csv = Path(folder) / "labels.csv"
        with labels_csv.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["query_id", "passage_id", "label", "annotator"])
            for i in chosen:
                writer.writerow([population["query_id"].iat[i], population["passage_id"].iat[i], annotator[i],
                                 "simulated"])
        result = import_labels(args.run, labels_csv, store)
        print(f"sample {sample}: {result.labels} labels imported ({result.relevant} relevant)\n")
        report = trust_report(args.run, store, compare_runs=False)
        inputs = read_inputs(args.run, store)
        design = design_of(store, run_name, len(inputs.population), None)
        plan = plan_next(inputs, design, args.plan_method, args.plan, seed=args.seed)
        planned = [(q, p, int(annotator[index[(q, p)]]), "simulated")
                   for q, p in zip(plan.items["query_id"], plan.items["passage_id"])]
        store.save_passage_labels(run_name, planned, note="planned")
        after = build_report(read_inputs(args.run, store), plan.design, population_strata=plan.population_strata)

    print(f"{'method':<16}{'truth':>7}{'auto':>7}  {'PPI [95%]':<20}{'covers':>7}{'width':>7}  "
          f"{'PPI++ [95%]':<20}{'covers':>7}{'width':>7}  {'human only [95%]':<20}{'covers':>7}{'width':>7}")
    for method, trust in report.methods.items():
        cells = []
        for name in (ppi.PPI, ppi.PPI_PLUS_PLUS, ppi.HUMAN_ONLY):
            e = trust.estimates[name][LABEL_SHARE]
            cells.append(f"{e.estimate:.3f} [{e.low:.3f}, {e.high:.3f}]".ljust(20)
                         + f"{'yes' if e.covers(people_share) else 'NO':>7}{e.width:>7.3f}  ")
        print(f"{method:<16}{people_share:>7.3f}{trust.auto[LABEL_SHARE]:>7.3f}  " + "".join(cells))
    print("\n--- rageval trust (the same report) ---")
    print(format_report(report))

    print(f"\n--- {args.repeats} fresh uniform samples of {args.labels} passages: coverage of the simulated truth "
          "and mean width of the 95% intervals (label_share) ---")
    rng = np.random.default_rng(args.seed + 1)
    draws = [rng.choice(len(population), size=args.labels, replace=False) for _ in range(args.repeats)]
    print(f"{'method':<16}{'PPI cover':>10}{'width':>8}{'PPI++ cover':>12}{'width':>8}{'human cover':>12}{'width':>8}")
    for method in auto.columns:
        f = auto[method].to_numpy(dtype=float)
        stats = {name: ([], []) for name in (ppi.PPI, ppi.PPI_PLUS_PLUS, ppi.HUMAN_ONLY)}
        for draw in draws:
            for name in stats:
                e = ppi.estimate(name, annotator[draw], f[draw], f)
                stats[name][0].append(e.covers(people_share))
                stats[name][1].append(e.width)
        print(f"{method:<16}" + "".join(f"{np.mean(c):>{w}.1%}{np.mean(ws):>8.3f}" for (c, ws), w in
                                        zip(stats.values(), (10, 12, 12))))
    print(f"\n--- the plan: {args.plan} more labels by Neyman allocation for {args.plan_method} "
          f"(strata: its label x the methods' agreement) ---")
    print(plan.allocation.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"{'method':<16}{'truth':>7}  {'uniform PPI++':<22}{'width':>7}  {'+plan PPI++':<22}{'width':>7}"
          f"{'covers':>7}  {'+plan human only':<22}{'width':>7}")
    for method in report.methods:
        before = report.methods[method].estimates[ppi.PPI_PLUS_PLUS][LABEL_SHARE]
        tuned = after.methods[method].estimates[ppi.PPI_PLUS_PLUS][LABEL_SHARE]
        human = after.methods[method].estimates[ppi.HUMAN_ONLY][LABEL_SHARE]
        print(f"{method:<16}{people_share:>7.3f}  {before.estimate:.3f} [{before.low:.3f}, {before.high:.3f}]  "
              f"{before.width:>7.3f}  {tuned.estimate:.3f} [{tuned.low:.3f}, {tuned.high:.3f}]  {tuned.width:>7.3f}"
              f"{'yes' if tuned.covers(people_share) else 'NO':>7}  "
              f"{human.estimate:.3f} [{human.low:.3f}, {human.high:.3f}]  {human.width:>7.3f}")
    query_section(args, population, annotator, k)
    runs_section(args)
    del top
    return 0


#: The shipped eRAG runs the per-run ordering compares (the NQ run above first).
OTHER_RUNS = ("demo/nq_open-dense-gemma3_270m.sqlite", "demo/nq_open-bm25-gemma3_270m-k20.sqlite",
              "demo/hotpotqa-bm25-gemma3_270m.sqlite", "demo/hotpotqa-candidates-gemma3_270m.sqlite")


def runs_section(args) -> None:
    """Per-run agreement: the same annotator (same noise model) labels a uniform sample of ``--labels`` passages
    of each of five shipped runs, copied into one folder; each method's P@10 ordering of the runs against the
    people's (their human-only P@10), Kendall's tau-b (:func:`rageval.trust.report.trust_report`)."""
    import shutil

    with tempfile.TemporaryDirectory() as folder:
        store = AnnotationStore(Path(folder) / "annotations.sqlite")
        copies, truths = [], {}
        for i, source in enumerate((args.run, *(REPO / "data" / "runs" / name for name in OTHER_RUNS))):
            copy = Path(folder) / Path(source).name
            shutil.copy(source, copy)
            copies.append(copy)
            population, _, _, annotator, _ = simulated_labels(copy, args.flip, args.seed + 10 + i)
            top = (population["rank"] <= 10).to_numpy()
            truths[copy.stem] = float(annotator[top].sum() / (population["query_id"].nunique() * 10))
            store.create_sample(copy.stem, population, args.labels, seed=args.seed, created_by="simulated")
            items = store.latest_sample(copy.stem).items
            index = {key: j for j, key in enumerate(zip(population["query_id"], population["passage_id"]))}
            store.save_passage_labels(copy.stem, [(q, p, int(annotator[index[(q, p)]]), "simulated")
                                                  for q, p in zip(items["query_id"], items["passage_id"])])
        report = trust_report(copies[0], store)
        values = other_annotated_runs(store, copies[-1], list(report.methods), report.k)  # every run but the last
        values.update(other_annotated_runs(store, copies[0], list(report.methods), report.k))
    print(f"\n--- per-run agreement: {len(copies)} shipped runs, each with {args.labels} simulated human labels of a "
          f"uniform sample; P@{report.k} of the people (from their labels) and of each method over every passage ---")
    shown = ("gold", "contains_answer", "erag:em", "erag:f1", "llm_relevance")
    print(f"{'run':<42}{'people':>8}{'truth':>8}" + "".join(f"{m:>16}" for m in shown))
    for run, (people_p, auto) in sorted(values.items(), key=lambda item: -item[1][0]):
        print(f"{run:<42}{people_p:>8.3f}{truths[run]:>8.3f}" + "".join(
            f"{auto.get(m, float('nan')):>16.3f}" for m in shown))
    print(f"{'method':<16}{'tau_run':>8}{'runs':>6}")
    for method, trust in report.methods.items():
        tau = trust.per_run.tau
        print(f"{method:<16}{tau:>8.3f}{trust.per_run.n:>6}" if np.isfinite(tau) else
              f"{method:<16}{'-':>8}{trust.per_run.n:>6}  {trust.per_run.reason}")


def query_section(args, population, annotator, k: int) -> None:
    """The annotator labels every passage of ``--queries`` random whole queries: a query sample, which the
    per-query measures (Hit@k, the 2 x 2 cells) need; their simulated truth is over all queries."""
    from rageval.findings import RIGHT_THRESHOLD
    from rageval.trust.report import CELLS, query_sample_design

    queries = list(dict.fromkeys(population["query_id"]))
    rng = np.random.default_rng(args.seed + 2)
    picked = [queries[i] for i in rng.choice(len(queries), size=args.queries, replace=False)]
    with tempfile.TemporaryDirectory() as folder:
        store = AnnotationStore(Path(folder) / "annotations.sqlite")
        rows = [(q, p, int(y), "simulated") for q, p, y in zip(population["query_id"], population["passage_id"],
                                                                annotator) if q in set(picked)]
        store.save_passage_labels(args.run.stem, rows)
        inputs = read_inputs(args.run, store)
        report = build_report(inputs, query_sample_design(picked, len(queries), f"{args.queries} random queries"))
    frame = pd.DataFrame({"query_id": population["query_id"], "y": annotator * (population["rank"] <= k)})
    hit = frame.groupby("query_id", sort=False)["y"].max().reindex(inputs.queries)
    e2e = np.array([inputs.e2e.get(q, np.nan) for q in inputs.queries])
    scored = np.isfinite(e2e)
    right = e2e[scored] >= RIGHT_THRESHOLD
    truths = {f"Hit@{k}": float(hit.mean()), f"P@{k}": float(frame["y"].sum() / (len(queries) * k))}
    for cell, (got, answer) in CELLS.items():
        truths[f"{cell}@{k}"] = float(((hit.to_numpy()[scored] == int(got)) & (right == answer)).mean())
    print(f"\n--- a sample of {args.queries} whole queries ({len(rows)} passages labelled): the per-query measures, "
          "simulated truth over all queries ---")
    print(f"{'method':<16}{'measure':<22}{'truth':>7}{'auto':>7}  {'PPI [95%]':<21}{'covers':>7}{'width':>7}  "
          f"{'PPI++':>7}{'covers':>7}  {'human only [95%]':<21}{'width':>7}")
    for method, trust in report.methods.items():
        shown = [f"Hit@{k}"] if method != args.plan_method else list(truths)
        for measure in shown:
            e, tuned, human = (trust.estimates[name][measure] for name in
                               (ppi.PPI, ppi.PPI_PLUS_PLUS, ppi.HUMAN_ONLY))
            truth = truths[measure]
            print(f"{method:<16}{measure:<22}{truth:>7.3f}{trust.auto[measure]:>7.3f}  {shown_interval(e):<21}"
                  f"{covers(e, truth):>7}{e.width:>7.3f}  {tuned.width:>7.3f}{covers(tuned, truth):>7}  "
                  f"{shown_interval(human):<21}{human.width:>7.3f}")


def shown_interval(e) -> str:
    if not np.isfinite(e.low):
        return f"{e.estimate:.3f} (no interval)"
    return f"{e.estimate:.3f} [{e.low:.3f}, {e.high:.3f}]"


def covers(e, truth: float) -> str:
    return "-" if not np.isfinite(e.low) else ("yes" if e.covers(truth) else "NO")


if __name__ == "__main__":
    sys.exit(main())
