"""rageval.correlations.constant_sides: which side of the correlations at k is constant, checked against the
coefficient itself (scipy's kendalltau is nan exactly when a side is constant)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from rageval.correlations import constant_sides

QUERIES = ["q1", "q2", "q3", "q4", "q5"]


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Five queries: the E2E exact match is 0 for all at k=10 and varies at k=1 and k=5; gold P@10 is 0.2 for all,
    eRAG P@10 varies; at k=1 both methods vary; at k=5 only gold's P varies and only over q1-q4 (q5 has no E2E
    score at k=5)."""
    e2e = pd.DataFrame({"query_id": QUERIES * 2 + QUERIES[:4], "k": [10] * 5 + [1] * 5 + [5] * 4,
                        "score": [0, 0, 0, 0, 0] + [1, 0, 1, 0, 0] + [1, 0, 0, 1]})
    rows = {("gold", "P@10"): [0.2] * 5, ("erag:em", "P@10"): [0.1, 0.0, 0.3, 0.0, 0.1],
            ("gold", "P@1"): [1, 0, 1, 0, 1], ("erag:em", "P@1"): [1, 0, 0, 0, 1],
            ("gold", "P@5"): [0.4, 0.2, 0.2, 0.4, 0.0], ("erag:em", "P@5"): [0.2, 0.2, 0.2, 0.2, 0.6]}
    measures = pd.DataFrame([{"method": m, "measure": x, "query_id": q, "value": float(v)}
                             for (m, x), values in rows.items() for q, v in zip(QUERIES, values)])
    return measures, e2e


def scipy_undefined(measures: pd.DataFrame, e2e: pd.DataFrame, method: str, measure: str, k: int) -> bool:
    scores = e2e[e2e["k"] == k].set_index("query_id")["score"]
    values = measures[(measures["method"] == method) & (measures["measure"] == measure)].set_index("query_id")
    shared = [q for q in values.index if q in scores.index]
    return math.isnan(stats.kendalltau(values.loc[shared, "value"], scores.loc[shared]).statistic)


def test_the_constant_e2e_score_is_named_with_the_ks_where_both_sides_vary():
    measures, e2e = frames()
    sides = constant_sides(measures, e2e, 10)
    assert (sides.k, sides.n, sides.e2e_value, sides.e2e_constant) == (10, 5, 0.0, True)
    assert sides.constant_measures == (("gold", "P@10", 0.2),)
    assert sides.varying_ks == (1, 5)
    assert sides.nearest_varying_k() == 5
    assert sides.constant_value("gold", "P@10") == 0.2 and sides.constant_value("erag:em", "P@10") is None
    # scipy agrees: every coefficient at k=10 is undefined, and at k=1 and k=5 some is defined.
    assert all(scipy_undefined(measures, e2e, m, f"P@{10}", 10) for m in ("gold", "erag:em"))
    assert not scipy_undefined(measures, e2e, "gold", "P@1", 1)


def test_a_constant_measure_over_the_queries_with_an_e2e_score_is_named():
    measures, e2e = frames()
    sides = constant_sides(measures, e2e, 5)
    assert (sides.n, sides.e2e_value, sides.e2e_constant) == (4, None, False)
    # eRAG P@5 is 0.2 on q1-q4 (its 0.6 is on q5, which has no E2E score at k=5): constant where it counts.
    assert sides.constant_measures == (("erag:em", "P@5", 0.2),)
    assert scipy_undefined(measures, e2e, "erag:em", "P@5", 5)
    assert not scipy_undefined(measures, e2e, "gold", "P@5", 5)
    assert constant_sides(measures, e2e, 1).constant_measures == ()


def test_non_finite_values_and_a_k_without_scores():
    measures, e2e = frames()
    e2e = pd.concat([e2e, pd.DataFrame({"query_id": ["q1"], "k": [20], "score": [np.nan]})])
    measures.loc[(measures["method"] == "erag:em") & (measures["measure"] == "P@10"), "value"] = [
        0.1, np.nan, np.inf, 0.1, 0.1]
    sides = constant_sides(measures, e2e, 20)
    assert (sides.n, sides.e2e_value, sides.varying_ks) == (0, None, (1, 5))
    at_10 = constant_sides(measures, e2e, 10)
    assert at_10.constant_measures == (("erag:em", "P@10", 0.1), ("gold", "P@10", 0.2))
    only_constant = e2e.assign(score=0.0)
    assert constant_sides(measures, only_constant, 1).varying_ks == ()
    assert constant_sides(measures, only_constant, 1).nearest_varying_k() is None


def test_the_spread_read_by_sqlite_gives_the_same_sides(tmp_path):
    """Issue 42: the Correlations page read every measure value at every k into pandas to find the constant side
    (108 s at 100,000 queries); it now reads each measure's smallest and largest value over the scored queries
    from SQLite (store.aggregates.read_scored_spread). The answer is the same as constant_sides' on the values."""
    import dataclasses

    from rageval.correlations import constant_sides_from_spread
    from rageval.store import E2EOutput, MeasureValue, RunReader, aggregates, write_run
    from tests.run_fixtures import build_small_run

    measures, e2e = frames()
    run = build_small_run()
    ids = [q.query_id for q in run.queries][:5]
    rename = dict(zip(QUERIES, ids))
    path = tmp_path / "sides.sqlite"
    write_run(dataclasses.replace(
        run, measure_values=[MeasureValue(r.method, r.measure, rename[r.query_id], r.value)
                             for r in measures.itertuples()],
        e2e_outputs=[E2EOutput(rename[r.query_id], int(r.k), "answer", float(r.score)) for r in e2e.itertuples()]),
        path)
    with RunReader(path) as reader:
        spreads = {k: aggregates.read_scored_spread(reader, k) for k in (1, 5, 10)}
    renamed = measures.assign(query_id=measures["query_id"].map(rename))
    renamed_e2e = e2e.assign(query_id=e2e["query_id"].map(rename))
    for k in (1, 5, 10):
        assert constant_sides_from_spread(spreads, renamed_e2e, k) == constant_sides(renamed, renamed_e2e, k)
    assert constant_sides_from_spread(spreads, renamed_e2e, 10).constant_measures == (("gold", "P@10", 0.2),)
