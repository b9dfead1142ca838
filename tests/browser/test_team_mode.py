"""Team mode in a real Chromium against a real OpenID Connect provider on loopback (``oidc-provider-mock``, an
Authlib authorization server): ``rageval serve --team team.toml`` started as a user starts it, five people signing
in through the provider's form (one per role, and one the team does not know), and the role x action table checked
cell by cell in the browser. Each cell is a probe (:data:`PROBES`: action -> function), so an action added later is
one function. Then: signed out, the sign-in page is all there is and no websocket frame carries run data; a label
sent as someone else is stored under the signed-in id; a tampered or expired session cookie is refused.

The table as measured is written to ``test-output/team_roles.md``. Debian's Chromium, skipped without it unless
``CI`` (tests/browser_support.py).
"""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore
from rageval.jobs.spec import JobStore
from rageval.store import audit as audit_store
from rageval.store import read_run
from rageval.store.annotations import PassageItem
from rageval.team import audit
from rageval.team.roles import (
    ACTIONS,
    ADJUDICATE,
    ADMIN,
    ANNOTATOR,
    END_SESSIONS,
    LABEL,
    MANAGE_QUEUES,
    OPERATOR,
    READ_AUDIT,
    ROLES,
    RUN_JOBS,
    UPLOAD,
    VIEW,
    VIEWER,
    can,
)
from tests.browser_support import SHOTS, WAIT_MS, require_browser, upload_and_validate
from tests.run_fixtures import make_small_run
from tests.team_support import COOKIE_SECRET, team_server
from tests.team_support import sign_in as sign_in_context
from tests.user_run_fixtures import write_user_files
from ui.navigation import PAGES, TEAM_PAGES

pytestmark = pytest.mark.browser

RUN = "teamrun"
LABELLED = "labelledrun"
QUERY_TEXT = "who got the first nobel prize in physics"  # nq:0 of the fixture run
PASSAGE_ID = "nq_oracle:0"
OUTSIDER = "outsider"
#: sub -> (role the team gives, claims). Roles by email, by domain and by a groups claim.
PEOPLE = {
    "ada": (ADMIN, {"email": "ada@example.org", "email_verified": True, "name": "Ada"}),
    "otto": (OPERATOR, {"email": "otto@example.org", "email_verified": True, "groups": ["ml-ops"]}),
    "anna": (ANNOTATOR, {"email": "anna@annotators.example.org", "email_verified": True}),
    "vic": (VIEWER, {"email": "vic@example.org", "email_verified": True}),
    OUTSIDER: (None, {"email": "eve@elsewhere.org", "email_verified": True}),
}
REFUSED_TEXTS = ("Not for your role", "No access")


@dataclass
class Team:
    url: str
    runs: Path
    cache: Path
    hanging_url: str  # an OpenAI-compatible "server" that accepts connections and never answers
    contexts: dict[str, object] = field(default_factory=dict)  # sub -> signed-in browser context
    queue_id: int | None = None  # the queue an admin created in the browser (probe_manage_queues)


@pytest.fixture(scope="module")
def team(tmp_path_factory, chromium) -> Iterator[Team]:
    """The provider (in a thread), a hanging socket, and ``rageval serve --team`` on a runs folder holding the
    fixture run (tests/team_support.py); the people's browser contexts are closed after."""
    require_browser()
    root = tmp_path_factory.mktemp("team")
    runs, cache = root / "runs", root / "cache"
    runs.mkdir()
    make_small_run(runs / f"{RUN}.sqlite")
    make_small_run(runs / f"{LABELLED}.sqlite")  # a run with one human label (issue 39 item 1)
    AnnotationStore(runs / ANNOTATIONS_FILE).save_label(LABELLED, PassageItem("nq:0", PASSAGE_ID), 1,
                                                        "anna@annotators.example.org")
    hanging = socket.socket()
    hanging.bind(("127.0.0.1", 0))
    hanging.listen(16)  # never accepted: a request sent there waits for an answer that never comes
    try:
        with team_server(root, runs, cache, PEOPLE) as server:
            state = Team(server.url, runs, cache, f"http://127.0.0.1:{hanging.getsockname()[1]}/v1")
            try:
                yield state
            finally:
                for context in state.contexts.values():
                    context.close()
    finally:
        hanging.close()


