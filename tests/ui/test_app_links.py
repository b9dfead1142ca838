"""Links and URL parameters say what they do (issue 42): Compare runs honours ``?run=``, a parameter no page reads
is a visible warning on every page, the finding links are short enough to show whole, and counts agree with
their nouns ("in 1 run")."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rageval.finding import Finding
from tests.engine.test_compare import RUN_A, RUN_B, write_fixture_pair
from tests.ui.test_app import REPO, RETEVAL_RUN, reteval_run_file, start
from ui import format as fmt
from ui import render, render_findings
from ui.render import escape_markdown

COMPARE = str(REPO / "app_pages/6_Compare_runs.py")
GLOSSARY = str(REPO / "app_pages/11_Glossary.py")
FAILURES = str(REPO / "app_pages/7_Failure_cases.py")


@pytest.fixture(scope="module")
def pair_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("links_pair")
    write_fixture_pair(folder)
    return folder


@pytest.mark.parametrize("run", [RUN_A, RUN_B])
def test_compare_runs_takes_run_a_from_run(pair_dir, monkeypatch, run):
    """Before: ?run= was ignored and Compare silently showed the newest run as A."""
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(pair_dir))
    app = start(COMPARE, run=run)
    assert app.query_params["run_a"] == run and app.query_params["run_b"] != run
    assert not [w for w in app.warning if "not one of the choices" in w.value]


def test_compare_runs_says_when_run_names_no_run(pair_dir, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(pair_dir))
    app = start(COMPARE, run="no-such-run")
    assert any(escape_markdown("The link asks for run 'no-such-run', which is not one of the choices here")
               in w.value for w in app.warning)


@pytest.mark.parametrize("page", [None, GLOSSARY, COMPARE])
def test_a_parameter_no_page_reads_is_a_visible_warning(pair_dir, monkeypatch, page):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(pair_dir))
    app = start(page or str(REPO / "app.py"), nmae="x", run=RUN_A)
    warnings = [w.value for w in app.warning]
    assert escape_markdown("The link has a parameter 'nmae' that no page reads; ignored.") in warnings
    assert not [w for w in warnings if "'run'" in w]  # a parameter a page reads is not flagged


def test_known_params_are_every_parameter_the_pages_read():
    """render.KNOWN_PARAMS lists each ``param="..."`` of a synced widget and each ``*_PARAM = "..."`` constant of
    the dashboard's code; a new parameter missing there would be flagged as unknown on every page."""
    sources = [REPO / "app.py", *(REPO / "app_pages").glob("*.py"), *(REPO / "ui").glob("*.py")]
    text = "\n".join(p.read_text() for p in sources)
    used = set(re.findall(r'param="([a-z_]+)"', text))
    used |= set(re.findall(r'query_params(?:\.get(?:_all)?\(|\[)"([a-z_]+)"', text))
    for constants in re.findall(r"^[A-Z_]*PARAMS?(?:, [A-Z_]+)* = (.+)$", text, flags=re.M):
        used |= set(re.findall(r'"([a-z_]+)"', constants))
    assert used and used <= render.KNOWN_PARAMS, used - render.KNOWN_PARAMS


def test_finding_links_are_short_enough_to_show_whole():
    """Before: "Its measures against the answe..." was cut off in Home's link column."""
    targets = {"correlation": {"method": "erag:em", "measure": "nDCG@5", "k": 5}, "constant": {"k": 10},
               "label_share": {"method": "llm_relevance"}, "trust": {}, "failures": {"judge": "em"}}
    labels = [render_findings.finding_link(Finding(kind, "", target), "r", None)[1]
              for kind, target in targets.items()]
    assert all(len(label) <= render_findings.LINK_LABEL_CHARS for label in labels), labels
    assert "See its measures" in labels


def test_failure_cases_count_one_run_as_one_run(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("one_reteval_run")
    shutil.copy(reteval_run_file(tmp_path_factory), folder / f"{RETEVAL_RUN}.sqlite")
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(folder))
    app = start(FAILURES, run=RETEVAL_RUN)
    caption = next(c.value for c in app.caption if "failure case" in c.value and "judge" in c.value)
    assert escape_markdown(" in 1 run, judge") in caption and "1 runs" not in caption
    assert fmt.count_noun(1, "query", "queries") == "1 query" and fmt.count_noun(2_000, "run") == "2,000 runs"
