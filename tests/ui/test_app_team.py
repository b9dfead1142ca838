"""Team mode in AppTest (``st.user`` seeded with an ID token's claims, ``$RAGEVAL_TEAM`` naming a team.toml): the
server-side checks behind the pages, reached as a forged request would reach them: an annotator name from the URL
or the session, a label saved under another name, a job or an upload by a role that may not. The same in Chromium
through a real provider: tests/browser/test_team_mode.py."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval.annotations import ANNOTATIONS_FILE
from rageval.store import audit as audit_store
from rageval.team import audit
from rageval.team.config import TEAM_ENV
from tests.run_fixtures import make_small_run
from tests.ui.test_app import HOME, TIMEOUT_S
from ui.format import escape_markdown

REPO = Path(__file__).resolve().parents[2]
ANNOTATE = "app_pages/9_Annotate.py"
TEAM_TOML = """
[provider]
server_metadata_url = "http://localhost:1/.well-known/openid-configuration"
client_id = "rageval"
redirect_uri = "http://127.0.0.1:8501/oauth2callback"
[session]
max_hours = 1
[roles]
admin = ["ada@example.org"]
operator = ["otto@example.org"]
annotator = ["anna@example.org"]
viewer = ["vic@example.org"]
"""


@pytest.fixture(scope="module")
def built_run(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("team-build") / "fixture.sqlite")


@pytest.fixture
def team_env(built_run, tmp_path, monkeypatch) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(built_run, runs / "fixture.sqlite")
    (tmp_path / "team.toml").write_text(TEAM_TOML)
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(runs))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(TEAM_ENV, str(tmp_path / "team.toml"))
    return runs


def claims(email: str, *, age_s: float = 60) -> dict:
    return {"is_logged_in": True, "sub": email.split("@")[0], "email": email, "email_verified": True,
            "iss": "http://localhost:1", "iat": int(time.time() - age_s)}


def start_as(user: dict, script: str = HOME, session: dict | None = None, **query_params: str) -> AppTest:
    app = AppTest.from_file(HOME, default_timeout=TIMEOUT_S)
    app.user = user
    app.query_params.update(query_params)
    for key, value in (session or {}).items():
        app.session_state[key] = value
    if script != HOME:
        app.switch_page(script)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_a_label_is_saved_under_the_signed_in_id_whatever_the_url_or_session_say(team_env):
    app = start_as(claims("anna@example.org"), ANNOTATE, session={"annotate.annotator": "mallory"},
                   annotator="mallory", run="fixture")
    assert escape_markdown("Labelling as anna@example.org (signed in)") in [c.value for c in app.caption]
    assert not [t for t in app.text_input if t.key == "annotate.annotator.widget"]  # no name to type
    app.button[[b.label for b in app.button].index("Start: draw the sample")].click().run()
    app.button(key="annotate.queue.1").click().run()
    assert not app.exception
    with sqlite3.connect(team_env / ANNOTATIONS_FILE) as connection:
        rows = connection.execute("SELECT annotator FROM labels").fetchall()
        drawn_by = connection.execute("SELECT created_by FROM samples").fetchall()
    assert rows == [("anna@example.org",)] and drawn_by == [("anna@example.org",)]


def forged_actions() -> None:
    """Run as a page script: the server-side calls behind the buttons, with forged arguments."""
    import os

    import streamlit as st

    from rageval.jobs.spec import JobSpec
    from rageval.store.annotations import PassageItem
    from ui import auth, data_annotate, data_jobs

    runs = os.environ["RAGEVAL_RUNS_DIR"]
    for name, call in (("start", lambda: data_jobs.start_rescore(JobSpec(run_path=f"{runs}/fixture.sqlite"))),
                       ("cancel", lambda: data_jobs.cancel_rescore(1)),
                       ("upload", lambda: auth.check("upload"))):
        try:
            call()
            st.write(f"{name}: done")
        except auth.NotAllowed as error:
            st.write(f"{name}: refused: {error}")
    saved = data_annotate.save_label(f"{runs}/annotations.sqlite", "fixture", "mallory",
                                     PassageItem("nq:0", "nq_oracle:0"), 1)
    st.write(f"label as mallory: {saved}: {st.session_state.get(data_annotate.SAVE_ERROR_STATE)}")


@pytest.mark.parametrize("email", ["vic@example.org", "anna@example.org"])
def test_jobs_uploads_and_labels_as_someone_else_are_refused_on_the_server(team_env, email):
    app = AppTest.from_function(forged_actions, default_timeout=TIMEOUT_S)
    app.user = claims(email)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    said = [m.value for m in app.markdown]
    role = "viewer" if email.startswith("vic") else "annotator"
    assert said[0] == (f"start: refused: {email} (role {role}) may not start or cancel jobs and compute missing "
                       "pieces on this dashboard")
    assert said[1].startswith("cancel: refused") and said[2].startswith("upload: refused")
    assert said[3].startswith("label as mallory: False")
    assert ("may label only as" if role == "annotator" else "may not label") in said[3]
    assert not (team_env / ANNOTATIONS_FILE).exists() or not sqlite3.connect(team_env / ANNOTATIONS_FILE).execute(
        "SELECT COUNT(*) FROM labels").fetchone()[0]
    assert not (team_env.parent / "cache" / "jobs.sqlite").exists()  # no job was created


def test_an_expired_sign_in_gets_the_sign_in_page_and_reads_no_run(team_env, monkeypatch):
    import ui.data

    def no_reading(*args, **kwargs):
        raise AssertionError("a run was read")

    monkeypatch.setattr(ui.data, "run_key", no_reading)
    app = start_as(claims("ada@example.org", age_s=2 * 3600), run="fixture")
    assert [t.value for t in app.title] == ["rageval"]
    assert "Your sign-in has expired" in app.info[0].value
    assert [b.label for b in app.button] == ["Sign in"]
    app = start_as({"is_logged_in": False}, run="fixture")
    assert [b.label for b in app.button] == ["Sign in"] and not app.info


def test_a_sign_in_is_audited_once_with_who_and_when(team_env):
    start_as(claims("otto@example.org"), run="fixture")
    entries = audit_store.read_entries(audit_store.audit_path(team_env))
    assert [(e.user_id, e.action) for e in entries] == [("otto@example.org", "sign_in")]
    assert entries[0].detail["role"] == "operator" and entries[0].at.endswith("+00:00")


def test_the_audit_log_page_shows_whether_the_chain_verifies(team_env):
    """issue 39 item 4: the page said the file "refuses changes" while INSERT OR REPLACE rewrote an entry; it now
    walks the hash chain and names the first entry that does not verify."""
    audit_page = "app_pages/12_Audit_log.py"
    app = start_as(claims("ada@example.org"), audit_page)
    assert escape_markdown("The hash chain verifies: 1 entries, each as written") in app.success[0].value
    assert not app.error
    with sqlite3.connect(audit_store.audit_path(team_env)) as connection:
        connection.execute("DROP TRIGGER audit_no_update")
        connection.execute("UPDATE audit SET user_id = 'mallory' WHERE entry = 1")
    app = start_as(claims("ada@example.org"), audit_page)
    assert not app.success
    assert escape_markdown("entry 1 does not verify: its content") in app.error[0].value


def test_queue_annotators_are_lower_cased_and_unknown_names_warned(team_env):
    """issue 39 item 7: an admin typing an annotator's address with capitals created a queue that person never saw
    (identities are lower-cased, the typed name was not); a name no team.toml entry lets label is named."""
    from rageval.queues import QueueStore

    app = start_as(claims("ada@example.org"), "app_pages/12_Queues.py", run="fixture")
    app.text_input(key="queues.create.name").input("check")
    app.number_input(key="queues.create.size").set_value(4)
    app.number_input(key="queues.create.overlap").set_value(1)
    app.text_area(key="queues.create.annotators").input("  Anna@Example.ORG \nbo@nowhere.org\nvic@example.org")
    app.button[[b.label for b in app.button].index("Create the queue")].click().run()
    assert not app.exception, [e.value for e in app.exception]
    store = QueueStore(team_env / ANNOTATIONS_FILE)
    [queue] = store.queues()
    assert queue.annotators == ("anna@example.org", "bo@nowhere.org", "vic@example.org")
    assert [q.id for q in store.queues_of("anna@example.org")] == [queue.id]
    [warning] = app.warning
    # bo matches no entry; vic is a viewer, who may not label; anna is an annotator
    assert escape_markdown("bo@nowhere.org, vic@example.org: no email or @domain entry") in warning.value


def test_an_unhandled_error_shows_an_id_and_the_trace_goes_to_the_log(team_env, monkeypatch, capfd):
    """issue 39 item 6: in team mode a page's unhandled error showed a traceback with server paths; now one line
    with an id, and the server log (stderr) has that id with the trace."""
    import ui.data

    def broken(*args, **kwargs):
        raise RuntimeError(f"cannot read {team_env}/secret-place/run.sqlite")

    monkeypatch.setattr(ui.data, "find_all_runs", broken)
    app = start_as(claims("vic@example.org"), run="fixture")
    [box] = app.error
    assert box.value.startswith("Something went wrong on this page (error ") and str(team_env) not in box.value
    error_id = box.value.split("(error ")[1].split(")")[0]
    log = capfd.readouterr().err
    assert f"rageval: error {error_id} on page 'Findings' for vic@example.org" in log
    assert "Traceback (most recent call last)" in log and "secret-place" in log


def job_block() -> None:
    """Run as a page script: one running job's block as the Findings and Re-score pages draw it."""
    import os

    from rageval.jobs.spec import JobStore
    from ui import render_jobs

    with JobStore(os.environ["RAGEVAL_CACHE_DIR"] + "/jobs.sqlite") as store:
        job = store.list()[0]
    render_jobs.render_job(job)


