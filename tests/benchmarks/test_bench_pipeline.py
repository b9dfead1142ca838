"""benchmarks/bench_pipeline.py runs end to end (tiny random model, 2 questions x 2 passages), so it cannot rot: the
two paths give the same answers, every stage of the full pipeline is timed."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from rageval.paths import REPO_ROOT


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_pipeline", REPO_ROOT / "benchmarks" / "bench_pipeline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.model
def test_bench_pipeline_runs_on_the_tiny_model(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path))  # nothing touches the user's caches
    bench = _bench_module()
    # The ratio check is meaningless at this size (milliseconds): only what it computed is checked, not the verdict.
    result = bench.compare(["--model", str(tiny_model_dir), "-n", "2", "-k", "2", "--threads", "1"])
    assert result.pairs == 4  # 2 questions x their top 2 passages
    assert len(result.optimised) == len(result.pipeline) == 2  # one round of (a, b, b, a)
    answers = result.optimised[0].answers
    assert len(answers) == 4 and all(t.answers == answers for t in result.optimised + result.pipeline)
    assert result.differing == set() and result.same_runs
    assert all(t.calls["erag"] == 4 for t in result.pipeline)  # a fresh LLM cache each time: every call is new
    assert result.ratio == min(t.wall_s for t in result.pipeline) / min(t.wall_s for t in result.optimised) > 0
    assert {"erag", "e2e", "llm_relevance", "semi_gold", "judges", "measures"} <= set(result.full.stages)
    assert result.full.wall_s >= sum(wall for wall, _ in result.full.stages.values()) * 0.99
