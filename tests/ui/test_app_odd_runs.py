"""Odd run files (``tests/odd_runs.py``: the fixture run edited with sqlite3) on the pages that read them: what is
missing or odd is said in a warning naming the count, and the page works on the rest, without an exception.
A huge passage is shown a part at a time, and rendering it costs about as much memory as a run without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rageval.store import RunReader
from tests import odd_runs
from tests.app_helpers import frame_with
from tests.run_fixtures import N_QUERIES, K, make_small_run
from tests.ui.test_app import passage_texts, start
from tests.ui.test_app_annotate import sample_items, saved_rows
from ui import data
from ui.render import escape_markdown

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = str(REPO / "app_pages" / "1_Query_inspector.py")
ANNOTATE = str(REPO / "app_pages" / "9_Annotate.py")
CORRELATIONS = str(REPO / "app_pages" / "5_Correlations.py")
COMPARE = str(REPO / "app_pages" / "6_Compare_runs.py")
CITATIONS = str(REPO / "app_pages" / "3_Citations.py")
PART = data.PASSAGE_PAGE_SIZE


def warnings(app) -> list[str]:
    """The page's warnings but the small-sample note (:func:`ui.render.small_sample_note`: these runs are small, and
    tests/ui/test_app_home.py checks the note)."""
    return [w.value for w in app.warning if not w.value.startswith("**Small sample:")]


def no_exception(app) -> None:
    assert not app.exception, [e.value for e in app.exception]


@pytest.fixture
def runs(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    return tmp_path


def annotate_as(app, name: str = "Ada Lovelace"):
    app.text_input(key="annotate.annotator.widget").input(name).run()
    no_exception(app)
    return app


def annotate_item(app, folder: Path, query_id: str, passage_id: str | None = None):
    """Draw a sample of every passage (the Annotate page's form) and open the first sampled item of ``query_id``
    (of ``passage_id`` when given) by ``?item=``."""
    import sqlite3

    from rageval.annotations import ANNOTATIONS_FILE

    app.button[[b.label for b in app.button].index("Start: draw the sample")].click().run()
    no_exception(app)
    with sqlite3.connect(folder / ANNOTATIONS_FILE) as connection:
        items = connection.execute("SELECT position, query_id, passage_id FROM sample_items ORDER BY position"
                                   ).fetchall()
    connection.close()
    position = next(p for p, q, d in items if q == query_id and passage_id in (None, d))
    app.query_params["item"] = str(position + 1)
    app.run()
    no_exception(app)
    return app


def test_ranked_passages_missing_from_the_passages_table_are_listed_and_counted(runs):
    gone = odd_runs.without_passages(runs / "fixture.sqlite", n=2)
    app = start(INSPECTOR, query=odd_runs.QUERY)
    table = frame_with(app, "Passage")
    assert list(table["Rank"]) == list(range(1, K + 1))  # ranks 1 and 2 are still there
    assert list(table["Passage"][:2]) == [data.MISSING_PASSAGE_TEXT] * 2
    assert passage_texts(app)[:2] == [data.MISSING_PASSAGE_TEXT] * 2
    assert any(c.value.startswith(escape_markdown(gone[0])) for c in app.caption)  # the id opens its passage row
    assert warnings(app) == [escape_markdown(
        "2 ranked passage(s) of this query are missing from the run file's passages table: they are listed at their "
        f'rank with "{data.MISSING_PASSAGE_TEXT}".')]


def test_negative_labels_are_shown_as_stored_and_counted_per_method(runs):
    odd_runs.with_negative_labels(runs / "fixture.sqlite", method="erag:em", n=2)
    app = start(INSPECTOR, query=odd_runs.QUERY)
    assert list(frame_with(app, "Passage")["eRAG EM"][:2]) == ["-1.00", "-1.00"]
    assert warnings(app) == [escape_markdown(
        "2 negative label value(s) among this query's passages (eRAG EM: 2). Labels are 0/1 or graded in [0, 1]; "
        "they are shown as stored and count as not relevant.")]

    app = start(INSPECTOR, query="nq:1")  # another query of the same run: nothing odd there
    assert warnings(app) == []

    app = annotate_item(annotate_as(start(ANNOTATE)), runs, odd_runs.QUERY)  # the agreement reads every label
    assert warnings(app) == [escape_markdown(
        "2 negative label value(s) in this run's automatic labels (eRAG EM: 2). Labels are 0/1 or graded in [0, 1]; "
        "the agreement counts them as not useful.")]


def test_duplicate_ranking_rows_are_dropped_with_a_warning_and_annotate_still_labels(runs):
    path = runs / "fixture.sqlite"
    added = odd_runs.with_duplicate_rankings(path)
    expected = escape_markdown(
        f"{added} duplicate ranking row(s) of this query were dropped (the same rank, or the same passage, stored "
        "twice in the run file): the first of each is shown.")
    shown = list(dict.fromkeys(odd_runs.ranked_ids(path)))  # rank order, each passage once

    # Annotate once crashed with StreamlitDuplicateElementKey; the sample holds each (query, passage) once.
    app = annotate_item(annotate_as(start(ANNOTATE)), runs, odd_runs.QUERY, shown[1])
    assert warnings(app) == [expected]
    assert sorted(p for q, p in sample_items(runs) if q == odd_runs.QUERY) == sorted(shown)
    app.button(key="annotate.queue.1").click().run()
    no_exception(app)
    assert ("fixture", "passage", odd_runs.QUERY, shown[1], 1, "Ada Lovelace") in saved_rows(runs)

    app = start(INSPECTOR, query=odd_runs.QUERY)
    assert warnings(app) == [expected]
    assert list(frame_with(app, "Passage")["Rank"]) == list(range(1, K + 1))
    assert [c.value.split(" · ")[0] for c in app.caption if "single\\-passage answer" in c.value] == [
        escape_markdown(p) for p in shown]  # each passage row opens with its id


@pytest.fixture
def nonfinite_runs(runs) -> tuple[Path, dict]:
    """``a``: the fixture run with NULL / inf measure values (:func:`tests.odd_runs.with_nonfinite_measures`);
    ``b``: the good fixture run."""
    changed = odd_runs.with_nonfinite_measures(runs / "a.sqlite")
    make_small_run(runs / "b.sqlite")
    return runs, changed


def test_correlations_leave_out_missing_and_infinite_values_per_pair_and_say_so(nonfinite_runs):
    _, changed = nonfinite_runs
    assert changed[("gold", f"nDCG@{K}")] == 3 and changed[("erag:em", f"nDCG@{K}")] == 2
    app = start(CORRELATIONS, run="a", method="gold", measure=f"nDCG@{K}", k=str(K))  # raised ValueError
    [warning] = warnings(app)
    assert warning.startswith(escape_markdown(f"Left out: 3 value(s) of gold nDCG@{K};"))
    at_k = {pair: n for pair, n in changed.items() if pair[1].endswith(f"@{K}") or pair[1] == "Rprec"}
    others = sum(n for pair, n in at_k.items() if pair != ("gold", f"nDCG@{K}"))
    assert escape_markdown(f"{others} value(s) of {len(at_k) - 1} other measure(s) in the table") in warning
    points = frame_with(app, f"nDCG@{K}")
    assert len(points) == N_QUERIES - 3  # nq:1, nq:2, nq:3 left out; the scatter and the table use the rest
    assert not {"nq:1", "nq:2", "nq:3"} & set(points["Inspect"].str.extract(r"query=([^&]+)")[0].str.replace(
        "%3A", ":"))


def test_compare_runs_leaves_out_missing_and_infinite_values_and_says_so(nonfinite_runs):
    app = start(COMPARE, run_a="a", run_b="b", method="erag:em", measure=f"P@{K}")  # raised ValueError
    assert warnings(app) == [escape_markdown(
        f"Left out: per-query values of eRAG EM P@{K} that are missing or not a finite number in the run file "
        "(2 in run A); those queries count as only in the other run.")]
    assert {m.label: m.value for m in app.metric}["Shared queries"] == str(N_QUERIES - 2)

    app = start(COMPARE, run_a="b", run_b="a", method="gold", measure=f"nDCG@{K}")
    assert warnings(app) == [escape_markdown(
        f"Left out: per-query values of gold nDCG@{K} that are missing or not a finite number in the run file "
        "(3 in run B); those queries count as only in the other run.")]


def test_the_overview_leaves_non_finite_values_out_of_the_means_and_says_so(nonfinite_runs):
    runs, changed = nonfinite_runs
    app = start(str(REPO / "app.py"), run="a")
    per_method = {}
    for (method, _), n in changed.items():
        per_method[method] = per_method.get(method, 0) + n
    assert warnings(app) == [escape_markdown(
        f"{sum(per_method.values())} per-query measure value(s) are missing or not a finite number in the run file "
        f"and are left out of the means (contains-answer: {per_method['contains_answer']}, eRAG EM: "
        f"{per_method['erag:em']}, gold: {per_method['gold']}).")]
    with RunReader(runs / "a.sqlite") as reader:
        moments = reader.measure_moments()
    assert moments["mean"].notna().all() and (moments["mean"].abs() < float("inf")).all()


# --- a huge passage --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> tuple[Path, str, int]:
    folder = tmp_path_factory.mktemp("big-passage")
    passage_id, length = odd_runs.with_big_passage(folder / "big.sqlite")
    return folder, passage_id, length


def test_a_huge_passage_is_shown_a_part_at_a_time(big_run, monkeypatch):
    folder, big_id, length = big_run
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(folder))
    parts = -(-length // PART)
    app = start(INSPECTOR, query=odd_runs.QUERY)
    table = frame_with(app, "Passage")
    assert table["Passage"][0] == odd_runs.big_text(0, PART) + f" … (part 1 of {parts:,})"
    key = f"inspect.passage_page.{odd_runs.QUERY}.1"
    assert app.number_input(key=key).value == 1
    assert passage_texts(app)[0] == odd_runs.big_text(0, PART)
    assert escape_markdown(f"Part 1 of {parts:,}:") in " ".join(c.value for c in app.caption)

    app.number_input(key=key).set_value(2).run()
    no_exception(app)
    assert passage_texts(app)[0] == odd_runs.big_text(PART, 2 * PART)
    app.number_input(key=key).set_value(parts).run()
    assert passage_texts(app)[0] == odd_runs.big_text((parts - 1) * PART, length)
    assert all(len(t) <= PART for t in passage_texts(app))

    app = annotate_item(annotate_as(start(ANNOTATE)), folder, odd_runs.QUERY, big_id)
    assert app.text[0].value == odd_runs.big_text(0, PART)
    app.number_input(key=f"annotate.page.{int(app.query_params['item']) - 1}").set_value(3).run()
    no_exception(app)
    assert app.text[0].value == odd_runs.big_text(2 * PART, 3 * PART)


def test_a_huge_input_passage_of_an_attributed_answer_is_shown_a_part_at_a_time(tmp_path, monkeypatch):
    import sqlite3

    from rageval.store.attribution import AttributionReader
    from tests.engine.test_annotations import make_small_attribution_run

    path = make_small_attribution_run(tmp_path / "attribution" / "hagrid.sqlite")
    with AttributionReader(path) as reader:
        first = reader.frame("input_passages").iloc[0]
        answer = reader.frame("answers", "scenario = ? AND query_id = ?", (first["scenario"], first["query_id"]))
    length = 3 * PART + 7
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("UPDATE input_passages SET text = ? WHERE scenario = ? AND query_id = ? AND number = ?",
                           (odd_runs.big_text(0, length), first["scenario"], first["query_id"], int(first["number"])))
    connection.close()
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path))
    app = start(CITATIONS, run="hagrid", scenario=first["scenario"], query=first["query_id"],
                answer=str(answer["answer_id"].iloc[0]))
    key = f"citations.page.{first['scenario']}.{first['query_id']}.{int(first['number'])}"
    texts = [t.value for t in app.text]
    assert odd_runs.big_text(0, PART) in texts and odd_runs.big_text(0, length) not in texts
    app.number_input(key=key).set_value(4).run()
    no_exception(app)
    assert odd_runs.big_text(3 * PART, length) in [t.value for t in app.text]


def measure_page(runs: Path, page: str, cache: Path) -> dict:
    """``tests.odd_runs measure`` in a fresh process, with its own cache folder ``cache``: the developer's cache
    holds a record of every run summary seen (megabytes after many test runs), which one measurement would read and
    the other not (a file written in the last two seconds is never looked up)."""
    result = subprocess.run([sys.executable, "-m", "tests.odd_runs", "measure", str(runs), page], cwd=REPO,
                            capture_output=True, text=True, timeout=600,
                            env={**__import__("os").environ, "PYTHONPATH": str(REPO), "RAGEVAL_CACHE_DIR": str(cache)})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_rendering_a_huge_passage_costs_about_what_a_small_run_does(big_run, tmp_path):
    """Peak memory of the inspector on the run with a 50 MB passage, against the same run without it, each in a
    fresh process: before parts were read with blob I/O, the big one peaked 450 MB higher (ru_maxrss) and held
    170 MB of Python objects (tracemalloc); now neither grows by a tenth of the passage."""
    folder, _, length = big_run
    make_small_run(tmp_path / "big.sqlite")
    small = measure_page(tmp_path, "app_pages/1_Query_inspector.py", tmp_path / "cache-small")
    big = measure_page(folder, "app_pages/1_Query_inspector.py", tmp_path / "cache-big")
    assert small["exceptions"] == big["exceptions"] == []
    growth_kib = (big["maxrss_kib"] - big["maxrss_before_kib"]) - (small["maxrss_kib"] - small["maxrss_before_kib"])
    assert growth_kib * 1024 < length / 10, (small, big)
    assert big["tracemalloc_peak_bytes"] - small["tracemalloc_peak_bytes"] < length / 10, (small, big)
