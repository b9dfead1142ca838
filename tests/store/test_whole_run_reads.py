"""What the Correlations and Compare pages read instead of a whole run (issue 15): the reader's column reads and
SQLite counts against the whole tables they replace, the remembered integrity checks, the density grids drawn
past :data:`ui.render_correlations.SCATTER_MAX_POINTS` queries and the permutation test's binomial draws."""

from __future__ import annotations

import json
import os
import sqlite3

import numpy as np
import pandas as pd
import pytest

from rageval import compare
from rageval.errors import StoreError
from rageval.store import RunReader, files
from tests.run_fixtures import make_small_run

OLD = 1_600_000_000  # a modification time long past: the file has settled, its checks may be remembered


@pytest.fixture
def run_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(files, "_good", None)  # this test's cache folder, not what an earlier test remembered
    return make_small_run(tmp_path / "run.sqlite")


def test_column_reads_match_the_whole_tables(run_file):
    with RunReader(run_file) as reader:
        table = reader.measure_table()
        names = reader.measure_names()
        assert sorted(zip(names["method"], names["measure"])) == sorted(
            set(zip(table["method"], table["measure"])))
        method, measure = names["method"].iat[0], names["measure"].iat[-1]
        values = reader.measure_values(method, measure)
        expected = table[(table["method"] == method) & (table["measure"] == measure)]
        assert dict(zip(values["query_id"], values["value"])) == dict(zip(expected["query_id"], expected["value"]))
        e2e = reader.e2e_table()
        k = int(e2e["k"].iat[0])
        scores = reader.e2e_scores(k)
        at_k = e2e[e2e["k"] == k]
        assert dict(zip(scores["query_id"], scores["score"])) == dict(zip(at_k["query_id"], at_k["score"]))
        assert reader.questions()["query_id"].tolist() == reader.query_table()["query_id"].tolist()



def test_questions_of_some_queries_match_every_question(run_file):
    with RunReader(run_file) as reader:
        every = dict(zip(reader.questions()["query_id"], reader.questions()["text"]))
        some = list(every)[1::2]
        assert reader.question_texts([*some, "no such query"]) == {q: every[q] for q in some}
        assert reader.question_texts([]) == {}



def test_every_query_in_one_read_is_each_query_read_alone(run_file):
    with RunReader(run_file) as reader:
        assert reader.queries() == [reader.query(q) for q in reader.query_ids()]

def test_a_big_runs_points_are_read_without_questions_and_its_table_reads_its_rows(run_file):
    """Past ``questions_up_to`` points (a density grid) the points carry no question, and the queries table reads
    the questions of its rows alone: the same table as from points read with every question."""
    from ui import data, data_correlations
    from ui.render_correlations import points_view

    mtime_ns = os.stat(run_file).st_mtime_ns
    with RunReader(run_file) as reader:
        method, measure = reader.measure_names()["method"].iat[0], reader.measure_names()["measure"].iat[-1]
        k = reader.e2e_ks()[0]
    full = data_correlations.load_scatter_points(str(run_file), mtime_ns, method, measure, k)
    bare = data_correlations.load_scatter_points(str(run_file), mtime_ns, method, measure, k, questions_up_to=1)
    assert len(full) > 1 and full["question"].str.len().gt(0).all() and (bare["question"] == "").all()
    pd.testing.assert_frame_equal(full.drop(columns="question"), bare.drop(columns="question"))
    expected = points_view(full, "run", measure, "E2E", limit=3)
    shown = points_view(bare, "run", measure, "E2E", limit=3,
                        questions=lambda ids: data.load_question_texts(str(run_file), mtime_ns, tuple(ids)))
    pd.testing.assert_frame_equal(shown, expected)

