"""AppTest tests of the Re-score page (app_pages/8_Re_score.py) on the fixture run (tests/run_fixtures.py).

Starting a job from the form is checked with the worker launcher replaced by a recorder (the real background
worker is tested in tests/jobs/test_jobs.py and, through the browser, in tests/browser/test_browser_rescore.py);
progress, cancel and resume are checked on jobs driven in this process with the fake reader of tests/jobs/test_jobs.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval.generation.base import FakeGenerator
from rageval.generation.factory import DEFAULT_BASE_URL, DEFAULT_MODEL
from rageval.jobs import control
from rageval.jobs.control import cancel_job, create_job
from rageval.jobs.spec import JobSpec, JobStore
from rageval.jobs.worker import run_job
from rageval.store.jobs import QUEUED, RUNNING, default_jobs_db
from tests.jobs.test_jobs import METHOD, MODEL, TOTAL, reader_rule
from tests.run_fixtures import N_QUERIES, K, make_small_run
from ui.render import escape_markdown

REPO = Path(__file__).resolve().parents[2]
HOME = str(REPO / "app.py")
RESCORE = "app_pages/8_Re_score.py"
INSPECTOR = "app_pages/1_Query_inspector.py"
TIMEOUT_S = 120


@pytest.fixture
def run_path(tmp_path, monkeypatch) -> Path:
    """A fresh fixture run alone in a runs folder, and a private cache (jobs database, LLM calls)."""
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return make_small_run(tmp_path / "runs" / "fixture.sqlite")


@pytest.fixture
def launches(monkeypatch) -> list[int]:
    """Job ids the page asked to start a worker for (no process is started)."""
    started: list[int] = []
    monkeypatch.setattr(control, "launch_worker", lambda job_id, store: started.append(job_id) or 0)
    return started


def start(script: str, **query_params: str) -> AppTest:
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT_S)
    app.query_params.update(query_params)
    app.switch_page(script)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def job_store() -> JobStore:
    return JobStore(default_jobs_db())


def progress_bars(app: AppTest) -> list[tuple[int, str]]:
    return [(bar.proto.value, bar.proto.text) for bar in app.get("progress")]


def markdown(app: AppTest) -> str:
    return " ".join(m.value for m in app.markdown)


def test_page_renders_the_form_with_the_runs_defaults(run_path):
    app = start(RESCORE)
    assert [t.value for t in app.title] == ["Re-score"]
    assert app.text_input(key="rescore.model").value == DEFAULT_MODEL
    assert app.number_input(key="rescore.k").value == K  # the run's k (tests/run_fixtures.py)
    assert app.radio(key="rescore.kind").value == "erag"
    assert app.selectbox(key="rescore.metric").value == "em"  # the run's label metric
    assert app.selectbox(key="rescore.dtype").value == "device default"  # the fixture's model names no precision
    assert len(app.multiselect(key="rescore.chosen").options) == N_QUERIES
    assert "No re-scoring job on this runs folder yet" in app.info[0].value


def test_the_form_shows_only_the_chosen_backends_inputs(run_path):
    """A local model has a precision and no server; a server has a URL and no precision (issue 34, item 9)."""
    app = start(RESCORE)
    keys = lambda: {w.key for w in (*app.text_input, *app.selectbox)}  # noqa: E731
    assert "rescore.dtype" in keys() and "rescore.base_url" not in keys()
    app.radio(key="rescore.backend").set_value("openai").run()
    assert "rescore.base_url" in keys() and "rescore.dtype" not in keys()
    assert app.text_input(key="rescore.base_url").value == DEFAULT_BASE_URL


def test_starting_a_job_creates_it_and_lists_it_queued(run_path, launches, tmp_path):
    model = tmp_path / "some-model"
    model.mkdir()
    (model / "config.json").write_text("{}")  # a model folder: found, though never loaded here
    app = start(RESCORE)
    app.text_input(key="rescore.model").input(str(model))
    app.radio(key="rescore.queries").set_value("first")
    app.number_input(key="rescore.first").set_value(2)
    app.number_input(key="rescore.k").set_value(3)
    app.button(key="FormSubmitter:rescore.form-Start re-scoring").click().run()
    assert not app.exception, [e.value for e in app.exception]

    with job_store() as store:
        [job] = store.list()
    assert launches == [job.job_id]
    assert (job.method, job.total, job.status) == ("erag:em@some-model", 2 * 3, QUEUED)
    assert (job.spec.query_ids, job.spec.k, job.spec.run_path) == (("nq:0", "nq:1"), 3, str(run_path.resolve()))
    started = f"Job {job.job_id} started: erag:em@some-model, 6 passages of fixture."
    assert app.success[0].value == escape_markdown(started)
    assert progress_bars(app) == [(0, "0/6 passages labelled")]
    assert escape_markdown("erag:em@some-model") in markdown(app) and "queued" in markdown(app)


def test_bad_input_is_an_error_on_the_page_and_creates_no_job(run_path, launches, tmp_path):
    app = start(RESCORE)
    app.text_input(key="rescore.model").input(str(tmp_path / "missing-model"))
    app.button(key="FormSubmitter:rescore.form-Start re-scoring").click().run()
    assert "no such local folder and not in the local Hugging Face cache" in app.error[0].value
    app.text_input(key="rescore.model").input(MODEL)
    app.radio(key="rescore.backend").set_value("openai")
    app.radio(key="rescore.queries").set_value("chosen")
    app.button(key="FormSubmitter:rescore.form-Start re-scoring").click().run()
    assert "choose at least one query" in app.error[0].value
    with job_store() as store:
        assert store.list() == [] and launches == []


def test_a_running_job_shows_progress_eta_and_can_be_cancelled(run_path):
    with job_store() as store:
        job = create_job(JobSpec.from_flat(str(run_path), model=MODEL, backend="openai"), store)
        store.claim(job.job_id, os.getpid())  # this live process plays the worker
        store.begin_items(job.job_id, TOTAL, 0)
        store.set_model(job.job_id, MODEL, "cpu")
        store.add_done(job.job_id, 12)
    app = start(RESCORE)
    [(value, text)] = progress_bars(app)
    assert value == 40 and text.startswith(f"12/{TOTAL} passages labelled · ") and " · ETA " in text
    assert "running" in markdown(app)
    assert {b.label for b in app.button} >= {"Cancel", "Stop now"}
    app.button(key=f"rescore.cancel.{job.job_id}").click().run()
    with job_store() as store:
        cancelled = store.get(job.job_id)
    assert cancelled.cancel_requested and cancelled.status == RUNNING  # the worker stops at its next batch


def test_cancelled_job_resumes_and_its_labels_reach_the_query_inspector(run_path, launches):
    with job_store() as store:
        job = create_job(JobSpec.from_flat(str(run_path), model=MODEL, backend="openai", batch_size=2), store)

        class CancelAfterFirstBatch(FakeGenerator):
            def generate(self, prompts, settings):
                cancel_job(job.job_id, store)
                return super().generate(prompts, settings)

        run_job(job.job_id, store, generator=CancelAfterFirstBatch(rule=reader_rule, model_id=MODEL),
                log=lambda _: None)
    app = start(RESCORE)
    [(value, text)] = progress_bars(app)
    assert value == 6 and text.startswith(f"2/{TOTAL} passages labelled")  # int(100 * 2 / 30)
    assert "ETA" not in text  # a stopped job has a rate but nothing to estimate
    assert "cancelled" in markdown(app)
    app.button(key=f"rescore.resume.{job.job_id}").click().run()
    assert launches == [job.job_id]
    with job_store() as store:
        assert store.get(job.job_id).status == QUEUED
        run_job(job.job_id, store, generator=FakeGenerator(rule=reader_rule, model_id=MODEL), log=lambda _: None)
    app.run()
    assert progress_bars(app)[0][1].startswith(f"{TOTAL}/{TOTAL} passages labelled")
    assert "done" in markdown(app)
    [link] = app.get("page_link")
    assert link.proto.label == "See the labels in the query inspector"

    inspector = start(INSPECTOR, run="fixture", query="nq:0")
    ranked = next(df.value for df in inspector.dataframe if "Passage" in df.value.columns)
    assert METHOD in ranked.columns and set(ranked[METHOD]) <= {"✓", "✗"}
    evidence = next(t.value for t in inspector.table if "Evidence" in t.value.columns)  # a table: cells wrap
    # The model's answer first, the model last (issue 34: a long model id cut the answer off in the cell).
    assert any(text.startswith("'") and text.endswith(f"(answered by {MODEL})") for text in evidence["Evidence"])


def test_a_complete_jobs_panel_says_what_it_prepares_then_the_whole_jobs_progress(run_path):
    """Issue 42, item 5: minutes of "loading the model · no LLM call yet" on a fresh cache, and "stage erag 48/52
    ... ETA 34 s" 16 minutes before the end. The panel says what the worker does and for how long, then the whole
    job's share, new calls left and ETA over every stage of its plan."""
    import time

    from rageval.jobs.spec import COMPLETE

    with job_store() as store:
        job = store.create(JobSpec.from_flat(str(run_path), model="gemma-3-270m", label_kind=COMPLETE),
                           "complete@gemma-3-270m", 4)
        store.claim(job.job_id, os.getpid())  # this live process plays the worker
        store.set_activity(job.job_id, "preparing the model: converting the packaged gemma-3-270m (once; minutes "
                                       "on a CPU), then loading it on cpu")
    app = start(RESCORE)
    [(value, text)] = progress_bars(app)
    assert value == 0 and text.startswith("preparing the model: converting the packaged gemma-3-270m (once; minutes "
                                          "on a CPU), then loading it on cpu · ")
    assert text.endswith(" s so far · no LLM call yet")

    with job_store() as store:
        store.set_plan(job.job_id, [("erag", 52, 0), ("e2e", 30, 10), ("llm_relevance", 52, 0), ("semi_gold", 40, 0),
                                    ("llm_judge", 30, 0)])
        store.set_model(job.job_id, "gemma-3-270m [float32]", "cpu")
        store.set_stage(job.job_id, "erag", 48, 52, new_stage=True)
        store._update(job.job_id, llm_started=time.time() - 100)  # the model was ready 100 s ago
    app = start(RESCORE)
    [(value, text)] = progress_bars(app)
    assert text.startswith("stage erag 48/52 LLM calls (0 from the cache, 48 new) · whole job: stage 1 of 5, 48/204 "
                           "LLM calls, 146 new left · 0.48 new calls per s · ETA 5.")  # 146 / 0.48 s: 5.1 min
    assert text.endswith(" min") and value == 23  # the bar: 48 of the whole job's 204 calls


