"""The home page's findings (rageval.findings) and the SQLite summaries they read (rageval.store.aggregates), on the
fixture run (tests/run_fixtures.py), variants of it, and the shipped NQ run; every count is checked against an
independent pandas computation from the run's own tables (queries, rankings, e2e_outputs, measure_values)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from rageval import findings
from rageval.correlations import constant_sides
from rageval.findings import (
    RIGHT_THRESHOLD,
    compute_gold_answer_table,
    constant_answer_finding,
    correlation_finding,
    failure_finding,
    label_method_warnings,
    label_share_finding,
    two_by_two_finding,
)
from rageval.stats.correlation import MIN_INTERVAL_QUERIES
from rageval.store import E2EOutput, Label, MeasureValue, RunReader, aggregates, write_run
from tests.run_fixtures import K, build_small_run, make_small_run

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "runs" / "nq_open-bm25-gemma3_270m.sqlite"


def pandas_two_by_two(path: Path, k: int, threshold: float = RIGHT_THRESHOLD) -> dict[tuple[bool, bool], list[str]]:
    """The 2 x 2 recomputed from the run's tables with pandas: the query's gold passages, its top-k ranking (first
    k by rank) and its E2E score at k."""
    with RunReader(path) as reader:
        order = list(reader.query_table()["query_id"])
        gold = {q: set(reader.query(q).gold_passage_ids) for q in order}
        ranking = reader._frame("SELECT query_id, rank, passage_id FROM rankings")
        e2e = reader.e2e_table()
    top = ranking.sort_values(["query_id", "rank"]).groupby("query_id").head(k)
    top_sets = top.groupby("query_id")["passage_id"].agg(set).to_dict()
    scores = e2e[e2e["k"] == k].set_index("query_id")["score"].to_dict()
    cells: dict[tuple[bool, bool], list[str]] = {(g, a): [] for g in (True, False) for a in (True, False)}
    for query_id in order:
        if not gold[query_id] or query_id not in scores or not math.isfinite(scores[query_id]):
            continue
        cells[(bool(gold[query_id] & top_sets.get(query_id, set())), scores[query_id] >= threshold)].append(query_id)
    return cells


def two_by_two_of(path: Path, k: int, threshold: float = RIGHT_THRESHOLD, method: str | None = None):
    with RunReader(path) as reader:
        return compute_gold_answer_table(aggregates.read_gold_retrieval(reader, k, method), k, threshold)


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("findings") / "fixture.sqlite")


def test_two_by_two_of_the_fixture_run(fixture_run):
    table = two_by_two_of(fixture_run, K)
    expected = pandas_two_by_two(fixture_run, K)
    for (gold, right), ids in expected.items():
        assert list(table.cell(gold, right).query_ids) == ids, (gold, right)
    # tests/run_fixtures.py: queries 0-4 rank their gold passage at rank index + 1 (all within K = 5), query 5
    # misses it; all 6 have a gold passage and an E2E answer at K.
    assert table.n == table.n_queries == 6 and table.without_gold == table.without_answer == 0
    assert table.cell(False, True).count + table.cell(False, False).count == 1
    assert sum(c.count for c in table.cells) == 6
    for cell in table.cells:
        theirs = stats.binomtest(cell.count, 6).proportion_ci(method="wilson")
        assert cell.share.mean == cell.count / 6
        assert cell.share.low == pytest.approx(theirs.low) and cell.share.high == pytest.approx(theirs.high)
    assert table.cell(True, False).name(K) == f"gold retrieved, answer wrong at k={K}"


@pytest.mark.parametrize("k", [1, 2, 3])
def test_two_by_two_follows_k(fixture_run, k):
    """At k < K the fixture's queries whose gold passage sits below rank k count as not retrieved; the E2E score
    is stored at K only, so a run without answers at k has an empty table, every query counted as lacking one."""
    with RunReader(fixture_run) as reader:
        retrieval = aggregates.read_gold_retrieval(reader, k)
    expected_retrieved = [i + 1 <= k for i in range(5)] + [False]  # query i ranks its gold passage at i + 1
    assert list(retrieval["gold_retrieved"]) == expected_retrieved
    table = compute_gold_answer_table(retrieval, k)
    assert table.n == 0 and table.without_answer == 6 and all(c.count == 0 for c in table.cells)
    assert two_by_two_finding(table) is None


def test_two_by_two_on_the_shipped_run_equals_pandas():
    with RunReader(SHIPPED) as reader:
        k = reader.main_k()
    table = two_by_two_of(SHIPPED, k)
    for (gold, right), ids in pandas_two_by_two(SHIPPED, k).items():
        assert list(table.cell(gold, right).query_ids) == ids, (gold, right)
    assert table.n == 300 and sum(c.count for c in table.cells) == 300
    finding = two_by_two_finding(table)
    cell = table.cell(True, False)
    assert finding.text.startswith(f"{cell.count} of 300 queries ({cell.share.mean:.0%} [")
    assert f"in the top {k} yet answer wrongly" in finding.text


def test_gold_from_labels_threshold_and_missing_pieces(tmp_path):
    """Queries without gold passage ids: the ``gold`` label method's positive labels stand in; a graded E2E score
    is right at or above the threshold; a query without gold, or with a non-finite score, is left out."""
    run = build_small_run()
    queries = [dataclasses.replace(q, gold_passage_ids=()) for q in run.queries]
    scores = [0.2, 0.5, 0.7, math.inf, 1.0, 0.0]  # inf: not a finite score (another tool's file)
    e2e = [E2EOutput(o.query_id, o.k, o.output, s) for o, s in zip(run.e2e_outputs, scores)]
    labels = [x for x in run.labels if not (x.method == "gold" and x.query_id == "nq:1")]  # nq:1 loses its gold
    path = write_run(dataclasses.replace(run, queries=queries, e2e_outputs=e2e, labels=labels), tmp_path / "r.sqlite")
    with RunReader(path) as reader:
        assert not aggregates.has_gold_passage_ids(reader)
        assert aggregates.read_gold_retrieval(reader, K)["n_gold"].sum() == 0
    table = two_by_two_of(path, K, 0.5, method="gold")
    assert table.without_gold == 1 and table.without_answer == 1 and table.n == 4
    # nq:0 (0.2, wrong), nq:2 (0.7, right), nq:4 (1.0, right) retrieve their gold; nq:5 (0.0) does not.
    assert table.cell(True, True).query_ids == ("nq:2", "nq:4")
    assert table.cell(True, False).query_ids == ("nq:0",) and table.cell(False, False).query_ids == ("nq:5",)
    strict = two_by_two_of(path, K, 0.8, method="gold")
    assert strict.cell(True, True).query_ids == ("nq:4",)


def spread_of(path: Path, measure: str) -> pd.DataFrame:
    with RunReader(path) as reader:
        return aggregates.read_measure_spread(reader, reader.label_methods(), measure)


def test_measure_spread_equals_pandas_on_the_shipped_run():
    spread = spread_of(SHIPPED, "P@10").set_index("method")
    with RunReader(SHIPPED) as reader:
        values = reader.measure_table().query("measure == 'P@10'")
    for method, group in values.groupby("method"):
        row, v = spread.loc[method], group["value"]
        counts = v.value_counts()
        assert row["n"] == len(v) and row["mean"] == pytest.approx(v.mean())
        assert row["n_zero"] == (v == 0).sum() and row["n_one"] == (v == 1).sum()
        assert (row["min"], row["max"]) == (v.min(), v.max())
        assert row["n_mode"] == counts.max() and row["mode"] == min(counts[counts == counts.max()].index)


def test_degenerate_label_methods_are_flagged(tmp_path):
    """A method labelling every passage 1 (P@5 = 1 for all queries: constant), one labelling all but one query's
    passages 0, and one whose labels are the same within each query are flagged; the fixture's own are not."""
    run = build_small_run()
    ids = [q.query_id for q in run.queries]
    extra = [MeasureValue("always", f"P@{K}", q, 1.0) for q in ids]
    extra += [MeasureValue("rarely", f"P@{K}", q, 0.4 if q == "nq:0" else 0.0) for q in ids]
    extra += [MeasureValue("per_query", f"P@{K}", q, float(i % 2)) for i, q in enumerate(ids)]
    labels = [Label(m, "nq:0", "nq_oracle:0", 1.0) for m in ("always", "rarely", "per_query")]
    path = write_run(dataclasses.replace(run, measure_values=[*run.measure_values, *extra],
                                         labels=[*run.labels, *labels]), tmp_path / "odd.sqlite")
    warnings = {w.method: w for w in label_method_warnings(spread_of(path, f"P@{K}"), f"P@{K}", share=0.8)}
    assert set(warnings) >= {"always", "rarely", "per_query"}  # at 80% the fixture's gold (P@5 0.2 for 5 of 6) too
    assert warnings["always"].reason == "constant" and "undefined" in warnings["always"].text
    assert warnings["rarely"].reason == "one_value" and "is 0 for 5 of 6 queries" in warnings["rarely"].text
    assert warnings["per_query"].reason == "same_within_query" and "for 6 of 6 queries" in warnings["per_query"].text
    assert {w.method for w in label_method_warnings(spread_of(path, f"P@{K}"), f"P@{K}")} == {"always",
                                                                                              "per_query"}  # 5 of 6: no


