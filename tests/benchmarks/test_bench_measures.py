"""benchmarks/bench_measures.py runs end to end at a tiny size (so it cannot rot): it times every tool it should, skips
those it should, and its values equal pytrec_eval's."""

from __future__ import annotations

import importlib.util
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
    result = bench.compare(["--sizes", "300,400", "--docs", "12", "--peers", "pytrec_eval,ir_measures",
                            "--sample", "50", "--peer-max-queries", "300", "--pytrec-chunk", "300"])
    timed = {(t.size, t.source, t.tool): t for t in result.timings}
    # 300 queries: every tool from files and dicts; 400: above --peer-max-queries, so the peers are skipped from
    # files and ir_measures from dicts, while pytrec_eval from dicts runs in calls of --pytrec-chunk queries.
    assert set(timed) == {(300, "files", "pyarrow read"), (300, "files", "rageval"), (300, "files", "pytrec_eval"),
                          (300, "files", "ir_measures"), (300, "dicts", "rageval"), (300, "dicts", "pytrec_eval"),
                          (300, "dicts", "ir_measures"), (400, "files", "pyarrow read"), (400, "files", "rageval"),
                          (400, "files", "pytrec_eval"), (400, "files", "ir_measures"), (400, "dicts", "rageval"),
                          (400, "dicts", "pytrec_eval /0k"), (400, "dicts", "ir_measures")}
    skipped = {key for key, t in timed.items() if t.seconds is None}
    assert skipped == {(400, "files", "pytrec_eval"), (400, "files", "ir_measures"), (400, "dicts", "ir_measures")}
    assert all(timed[key].note == "above --peer-max-queries 300" for key in skipped)
    assert timed[400, "dicts", "pytrec_eval /0k"].note == "in calls of 300 queries (one call would copy the whole run)"
    assert all(t.seconds > 0 and t.cpu is not None and t.peak_mb >= 0 for key, t in timed.items() if key not in skipped)

    # Every tool's values equal pytrec_eval's on the sample: 300: 3 tools x files and dicts; 400: rageval x2 and
    # pytrec_eval (dicts, in calls).
    assert sorted((c.size, c.source, c.tool) for c in result.checks) == sorted(
        [(300, source, tool) for source in ("files", "dicts") for tool in ("rageval", "pytrec_eval", "ir_measures")]
        + [(400, "files", "rageval"), (400, "dicts", "rageval"), (400, "dicts", "pytrec_eval")])
    assert all(c.gap < 1e-12 for c in result.checks), result.checks

    bench.report(result)  # the printed table and checks, from the same result (their layout is not tested)
    assert capsys.readouterr().out


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
