"""Time rageval's measures against pytrec_eval on the same inputs, and check they agree.

    python benchmarks/bench_measures.py                      # 100,000 queries x 100 passages
    python benchmarks/bench_measures.py --queries 1000 --docs 20

Random scores rounded to 3 decimals (so about 1 in 10 passages shares its score with another),
about 5 relevant passages per query among the retrieved ones plus some unretrieved and judged
non-relevant ones, and every 50th query without any relevant passage. Everything runs in one
process, one timing each (no warm-up). Three comparisons:

1. from Python dicts: both sides start from the same ``{query: {passage: score}}`` dicts;
2. from TREC files on disk (written once, not timed): pytrec_eval's ``parse_run``/``parse_qrel`` +
   evaluate vs rageval's ``read_trec_run``/``read_trec_qrels`` + ``compute_measures_from_frames``;
3. from in-memory DataFrames (the tables read in 2) vs pytrec_eval on its dicts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from rageval.measures import (
    build_ranked_labels_from_run,
    compute_measure_values,
    compute_measures,
    compute_measures_from_frames,
    compute_measures_from_run,
    parse_measure,
    rank_by_score,
    read_trec_qrels,
    read_trec_run,
    required_depths,
    write_trec_qrels,
    write_trec_run,
)

# Our measure -> the pytrec_eval measure it must equal (RR@100 is recip_rank because docs <= 100).
MEASURES = {
    "P@10": "P_10",
    "R@10": "recall_10",
    "AP@100": "map_cut_100",
    "nDCG@10": "ndcg_cut_10",
    "RR@100": "recip_rank",
    "Rprec": "Rprec",
    "Hit@10": "success_10",
}


def make_inputs(n_queries: int, n_docs: int, seed: int = 0):
    """A scored run ``{query: {passage: score}}`` and binary qrels ``{query: {passage: 0|1}}``."""
    rng = np.random.default_rng(seed)
    pool = 20 * n_docs
    names = np.array([f"p{i}" for i in range(pool)], dtype=object)
    doc_ids = np.argsort(rng.random((n_queries, pool)), axis=1)[:, :n_docs] if n_queries * pool <= 5e7 \
        else np.stack([rng.choice(pool, n_docs, replace=False) for _ in range(n_queries)])
    scores = np.round(rng.random((n_queries, n_docs)), 3)
    n_relevant = min(5, n_docs)
    run, qrels = {}, {}
    for q in range(n_queries):
        query_id = f"q{q}"
        docs = names[doc_ids[q]].tolist()
        run[query_id] = dict(zip(docs, scores[q].tolist()))
        judged = dict.fromkeys(names[rng.integers(0, pool, 5)].tolist(), 0)
        if q % 50:
            # Relevant passages spread over the ranking, plus one relevant passage never retrieved.
            judged.update(dict.fromkeys(rng.choice(docs, n_relevant, replace=False).tolist(), 1))
            judged[f"unretrieved{q}"] = 1
        qrels[query_id] = judged
    return run, qrels


def as_frames(run, qrels) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The dict inputs as tables ``query_id, passage_id, score`` and ``query_id, passage_id, label``."""
    def table(nested, value):
        lengths = [len(inner) for inner in nested.values()]
        return pd.DataFrame({
            "query_id": np.repeat(np.array(list(nested), dtype=object), lengths),
            "passage_id": [key for inner in nested.values() for key in inner],
            value: [number for inner in nested.values() for number in inner.values()],
        })
    return table(run, "score"), table(qrels, "label")


def largest_differences(reference, table: pd.DataFrame, measures) -> dict[str, float]:
    """Per measure, the largest |ours - pytrec_eval| over the queries pytrec_eval returns."""
    differences = {}
    for measure in measures:
        ours = table[table["measure"] == str(measure)].set_index("query_id")["value"]
        trec = pd.Series({query_id: scores[MEASURES[str(measure)]] for query_id, scores in reference.items()})
        differences[str(measure)] = float((ours.reindex(trec.index) - trec).abs().max())
    return differences


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=100)
    args = parser.parse_args()

    import pytrec_eval

    run, qrels = make_inputs(args.queries, args.docs)
    print(f"{args.queries:,} queries x {args.docs} passages, {sum(map(len, qrels.values())):,} judgments")
    measures = [parse_measure(name) for name in MEASURES]

    trec_names = {"P.10", "recall.10", "map_cut.100", "ndcg_cut.10", "recip_rank", "Rprec", "success.10"}

    def run_pytrec_eval():
        return pytrec_eval.RelevanceEvaluator(qrels, trec_names).evaluate(run)

    reference, seconds_trec = timed(run_pytrec_eval)
    direct, seconds_direct = timed(compute_measures_from_run, measures, run, qrels)
    rankings, seconds_rank = timed(rank_by_score, run)
    per_query, seconds_compute = timed(compute_measures, measures, rankings, qrels)
    depth, ideal_depth = required_depths(measures)
    labels, seconds_build = timed(
        lambda: build_ranked_labels_from_run(run, qrels, depth=depth, ideal_depth=ideal_depth)
    )
    values, seconds_kernels = timed(compute_measure_values, measures, labels)
    seconds_two_step = seconds_rank + seconds_compute

    def line(label, seconds):
        print(f"  {label:52s} {seconds:7.3f} s   pytrec_eval / this = {seconds_trec / seconds:6.1f}x")

    print(f"  {'pytrec_eval: RelevanceEvaluator(qrels).evaluate(run)':52s} {seconds_trec:7.3f} s")
    line("rageval compute_measures_from_run(run, qrels) -> df", seconds_direct)
    line("  of which build_ranked_labels_from_run (dicts->arrays)", seconds_build)
    line("  of which the 7 kernels (arrays ready, no dicts)", seconds_kernels)
    line("rageval rank_by_score(run) + compute_measures(...)", seconds_two_step)
    line("  rank_by_score(run) alone", seconds_rank)
    line("  compute_measures(rankings, qrels) alone", seconds_compute)

    # pytrec_eval leaves out the queries it finds nothing for; here every query retrieved passages,
    # and the queries without a relevant passage are still in its output (scored 0).
    row_of = {query_id: row for row, query_id in enumerate(labels.query_ids)}
    rows = np.array([row_of[query_id] for query_id in reference])
    print(f"compared on {len(rows):,} queries; largest absolute difference per measure, both paths:")
    tables = {"from_run": direct, "rankings": per_query}
    for measure in measures:
        trec = np.array([scores[MEASURES[str(measure)]] for scores in reference.values()])
        differences = [np.abs(values[measure][rows] - trec).max()]
        for table in tables.values():
            ours = table.loc[table["measure"] == str(measure), "value"].to_numpy()[rows]
            differences.append(np.abs(ours - trec).max())
        print(f"  {measure!s:8s} vs {MEASURES[str(measure)]:12s} {max(differences):.3g}")

    with tempfile.TemporaryDirectory() as folder:
        compare_from_files(Path(folder), run, qrels, measures, trec_names, reference, seconds_trec)


