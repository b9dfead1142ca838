"""benchmarks/bench_measures.py runs end to end at a tiny size (so it cannot rot) and its values equal pytrec_eval's."""

from __future__ import annotations

import importlib.util
import re
import sys

from rageval.paths import REPO_ROOT


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_measures", REPO_ROOT / "benchmarks" / "bench_measures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_measures_runs_at_a_tiny_size(capsys):
    bench = _bench_module()
    # ranx is left out: compiling its numba kernels takes longer than the whole test.
    code = bench.main(["--sizes", "300,400", "--docs", "12", "--peers", "pytrec_eval,ir_measures", "--sample", "50",
                       "--peer-max-queries", "300", "--pytrec-chunk", "300"])
    out = capsys.readouterr().out
    assert code == 0
    rows = {tuple(line.split()[:3]) for line in out.splitlines() if re.match(r"\s+[34]00 (files|dicts) ", line)}
    assert {("300", "files", "pyarrow"), ("300", "files", "rageval"), ("300", "files", "pytrec_eval"),
            ("300", "files", "ir_measures"), ("300", "dicts", "rageval"), ("300", "dicts", "pytrec_eval"),
            ("400", "files", "ir_measures"), ("400", "dicts", "pytrec_eval")} <= rows
    assert "400 dicts  pytrec_eval /0k" in out and "in calls of 300 queries" in out
    assert "above --peer-max-queries 300" in out
    assert "rageval from files (read + measures) =" in out
    checks = [line.split() for line in out.split("values against pytrec_eval")[1].splitlines()[1:] if line.strip()]
    assert len(checks) == 6 + 3  # 300: 3 tools x files and dicts; 400: rageval x2 and pytrec_eval (dicts, in calls)
    assert all(float(check[3]) < 1e-12 for check in checks), checks


def test_generated_files_and_dicts_hold_the_same_judgments(tmp_path):
    bench = _bench_module()
    inputs = bench.make_inputs(120, 10, seed=3)
    run, qrels = bench.as_dicts(inputs)
    run_path, qrels_path = bench.write_files(inputs, tmp_path)
    from rageval.trec import read_trec_qrels, read_trec_run

    read_run, read_qrels = read_trec_run(run_path), read_trec_qrels(qrels_path)
    assert {(q, p): s for q, d in run.items() for p, s in d.items()} == \
        dict(zip(zip(read_run["query_id"].astype(str), read_run["passage_id"].astype(str)), read_run["score"]))
    assert {(q, p): float(v) for q, d in qrels.items() for p, v in d.items()} == \
        dict(zip(zip(read_qrels["query_id"].astype(str), read_qrels["passage_id"].astype(str)), read_qrels["label"]))
    assert sum(len(d) for d in qrels.values()) == 120 * 10 + 120 - 3  # every 50th query has no relevant passage