def test_label_share_finding_counts_the_stored_labels():
    with RunReader(SHIPPED) as reader:
        n, yes = aggregates.read_label_share(reader, "llm_relevance")
        labels = reader.labels("llm_relevance")
    assert n == len(labels) and yes == (labels["value"] > 0).sum()
    finding = label_share_finding("llm_relevance", n, yes, name=lambda m: "LLM relevance")
    share = yes / n
    theirs = stats.binomtest(yes, n).proportion_ci(method="wilson")
    assert finding.text == (f"The LLM relevance baseline says Yes (relevant) to {share:.0%} [{theirs.low:.0%}, "
                            f"{theirs.high:.0%}] of the {n:,} passages it labelled.")
    assert label_share_finding("llm_relevance", 0, 0) is None


def correlation_row(method, measure, tau, low, high, n=300):
    return {"method": method, "measure": measure, "n": n, "tau": tau, "tau_low": low, "tau_high": high,
            "rho": tau, "rho_low": low, "rho_high": high}


def test_correlation_finding_compares_the_best_erag_and_gold_measures():
    table = pd.DataFrame([correlation_row("erag:em", "P@10", 0.21, 0.12, 0.30),
                          correlation_row("erag:em", "nDCG@10", 0.18, 0.10, 0.26),
                          correlation_row("erag:f1", "P@10", 0.10, 0.01, 0.19),
                          correlation_row("gold", "Hit@10", 0.06, -0.03, 0.11),
                          correlation_row("gold", "P@10", 0.02, -0.07, 0.10),
                          correlation_row("contains_answer", "P@10", 0.45, 0.35, 0.55),
                          correlation_row("erag:em", "Rprec", 0.5, 0.4, 0.6)])
    finding = correlation_finding(table, 10)
    assert finding.text == ("erag:em labels predict the answer better than gold labels: Kendall's tau 0.21 "
                            "[0.12, 0.30] (P@10) vs 0.06 [-0.03, 0.11] (Hit@10); 300 queries, k=10.")
    assert finding.target == {"method": "erag:em", "measure": "P@10", "k": 10}
    overlap = table.assign(tau_high=table["tau_high"].where(table["method"] != "gold", 0.2))
    assert "about as well as gold labels" in correlation_finding(overlap, 10).text
    assert "the intervals overlap" in correlation_finding(overlap, 10).text
    no_gold = table[table["method"] != "gold"]
    assert "worse than contains_answer labels" in correlation_finding(no_gold, 10).text
    assert correlation_finding(table[~table["method"].str.startswith("erag:")], 10) is None