def sign_in(team: Team, chromium, sub: str):
    """A page of ``sub``'s browser context, signed in through the provider's form (once per person)."""
    if sub not in team.contexts:
        team.contexts[sub] = sign_in_context(chromium, team.url, sub, "Findings" if PEOPLE[sub][0] else "No access")
    return team.contexts[sub].new_page()


# --- the probes: each opens what the action needs and says whether it was allowed, and how it was refused -------

@dataclass(frozen=True)
class Outcome:
    allowed: bool
    how: str


def wait_for_one(page, allowed_locator) -> str | None:
    """Wait until the page shows ``allowed_locator`` (None) or a refusal: one of our refusal headings (the page
    stopped at its top), or Streamlit's "Page not found" (the page is not in this session's navigation at all)."""
    from playwright.sync_api import expect

    refused = page.get_by_role("heading", name=re.compile("|".join(REFUSED_TEXTS)))
    not_found = page.get_by_text("Page not found")
    expect(allowed_locator.or_(refused).or_(not_found).first).to_be_visible(timeout=WAIT_MS)
    for text in REFUSED_TEXTS:
        if page.get_by_role("heading", name=text).count():
            return text
    if not_found.count():
        return "Page not found (not in this session's navigation)"
    return None


def listed(page, title: str) -> bool:
    """Whether the sidebar's page list names ``title`` (its "View N more" opened first)."""
    more = page.get_by_test_id("stSidebarNavViewButton")
    if more.count() and "more" in more.inner_text():
        more.click()
    return page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).count() > 0


def refused(refusal: str, page, title: str) -> Outcome:
    """A refused cell: how the page stopped, and that the page is not in the sidebar's list."""
    assert not listed(page, title), f"{title} is listed for a role that may not use it"
    return Outcome(False, f"{refusal}; not listed")


def probe_view(page, team: Team, sub: str) -> Outcome:
    """Every page a viewer may read, opened by its URL: its heading shows, or the page stops with a refusal."""
    refusals = []
    for entry in (e for e in PAGES if e.action == VIEW):
        page.goto(f"{team.url}/{entry.url_path}?run={RUN}")
        # The page's title, or (Citations, Agents with no run of their kind here) the heading it says that under.
        heading = page.get_by_test_id("stMain").get_by_role("heading", level=1).first
        refusal = wait_for_one(page, heading)
        if refusal:
            refusals.append(f"{entry.title}: {refusal!r}")
    if refusals:
        how = sorted({r.split(": ")[1] for r in refusals})
        return Outcome(False, f"{len(refusals)} pages stopped with " + " / ".join(how))
    return Outcome(True, f"{sum(e.action == VIEW for e in PAGES)} pages showed their heading")