@pytest.mark.parametrize("email, controls", [("vic@example.org", False), ("anna@example.org", False),
                                             ("otto@example.org", True), ("ada@example.org", True)])
def test_job_controls_and_the_server_url_only_for_those_who_may_run_jobs(team_env, email, controls):
    """issue 39 item 6: viewers saw Cancel / Stop now on other people's jobs (refused on the server) and the job's
    server URL; now a role that may not run jobs sees neither, and a line saying why."""
    import os

    from rageval.jobs.spec import JobSpec, JobStore

    server = "http://10.0.0.7:8000/v1"
    with JobStore(os.environ["RAGEVAL_CACHE_DIR"] + "/jobs.sqlite") as store:
        job = store.create(JobSpec.from_flat(str(team_env / "fixture.sqlite"), model="m", backend="openai",
                                             base_url=server), "erag:em@m", 10, started_by="otto@example.org")
        store.claim(job.job_id, os.getpid())  # this live process plays the worker
    app = AppTest.from_function(job_block, default_timeout=TIMEOUT_S)
    app.user = claims(email)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    labels = [b.label for b in app.button]
    shown = " ".join(c.value for c in app.caption)
    if controls:
        assert labels == ["Cancel", "Stop now"] and server in shown.replace("\\", "")
    else:
        assert labels == [] and server not in shown.replace("\\", "") and "on a model server" in shown
        assert "are for operators and admins" in shown


