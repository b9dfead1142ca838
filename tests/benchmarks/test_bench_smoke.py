"""Every benchmark under benchmarks/ runs end to end at a tiny size, so none can rot unseen (issue 42: the dashboard
benchmark crashed at any generated size and 11 of the 14 were run by no test). Each runs as a user would run it, a
fresh ``python benchmarks/<name>.py`` with tiny arguments and its own cache folder, and must exit 0 and print the
line its table is read by. bench_measures, bench_pipeline and bench_team_concurrency have their own, deeper tests
(``test_bench_*.py`` beside this file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rageval.paths import REPO_ROOT
from tests.browser_support import require_browser

#: name -> (arguments, a text its output must hold, marks). "{model}": the tiny random Gemma of tests/conftest.py.
SMOKE = {
    "bench_startup": (["--repeat", "1"], "rageval info RUN --json", []),
    "bench_store_scale": (["--labels", "2000"], "get_many", []),
    "bench_queue_writers": (["--annotators", "2", "--items-each", "2"], '"first_errors": []', []),
    "bench_http_backend": (["--requests", "8", "--concurrency", "1,2", "--endpoints", "1"], "best:", []),
    "bench_label_tokens": (["--tokenizer", "{model}"], "per label: prompt + completion", [pytest.mark.model]),
    "bench_erag_cost": (["--model", "{model}", "--num-queries", "1", "--ks", "2", "--dtype", "float32"],
                        "erag-query", [pytest.mark.model]),
    "bench_generation": (["--model", "{model}", "--pairs", "2", "--batch-size", "2", "--threads", "1"],
                         "identical answers: 2/2", [pytest.mark.model]),
    "check_em_early_stop": (["--model", "{model}", "--num-queries", "1", "--ks", "2", "--dtype", "float32"],
                            "exact-match labels equal 2/2", [pytest.mark.model]),
    "bench_retrieval": (["--queries", "3", "--k", "5", "--single", "2", "--rerank-queries", "0", "--passages", "200"],
                        "flat and HNSW top-10 lists identical", [pytest.mark.slow]),
    "bench_annotate": (["--labels", "2", "--rounds", "1"], "label", [pytest.mark.browser, pytest.mark.slow]),
    "bench_dashboard": (["--sizes", "200", "--docs", "4", "--pages", "Home,Failure_cases", "--cache", "{tmp}"],
                        "Failure cases", [pytest.mark.browser, pytest.mark.slow]),
}


def run_benchmark(name: str, args: list[str], tmp_path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "RAGEVAL_CACHE_DIR": str(tmp_path / "cache"),
           "RAGEVAL_RUNS_DIR": str(tmp_path / "runs")}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / f"{name}.py"), *args], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.parametrize("name", [pytest.param(name, marks=marks) for name, (_, _, marks) in SMOKE.items()])
def test_benchmark_runs_at_a_tiny_size(name, tmp_path, request):
    args, expected, marks = SMOKE[name]
    if any(mark.name == "browser" for mark in marks):
        require_browser()
    model = str(request.getfixturevalue("tiny_model_dir")) if "{model}" in args else ""
    args = [a.replace("{model}", model).replace("{tmp}", str(tmp_path / "generated")) for a in args]
    out = run_benchmark(name, args, tmp_path)
    assert expected in out, out[-3000:]


def test_every_benchmark_has_a_smoke_test():
    deeper = {"bench_measures", "bench_pipeline", "bench_team_concurrency"}
    assert {p.stem for p in (REPO_ROOT / "benchmarks").glob("*.py")} == set(SMOKE) | deeper