def test_failure_finding():
    counts = pd.DataFrame({"judge": ["em", "em", "llm"], "k": [1, 5, 5], "n": [40, 40, 40],
                           "recall_failures": [20, 10, 10], "reteval_failures": [3, 4, 9]})
    finding = failure_finding(counts, 5)
    assert finding.target == {"judge": "em", "k": 5}
    assert finding.text.startswith("At k=5 (judge em), 10 of 40 judged queries (25% [")
    assert failure_finding(counts, 3).target["k"] == 5  # not judged at 3: the largest k
    assert failure_finding(counts.iloc[0:0], 5) is None


def test_failure_finding_names_which_comparison_failed():
    """Issue 42: "5 (83%) LLM-retEval failures (D-F: the evaluation itself erred)" blamed the evaluation without
    saying which scorer disagreed with which; each of D, E, F is now counted and said in words."""
    counts = pd.DataFrame({"judge": ["em"], "k": [3], "n": [6], "recall_failures": [1], "reteval_failures": [5],
                           "d": [2], "e": [0], "f": [3]})
    text = failure_finding(counts, 3).text
    assert "the evaluation itself erred" not in text
    assert "2 D (no answer the LLM gave from the gold passages passes the gold-answer check" in text
    assert "3 F (judge em's verdict against the semi-gold answers disagrees with the gold-answer check" in text
    assert " E (" not in text  # no E case: not mentioned
    assert "The gold-answer check: equal after normalisation or the gold answer contained as words" in text


