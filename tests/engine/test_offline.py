"""Nothing rageval runs asks an outside service: the command line (``--help``, ``evaluate`` with BM25 retrieval and
a tiny model, ``info``, ``info --json``, ``export``, ``upload --check``) and the dashboard (``streamlit run app.py``
as a user starts it, every page in Chromium) work with outgoing connections blocked, and nothing tried to connect
outside loopback. How connections are blocked and recorded: ``tests/offline_helpers.py`` (a network namespace where
allowed, a Python socket guard always, strace where allowed; which ones ran is printed).

Before ``rageval/offline.py``, every BM25 process resolved onnxruntime's telemetry host
(``mobile.events.data.microsoft.com``) from C++ threads, from about 15 s after start: too late for a short command
to show it, so the test also checks that onnxruntime was imported with ``ORT_DISABLE_TELEMETRY=1`` already set.
Before ``server.address`` in ``.streamlit/config.toml``, the server looked up its "Network URL" (a UDP connect to
8.8.8.8) and "External URL" (an HTTP request to checkip.amazonaws.com) at every start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rageval.offline import OPT_OUTS
from tests.offline_helpers import (
    REPO,
    guard_events,
    guarded_env,
    layers,
    netns_prefix,
    strace_attempts,
    strace_prefix,
)
from tests.pipeline.test_pipeline import PASSAGES, QUESTIONS, write_jsonl
from tests.run_fixtures import make_small_run

COMMAND_TIMEOUT_S = 600  # a hang guard, not a timing assertion


def blocked(events: list[dict]) -> list[str]:
    return [f"{e['call']} {e['host']}:{e['port']} from {e['argv']}:\n{''.join(e['stack'])}"
            for e in events if e["event"] == "blocked"]


@pytest.fixture(scope="module")
def offline(tmp_path_factory, tiny_model_dir):
    """Every command run once, offline, in order; their results and the folders they used."""
    root = tmp_path_factory.mktemp("offline")
    data, runs, cache = root / "data", root / "runs", root / "cache"
    for folder in (data, runs, cache):
        folder.mkdir()
    write_jsonl(data / "questions.jsonl", [{"query_id": q, "text": t, "answers": a, "gold_passage_ids": g}
                                           for q, t, a, g, _ in QUESTIONS])
    write_jsonl(data / "corpus.jsonl", [{"passage_id": p, "title": t, "text": x} for p, (t, x) in PASSAGES.items()])
    make_small_run(runs / "fixture.sqlite")
    run = runs / "mine.sqlite"
    commands = {
        "help": ["--help"],
        "evaluate": ["evaluate", "--queries", data / "questions.jsonl", "--corpus", data / "corpus.jsonl",
                     "--retriever", "bm25", "--model", tiny_model_dir, "--k", "1,3", "--methods", "all",
                     "--max-new-tokens", "3", "--label-metrics", "em,f1", "--judges", "llm,em,token_f1",
                     "--out", run],
        "info": ["info", run],
        "info_json": ["info", run, "--json"],
        "export": ["export", run, "--what", "labels", "--out", root / "labels.csv"],
        "upload_check": ["upload", "--check", "--run", root / "fixture.trec", "--queries", data / "questions.jsonl",
                         "--passages", data / "corpus.jsonl"],
    }
    (root / "fixture.trec").write_text("".join(f"{q} Q0 {p} {rank} {10 - rank} mine\n"
                                               for q, _, _, _, ranked in QUESTIONS
                                               for rank, p in enumerate(ranked, start=1)))
    log = root / "guard.jsonl"
    env = guarded_env(log, RAGEVAL_CACHE_DIR=str(cache), RAGEVAL_RUNS_DIR=str(runs), RAGEVAL_SHIPPED_RUNS_DIR="")
    results, traces = {}, []
    for name, args in commands.items():
        trace = root / f"strace-{name}.log"
        traces.append(trace)
        command = [*netns_prefix(), *strace_prefix(trace), sys.executable, "-m", "rageval", *map(str, args)]
        results[name] = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                                       timeout=COMMAND_TIMEOUT_S)
    print(f"offline layers: {layers()}")
    return {"root": root, "runs": runs, "cache": cache, "run": run, "results": results, "guard_log": log,
            "traces": traces}


@pytest.mark.slow
def test_the_commands_work_offline_and_ask_no_outside_service(offline):
    results = offline["results"]
    for name, done in results.items():
        assert done.returncode == 0, f"{name}: exit {done.returncode}\n{done.stderr[-3000:]}"
    assert results["help"].stdout.startswith("usage: rageval")
    assert f"wrote {offline['run']}" in results["evaluate"].stdout
    assert "share of labels = 1 (erag:em)" in results["info"].stdout
    assert json.loads(results["info_json"].stdout)["queries"] == len(QUESTIONS)
    assert (offline["root"] / "labels.csv").read_text().startswith("method,")
    assert results["upload_check"].stdout.startswith(f"valid: {len(QUESTIONS)} queries")

    events = guard_events(offline["guard_log"])
    loaded = [e for e in events if e["event"] == "loaded"]
    assert len(loaded) >= len(results), "the guard did not load in every command"
    assert not blocked(events), "\n".join(blocked(events))
    attempts = [line for trace in offline["traces"] for line in strace_attempts(trace)]
    assert not attempts, "\n".join(attempts)
    # BM25 loaded onnxruntime (with pyserini), and rageval had turned its telemetry off before.
    imports = [e for e in events if e["event"] == "import" and e["module"] == "onnxruntime"]
    assert imports, "the BM25 command did not load onnxruntime: the test no longer covers it"
    assert all(e["env"] == {"ORT_DISABLE_TELEMETRY": "1"} for e in imports), imports


def test_importing_rageval_sets_every_opt_out_and_keeps_the_users(tmp_path):
    env = {name: value for name, value in os.environ.items() if name not in OPT_OUTS}
    env.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="0")
    shown = subprocess.run([sys.executable, "-c", "import json, os, rageval.offline as o, rageval; "
                            "print(json.dumps({n: os.environ.get(n) for n in o.OPT_OUTS}))"],
                           env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=True)
    assert json.loads(shown.stdout) == {**OPT_OUTS, "HF_HUB_OFFLINE": "0"}  # a value the user set is kept


@pytest.mark.slow
@pytest.mark.browser
def test_every_page_works_offline_bound_to_loopback(offline, tmp_path):
    from tests.browser_support import require_browser

    require_browser()
    settings = {"runs_dir": str(offline["runs"]), "cache_dir": str(offline["cache"]), "run": "mine",
                "out": str(tmp_path / "session.json"), "server_log": str(REPO / "test-output" / "offline_server.log"),
                "guard_log": str(tmp_path / "guard.jsonl"), "strace_log": str(tmp_path / "strace-server.log")}
    (REPO / "test-output").mkdir(exist_ok=True)
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAGEVAL_SHIPPED_RUNS_DIR": ""}
    done = subprocess.run([*netns_prefix(), sys.executable, "-m", "tests.offline_app_session",
                           str(tmp_path / "settings.json")], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S)
    session = json.loads(Path(settings["out"]).read_text()) if Path(settings["out"]).exists() else {}
    assert done.returncode == 0 and "error" not in session, session.get("error") or done.stderr[-3000:]

    assert session["listening"] == ["127.0.0.1"]  # .streamlit/config.toml, with no flag given
    assert not any("Network URL" in line or "External URL" in line for line in session["server_urls"])
    from tests.offline_app_session import page_paths

    assert [p["path"] for p in session["pages"]] == page_paths()
    for page in session["pages"]:
        assert page["title"] and not page["errors"] and not page["page_errors"], page
    assert not session["outside_requests"], session["outside_requests"]

    events = guard_events(Path(settings["guard_log"]))
    assert any(e["event"] == "loaded" and "ui.serve" in e["argv"] for e in events), events[:3]  # the server's guard
    assert not blocked(events), "\n".join(blocked(events))
    attempts = strace_attempts(Path(settings["strace_log"]))
    assert not attempts, "\n".join(attempts)
