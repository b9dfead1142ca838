"""The "complete" job kind (rageval.jobs): compute what a run file lacks with
:func:`rageval.pipeline.run.complete_run_file` in a background worker, with stage progress in the jobs database,
cancel (the run file untouched) and resume (every LLM call made once: the second attempt's are cache hits).

The run is the small dataset of tests/user_run_fixtures.py as the upload makes it (rankings, no labels, no
answers); the model is rageval's own OpenAI-compatible server (rageval.generation.server) serving the fake
generator (first capitalised span of the prompt's first passage), so workers are real OS processes with no model
to load, and a gate in the served generator holds the worker at a known point (no sleeps, no races).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

import pytest

from rageval.cli import main
from rageval.errors import JobError
from rageval.generation.base import first_capitalised_span
from rageval.generation.server import serve
from rageval.jobs.control import cancel_job, create_job, resume_job, start_job
from rageval.jobs.spec import ACTIVE, COMPLETE, JobSpec, JobStore, job_progress
from rageval.jobs.worker import run_job
from rageval.pipeline.summary import PIECES, missing_pieces, run_summary
from rageval.store import RunReader
from rageval.store.jobs import CANCELLED, DONE
from rageval.store.schemas import JOBS_SCHEMA
from tests.jobs.test_jobs import GatedReader, wait_for
from tests.user_run_fixtures import QUESTIONS, build_evaluated_run, build_uploaded_run

MODEL = "fake-span"


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A fresh server per test (its generator's counters are the test's), the cache under tmp_path."""
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    generator = GatedReader(rule=first_capitalised_span, model_id=MODEL)  # the gate of tests/jobs/test_jobs.py
    with serve(generator, model_name=MODEL) as running:
        yield running, generator
    generator.gate.set()


@pytest.fixture
def store(tmp_path):
    with JobStore(tmp_path / "jobs.sqlite") as opened:
        yield opened


def uploaded(tmp_path: Path) -> Path:
    return build_uploaded_run(tmp_path / "files", tmp_path / "runs")


def complete_spec(run: Path, server, tmp_path: Path, **changes) -> JobSpec:
    return JobSpec.from_flat(str(run), model=MODEL, backend="openai", base_url=server.base_url, label_kind=COMPLETE,
                   batch_size=4, llm_cache=str(tmp_path / "llm.sqlite"), **changes)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cached_calls(path: str) -> int:
    with sqlite3.connect(path) as cache:
        return cache.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0]


@pytest.mark.slow
def test_an_uploaded_run_lacks_every_piece_and_a_background_job_fills_them_in(tmp_path, served, store):
    server, generator = served
    run = uploaded(tmp_path)
    with RunReader(run) as reader:
        assert missing_pieces(run_summary(run), reader.settings()) == dict.fromkeys(PIECES, "missing")
    job = start_job(complete_spec(run, server, tmp_path), store)
    assert (job.method, job.total) == (f"complete@{MODEL}", len(PIECES))  # total: the pieces, until a stage starts
    log = store.get(job.job_id).log_path
    wait_for(lambda: store.get(job.job_id).status not in ACTIVE, "the worker", log)
    done = store.get(job.job_id)
    assert done.status == DONE, (done.error, Path(log).read_text()[-2000:])
    # The last LLM stage of the pipeline is the LLM judge; its counts end equal.
    assert done.stage == "llm_judge" and done.done == done.total > 0
    summary = run_summary(run)
    with RunReader(run) as reader:
        settings = reader.settings()
    assert missing_pieces(summary, settings) == {}
    n = len(QUESTIONS)
    assert summary["queries"] == n and summary["labels"]["erag:em"] == n * 3  # every candidate (3 per question)
    assert settings["completed"][-1]["pieces"] == list(PIECES)
    assert settings["source"] == "uploaded"  # what the upload recorded is kept
    assert generator.prompts_seen == cached_calls(complete_spec(run, server, tmp_path).llm_cache)