def test_sign_out_ends_the_session_on_the_server(team_env):
    """issue 39 item 5: a cookie saved before Sign out still worked after it, until max_hours. Sign out now records
    the session's end on the server: the same claims (a copied cookie) get the sign-in page."""
    ada = claims("ada@example.org")
    app = start_as(ada, run="fixture")
    assert app.title[0].value == "Findings"
    app.sidebar.button(key="auth.sign_out").click().run()
    entries = audit_store.read_entries(audit_store.audit_path(team_env))
    assert entries[0].action == audit.SIGN_OUT and entries[0].user_id == "ada@example.org"
    again = start_as(ada, run="fixture")  # the cookie as it was before Sign out
    assert [t.value for t in again.title] == ["rageval"] and [b.label for b in again.button] == ["Sign in"]
    assert "This session was ended" in again.info[0].value
    fresh = start_as({**ada, "iat": ada["iat"] + 1}, run="fixture")  # a new sign-in: a new session
    assert fresh.title[0].value == "Findings"


def test_an_admin_ends_a_persons_sessions(team_env):
    vic = claims("vic@example.org")
    assert start_as(vic, run="fixture").title[0].value == "Findings"
    app = start_as(claims("ada@example.org"), "app_pages/12_Audit_log.py")
    app.text_input(key="audit.end_user").input(" Vic@Example.org ")
    app.button(key="audit.end_sessions").click().run()
    assert not app.exception and "Every session of vic@example.org" in app.success[-1].value.replace("\\", "")
    assert [t.value for t in start_as(vic, run="fixture").title] == ["rageval"]  # ended, on every browser
    assert start_as({**vic, "iat": int(time.time()) + 1}, run="fixture").title[0].value == "Findings"  # signs in again
    assert start_as(claims("otto@example.org"), run="fixture").title[0].value == "Findings"  # nobody else


def forged_end_sessions() -> None:
    import streamlit as st

    from ui import auth

    try:
        auth.end_sessions("ada@example.org")
        st.write("ended")
    except auth.NotAllowed as error:
        st.write(f"refused: {error}")


def test_ending_sessions_is_refused_below_admin(team_env):
    app = AppTest.from_function(forged_end_sessions, default_timeout=TIMEOUT_S)
    app.user = claims("otto@example.org")
    app.run()
    assert app.markdown[0].value.startswith("refused: otto@example.org (role operator) may not end people")
    assert audit.read_revocations(audit_store.audit_path(team_env)).users_before == {}
