"""benchmarks/bench_team_concurrency.py runs end to end at a tiny size (2 signed-in annotators, 2 labels each, a
re-score job writing the run meanwhile), so it cannot rot: every key press reaches annotations.sqlite, nothing says
"database is locked", and the report is written."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from rageval.paths import REPO_ROOT
from tests.browser_support import SHOTS, require_browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _bench_module():
    path = REPO_ROOT / "benchmarks" / "bench_team_concurrency.py"
    spec = importlib.util.spec_from_file_location("bench_team_concurrency", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_team_concurrency_runs_with_two_annotators(chromium):
    require_browser()
    result = _bench_module().main(["--sessions", "2", "--labels-per-session", "2", "--seconds", "120"],
                                  browser=chromium)
    assert result["pressed"] == result["saved"] == 4  # 2 people x 2 labels, each row seen in the file
    assert result["lost"] == 0 and result["locked"] == 0 and not result["timeouts"]
    assert len(result["latencies"]) == 4 and all(0 < s < 60 for s in result["latencies"])
    assert result["inspector_steps"] > 0
    assert "labels per second" in (SHOTS / "team_concurrency_N2.md").read_text()
