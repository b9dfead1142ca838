"""``rageval evaluate`` killed with SIGKILL in the middle of its LLM calls loses nothing it had computed and leaves no
partial output: the LLM-call cache keeps every batch answered before the kill (each is committed before the next
starts), the run file at ``--out`` is not created (or an older one stays as it was), and a rerun makes only the calls
that were missing and writes the same run as an uninterrupted one.

The command runs in a subprocess against our OpenAI-compatible server (``rageval.generation.server``) in this
process, serving a deterministic fake reader behind a gate: the server holds one request open, so the kill always
lands in the middle of the run, after the cache holds answered batches (polled, never a fixed sleep). The fake
reader's answers depend on the prompt only, so batches of a resumed run answer as an uninterrupted run's do.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import fields
from pathlib import Path

from rageval.generation.base import FakeGenerator
from rageval.generation.server import serve
from rageval.store import read_run
from tests.pipeline.test_pipeline import dataset  # noqa: F401  (the fixture: 5 questions, 13 passages, a TREC run)
from tests.run_fixtures import make_small_run

REPO = Path(__file__).resolve().parents[2]
# One request in flight at a time: with two, the held request's partner could reach the server after the kill
# and be counted as a call of the resumed run.
BATCH = 1
BLOCK_AT = 5  # the server holds its 5th request: batches 1 to 4 (4 prompts) are answered and committed
DEADLINE_S = 300


class GatedGenerator:
    """The fake reader, recording which prompts each phase of the test sent, and holding the ``block_at``-th call
    until ``release`` is set (``reached`` tells the test it is being held)."""

    def __init__(self, block_at: int):
        self._fake = FakeGenerator(model_id="stub:gated-fake-reader")
        self.block_at = block_at
        self.reached, self.release = threading.Event(), threading.Event()
        self.phase = "killed"
        self.prompts: dict[str, list[str]] = {}
        self._calls = 0
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._fake.model_id

    def generate(self, prompts, settings):
        with self._lock:
            self._calls += 1
            call, phase = self._calls, self.phase
        if call == self.block_at:
            self.reached.set()
            self.release.wait(DEADLINE_S)
        answers = self._fake.generate(prompts, settings)
        with self._lock:
            self.prompts.setdefault(phase, []).extend(prompts)
        return answers


def cache_keys(cache_dir: Path) -> dict[str, float]:
    """Key -> creation time of every row of the LLM-call cache (read-only; the writer may hold it open)."""
    path = cache_dir / "llm_cache.sqlite"
    if not path.exists():
        return {}
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return dict(connection.execute("SELECT key, created FROM llm_calls"))
    except sqlite3.OperationalError:  # the table is not created yet
        return {}
    finally:
        connection.close()


def evaluate_command(files: dict, base_url: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "rageval", "evaluate", "--queries", str(files["queries"]), "--corpus",
            str(files["corpus"]), "--run", str(files["run"]), "--backend", "openai", "--base-url", base_url,
            "--model", "stub:gated-fake-reader", "--batch-size", str(BATCH), "--k", "1,3",
            "--methods", "erag,e2e,baselines,reteval", "--label-metrics", "em,f1", "--judges", "llm,em,token_f1",
            "--out", str(out)]


def environment(cache_dir: Path, runs_dir: Path) -> dict[str, str]:
    return {**os.environ, "RAGEVAL_CACHE_DIR": str(cache_dir), "RAGEVAL_RUNS_DIR": str(runs_dir),
            "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def run_to_completion(command: list[str], env: dict[str, str]) -> None:
    result = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=DEADLINE_S)
    assert result.returncode == 0, result.stderr[-3000:]


def comparable(path: Path) -> dict[str, list]:
    """Every table of a run file but its settings (times, paths and call counts differ by construction), sorted."""
    run = read_run(path)
    return {f.name: sorted(map(repr, getattr(run, f.name))) for f in fields(run) if f.name != "settings"}


def test_kill_9_during_evaluate_loses_no_llm_call_and_leaves_no_partial_run(dataset, tmp_path):  # noqa: F811
    gate = GatedGenerator(BLOCK_AT)
    cache, runs = tmp_path / "cache", tmp_path / "runs"
    runs.mkdir()
    out = runs / "mine.sqlite"
    make_small_run(out)  # an older run at --out: a killed evaluate must leave it as it was
    old = out.read_bytes()
    with serve(gate) as server:
        command = evaluate_command(dataset, server.base_url, out)
        process = subprocess.Popen(command, env=environment(cache, runs), cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + DEADLINE_S
            while True:  # poll the cache (and the gate) until evaluate is held in the middle of its calls
                assert process.poll() is None, f"evaluate ended before the kill: {process.stderr.read()[-3000:]}"
                assert time.monotonic() < deadline, "evaluate never reached the held request"
                held = gate.reached.wait(0.05)
                before = cache_keys(cache)
                if held:  # evaluate waits for the held answer: nothing more can reach the cache
                    break
            # Batches 1 to 4 were answered, so all are committed: each batch is, before the next one starts.
            assert len(before) == BLOCK_AT - 1, f"{len(before)} cached answers, expected {BLOCK_AT - 1}"
            process.send_signal(signal.SIGKILL)
            process.wait(DEADLINE_S)
        finally:
            if process.poll() is None:
                process.kill()
            process.stderr.close()
        assert process.returncode == -signal.SIGKILL
        assert out.read_bytes() == old  # untouched
        assert sorted(p.name for p in runs.iterdir()) == ["mine.sqlite"]  # no temporary or partial file
        assert cache_keys(cache) == before  # the held request's answer was never cached

        gate.phase = "resumed"
        gate.release.set()
        run_to_completion(command, environment(cache, runs))
        after = cache_keys(cache)
        assert {key: after[key] for key in before} == before  # rows from before the kill were kept, not rewritten
        resumed = read_run(out).settings["llm_calls"]
        new = set(after) - set(before)
        assert resumed["cache_misses"] == len(new) == len(gate.prompts["resumed"])  # only the missing calls
        assert resumed["cache_hits"] >= len(before)

        gate.phase = "uninterrupted"
        fresh, reference = tmp_path / "fresh-cache", runs / "reference.sqlite"
        run_to_completion(evaluate_command(dataset, server.base_url, reference), environment(fresh, runs))
    uninterrupted = read_run(reference).settings["llm_calls"]
    assert uninterrupted["cache_misses"] == len(cache_keys(fresh)) == len(before) + resumed["cache_misses"]
    assert set(cache_keys(fresh)) == set(after)
    assert comparable(out) == comparable(reference)