def probe_label(page, team: Team, sub: str) -> Outcome:
    """Annotate, opened with ``?annotator=mallory``: a label is given and stored under the signed-in id."""
    from playwright.sync_api import expect

    page.goto(f"{team.url}/Annotate?run={RUN}&annotator=mallory&mode=passages")  # not "My queue"
    refusal = wait_for_one(page, page.get_by_role("heading", name="Annotate", exact=True))
    if refusal:
        return refused(refusal, page, "Annotate")
    assert listed(page, "Annotate")
    me = PEOPLE[sub][1]["email"]
    expect(page.get_by_text(f"Labelling as {me} (signed in)")).to_be_visible(timeout=WAIT_MS)
    assert page.get_by_role("textbox", name="Your name (annotator)").count() == 0  # nothing to type a name into
    start = page.get_by_role("button", name="Start: draw the sample")
    useful = page.get_by_role("button", name="Useful [1]", exact=False).first
    expect(start.or_(useful).first).to_be_visible(timeout=WAIT_MS)
    if start.count():
        start.click()
    expect(useful).to_be_visible(timeout=WAIT_MS)
    # The admin's queue may already hold a label of this person on the run (probe_adjudicate saves one): count on.
    progress = re.compile(rf"(\d+) of \d+ sampled passages done by {re.escape(me)}")
    before = page.get_by_text(progress)
    expect(before).to_be_visible(timeout=WAIT_MS)
    done_before = int(progress.search(before.inner_text()).group(1))
    useful.click()
    expect(page.get_by_text(re.compile(rf"{done_before + 1} of \d+ sampled passages done by {re.escape(me)}"))
           ).to_be_visible(timeout=WAIT_MS)
    with sqlite3.connect(team.runs / ANNOTATIONS_FILE) as connection:
        who = {row[0] for row in connection.execute("SELECT annotator FROM labels WHERE run = ?", (RUN,))}
    assert me in who and "mallory" not in who
    return Outcome(True, f"label stored as {me} (not ?annotator=mallory)")


def probe_run_jobs(page, team: Team, sub: str) -> Outcome:
    """Re-score: start a job (an OpenAI-compatible server that never answers), then cancel it."""
    from playwright.sync_api import expect

    page.goto(f"{team.url}/Re_score?run={RUN}")
    refusal = wait_for_one(page, page.get_by_role("heading", name="Re-score", exact=True))
    if refusal:
        return refused(refusal, page, "Re-score")
    assert listed(page, "Re-score")
    page.get_by_text("OpenAI-compatible server", exact=False).first.click()
    base = page.get_by_label("Server base URL (OpenAI-compatible backend)")
    expect(base).to_be_visible(timeout=WAIT_MS)
    base.fill(team.hanging_url)
    base.press("Tab")
    model = page.get_by_label("Model", exact=True)
    model.fill("never-answers")
    model.press("Tab")
    page.get_by_text("the first N", exact=True).click()
    first = page.get_by_label("N (the first N queries)")
    first.fill("1")
    first.press("Tab")
    page.get_by_role("button", name="Start re-scoring").click()
    expect(page.get_by_text(re.compile(r"Job \d+ started"))).to_be_visible(timeout=WAIT_MS)
    with JobStore(team.cache / "jobs.sqlite") as store:
        job = store.list()[0]
    assert job.started_by == PEOPLE[sub][1]["email"]
    cancel = page.get_by_role("button", name="Cancel")
    expect(cancel.first).to_be_visible(timeout=WAIT_MS)
    cancel.first.click()
    deadline = time.monotonic() + WAIT_MS / 1000
    with JobStore(team.cache / "jobs.sqlite") as store:
        while not store.get(job.job_id).cancel_requested and time.monotonic() < deadline:
            time.sleep(0.2)  # polling the jobs database for the server's write, not a wait for content
        assert store.get(job.job_id).cancel_requested
    return Outcome(True, f"job {job.job_id} started (started_by {job.started_by}) and cancelled")


def probe_upload(page, team: Team, sub: str) -> Outcome:
    """Upload: validate a TREC upload and save it; the run records who uploaded it."""
    from playwright.sync_api import expect

    page.goto(f"{team.url}/Upload")
    refusal = wait_for_one(page, page.get_by_role("heading", name="Upload a run", exact=True))
    if refusal:
        return refused(refusal, page, "Upload")
    assert listed(page, "Upload")
    files = write_user_files(team.runs.parent / f"upload-{sub}")
    upload_and_validate(page, team.url, {k: files[k] for k in ("run", "queries", "passages")}, r"Valid: ")
    name = f"upload-{sub}"
    box = page.get_by_role("textbox", name="Run name")
    box.fill(name)
    box.press("Enter")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text(f"Saved run {name}")).to_be_visible(timeout=WAIT_MS)
    who = read_run(team.runs / f"{name}.sqlite").settings.get("uploaded_by")
    assert who == PEOPLE[sub][1]["email"]
    return Outcome(True, f"run saved with uploaded_by {who}")