def test_measure_counts_match_counting_the_rows(run_file):
    """``scored`` is the n a correlation with the E2E score at k has: finite values of queries with a finite E2E
    score at k; one query's E2E score removed and one value made infinite change it as counting the rows does."""
    with sqlite3.connect(run_file) as connection:
        query_id, k = connection.execute("SELECT query_id, k FROM e2e_outputs LIMIT 1").fetchone()
        connection.execute("DELETE FROM e2e_outputs WHERE query_id = ? AND k = ?", (query_id, k))
        method, measure, other = connection.execute(
            "SELECT method, measure, query_id FROM measure_values WHERE query_id != ? LIMIT 1", (query_id,)).fetchone()
        connection.execute("UPDATE measure_values SET value = 9e999 WHERE method = ? AND measure = ? AND query_id = ?",
                           (method, measure, other))
    connection.close()
    with RunReader(run_file) as reader:
        assert not reader.every_query_scored(k)
        table = reader.measure_table()
        names = reader.measure_names()
        counts = reader.measure_counts(list(zip(names["method"], names["measure"])), k)
        scored_queries = set(reader.e2e_scores(k)["query_id"])
    finite = table[np.isfinite(table["value"].astype(float))]
    for row in counts.itertuples(index=False):
        rows = table[(table["method"] == row.method) & (table["measure"] == row.measure)]
        kept = finite[(finite["method"] == row.method) & (finite["measure"] == row.measure)]
        assert (row.stored, row.finite, row.scored) == (len(rows), len(kept), int(kept["query_id"].isin(
            scored_queries).sum())), row
    changed = counts[(counts["method"] == method) & (counts["measure"] == measure)].iloc[0]
    assert changed.stored - changed.finite == 1


def test_checks_of_an_unchanged_file_are_remembered_and_a_change_forgets_them(run_file, monkeypatch):
    os.utime(run_file, (OLD, OLD))
    RunReader(run_file).close()
    assert (run_file.parent / "cache" / "checked_files.json").exists()
    scans = []
    monkeypatch.setattr(files, "_check_pages", lambda *args: scans.append("pages"))
    monkeypatch.setattr(files, "_check_shape", lambda *args: scans.append("shape"))
    RunReader(run_file).close()
    assert scans == []  # remembered: neither scanned again
    # Damaged in place (same size): a new modification time, so it is checked again and the damage found.
    monkeypatch.undo()
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(run_file.parent / "cache"))
    with sqlite3.connect(run_file) as connection:
        connection.execute("UPDATE measure_values SET value = 'text' WHERE rowid = 1")
    connection.close()
    os.utime(run_file, (OLD + 5, OLD + 5))
    with pytest.raises(StoreError, match="a text value"):
        RunReader(run_file)


def test_a_file_changed_just_now_is_never_remembered(run_file):
    RunReader(run_file).close()  # written a moment ago: within the racy window
    assert files._good_key(run_file, "pages:run") is None
    assert not (run_file.parent / "cache" / "checked_files.json").exists()


def test_density_grid_counts_every_query_once():
    from ui.render_correlations import DENSITY_BINS, density_cells, grid_axis, is_density, scatter_chart

    rng = np.random.default_rng(0)
    n = 6_000
    assert is_density(n) and not is_density(5_000)
    points = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)], "question": ["?"] * n,
                           "value": rng.choice([0.0, 0.2, 0.4, 1.0], n), "e2e": rng.random(n)})
    cells, spec = scatter_chart(points, "gold", "P@5", 5, "E2E EM")
    assert spec["encoding"]["x"]["sort"] == ["0", "0.2", "0.4", "1"]  # one cell per distinct value
    assert len(spec["encoding"]["y"]["sort"]) == DENSITY_BINS  # continuous E2E scores: equal-width bins
    assert cells["queries"].sum() == n and (cells["queries"] > 0).all()  # only non-empty cells are sent
    y_codes, y_labels = grid_axis(points["e2e"])  # recounted here with pandas
    exact = pd.crosstab(points["value"].map("{:.3g}".format), np.asarray(y_labels)[y_codes])
    drawn = cells.pivot(index="x_cell", columns="y_cell", values="queries").fillna(0).astype(int)
    assert drawn.loc[exact.index, exact.columns].to_numpy().tolist() == exact.to_numpy().tolist()
    *_, x_labels, y_labels = density_cells([0.0, 1.0, 1.0], [1.0, 1.0, 0.5], shared_levels=True)
    assert x_labels == y_labels == ["0", "0.5", "1"]  # same cells on both axes: the diagonal is A = B