def test_label_methods_by_skip_scan_equal_the_readers(fixture_run, tmp_path):
    for path in (fixture_run, SHIPPED):
        with RunReader(path) as reader:
            assert aggregates.read_label_methods(reader) == reader.label_methods()
    bare = write_run(dataclasses.replace(build_small_run(), labels=()), tmp_path / "bare.sqlite")
    with RunReader(bare) as reader:
        assert aggregates.read_label_methods(reader) == []


def test_cell_positions_are_rows_of_the_run_order(fixture_run):
    table = two_by_two_of(fixture_run, K)
    with RunReader(fixture_run) as reader:
        order = list(reader.query_table()["query_id"])
    for cell in table.cells:
        assert [order[i] for i in cell.positions] == list(cell.query_ids)



@pytest.mark.parametrize("which", ["fixture", "shipped"])
def test_key_correlations_equal_the_full_tables_rows(which, fixture_run):
    """Bootstrapping only the best eRAG pair and its reference gives those rows of the full table (same point taus,
    tie rule, resamples and seed), and the same finding."""
    from rageval.correlations import correlation_table_at_k
    from rageval.stats.correlation import DEFAULT_RESAMPLES

    path = fixture_run if which == "fixture" else SHIPPED
    with RunReader(path) as reader:
        k = reader.main_k()
        measures, e2e = aggregates.read_measures_at(reader, k)
        full = correlation_table_at_k(reader.measure_table(), reader.e2e_table(), k, DEFAULT_RESAMPLES)
    ours = findings.key_correlations(measures, e2e, k)
    assert list(ours["method"]) == ["erag:em", "gold"]  # the best eRAG method, then gold labels
    for row in ours.to_dict("records"):
        theirs = full[(full["method"] == row["method"]) & (full["measure"] == row["measure"])].iloc[0]
        assert row["n"] == theirs["n"]
        for name in ("tau", "tau_low", "tau_high"):
            assert row[name] == pytest.approx(theirs[name]), (row["method"], name)
    assert correlation_finding(ours, k) == correlation_finding(full, k)


