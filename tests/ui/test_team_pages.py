"""Every page x every role x every data state in team mode, as AppTest (issue 39 item 1): generated from the
navigation (:data:`ui.navigation.PAGES` + :data:`~ui.navigation.TEAM_PAGES`), never a hand-written list, so a page
added later is covered. For each cell: no exception box, no traceback text and no absolute server path on the page;
a page the role has opens (its title), a page it lacks stops at its own top with the refusal (opened directly, as a
forged request would). The data states: an empty runs folder; the shipped runs only; a run with one human label;
with an annotation queue; a running job; a failed job.

The matrix as measured is written to ``test-output/team_pages_matrix.md``. The same in Chromium against the real
provider, for a representative subset: tests/browser/test_team_mode.py ``test_pages_per_role_and_state``.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval.annotations import ANNOTATIONS_FILE, AnnotationStore
from rageval.jobs.spec import JobSpec, JobStore
from rageval.queue_plans import UNIFORM_PLAN, QueuePlan
from rageval.queues import QueueStore
from rageval.store import RunReader
from rageval.store.annotations import PassageItem
from rageval.store.jobs import FAILED
from rageval.team.config import TEAM_ENV
from rageval.team.roles import ADMIN, ANNOTATOR, OPERATOR, VIEWER, can
from tests.run_fixtures import make_small_run
from tests.ui.test_app import HOME, TIMEOUT_S
from ui.navigation import PAGES, TEAM_PAGES, PageEntry

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "test-output"
RUN = "teamrun"
TEAM_TOML = """
[provider]
server_metadata_url = "http://localhost:1/.well-known/openid-configuration"
client_id = "rageval"
redirect_uri = "http://127.0.0.1:8501/oauth2callback"
[roles]
admin = ["ada@example.org"]
operator = ["otto@example.org"]
annotator = ["anna@example.org"]
viewer = ["vic@example.org"]
"""
#: role -> the email that has it ("none": signed in, no role; "signed out": no sign-in at all).
PEOPLE = {ADMIN: "ada@example.org", OPERATOR: "otto@example.org", ANNOTATOR: "anna@example.org",
          VIEWER: "vic@example.org", "none": "eve@elsewhere.org", "signed out": None}
STATES = ("empty", "shipped only", "human label", "queue", "running job", "failed job")
ALL_PAGES: tuple[PageEntry, ...] = PAGES + TEAM_PAGES
REFUSALS = ("Not for your role", "No access", "rageval")  # the headings a page stops with (rageval: sign-in)
#: What must never reach a user: a Python traceback, or a source file of this checkout by its path. (The runs
#: folder's path is shown on purpose, in command hints and the audit log's caption.)
LEAKS = re.compile(r"Traceback \(most recent call last\)|File \"/|" + re.escape(str(REPO)) + r"/(?:rageval|ui|app)")

MEASURED: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class State:
    runs: Path
    cache: Path
    shipped: str  # $RAGEVAL_SHIPPED_RUNS_DIR ("" none)


@pytest.fixture(scope="module")
def built_run(tmp_path_factory) -> Path:
    return make_small_run(tmp_path_factory.mktemp("team-pages-build") / f"{RUN}.sqlite")


def build_state(name: str, root: Path, built_run: Path) -> State:
    runs, cache = root / "runs", root / "cache"
    runs.mkdir(parents=True)
    cache.mkdir()
    if name == "empty":
        return State(runs, cache, "")
    if name == "shipped only":
        return State(runs, cache, str(REPO / "data" / "runs"))
    run = runs / f"{RUN}.sqlite"
    shutil.copy(built_run, run)
    annotations = runs / ANNOTATIONS_FILE
    if name == "human label":
        AnnotationStore(annotations).save_label(RUN, PassageItem("nq:0", "nq_oracle:0"), 1, "anna@example.org")
    elif name == "queue":
        with RunReader(run) as reader:
            rankings, labels = reader.rankings(), reader.labels()
        import pandas as pd

        population = pd.DataFrame([(q, p, rank) for q, ranking in rankings.items()
                                   for rank, p in enumerate(ranking.passage_ids, start=1)],
                                  columns=["query_id", "passage_id", "rank"])
        QueueStore(annotations).create_queue("check", RUN, "passage", population, labels,
                                             QueuePlan(UNIFORM_PLAN, 6, seed=1), 1, ["anna@example.org"], "",
                                             "ada@example.org")
    else:
        with JobStore(cache / "jobs.sqlite") as store:
            job = store.create(JobSpec.from_flat(str(run), model="fake", backend="openai"), "erag:em@fake", 20,
                               started_by="otto@example.org")
            store.claim(job.job_id, os.getpid())  # this live process plays the worker
            store.begin_items(job.job_id, 20, 0)
            store.add_done(job.job_id, 5)
            if name == "failed job":
                store.finish(job.job_id, FAILED, "the model server at http://127.0.0.1:9/v1 did not answer")
    return State(runs, cache, "")


@pytest.fixture(scope="module")
def states(tmp_path_factory, built_run) -> dict[str, State]:
    root = tmp_path_factory.mktemp("team-pages")
    (root / "team.toml").write_text(TEAM_TOML)
    return {name: build_state(name, root / name.replace(" ", "-"), built_run) for name in STATES}


@pytest.fixture(scope="module", autouse=True)
def write_matrix() -> Iterator[None]:
    yield
    if not MEASURED:
        return
    roles = list(PEOPLE)
    lines = ["# Team mode: page x role x data state (AppTest, tests/ui/test_team_pages.py)", "",
             "opens: the page ran; refused: it stopped at its top with the refusal; sign-in: the sign-in page; "
             "FAIL: an exception, a traceback or a server path", ""]
    for state in STATES:
        lines += [f"## {state}", "", "| page | " + " | ".join(roles) + " |", "|---" * (len(roles) + 1) + "|"]
        for page in ALL_PAGES:
            lines.append(f"| {page.title} | " + " | ".join(MEASURED.get((state, role, page.title), "-")
                                                         for role in roles) + " |")
        lines.append("")
    SHOTS.mkdir(exist_ok=True)
    (SHOTS / "team_pages_matrix.md").write_text("\n".join(lines))


def claims(email: str | None) -> dict:
    if email is None:
        return {"is_logged_in": False}
    return {"is_logged_in": True, "sub": email.split("@")[0], "email": email, "email_verified": True,
            "iss": "http://localhost:1", "iat": int(time.time() - 60)}


def page_texts(app: AppTest) -> list[str]:
    """Every text the page shows (markdown, captions, boxes, titles, code, table cells are not needed here)."""
    texts: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "text", "code", "error", "warning", "info",
                 "success", "exception"):
        texts += [str(getattr(element, "value", "")) for element in getattr(app, kind)]
    return texts


def open_page(state: State, states_root: Path, role: str, page: PageEntry, monkeypatch) -> AppTest:
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(state.runs))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(state.cache))
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", state.shipped)
    monkeypatch.setenv(TEAM_ENV, str(states_root / "team.toml"))
    has_page = role in (ADMIN, OPERATOR, ANNOTATOR, VIEWER) and can(role, page.action)
    # A page the role has: through the navigation, as a click in the sidebar; one it lacks: the script itself, as
    # a forged request would reach it (the navigation does not even list it).
    app = AppTest.from_file(HOME if has_page else str(REPO / page.file), default_timeout=TIMEOUT_S)
    app.user = claims(PEOPLE[role])
    if has_page:
        app.switch_page(page.file)
    app.run()
    return app


@pytest.mark.slow
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("role", list(PEOPLE))
def test_every_page_for_every_role_and_state(states, state, role, monkeypatch):
    root = next(iter(states.values())).runs.parent.parent
    failures = []
    for page in ALL_PAGES:
        app = open_page(states[state], root, role, page, monkeypatch)
        texts = page_texts(app)
        leaks = [t for t in texts if LEAKS.search(t)]
        titles = [t.value for t in app.title]
        has_page = role in (ADMIN, OPERATOR, ANNOTATOR, VIEWER) and can(role, page.action)
        if app.exception or leaks:
            outcome = "FAIL"
            failures.append(f"{page.title}: {[e.value for e in app.exception][:1] or leaks[:1]}")
        elif has_page:
            outcome = "opens"
            if any(t in REFUSALS[:2] for t in titles):
                outcome = "FAIL"
                failures.append(f"{page.title}: refused a page the role has ({titles})")
        else:
            outcome = "sign-in" if role == "signed out" else "refused"
            expected = {"signed out": "rageval", "none": "No access"}.get(role, "Not for your role")
            if titles[:1] != [expected]:
                outcome = "FAIL"
                failures.append(f"{page.title}: expected the refusal {expected!r}, got titles {titles}")
        MEASURED[(state, role, page.title)] = outcome
    assert not failures, failures


def test_every_link_between_pages_goes_through_auth():
    """``st.page_link`` to a page outside the role's navigation raises (Streamlit); ``ui.auth.page_link`` draws a
    link only to a page the role has. No page or ui module may call ``page_link`` on its own."""
    direct = []
    for path in sorted([*(REPO / "app_pages").glob("*.py"), *(REPO / "ui").glob("*.py"), REPO / "app.py"]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"(?<!auth)\.page_link\(", line) and path.name != "auth.py":
                direct.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not direct, direct