def test_compare_charts_past_the_point_limit_send_counts_not_queries():
    from ui.render_compare import SCATTER_MAX_POINTS, difference_chart, grid_axis, paired_scatter_chart

    rng = np.random.default_rng(1)
    n = 7_000
    assert n > SCATTER_MAX_POINTS
    for a_values, b_values in ((rng.integers(0, 2, n), rng.integers(0, 2, n)), (rng.random(n), rng.random(n))):
        a, b = pd.Series(a_values.astype(float)), pd.Series(b_values.astype(float))
        a.index = b.index = [f"q{i}" for i in range(n)]
        pairs = compare.pair_scores(a, b)[0]
        cells, spec = paired_scatter_chart(pairs, {}, "A", "B", "EM")
        # a grid of counts: no query id, no question, no per-query row reaches the browser
        assert set(cells.columns) == {"a_cell", "b_cell", "queries", "tie_cell"} and len(cells) <= 20 * 20
        assert "(A, B) pair" in spec["title"] and cells["queries"].sum() == n
        # the counts are the crosstab of the pairs' cells (both axes on the cells of A and B together)
        levels = np.concatenate([a.to_numpy(), b.to_numpy()])
        expected = pd.crosstab(grid_axis(pairs["a"], levels)[0], grid_axis(pairs["b"], levels)[0]).stack()
        labels = grid_axis(pairs["a"], levels)[1]
        assert {(labels[i], labels[j]): int(c) for (i, j), c in expected.items() if c} == {
            (row.a_cell, row.b_cell): row.queries for row in cells.itertuples()}
        assert cells["tie_cell"].tolist() == (cells["a_cell"] == cells["b_cell"]).tolist()

        bars, _ = difference_chart(pairs, "EM")
        assert len(bars) <= 3 * 40 and "query_id" not in bars.columns
        by_outcome = pairs["outcome"].value_counts()
        assert bars.groupby("outcome")["queries"].sum().to_dict() == by_outcome.to_dict()
        if bars["difference"].nunique() > 3:  # continuous scores: 40 equal-width bins, as np.histogram counts them
            edges = np.linspace(pairs["difference"].min(), pairs["difference"].max(), 41)
            counts = np.histogram(pairs["difference"], bins=edges)[0]
            per_bin = bars.groupby("start")["queries"].sum()
            assert per_bin.tolist() == counts[counts > 0].tolist()
            assert per_bin.index.to_numpy() == pytest.approx(edges[:-1][counts > 0])


def test_difference_bars_are_one_per_value_only_when_the_values_are_spread():
    from ui.render_compare import difference_bins

    # E2E exact match: A - B is -1, 0 or 1: a bar on each value, 0.8 wide
    starts, ends, labels, cells = difference_bins(np.array([1.0, 0.0, 0.0, -1.0, 1.0]))
    assert labels == ["-1", "+0", "+1"] and cells.tolist() == [2, 1, 1, 0, 2]
    assert (ends - starts).tolist() == pytest.approx([0.8] * 3)
    # two values 0.001 apart in a range of 1: a bar each would be a hairline, so 40 equal-width bins, as numpy counts
    differences = np.array([0.0, 0.001, 0.5, 1.0, 1.0])
    starts, ends, labels, cells = difference_bins(differences)
    assert len(labels) == 40 and ends[-1] == 1.0
    assert np.bincount(cells, minlength=40).tolist() == np.histogram(differences, bins=40)[0].tolist()


def test_pair_scores_by_arrays_equal_the_per_query_rule():
    a = pd.Series([1.0, 0.5, 0.0, 2.0], index=["q1", "q2", "q3", "q4"])
    b = pd.Series([0.5, 0.5 + 1e-13, 1.0, 7.0], index=["q2", "q1", "q3", "q9"])
    pairs, only_a, only_b = compare.pair_scores(a, b)
    assert pairs["query_id"].tolist() == ["q1", "q2", "q3"] and only_a == ["q4"] and only_b == ["q9"]
    assert pairs["outcome"].tolist() == [compare.outcome_of(d) for d in pairs["difference"]]