def probe_read_audit(page, team: Team, sub: str) -> Outcome:
    """Audit log: listed and readable, or not listed and stopped when opened by its URL."""
    from playwright.sync_api import expect

    page.goto(f"{team.url}/Audit_log")
    heading = page.get_by_role("heading", name="Audit log", exact=True)
    refusal = wait_for_one(page, heading)
    if refusal:
        return refused(refusal, page, "Audit log")
    expect(page.get_by_text(re.compile(r"\d+ newest entries"))).to_be_visible(timeout=WAIT_MS)
    assert listed(page, "Audit log")
    return Outcome(True, "entries shown, page listed")


def probe_end_sessions(page, team: Team, sub: str) -> Outcome:
    """Audit log's "End a person's sessions", for someone who never signs in (so no probe after it is affected)."""
    from playwright.sync_api import expect

    page.goto(f"{team.url}/Audit_log")
    refusal = wait_for_one(page, page.get_by_role("heading", name="Audit log", exact=True))
    if refusal:
        return refused(refusal, page, "Audit log")
    page.get_by_text("End a person's sessions").click()
    page.get_by_label("Their email (or the provider's subject)").fill("nobody@example.org")
    page.get_by_label("Their email (or the provider's subject)").press("Enter")
    page.get_by_role("button", name="End their sessions").click()
    expect(page.get_by_text("Every session of nobody@example.org")).to_be_visible(timeout=WAIT_MS)
    return Outcome(True, "sessions of nobody@example.org ended")


QUEUE_ANNOTATORS = (PEOPLE["anna"][1]["email"], PEOPLE["ada"][1]["email"])


def probe_manage_queues(page, team: Team, sub: str) -> Outcome:
    """Queues: create a queue of 4 passages, each to both of two annotators; stored with the signed-in id."""
    from playwright.sync_api import expect

    page.goto(f"{team.url}/Queues?run={RUN}&annotator=mallory")
    refusal = wait_for_one(page, page.get_by_role("heading", name="Queues", exact=True))
    if refusal:
        return refused(refusal, page, "Queues")
    assert listed(page, "Queues")
    form = page.get_by_test_id("stExpander").filter(has_text="Create a queue").locator("details")
    expect(form).to_be_visible(timeout=WAIT_MS)
    if form.get_attribute("open") is None:  # folded when the file already holds a queue
        form.locator("summary").click()
    name = page.get_by_role("textbox", name="Queue name")
    expect(name).to_be_editable(timeout=WAIT_MS)
    name.fill(f"team-{sub}")
    for label, value in (("Items", "4"), ("Overlap (annotators per item)", "2")):
        box = page.get_by_role("spinbutton", name=label)
        box.fill(value)
        box.press("Tab")
    page.get_by_role("textbox", name="Annotators (one id per line)").fill("\n".join(QUEUE_ANNOTATORS))
    page.get_by_role("button", name="Create the queue").click()
    expect(page.get_by_text(re.compile(rf"Queue (\d+) 'team-{sub}' created"))).to_be_visible(timeout=WAIT_MS)
    with sqlite3.connect(team.runs / ANNOTATIONS_FILE) as connection:
        queue_id, created_by = connection.execute(
            "SELECT id, created_by FROM queues WHERE name = ?", (f"team-{sub}",)).fetchone()
    connection.close()
    assert created_by == PEOPLE[sub][1]["email"]
    team.queue_id = queue_id
    return Outcome(True, f"queue {queue_id} created (created_by {created_by})")


