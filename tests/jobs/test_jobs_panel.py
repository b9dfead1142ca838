"""What a complete job's panel says while it runs (issue 34, item 6): one status at a time, and the rate and ETA of
the new LLM calls alone, the stage's calls answered from the LLM-call cache counted apart.

The pipeline's :class:`rageval.pipeline.evaluate.StageMeter` is driven over a real LLM-call cache, reporting
through the worker's :class:`rageval.jobs.worker._StageReporter` into a real jobs database; the panel's words
(:mod:`ui.render_jobs`) are read from the stored job, as the dashboard reads them.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from rageval.generation.base import DecodingSettings, FakeGenerator
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.jobs.control import create_job
from rageval.jobs.spec import COMPLETE, JobSpec, JobStore, job_progress
from rageval.jobs.worker import _StageReporter
from rageval.pipeline.evaluate import StageMeter
from rageval.store.jobs import QUEUED, RUNNING
from tests.user_run_fixtures import build_uploaded_run
from ui.render_jobs import LOADING, STATUS_NAMES, progress_text, status_name

DECODING = DecodingSettings(max_new_tokens=8)
PROMPTS = [f"Question {i}: who wrote Book{i}?" for i in range(15)]


@pytest.fixture
def job_and_store(tmp_path):
    run = build_uploaded_run(tmp_path / "files", tmp_path / "runs")
    with JobStore(tmp_path / "jobs.sqlite") as store:
        spec = JobSpec.from_flat(str(run), model="fake-span", backend="openai", label_kind=COMPLETE,
                                 llm_cache=str(tmp_path / "llm.sqlite"))
        yield create_job(spec, store), store


def test_a_queued_job_then_a_loading_one_show_one_status_each(job_and_store):
    job, store = job_and_store
    queued = store.get(job.job_id)
    progress = job_progress(queued)
    assert status_name(queued, progress) == STATUS_NAMES[QUEUED]
    assert progress_text(queued, progress) == "no LLM call yet"  # counts only: the status is said once, above

    store.claim(job.job_id, os.getpid())  # the worker has started and loads its model
    loading = store.get(job.job_id)
    assert status_name(loading, job_progress(loading)) == LOADING
    store.begin_items(job.job_id, 0, 0)
    store.set_model(job.job_id, "fake-span", "cpu")  # the model is loaded: running
    running = store.get(job.job_id)
    assert status_name(running, job_progress(running)) == STATUS_NAMES[RUNNING]
    store.claim(job.job_id, os.getpid())  # a resumed attempt loads its model again, though the old id is stored
    assert status_name(store.get(job.job_id), job_progress(store.get(job.job_id))) == LOADING


def test_cache_hits_are_counted_apart_and_the_rate_is_of_the_new_calls(job_and_store, tmp_path):
    job, store = job_and_store
    store.claim(job.job_id, os.getpid())
    with LLMCache(tmp_path / "llm.sqlite") as cache:
        generator = CachedGenerator(FakeGenerator(model_id="fake-span"), cache)
        generator.generate(PROMPTS[:5], DECODING)  # an earlier attempt made the first 5 calls
        store.set_model(job.job_id, generator.model_id, "cpu")
        meter = StageMeter(generator, _StageReporter(store, job.job_id))
        meter.begin("e2e", len(PROMPTS))
        meter.generate(PROMPTS[:5], DECODING)

        hits_only = store.get(job.job_id)
        progress = job_progress(hits_only)
        assert (hits_only.stage, hits_only.done, hits_only.total, hits_only.done_at_start) == ("e2e", 5, 15, 5)
        assert progress.rate_per_s is None and progress.eta_s is None  # no new call: no rate to tell
        assert progress_text(hits_only, progress) == "stage e2e 5/15 LLM calls (5 from the cache, 0 new)"
        assert meter.calls["e2e"] == {"calls": 5, "cached": 5, "new": 0}

        meter.generate(PROMPTS[5:10], DECODING)
    mixed = store.get(job.job_id)
    progress = job_progress(mixed)
    assert (mixed.done, mixed.done_at_start) == (10, 5) and meter.calls["e2e"] == {"calls": 10, "cached": 5, "new": 5}
    # The rate counts the 5 new calls over the stage's time, not the 10 made; the 5 left are taken as new.
    elapsed = mixed.updated - mixed.items_started
    assert elapsed > 0
    assert progress.rate_per_s == pytest.approx(5 / elapsed)
    assert progress.eta_s == pytest.approx(5 / (5 / elapsed))
    text = progress_text(mixed, progress)
    assert text.startswith("stage e2e 10/15 LLM calls (5 from the cache, 5 new) · ")
    assert f"{5 / elapsed:.2f} new calls per s" in text and " · ETA " in text


# --- the whole job (issue 42, item 5) ------------------------------------------------------------------------

#: A complete job's plan as the dry run counts it: (stage, LLM calls, of them cached), in the order they run.
PLAN = (("erag", 52, 0), ("e2e", 30, 10), ("llm_relevance", 52, 0), ("semi_gold", 40, 0), ("llm_judge", 30, 0))


def planned(job, now: float, **fields):
    """``job`` running in this process with ``PLAN``, its model ready 100 s before ``now``, then ``fields``."""
    values = {"status": RUNNING, "pid": os.getpid(), "plan": PLAN, "llm_started": now - 100.0, "items_started":
              now - 100.0, "heartbeat": now, "updated": now}
    return dataclasses.replace(job, **{**values, **fields})


def test_the_eta_is_the_whole_jobs_over_every_stage_not_the_stages(job_and_store):
    """Issue 42: "stage erag 48/52 ... ETA 34 s" came 16 minutes before the end. With the plan, the ETA counts
    the new calls of every stage left: erag's 4, e2e's 20 (10 cached), 52 + 40 + 30 later."""
    from rageval.jobs.spec import job_estimate

    job, _ = job_and_store
    now = 10_000.0
    erag = planned(job, now, stage="erag", done=48, total=52, done_at_start=0)
    estimate = job_estimate(erag, now)
    assert (estimate.stage_number, estimate.stages) == (1, 5)
    assert (estimate.calls_done, estimate.calls) == (48, 204)
    assert estimate.new_left == 4 + 20 + 52 + 40 + 30
    assert estimate.rate_per_s == pytest.approx(48 / 100)
    assert estimate.eta_s == pytest.approx(146 / 0.48)  # 5.1 min, where the stage alone said 8 s
    assert job_progress(erag, now).eta_s == pytest.approx(4 / 0.48)
    text = progress_text(erag, job_progress(erag, now), now)
    assert text == ("stage erag 48/52 LLM calls (0 from the cache, 48 new) · whole job: stage 1 of 5, 48/204 LLM "
                    "calls, 146 new left · 0.48 new calls per s · ETA 5.1 min")

    # The second stage: 15 of its 30 calls made, the 10 cached among them; the rate is over both stages.
    e2e = planned(job, now, stage="e2e", done=15, total=30, done_at_start=10, items_started=now - 10.0)
    estimate = job_estimate(e2e, now)
    assert (estimate.stage_number, estimate.calls_done, estimate.new_left) == (2, 52 + 15, 15 + 52 + 40 + 30)
    assert estimate.rate_per_s == pytest.approx((52 + 5) / 100)
    assert estimate.eta_s == pytest.approx(137 / 0.57)
    assert estimate.fraction == pytest.approx(67 / 204)

    # The last stage done: nothing left; an ended job has no ETA.
    last = planned(job, now, stage="llm_judge", done=30, total=30, done_at_start=0)
    assert (job_estimate(last, now).new_left, job_estimate(last, now).fraction) == (0, 1.0)
    assert job_estimate(planned(job, now, stage="erag", done=48, total=52, status="done"), now).eta_s is None
    # No plan (a job of an older rageval): the stage's words, as before.
    assert job_estimate(planned(job, now, plan=None, stage="erag", done=48, total=52), now) is None


def test_before_the_first_call_the_panel_says_what_the_worker_does_and_for_how_long(job_and_store):
    job, store = job_and_store
    store.claim(job.job_id, os.getpid())
    store.set_activity(job.job_id, "preparing the model: loading gemma-3-270m on cpu")
    loading = store.get(job.job_id)
    now = loading.activity_since + 95
    loading = dataclasses.replace(loading, heartbeat=now)  # its heartbeat thread beat meanwhile
    assert status_name(loading, job_progress(loading, now)) == LOADING
    assert progress_text(loading, job_progress(loading, now), now) == (
        "preparing the model: loading gemma-3-270m on cpu · 1.6 min so far · no LLM call yet")
    store.set_model(job.job_id, "fake-span", "cpu")  # ready: the activity is over
    ready = store.get(job.job_id)
    assert ready.activity is None and ready.llm_started is not None
    assert progress_text(ready, job_progress(ready)) == "no LLM call yet"


def test_a_plan_that_does_not_read_is_no_plan(job_and_store):
    job, store = job_and_store
    store._update(job.job_id, plan='[["erag", "many"]]')  # a damaged value: the job still reads, without an ETA
    assert store.get(job.job_id).plan is None