def test_no_correlation_finding_when_the_answer_score_is_constant(tmp_path):
    """Every E2E answer wrong: every tau is undefined, so no row is chosen and no sentence is made."""
    run = build_small_run()
    wrong = [dataclasses.replace(e, score=0.0) for e in run.e2e_outputs]
    path = write_run(dataclasses.replace(run, e2e_outputs=wrong), tmp_path / "wrong.sqlite")
    with RunReader(path) as reader:
        table = findings.key_correlations(*aggregates.read_measures_at(reader, K), K)
    assert table.empty and list(table.columns) == ["method", "measure", "n", "tau", "tau_low", "tau_high"]
    assert correlation_finding(table, K) is None


def test_correlation_finding_over_too_few_queries_for_an_interval_compares_nothing():
    """Issue 34: on 5 queries a percentile interval of tau is not one (tests/stats/test_interval_coverage.py), so
    the sentence gives the estimates alone and says which is better cannot be told."""
    table = pd.DataFrame([correlation_row("erag:em", "P@1", 1.0, 1.0, 1.0, n=5),
                          correlation_row("gold", "P@1", 0.25, 0.25, 0.67, n=5)])
    assert correlation_finding(table, 1).text == (
        "erag:em labels: Kendall's tau 1.00 (P@1); gold labels: 0.25 (P@1); too few queries for an interval "
        f"(n = 5 < {MIN_INTERVAL_QUERIES}), so which predicts the answer better cannot be told; 5 queries, k=1.")
    alone = correlation_finding(table[table["method"] != "gold"], 1).text
    assert alone == ("erag:em labels predict the answer best: Kendall's tau 1.00 (P@1); too few queries for an "
                     f"interval (n = 5 < {MIN_INTERVAL_QUERIES}); 5 queries, k=1.")
    at_threshold = table.assign(n=MIN_INTERVAL_QUERIES)
    assert "better than gold labels: Kendall's tau 1.00 [1.00, 1.00]" in correlation_finding(at_threshold, 1).text


def test_constant_answer_finding_names_the_answers_side_and_the_k_where_it_varies():
    e2e = pd.DataFrame({"query_id": ["a", "b", "c"] * 2, "k": [10] * 3 + [1] * 3, "score": [0, 0, 0, 1, 0, 1]})
    measures = pd.DataFrame({"method": "gold", "measure": ["P@10"] * 3 + ["P@1"] * 3, "query_id": ["a", "b", "c"] * 2,
                             "value": [0.2, 0.2, 0.2, 1, 0, 0]})
    finding = constant_answer_finding(constant_sides(measures, e2e, 10), "EM")
    assert finding.text == ("The E2E EM at k=10 is 0 for all 3 queries: nothing to correlate with, so no label "
                            "method's correlation with the answer is defined at k=10; at k=1 it varies.")
    assert (finding.kind, finding.target) == ("constant", {"k": 1})
    assert constant_answer_finding(constant_sides(measures, e2e, 1), "EM") is None
    nowhere = constant_answer_finding(constant_sides(measures, e2e.assign(score=0), 10), "EM")
    assert nowhere.text.endswith("no k of this run has an answer score and a measure that both vary.")
    assert nowhere.target == {"k": 10}


def test_a_constant_measure_beside_a_constant_answer_is_not_blamed(tmp_path):
    path = make_small_run(tmp_path / "run.sqlite")
    spread = spread_of(path, f"P@{K}")
    constant = spread.assign(min=0.2, max=0.2, mode=0.2, n_mode=spread["n"])
    blamed = label_method_warnings(constant, f"P@{K}")[0].text
    assert blamed.endswith("so its correlation with the answer is undefined.")
    told = label_method_warnings(constant, f"P@{K}", answer_constant=True)[0].text
    assert told.endswith(f"P@{K} is 0.2 for all 6 queries (as is the answer's score, above), so it tells no query "
                         "from another.")