def probe_adjudicate(page, team: Team, sub: str) -> Outcome:
    """Queues: a disagreement on the admin's queue (two labels saved through the engine beforehand), adjudicated
    in the browser; stored apart, with the signed-in id, and no annotator's label changed."""
    from playwright.sync_api import expect

    from rageval.queues import QueueStore

    page.goto(f"{team.url}/Queues?annotator=mallory" + (f"&queue={team.queue_id}" if team.queue_id else ""))
    refusal = wait_for_one(page, page.get_by_role("heading", name="Queues", exact=True))
    if refusal:
        return refused(refusal, page, "Queues")
    assert team.queue_id is not None, "no queue to adjudicate: the manage_queues probe runs first"
    store = QueueStore(team.runs / ANNOTATIONS_FILE)
    for annotator, label in zip(QUEUE_ANNOTATORS, (1, 0), strict=True):
        store.save_label(team.queue_id, 0, annotator, label)
    page.reload()
    adjudicate = page.get_by_role("button", name="Adjudicate: useful").first
    expect(adjudicate).to_be_visible(timeout=WAIT_MS)
    adjudicate.click()
    me = PEOPLE[sub][1]["email"]
    expect(page.get_by_text(f"Adjudicated: useful by {me}")).to_be_visible(timeout=WAIT_MS)
    with sqlite3.connect(team.runs / ANNOTATIONS_FILE) as connection:
        rows = connection.execute("SELECT position, label, adjudicator FROM adjudications WHERE queue_id = ?",
                                  (team.queue_id,)).fetchall()
        kept = connection.execute("SELECT COUNT(*) FROM queue_labels WHERE queue_id = ?", (team.queue_id,)).fetchone()
    connection.close()
    assert rows == [(0, 1, me)] and kept == (2,)
    return Outcome(True, f"adjudicated label stored apart as {me}; both annotators' labels kept")


#: action -> probe (manage_queues before adjudicate: the second adjudicates the first's queue).
PROBES: dict[str, Callable[..., Outcome]] = {VIEW: probe_view, LABEL: probe_label, RUN_JOBS: probe_run_jobs,
                                             UPLOAD: probe_upload, MANAGE_QUEUES: probe_manage_queues,
                                             ADJUDICATE: probe_adjudicate, READ_AUDIT: probe_read_audit,
                                             END_SESSIONS: probe_end_sessions}


def test_role_by_action_table_in_chromium(team, chromium):
    table: dict[str, dict[str, Outcome]] = {}
    for sub in PEOPLE:
        page = sign_in(team, chromium, sub)
        try:
            table[sub] = {action: probe(page, team, sub) for action, probe in PROBES.items()}
        finally:
            page.close()
    rows = ["| person (role) | " + " | ".join(PROBES) + " |", "|---" * (len(PROBES) + 1) + "|"]
    for sub, outcomes in table.items():
        role = PEOPLE[sub][0] or "no role"
        rows.append(f"| {sub} ({role}) | " + " | ".join(
            ("allowed: " if o.allowed else "refused: ") + o.how for o in outcomes.values()) + " |")
    (SHOTS / "team_roles.md").write_text("\n".join(rows) + "\n")
    wrong = [f"{sub} {action}: measured {'allowed' if o.allowed else 'refused'} ({o.how})"
             for sub, outcomes in table.items() for action, o in outcomes.items()
             if o.allowed != can(PEOPLE[sub][0], action)]
    assert not wrong, "\n".join(wrong)
    assert set(PROBES) == set(ACTIONS) and {PEOPLE[s][0] for s in PEOPLE} >= set(ROLES)
    # The audit log holds who did what, in UTC: every sign-in, the job start and cancel, the upload.
    entries = audit_store.read_entries(audit_store.audit_path(team.runs))
    done = {(e.user_id, e.action) for e in entries}
    for _, claims in PEOPLE.values():
        assert (claims["email"], audit.SIGN_IN) in done
    for sub in ("ada", "otto"):
        email = PEOPLE[sub][1]["email"]
        assert {(email, audit.JOB_START), (email, audit.JOB_CANCEL), (email, audit.UPLOAD)} <= done
    assert {(PEOPLE["ada"][1]["email"], audit.QUEUE_CREATE), (PEOPLE["ada"][1]["email"], audit.ADJUDICATE)} <= done
    assert all(e.at.endswith("+00:00") for e in entries)