def compare_from_files(folder: Path, run, qrels, measures, trec_names, reference, seconds_trec: float) -> None:
    """Comparisons 2 and 3: TREC files on disk, then in-memory DataFrames."""
    import pytrec_eval

    run_table, qrels_table = as_frames(run, qrels)
    run_path = write_trec_run(run_table, folder / "run.trec")
    qrels_path = write_trec_qrels(qrels_table, folder / "qrels.trec")
    del run_table, qrels_table
    size = (run_path.stat().st_size + qrels_path.stat().st_size) / 1e6
    print(f"from TREC files ({size:,.0f} MB run + qrels, written once, not timed):")

    def pytrec_eval_from_files():
        with open(run_path) as run_file, open(qrels_path) as qrels_file:
            parsed_run, parsed_qrels = pytrec_eval.parse_run(run_file), pytrec_eval.parse_qrel(qrels_file)
        return pytrec_eval.RelevanceEvaluator(parsed_qrels, trec_names).evaluate(parsed_run)

    def ours_from_files():
        return compute_measures_from_frames(measures, read_trec_run(run_path), read_trec_qrels(qrels_path))

    def pytrec_eval_parse_only():
        with open(run_path) as run_file, open(qrels_path) as qrels_file:
            return pytrec_eval.parse_run(run_file), pytrec_eval.parse_qrel(qrels_file)

    reference_files, seconds_trec_files = timed(pytrec_eval_from_files)
    _, seconds_trec_parse = timed(pytrec_eval_parse_only)
    from_files, seconds_files = timed(ours_from_files)
    run_frame, seconds_read_run = timed(read_trec_run, run_path)
    qrels_frame, seconds_read_qrels = timed(read_trec_qrels, qrels_path)
    from_frames, seconds_frames = timed(compute_measures_from_frames, measures, run_frame, qrels_frame)

    print(f"  {'pytrec_eval: parse_run + parse_qrel + evaluate':52s} {seconds_trec_files:7.3f} s")
    print(f"  {'  parse_run + parse_qrel alone (timed again)':52s} {seconds_trec_parse:7.3f} s")
    print(f"  {'rageval: read_trec_* + compute_measures_from_frames':52s} {seconds_files:7.3f} s   "
          f"pytrec_eval / this = {seconds_trec_files / seconds_files:6.1f}x")
    print(f"  {'  read_trec_run alone (Arrow reader, timed again)':52s} {seconds_read_run:7.3f} s")
    print(f"  {'  read_trec_qrels alone (timed again)':52s} {seconds_read_qrels:7.3f} s")
    print("from in-memory DataFrames (the tables read above) vs pytrec_eval on its dicts:")
    print(f"  {'rageval compute_measures_from_frames(run, qrels)':52s} {seconds_frames:7.3f} s   "
          f"pytrec_eval / this = {seconds_trec / seconds_frames:6.1f}x")

    print(f"compared on {len(reference_files):,} queries; largest absolute difference per measure:")
    print(f"  {'':24s} {'files vs files':>15s} {'frames vs dicts':>15s} {'pytrec files vs dicts':>22s}")
    files = largest_differences(reference_files, from_files, measures)
    frames = largest_differences(reference, from_frames, measures)
    for measure in measures:
        name = str(measure)
        trec_gap = max(abs(reference_files[q][MEASURES[name]] - reference[q][MEASURES[name]]) for q in reference)
        print(f"  {name:8s} vs {MEASURES[name]:12s} {files[name]:15.3g} {frames[name]:15.3g} {trec_gap:22.3g}")


if __name__ == "__main__":
    main()
