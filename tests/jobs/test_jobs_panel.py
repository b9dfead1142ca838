"""What a complete job's panel says while it runs (issue 34, item 6): one status at a time, and the rate and ETA of
the new LLM calls alone, the stage's calls answered from the LLM-call cache counted apart.

The pipeline's :class:`rageval.pipeline.evaluate.StageMeter` is driven over a real LLM-call cache, reporting
through the worker's :class:`rageval.jobs.worker._StageReporter` into a real jobs database; the panel's words
(:mod:`ui.render_jobs`) are read from the stored job, as the dashboard reads them.
"""

from __future__ import annotations

import os

import pytest

from rageval.generation.base import DecodingSettings, FakeGenerator
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.jobs.control import create_job
from rageval.jobs.spec import COMPLETE, QUEUED, RUNNING, JobSpec, job_progress
from rageval.jobs.store import JobStore
from rageval.jobs.worker import _StageReporter
from rageval.pipeline.evaluate import StageMeter
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