def frames_of(page) -> list[bytes]:
    frames: list[bytes] = []

    def on_socket(socket_):
        socket_.on("framereceived", lambda payload: frames.append(
            payload if isinstance(payload, bytes) else payload.encode()))

    page.on("websocket", on_socket)
    return frames


def test_signed_out_only_the_sign_in_page_and_no_run_data_in_any_frame(team, chromium):
    from playwright.sync_api import expect

    context = chromium.new_context()
    try:
        page = context.new_page()
        frames = frames_of(page)
        for path in ("", f"Query_inspector?run={RUN}&query=nq:0", f"Annotate?run={RUN}", "Audit_log",
                     f"Re_score?run={RUN}"):
            page.goto(f"{team.url}/{path}")
            expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)  # no page list
        page.wait_for_timeout(500)  # frames already on the wire
        assert frames, "no websocket frame was seen: the probe would prove nothing"
        for needle in (QUERY_TEXT, PASSAGE_ID):  # (the run's name is in the URL the browser sends, not data)
            assert not any(needle.encode() in frame for frame in frames), needle
    finally:
        context.close()
    # The same probe finds the run's data in a signed-in viewer's frames.
    page = sign_in(team, chromium, "vic")
    try:
        frames = frames_of(page)
        page.goto(f"{team.url}/Query_inspector?run={RUN}&query=nq:0")
        expect(page.get_by_role("heading", name=QUERY_TEXT)).to_be_visible(timeout=WAIT_MS)
        assert any(QUERY_TEXT.encode() in frame for frame in frames)
    finally:
        page.close()


def _cookie(context, name="_streamlit_user") -> dict:
    return next(c for c in context.cookies() if c["name"] == name)


def _signed(payload: dict, *, age_s: float = 0.0) -> str:
    """``payload`` signed as Streamlit signs its user cookie (its own function, with the test's cookie secret),
    the signature's timestamp ``age_s`` in the past."""
    from unittest import mock

    from streamlit.web.server.starlette.starlette_app_utils import create_signed_value

    with mock.patch("itsdangerous.timed.time.time", return_value=time.time() - age_s):
        return create_signed_value(COOKIE_SECRET, "_streamlit_user", json.dumps(payload)).decode()


def test_tampered_or_expired_session_cookie_is_refused(team, chromium):
    from playwright.sync_api import expect
    from streamlit.web.server.starlette.starlette_app_utils import decode_signed_value

    signed_in = sign_in(team, chromium, "ada")
    signed_in.close()
    real = _cookie(team.contexts["ada"])
    payload = json.loads(decode_signed_value(COOKIE_SECRET, "_streamlit_user", real["value"]))
    assert payload["email"] == "ada@example.org" and payload["iat"] > time.time() - 600
    value = real["value"]
    middle = len(value) // 3  # a character of the payload, not of the signature
    tampered = value[:middle] + ("A" if value[middle] != "A" else "B") + value[middle + 1:]
    cases = {
        "tampered": (tampered, "Sign in", None),
        "forged with another secret": (None, "Sign in", None),
        "signature older than Streamlit's 31 days": (_signed(payload, age_s=40 * 86400), "Sign in", None),
        "sign-in older than team.toml's max_hours": (_signed({**payload, "iat": int(time.time()) - 2 * 3600}),
                                                     "Sign in", "Your sign-in has expired"),
        "control: the real cookie": (value, None, None),
    }
    from streamlit.web.server.starlette.starlette_app_utils import create_signed_value

    for case, (cookie, expected_button, note) in cases.items():
        print(case)
        if cookie is None:
            cookie = create_signed_value("another-secret-" + "y" * 32, "_streamlit_user",
                                         json.dumps(payload)).decode()
        context = chromium.new_context()
        try:
            context.add_cookies([{"name": "_streamlit_user", "value": cookie, "url": team.url}])
            page = context.new_page()
            page.goto(f"{team.url}/Query_inspector?run={RUN}&query=nq:0")
            if expected_button:
                expect(page.get_by_role("button", name=expected_button)).to_be_visible(timeout=WAIT_MS)
                expect(page.get_by_role("heading", name=QUERY_TEXT)).to_have_count(0)
                if note:
                    expect(page.get_by_text(note)).to_be_visible()
            else:
                expect(page.get_by_role("heading", name=QUERY_TEXT)).to_be_visible(timeout=WAIT_MS)
        finally:
            context.close()