@pytest.mark.slow
def test_cancel_leaves_the_run_file_as_it_was_and_resume_makes_no_call_twice(tmp_path, served, store):
    server, generator = served
    run = uploaded(tmp_path)
    before = digest(run)
    spec = complete_spec(run, server, tmp_path)
    generator.close_after(prompts=8)  # eRAG's first two batches of 4 are answered, the third waits at the server
    job = start_job(spec, store)
    log = store.get(job.job_id).log_path
    wait_for(lambda: (store.get(job.job_id).stage, store.get(job.job_id).done) == ("erag", 8), "erag 8/18", log)
    assert store.get(job.job_id).total == len(QUESTIONS) * 3
    cancel_job(job.job_id, store, terminate=True)
    wait_for(lambda: store.get(job.job_id).status == CANCELLED, "the worker to record its stop", log)
    assert digest(run) == before  # nothing half-written: the file is rewritten only at the very end
    assert cached_calls(spec.llm_cache) == 8
    generator.gate.set()

    resume_job(job.job_id, store)
    wait_for(lambda: store.get(job.job_id).status not in ACTIVE, "the resumed job", log)
    resumed = store.get(job.job_id)
    assert (resumed.status, resumed.attempts) == (DONE, 2), resumed.error
    assert missing_pieces(run_summary(run), RunReader(run).settings()) == {}
    # Every cached call went to the server once over both attempts (the first 8 were cache hits on resume). The
    # third batch (4 prompts) may have been sent before the cancel: held at the gate, it is answered only after
    # the worker is gone, so it is never cached and is asked again on resume.
    assert cached_calls(spec.llm_cache) <= generator.prompts_seen <= cached_calls(spec.llm_cache) + 4


def test_refusals_name_the_reason(tmp_path, served, store, monkeypatch):
    server, _ = served
    run = uploaded(tmp_path)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", str(shipped))
    read_only = shipped / "demo.sqlite"
    read_only.write_bytes(run.read_bytes())
    with pytest.raises(JobError, match="a shipped run is read-only; copy it into your runs folder"):
        create_job(complete_spec(read_only, server, tmp_path), store)
    with pytest.raises(JobError, match="pieces bogus: expected some of erag, e2e, baselines, reteval"):
        complete_spec(run, server, tmp_path, pieces=("erag", "bogus"))

    first = create_job(complete_spec(run, server, tmp_path), store)  # queued: active
    with pytest.raises(JobError, match=f"job {first.job_id} .* is still queued on .*mine.sqlite"):
        create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai", base_url=server.base_url), store)
    cancel_job(first.job_id, store)
    assert run_job(create_job(complete_spec(run, server, tmp_path), store).job_id, store,
                   log=lambda _: None).status == DONE
    with pytest.raises(JobError, match=r"the run already has every piece .*nothing to compute"):
        create_job(complete_spec(run, server, tmp_path), store)