def test_binomial_permutation_test_agrees_with_per_sign_draws(monkeypatch):
    """With many differences of few sizes the test draws sign counts per size (binomial): another random stream,
    the same distribution, so on the same differences its p-value is within Monte Carlo error of the per-sign
    draws' (4,000 draws: the standard error of a p-value near 0.3 is about 0.007)."""
    rng = np.random.default_rng(2)
    differences = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=1_500, p=[0.25, 0.1, 0.3, 0.1, 0.25])
    assert len(differences) < compare._GROUPED_FROM
    per_sign = compare.paired_permutation_test(differences, 4_000, seed=3)
    monkeypatch.setattr(compare, "_GROUPED_FROM", 1_000)
    grouped = compare.paired_permutation_test(differences, 4_000, seed=3)
    assert grouped.p_value != per_sign.p_value  # the other way was taken
    assert 0.05 < per_sign.p_value < 0.95 and abs(grouped.p_value - per_sign.p_value) < 0.04


@pytest.mark.parametrize("count, positive", [(64, 40), (65, 41), (128, 74), (63, 39)])
def test_grouped_sign_counts_follow_the_exact_binomial(monkeypatch, count, positive):
    """The grouped draw counts the set bits of ``count`` random bits (64 to a word, the last word masked): with
    one size of difference its p-value is within Monte Carlo error of the exact two-sided binomial one."""
    import math

    monkeypatch.setattr(compare, "_GROUPED_FROM", 10)
    differences = np.array([1.0] * positive + [-1.0] * (count - positive))
    observed = abs(2 * positive - count)
    exact = sum(math.comb(count, b) for b in range(count + 1) if abs(2 * b - count) >= observed) / 2 ** count
    result = compare.paired_permutation_test(differences, 20_000, seed=4)
    assert not result.exact and abs(result.p_value - exact) < 0.012, (result.p_value, exact)


def test_the_run_overview_is_remembered_per_version_of_the_file(run_file):
    """Measure moments, non-finite counts, E2E ks, every-query-scored and ``run_summary`` are summed once per
    version of a settled file (``run_summaries.json``), equal what the tables say, and follow a change."""
    from rageval.pipeline.summary import run_summary

    os.utime(run_file, (OLD, OLD))
    with RunReader(run_file) as reader:
        moments, ks, summary = reader.measure_moments(), reader.e2e_ks(), run_summary(run_file)
        k = ks[-1]
        table = reader.measure_table()
        names = reader.measure_names()
        assert reader.every_query_scored(k)
        counts = reader.measure_counts(list(zip(names["method"], names["measure"])), k)  # from the overview
    grouped = table.assign(value=table["value"].astype(float)).groupby(["method", "measure"])["value"]
    assert moments.set_index(["method", "measure"])["n"].to_dict() == grouped.count().to_dict()
    assert np.allclose(moments.set_index(["method", "measure"])["mean"].sort_index(), grouped.mean().sort_index())
    assert counts["stored"].tolist() == counts["finite"].tolist() == counts["scored"].tolist() == [
        grouped.count()[(m, x)] for m, x in zip(counts["method"], counts["measure"])]
    remembered = json.loads((run_file.parent / "cache" / "run_summaries.json").read_text())
    assert {"measure_stats:1", "e2e_ks:1", "run_summary:2", f"every_query_scored:1:{k}", "measure_names:1"} <= {
        key.split("|")[0].removeprefix("summary:") for key in remembered}
    summary["labels"].clear()  # the caller's copy: the remembered one is untouched
    assert run_summary(run_file)["labels"]
    with sqlite3.connect(run_file) as connection:  # changed: a new version, summed again
        method, measure = connection.execute("SELECT method, measure FROM measure_values LIMIT 1").fetchone()
        connection.execute("UPDATE measure_values SET value = 9e999 WHERE method = ? AND measure = ?",
                           (method, measure))
    connection.close()
    os.utime(run_file, (OLD + 5, OLD + 5))
    with RunReader(run_file) as reader:
        assert reader.nonfinite_measure_counts()[method] == int(grouped.count()[(method, measure)])
        after = reader.measure_moments()
        assert (method, measure) not in set(zip(after["method"], after["measure"]))
        pd.testing.assert_frame_equal(reader.measure_names(), names)  # the remembered pairs, read the same way


