"""The Re-score form starts a job with a user's judge file (docs/judges/answer_present.toml): the kind "your own
judge" with the file's path makes a job of the file's method; every registered judge is a choice of its own; a
missing path or a bad file is an error on the page and no job (the worker launcher is replaced by a recorder)."""

from __future__ import annotations

import pytest

from rageval import labelmethods
from rageval.jobs import control
from rageval.jobs.spec import JobStore
from rageval.paths import REPO_ROOT
from rageval.store.jobs import default_jobs_db
from tests.jobs.test_jobs import MODEL
from tests.ui.test_app_rescore import RESCORE, run_path, start  # noqa: F401 (a fixture)
from ui.render import escape_markdown

JUDGE = REPO_ROOT / "docs" / "judges" / "answer_present.toml"
SUBMIT = "FormSubmitter:rescore.form-Start re-scoring"


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    monkeypatch.setattr(labelmethods, "_REGISTRY", dict(labelmethods._REGISTRY))


@pytest.fixture
def launches(monkeypatch) -> list[int]:
    started: list[int] = []
    monkeypatch.setattr(control, "launch_worker", lambda job_id, store: started.append(job_id) or 0)
    return started


def test_a_judge_file_from_the_form_makes_a_job_of_its_method(run_path, launches, tmp_path,  # noqa: F811
                                                             monkeypatch):
    from rageval.generation import factory
    from rageval.generation.base import FakeGenerator

    # A judge file's job is tried on 5 passages first (issue 41, item 8): the model says Yes, in the file's format.
    monkeypatch.setattr(factory, "load_generator", lambda settings: FakeGenerator(lambda prompt: "Yes",
                                                                                  model_id=MODEL))
    app = start(RESCORE)
    shown = app.radio(key="rescore.kind").options
    assert [o.split(":")[0] for o in shown] == ["eRAG utility", "LLM relevance", "UMBRELA", "your own judge"]
    app.radio(key="rescore.backend").set_value("openai").run()
    app.text_input(key="rescore.model").input(MODEL)
    app.radio(key="rescore.kind").set_value("judge file")
    app.button(key=SUBMIT).click().run()
    assert "type the path of its TOML file" in app.error[0].value
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n')
    app.text_input(key="rescore.judge_file").input(str(bad))
    app.button(key=SUBMIT).click().run()
    assert escape_markdown(f"{bad}: field 'description' is missing") in app.error[0].value
    with JobStore(default_jobs_db()) as store:
        assert store.list() == [] and launches == []

    app.text_input(key="rescore.judge_file").input(str(JUDGE))
    app.button(key=SUBMIT).click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert escape_markdown("answered 5 of 5 in answer_present's format") in app.success[0].value
    with JobStore(default_jobs_db()) as store:
        assert store.list() == []  # nothing starts before the user says so
    app.button(key="rescore.probe.start").click().run()
    assert not app.exception, [e.value for e in app.exception]
    with JobStore(default_jobs_db()) as store:
        [job] = store.list()
    assert launches == [job.job_id] and job.method == f"answer_present@{MODEL}"
    assert job.spec.judge_file == str(JUDGE.resolve()) and job.spec.label_kind == "answer_present"
