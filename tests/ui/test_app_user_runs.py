"""The dashboard on runs of a user's own data (tests/user_run_fixtures.py: 6 questions, 15 passages, a TREC run no
other code has seen): one built by ``rageval evaluate`` (the pipeline with the fake generator), one as the upload
makes it (nothing computed). Every page opens on both with no exception and no dead end; the upload shows what it
lacks, and the button computes it in a real background worker (the fake generator served by
``rageval.generation.server``); the shipped runs are listed beside the user's, read-only; a partial re-score
shows "n of N labelled" and its answers in the query inspector; one unreadable file breaks nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rageval.generation.base import FakeGenerator
from rageval.generation.server import serve
from rageval.jobs.control import create_job
from rageval.jobs.spec import ACTIVE, JobSpec, JobStore
from rageval.jobs.worker import run_job
from rageval.pipeline.summary import missing_pieces, run_summary
from rageval.store import RunReader
from rageval.store.jobs import DONE
from tests.jobs.test_jobs import wait_for
from tests.ui.test_app import HOME, REPO, start
from tests.user_run_fixtures import QUESTIONS, build_evaluated_run, build_uploaded_run
from ui import render_evidence
from ui.render import SHIPPED_MARK, escape_markdown

PAGES = [HOME, *sorted(str(p) for p in (REPO / "app_pages").glob("*.py"))]
CORRELATIONS = str(REPO / "app_pages" / "5_Correlations.py")
RETEVAL = str(REPO / "app_pages" / "2_LLM_retEval.py")
FAILURES = str(REPO / "app_pages" / "7_Failure_cases.py")
INSPECTOR = str(REPO / "app_pages" / "1_Query_inspector.py")
LACKS_PAGES = (HOME, CORRELATIONS, RETEVAL)
#: Commands that run only on the shipped data (or are code, not commands): no page may send a user there.
DEAD_ENDS = ("rageval erag", "demo-runs", "RunPlan", "rageval attribution --help", "eval-retrieval")
EVERYTHING_MISSING = "eRAG labels: missing · E2E: missing · baselines: missing · LLM-retEval: missing"
SUBMIT = "FormSubmitter:lacks.form-Compute missing pieces"


@pytest.fixture(scope="module")
def user_runs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("user_runs")
    files = tmp_path_factory.mktemp("user_files")
    build_evaluated_run(files / "evaluated", folder / "evaluated.sqlite", files / "llm.sqlite")
    uploaded = build_uploaded_run(files / "uploaded", folder, "uploaded")
    os.utime(uploaded, (1_000_000, 1_000_000))  # older: the evaluated run is the default
    return folder


@pytest.fixture
def runs_env(user_runs, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(user_runs))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return user_runs


def page_text(app) -> str:
    parts = [e.value for kind in ("markdown", "info", "warning", "error", "caption", "code", "success")
             for e in getattr(app, kind)]
    return "\n".join(parts)


def lacks_line(app) -> str | None:
    return next((m.value for m in app.markdown if m.value.startswith("**What this run lacks:**")), None)


@pytest.mark.parametrize("run", ["evaluated", "uploaded"])
@pytest.mark.parametrize("script", PAGES, ids=[Path(p).stem for p in PAGES])
def test_every_page_opens_on_a_user_run_with_no_dead_end(run, script, runs_env):
    app = start(script, run=run)  # start() asserts no exception
    text = page_text(app)
    assert not [d for d in DEAD_ENDS if d in text], text
    if script == FAILURES:  # across runs: the panel is for a run without failure cases, the upload
        assert app.selectbox(key="failures.lacking_run").value == "uploaded"
        assert lacks_line(app) == "**What this run lacks:** " + escape_markdown(EVERYTHING_MISSING)
    elif run == "evaluated":
        assert lacks_line(app) is None  # rageval evaluate --methods all: nothing lacks
    elif script in LACKS_PAGES:
        assert lacks_line(app) == "**What this run lacks:** " + escape_markdown(EVERYTHING_MISSING)
        assert app.button(key=SUBMIT)  # the button, not a command that cannot run on this run


def test_the_evaluated_run_fills_the_correlations_and_reteval_pages(runs_env):
    correlations = start(CORRELATIONS, run="evaluated")
    assert correlations.get("vega_lite_chart") and not correlations.info
    reteval = start(RETEVAL, run="evaluated")
    table = next(df.value for df in reteval.dataframe)  # the paper's Tables 1-2: one column per k
    assert list(table.columns) == ["k=1", "k=3"]
    # every question judged
    assert table.loc[dict(render_evidence.RETEVAL_ROWS)["n"]].tolist() == [str(len(QUESTIONS))] * 2


def test_the_overview_lists_shipped_runs_read_only_after_the_users(runs_env, tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    (shipped / "demo").mkdir(parents=True)
    shutil.copy(runs_env / "uploaded.sqlite", shipped / "demo" / "shipped-upload.sqlite")
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", str(shipped))
    home = start(HOME)
    box = home.sidebar.selectbox[0]
    assert box.options == ["evaluated", "uploaded", f"shipped-upload · {SHIPPED_MARK}"]
    assert box.value == "evaluated"
    shipped_home = start(HOME, run="shipped-upload")
    assert lacks_line(shipped_home) == "**What this run lacks:** " + escape_markdown(EVERYTHING_MISSING)
    assert not [b for b in shipped_home.button if b.key == SUBMIT]  # nothing is written into a shipped run
    assert "This is a shipped demo run" in page_text(shipped_home)


def test_one_unreadable_file_in_either_folder_breaks_no_other_view(runs_env, tmp_path, monkeypatch):
    user = tmp_path / "user"
    shutil.copytree(runs_env, user)
    (user / "folder.sqlite").mkdir()  # a directory with a run's name
    (user / "dangling.sqlite").symlink_to(tmp_path / "gone.sqlite")
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "empty.sqlite").write_bytes(b"")  # listed: opening it says what is wrong
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(user))
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", str(shipped))
    home = start(HOME)
    warning = " ".join(w.value for w in home.sidebar.warning)
    assert escape_markdown("folder.sqlite: is a folder; expected a run file") in warning
    assert escape_markdown(f"dangling.sqlite: a link to {tmp_path / 'gone.sqlite'}, which does not exist") in warning
    assert home.sidebar.selectbox[0].value == "evaluated" and not home.error
    empty = start(HOME, run="empty").error[0].value
    assert escape_markdown("empty.sqlite: empty file, not a rageval run file") in empty
    failures = start(FAILURES)
    assert escape_markdown("empty.sqlite") in " ".join(w.value for w in failures.warning)
    assert {"evaluated"} <= set(next(df.value for df in failures.dataframe if "Run" in df.value.columns)["Run"])


def test_a_partial_rescore_shows_n_of_N_and_its_answers_in_the_inspector(runs_env, tmp_path, monkeypatch):
    user = tmp_path / "user"
    user.mkdir()
    run = shutil.copy(runs_env / "uploaded.sqlite", user / "partial.sqlite")
    with JobStore(tmp_path / "jobs.sqlite") as store:
        job = create_job(JobSpec.from_flat(run, model="fake", backend="openai", query_ids=("t1", "t2"),
                                 llm_cache=str(tmp_path / "llm.sqlite")), store)
        assert run_job(job.job_id, store, generator=FakeGenerator(model_id="fake"),
                       log=lambda _: None).status == DONE
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(user))
    home = start(HOME)
    summary = next(df.value for df in home.dataframe if "n" in df.value.columns)
    # gold (the questions' gold_passage_ids, labels since the upload) covers all 6; the re-scored method 2 of them
    assert list(summary["n"]) == [str(len(QUESTIONS)), f"2 of {len(QUESTIONS)}"]
    captions = " ".join(c.value for c in home.caption)
    assert escape_markdown(f"{len(QUESTIONS)} queries. · erag:em@fake: 2 of {len(QUESTIONS)} labelled") in captions

    inspector = start(INSPECTOR, query="t1")
    ranked = next(df.value for df in inspector.dataframe if "Passage" in df.value.columns)
    # The fake generator answers with the first capitalised span of the passage (rageval.generation.base).
    assert list(ranked["Answer (erag:em@fake)"]) == ["Charles Babbage", "Ada Lovelace", "Hydrogen"]


def test_the_button_computes_what_an_upload_lacks_in_a_background_job(tmp_path, monkeypatch, runs_env):
    user = tmp_path / "user"
    user.mkdir()
    run = Path(shutil.copy(runs_env / "uploaded.sqlite", user / "mine.sqlite"))
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(user))
    with serve(FakeGenerator(model_id="fake-span"), model_name="fake-span") as server:
        home = start(HOME)
        home.radio(key="lacks.model_choice").set_value("server").run()  # the server's inputs show once it is chosen
        home.text_input(key="lacks.base_url").input(server.base_url)
        home.text_input(key="lacks.served_model").input("fake-span")
        home.button(key=SUBMIT).click().run()
        assert not home.exception, [e.value for e in home.exception]
        with JobStore() as store:
            (job,) = store.list(run)
            assert (job.method, job.spec.model_settings.backend, job.spec.label_kind) == (
                "complete@fake-span", "openai", "complete")
            wait_for(lambda: store.get(job.job_id).status not in ACTIVE, "the complete job",
                     store.get(job.job_id).log_path)
            assert store.get(job.job_id).status == DONE, store.get(job.job_id).error
    assert missing_pieces(run_summary(run), RunReader(run).settings()) == {}
    home.run()  # the file's mtime changed: every table reloads, the panel is gone
    assert lacks_line(home) is None and not home.exception
    assert start(CORRELATIONS).get("vega_lite_chart")
    assert list(next(df.value for df in start(RETEVAL).dataframe).columns) == ["k=1"]  # LLM-retEval at k=1


@pytest.mark.parametrize("script", [HOME, INSPECTOR, CORRELATIONS])
def test_the_provenance_line_says_what_the_user_brought(script, runs_env):
    """The upload's questions, rankings and gold labels are the user's; the evaluated run's candidates too, and its
    answers and other labels are the model's: each page's one provenance line says so."""
    uploaded = start(script, run="uploaded")
    line = next(c.value for c in uploaded.caption if c.value.startswith(escape_markdown("Run uploaded")))
    assert escape_markdown("yours: questions, rankings, labels gold") in line
    evaluated = start(script, run="evaluated")
    line = next(c.value for c in evaluated.caption if c.value.startswith(escape_markdown("Run evaluated")))
    assert escape_markdown("yours: questions, rankings, labels gold") in line