@pytest.mark.parametrize("sub", ["vic", "anna", "otto"])
def test_every_page_of_the_role_on_a_run_with_a_human_label(team, chromium, sub):
    """issue 39 item 1, in Chromium against the real provider: every page in the role's navigation (generated from
    ui.navigation, not a list), opened on a run with one human label, shows its heading and no exception box or
    traceback. A viewer's Findings crashed here (its link to Annotate, a page a viewer does not have). The full
    page x role x data-state matrix runs as AppTest: tests/ui/test_team_pages.py."""
    from playwright.sync_api import expect

    role = PEOPLE[sub][0]
    page = sign_in(team, chromium, sub)
    problems = []
    try:
        for entry in (e for e in PAGES + TEAM_PAGES if can(role, e.action)):
            page.goto(f"{team.url}/{entry.url_path}?run={LABELLED}")
            heading = page.get_by_test_id("stMain").get_by_role("heading", level=1).first
            expect(heading).to_be_visible(timeout=WAIT_MS)
            expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=WAIT_MS)  # the run finished
            boxes = page.get_by_test_id("stException").count()
            text = page.get_by_test_id("stMain").inner_text()
            if boxes or "Traceback" in text or "StreamlitPageNotFoundError" in text or "Could not find page" in text:
                problems.append(f"{entry.title}: {boxes} exception box(es); {text[:200]!r}")
    finally:
        page.close()
    assert not problems, problems


def test_a_cookie_saved_before_sign_out_is_refused_after_it(team, chromium):
    """issue 39 item 5, as the security review found it: a session cookie copied before Sign out still opened the
    dashboard after it, until max_hours. Sign out now ends the session on the server."""
    from playwright.sync_api import expect

    context = sign_in_context(chromium, team.url, "vic")
    try:
        saved = _cookie(context)
        assert saved["httpOnly"] and saved["sameSite"] == "Lax"  # no script reads it; not sent cross-site
        page = context.new_page()
        page.goto(f"{team.url}/?run={RUN}")
        expect(page.get_by_role("heading", name="Findings")).to_be_visible(timeout=WAIT_MS)
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("button", name="Sign out")).to_have_count(0, timeout=WAIT_MS)
        after = context.new_page()  # the signed-out browser itself: its cookie is gone
        after.goto(team.url)
        expect(after.get_by_role("button", name="Sign in")).to_be_visible(timeout=WAIT_MS)
    finally:
        context.close()
    copied = chromium.new_context()
    try:
        copied.add_cookies([{"name": "_streamlit_user", "value": saved["value"], "url": team.url}])
        page = copied.new_page()
        page.goto(f"{team.url}/Query_inspector?run={RUN}&query=nq:0")
        expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_text("This session was ended")).to_be_visible(timeout=WAIT_MS)
        expect(page.get_by_role("heading", name=QUERY_TEXT)).to_have_count(0)
    finally:
        copied.close()
