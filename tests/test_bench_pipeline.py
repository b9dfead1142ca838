"""benchmarks/bench_pipeline.py runs end to end (tiny random model, 2 questions x 2 passages), so it cannot rot."""

from __future__ import annotations

import importlib.util
import sys

from rageval.paths import REPO_ROOT


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_pipeline", REPO_ROOT / "benchmarks" / "bench_pipeline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_pipeline_runs_on_the_tiny_model(tiny_model_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path))  # nothing touches the user's caches
    bench = _bench_module()
    # The ratio check is meaningless at this size (milliseconds), so only the exit codes it cannot cause are refused.
    code = bench.main(["--model", str(tiny_model_dir), "-n", "2", "-k", "2", "--threads", "1"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "pipeline / optimised =" in out
    assert "answers: pipeline = optimised for 4/4 pairs; optimised repeats identical: True" in out
    for stage in ("erag", "e2e", "llm_relevance", "semi_gold", "judges", "measures", "total"):
        assert any(line.startswith(stage) for line in out.splitlines()), stage
