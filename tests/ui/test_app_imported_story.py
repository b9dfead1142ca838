"""An imported run's story (issue "What the pages say is true", item 11): traces whose lists differ in length, with
the team's qrels. The qrels are its gold, and each query's answer is the one made from its own list, so Findings and
the HTML report show the 2 x 2 over every query, never "0 of 0 queries" nor a "No finding" that denies the gold the
team brought."""

from __future__ import annotations

from pathlib import Path

import pytest

from rageval.html_report import compute_report, render_html
from rageval.traces.importer import content_id, import_traces
from tests.pipeline.test_brought_data_kept import uneven_records
from tests.traces.trace_fixtures import BERLIN, MILAN, PARIS, ROME
from tests.ui.test_app import HOME, start
from ui.render import escape_markdown


@pytest.fixture
def imported(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    records = uneven_records()  # lists of 2, 3, 4 and 4 passages; answers Paris, Berlin, Rome (right), Lyon (wrong)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{r.trace_id} 0 {content_id(t)} 1\n"
                             for r, t in zip(records, (PARIS, BERLIN, ROME, MILAN))))
    path = tmp_path / "runs" / "traced.sqlite"
    import_traces(records, path, format_name="openinference", qrels=qrels)
    return path


def test_findings_shows_each_query_s_own_list_and_answer(imported):
    home = start(HOME, run="traced")
    heading = [h.value for h in home.subheader if h.value.startswith("Gold passage retrieved")]
    assert heading == ["Gold passage retrieved × answer right (each query's own answer, from its own list)"]
    caption = next(c.value for c in home.caption if c.value.startswith("Gold retrieved"))
    assert escape_markdown("is ranked in its own list") in caption and "left out" not in caption
    assert escape_markdown("Shares of the 4 queries with both") in caption
    text = "\n".join(m.value for m in home.markdown)
    assert "1 of 4 queries" in text  # d: Milan (gold) is in its list, and the answer Lyon is wrong
    assert "neither correlations, gold passages" not in text + "\n".join(c.value for c in home.caption)


def test_the_html_report_tells_the_same_story(imported):
    html = render_html(compute_report(imported))
    assert "0 – of 0" not in html and "of 0 queries" not in html
    assert "gold retrieved in its own list" in html and "Shares of the 4 queries with both" in html
    assert "No finding: the run has neither" not in html