def test_frames_are_remembered_per_version_of_the_file_as_arrow_files(run_file, monkeypatch):
    """files.remembered_frame: a frame of at least FRAME_MIN_ROWS rows is computed once per version of a settled
    file and read back equal, dtypes included, from ``frames/`` in the cache; a damaged frame file, a changed run
    file or a small frame is computed again."""
    os.utime(run_file, (OLD, OLD))
    frames = run_file.parent / "cache" / "frames"
    calls = []

    def compute() -> pd.DataFrame:
        calls.append(1)
        with RunReader(run_file) as reader:
            return reader.measure_table()

    monkeypatch.setattr(files, "FRAME_MIN_ROWS", 10**9)
    files.remembered_frame(run_file, "test:1", compute)
    assert len(calls) == 1 and not frames.exists()  # too small to keep
    monkeypatch.setattr(files, "FRAME_MIN_ROWS", 1)
    first = files.remembered_frame(run_file, "test:1", compute)
    again = files.remembered_frame(run_file, "test:1", compute)
    assert len(calls) == 2 and len(list(frames.glob("*.arrow"))) == 1
    pd.testing.assert_frame_equal(again, first)  # values and dtypes
    next(frames.glob("*.arrow")).write_bytes(b"not an arrow file")  # damaged: computed again, then kept again
    pd.testing.assert_frame_equal(files.remembered_frame(run_file, "test:1", compute), first)
    assert len(calls) == 3
    files.remembered_frame(run_file, "test:1", compute)
    assert len(calls) == 3
    os.utime(run_file, (OLD + 5, OLD + 5))  # another version of the file
    files.remembered_frame(run_file, "test:1", compute)
    assert len(calls) == 4 and len(list(frames.glob("*.arrow"))) == 2


def test_the_lean_failure_case_table_is_remembered_and_equal_to_the_read(tmp_path, monkeypatch):
    """RunReader.failure_case_table(details=False) read through files.remembered_frame equals the joined read."""
    import shutil

    from tests.ui.test_app import SHIPPED_PATHS

    source = next(path for path in SHIPPED_PATHS.values() if RunReader(path).has_rows("failure_cases"))
    run = shutil.copy(source, tmp_path / source.name)
    os.utime(run, (OLD, OLD))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(files, "FRAME_MIN_ROWS", 1)
    with RunReader(run) as reader:
        judge = reader.judges()[0]
        expected = reader.failure_case_table(judge)[["query_id", "k", "category"]]
        for _ in range(2):  # computed, then read back from the frame file
            pd.testing.assert_frame_equal(reader.failure_case_table(judge, details=False), expected)
    assert len(list((tmp_path / "cache" / "frames").glob("*.arrow"))) == 1


def test_the_gold_retrieval_frame_is_remembered_and_equal_to_the_read(tmp_path, monkeypatch):
    """aggregates.read_gold_retrieval (Home's 2 x 2) read back from its frame file equals the SQLite read."""
    import shutil

    from rageval.store import aggregates
    from tests.ui.test_app import SHIPPED_PATHS

    run = shutil.copy(next(iter(SHIPPED_PATHS.values())), tmp_path / "run.sqlite")
    os.utime(run, (OLD, OLD))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(files, "FRAME_MIN_ROWS", 10**9)
    with RunReader(run) as reader:
        k = reader.main_k() or 1
        expected = aggregates.read_gold_retrieval(reader, k)
        monkeypatch.setattr(files, "FRAME_MIN_ROWS", 1)
        for _ in range(2):  # computed and kept, then read back from the frame file
            pd.testing.assert_frame_equal(aggregates.read_gold_retrieval(reader, k), expected)
        assert len(list((tmp_path / "cache" / "frames").glob("*.arrow"))) == 1
        other_k = aggregates.read_gold_retrieval(reader, 1)  # another k is another frame
        assert len(list((tmp_path / "cache" / "frames").glob("*.arrow"))) == 2
        assert other_k["gold_retrieved"].sum() <= expected["gold_retrieved"].sum()