def test_cli_complete_with_chosen_pieces(tmp_path, served, capsys):
    server, _ = served
    run = uploaded(tmp_path)
    db = tmp_path / "cli-jobs.sqlite"
    code = main(["rescore", "start", str(run), "--complete", "--pieces", "erag,e2e", "--backend", "openai",
                 "--base-url", server.base_url, "--model", MODEL, "--jobs-db", str(db),
                 "--cache", str(tmp_path / "llm.sqlite")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"job 1: complete@{MODEL}, computing erag (missing), e2e (missing) of {run}" in out
    assert "job 1: done" in out
    assert set(missing_pieces(run_summary(run), RunReader(run).settings())) == {"baselines", "reteval"}
    assert main(["rescore", "list", "--jobs-db", str(db)]) == 0
    assert "done        stage e2e " in capsys.readouterr().out
    assert main(["rescore", "start", str(run), "--pieces", "erag", "--jobs-db", str(db)]) == 2
    assert "--pieces goes with --complete" in capsys.readouterr().err


def test_a_version_1_jobs_database_gains_the_stage_column(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        v1 = re.sub(r",\n    stage +TEXT.*?(?=\n\);)", "", JOBS_SCHEMA, flags=re.S)
        assert "stage" not in v1 and "started_by" not in v1  # (the v1 table, as a v1 rageval made it)
        assert "activity" not in v1 and "plan" not in v1
        conn.executescript(v1)
        conn.execute("PRAGMA user_version=1")
    with JobStore(path) as store:
        job = store.create(JobSpec.from_flat(str(tmp_path / "r.sqlite")), "erag:em@x", 3)
        assert job.stage is None
        store.set_stage(job.job_id, "erag", 1, 3, new_stage=True)
        assert store.get(job.job_id).stage == "erag"
        assert store.get(job.job_id).started_by is None  # v3's column, added by the same upgrade
        assert (store.get(job.job_id).plan, store.get(job.job_id).activity) == (None, None)  # and v4's


def test_a_version_3_jobs_database_gains_the_plan_and_activity_columns(tmp_path):
    """Version 4 stores a complete job's plan (each stage's LLM calls) and what the worker does before its first
    call; a version 3 file (a job already in it) is upgraded on opening, its job kept."""
    path = tmp_path / "v3.sqlite"
    with sqlite3.connect(path) as conn:
        v3 = re.sub(r"TEXT,( +--[^\n]*)\n    plan +TEXT.*?(?=\n\);)", r"TEXT \1", JOBS_SCHEMA, flags=re.S)
        assert "started_by" in v3 and "plan" not in v3 and "activity" not in v3
        conn.executescript(v3)
        conn.execute("INSERT INTO jobs (run_path, method, spec, status, total, created) VALUES (?, ?, ?, ?, ?, ?)",
                     (str(tmp_path / "r.sqlite"), "complete@x", JobSpec.from_flat(str(tmp_path / "r.sqlite"),
                                                                                  label_kind=COMPLETE).to_json(),
                      "done", 4, 1.0))
        conn.execute("PRAGMA user_version=3")
    with JobStore(path) as store:
        old = store.get(1)
        assert (old.method, old.total, old.plan, old.activity, old.llm_started) == ("complete@x", 4, None, None, None)
        store.set_plan(1, [("erag", 18, 0), ("e2e", 12, 6)])
        store.set_activity(1, "preparing the model")
        assert store.get(1).plan == (("erag", 18, 0), ("e2e", 12, 6))
        assert store.get(1).activity == "preparing the model" and store.get(1).activity_since is not None
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4


def test_rewriting_a_methods_labels_replaces_its_stored_correlations_and_no_others(tmp_path):
    """A re-score job that rewrites a method's labels must not leave correlations computed from the old labels
    (the Correlations page reads the stored table when its counts match, and they still would)."""
    import pandas as pd
    from pandas.testing import assert_frame_equal

    from rageval.jobs.run_file import write_labels, write_method_measures
    from rageval.pipeline.evaluate import correlations_from_tables
    from rageval.store import Label

    path = build_evaluated_run(tmp_path / "files", tmp_path / "run.sqlite", tmp_path / "llm.sqlite")
    method = "erag:em"
    with RunReader(path) as reader:
        before = reader.correlations()
        old_labels = reader.labels(method)
    assert (before["method"] == method).any() and (before["method"] != method).any()
    # Flip every label of the method: its measures, and so its correlations, change.
    write_labels(path, [Label(method, q, p, 1.0 - v) for q, p, v in
                        zip(old_labels["query_id"], old_labels["passage_id"], old_labels["value"])], [])
    values = write_method_measures(path, method, "erag")

    with RunReader(path) as reader:
        after = reader.correlations()
        e2e = reader.e2e_table()
    others = before["method"] != method
    assert_frame_equal(after[after["method"] != method].reset_index(drop=True),
                       before[others].reset_index(drop=True))
    expected = pd.DataFrame(correlations_from_tables(
        pd.DataFrame(values, columns=["method", "measure", "query_id", "value"]), e2e))
    mine = after[after["method"] == method].reset_index(drop=True)
    assert len(mine) == len(expected) > 0
    assert_frame_equal(mine, expected.sort_values(["k", "method", "measure"]).reset_index(drop=True),
                       check_dtype=False)
    assert not mine[["tau", "rho"]].equals(before.loc[~others, ["tau", "rho"]].reset_index(drop=True))


def test_a_rescored_method_gets_the_runs_own_extra_measures_up_to_its_labelled_depth():
    """The run's extra measures (settings ``extra_measures``) are recomputed for a re-scored method, those at a
    rank cutoff only up to the labelled depth; their cutoffs do not add to the stored set's."""
    import pandas as pd

    from rageval.jobs.run_file import compute_method_measures
    from rageval.types import Ranking, ScoredPassage

    rankings = {q: Ranking(q, tuple(ScoredPassage(f"{q}p{i}", 5.0 - i) for i in range(5))) for q in ("a", "b")}
    # labels for the top 3 of each ranking: labelled depth 3
    labels = pd.DataFrame([(q, f"{q}p{i}", float(i == 1)) for q in ("a", "b") for i in range(3)],
                          columns=["query_id", "passage_id", "value"])
    values = compute_method_measures(labels, rankings, [1, 5], "erag:em", "erag:em@m",
                                     extra_measures=["P(rel=1)@2", "DCG@5", "Bpref"])
    measures = {v.measure for v in values}
    assert {"P(rel=1)@2", "Bpref"} <= measures and "DCG@5" not in measures  # 5 > the labelled depth 3
    assert {"P@1", "P@3", "Rprec"} <= measures and "P@2" not in measures and "P@5" not in measures
    assert {v.method for v in values} == {"erag:em@m"}
    assert {v.value for v in values if v.measure == "P(rel=1)@2"} == {0.5}


@pytest.mark.slow
def test_a_worker_reports_its_plan_and_what_it_prepares_before_its_first_llm_call(tmp_path, served, store):
    """Issue 42, item 5: the worker process counts each stage's LLM calls first (a dry run over the job's cache),
    stores them as the job's plan, says what it does while it prepares the model, then the panel gives the whole
    job's share and new calls left from the first stage on."""
    from ui.render_jobs import progress_text

    server, generator = served
    run = uploaded(tmp_path)
    generator.close_after(prompts=0)  # the first LLM batch waits at the server
    job = start_job(complete_spec(run, server, tmp_path), store)
    log = store.get(job.job_id).log_path
    wait_for(lambda: store.get(job.job_id).stage == "erag", "the first stage", log)
    held = store.get(job.job_id)
    stages = [stage for stage, _, _ in held.plan]
    assert stages[:2] == ["erag", "e2e"] and stages[-2:] == ["semi_gold", "llm_judge"]
    assert held.plan[0] == ("erag", len(QUESTIONS) * 3, 0) and held.total == len(QUESTIONS) * 3
    assert held.activity is None and held.llm_started is not None  # the model was ready before the first call
    calls = sum(c for _, c, _ in held.plan)
    new = sum(c - h for _, c, h in held.plan)
    assert progress_text(held, job_progress(held)).startswith(
        f"stage erag 0/18 LLM calls (0 from the cache, 0 new) · whole job: stage 1 of {len(stages)}, 0/{calls} LLM "
        f"calls, {new} new left")
    lines = Path(log).read_text()
    said = [lines.index(words) for words in (
        "counting each stage's LLM calls", "plan: erag 18 LLM calls (0 cached)",
        f"preparing the model: connecting to {MODEL} at {server.base_url}")]
    assert said == sorted(said)
    generator.gate.set()
    wait_for(lambda: store.get(job.job_id).status not in ACTIVE, "the worker", log)
    finished = store.get(job.job_id)
    assert finished.status == DONE, finished.error
    # The plan's new calls are those the server answered (the LLM judge's count is an upper bound).
    assert generator.prompts_seen <= new
    print(f"plan {held.plan}: {calls} calls, {new} new; the server answered {generator.prompts_seen}")