def test_an_umbrela_job_is_started_after_the_page_tried_the_model_and_reuses_its_replies(run_path, launches,
                                                                                           tmp_path, monkeypatch):
    """Issue 41, item 8: before an UMBRELA job the page tries the model on 5 passages and says how many replies
    were in UMBRELA's format; those calls go through the LLM-call cache, so the job does not make them again."""
    from rageval.generation import factory
    from rageval.generation.cache import LLMCache
    from rageval.labelmethods import UMBRELA

    def alternating(prompt: str) -> str:  # the 1st, 3rd, 5th passage in format; the others not
        alternating.asked += 1
        return "##final score: 2" if alternating.asked % 2 else "The passage is somewhat relevant."

    alternating.asked = 0
    model = tmp_path / "grader"
    model.mkdir()
    (model / "config.json").write_text("{}")  # a model folder: found; the fake generator stands in for it
    monkeypatch.setattr(factory, "load_generator", lambda settings: FakeGenerator(alternating, model_id="fake:alt"))
    app = start(RESCORE)
    app.radio(key="rescore.kind").set_value(UMBRELA)
    app.text_input(key="rescore.model").input(str(model))
    app.button(key="FormSubmitter:rescore.form-Start re-scoring").click().run()
    assert not app.exception, [e.value for e in app.exception]
    said = escape_markdown("This model (fake:alt) answered 3 of 5 in UMBRELA's format.")
    assert app.warning[0].value.startswith(said)
    assert escape_markdown("about 60% of the passages") in app.warning[0].value
    with job_store() as store:
        assert store.list() == [] and launches == []  # nothing starts before the user says so
    with LLMCache() as cache:
        assert len(cache) == 5  # the probe's replies, kept for the job

    app.button(key="rescore.probe.start").click().run()
    assert not app.exception, [e.value for e in app.exception]
    with job_store() as store:
        [job] = store.list()
        assert launches == [job.job_id] and job.method == "umbrela@grader"
        assert app.success[0].value.startswith(escape_markdown(f"Job {job.job_id} started: umbrela@grader"))
        assert not app.warning  # the probe's block is gone
        worker_model = FakeGenerator(alternating, model_id="fake:alt")
        assert run_job(job.job_id, store, generator=worker_model, log=lambda _: None).status == "done"
    assert worker_model.prompts_seen == job.total - 5  # the 5 tried are answered from the cache


def test_dropping_the_probed_job_starts_nothing(run_path, launches, tmp_path, monkeypatch):
    from rageval.generation import factory
    from rageval.labelmethods import UMBRELA

    model = tmp_path / "grader"
    model.mkdir()
    (model / "config.json").write_text("{}")
    monkeypatch.setattr(factory, "load_generator",
                        lambda settings: FakeGenerator(lambda p: "##final score: 1", model_id="fake:one"))
    app = start(RESCORE)
    app.radio(key="rescore.kind").set_value(UMBRELA)
    app.text_input(key="rescore.model").input(str(model))
    app.button(key="FormSubmitter:rescore.form-Start re-scoring").click().run()
    assert app.success[0].value == escape_markdown("This model (fake:one) answered 5 of 5 in UMBRELA's format.")
    app.button(key="rescore.probe.drop").click().run()
    assert not app.exception and not app.success and launches == []
    with job_store() as store:
        assert store.list() == []
