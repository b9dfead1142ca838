"""What team-mode browser checks share (tests/browser/test_team_mode.py and benchmarks/bench_team_concurrency.py):
a real OpenID Connect provider on loopback (``oidc-provider-mock``, in a thread of this process), ``rageval serve
--team team.toml`` started as a user starts it (a subprocess, its log in ``test-output/``), and a browser context
signed in through the provider's form.

People are ``sub -> (role the team gives or None, claims)``; :data:`TEAM_TOML` gives roles by email (admin), by a
groups claim (operator), by domain (annotators: ``@annotators.example.org``) and by domain (viewers:
``@example.org``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rageval.jobs.spec import JobStore
from rageval.team.config import CLIENT_SECRET_ENV, COOKIE_SECRET_ENV
from tests.browser_support import REPO, SHOTS, WAIT_MS, _free_port, _wait_until_healthy

COOKIE_SECRET = "test-cookie-secret-" + "x" * 32
ANNOTATOR_DOMAIN = "annotators.example.org"
TEAM_TOML = """
[provider]
server_metadata_url = "http://localhost:{provider_port}/.well-known/openid-configuration"
client_id = "rageval-test"
redirect_uri = "http://127.0.0.1:{port}/oauth2callback"
groups_claim = "groups"

[session]
max_hours = 1

[roles]
admin = ["ada@example.org"]
operator = ["group:ml-ops"]
annotator = ["@annotators.example.org"]
viewer = ["@example.org"]
"""

People = Mapping[str, tuple[str | None, dict]]


@dataclass(frozen=True)
class TeamServer:
    """A running ``rageval serve --team``: its URL, its process (the leader of its own process group), its log and
    the provider's port."""

    url: str
    process: subprocess.Popen
    log: Path
    provider_port: int


@contextlib.contextmanager
def team_server(root: Path, runs: Path, cache: Path, people: People, log_name: str = "streamlit_server_team.log",
                **extra_env: str) -> Iterator[TeamServer]:
    """The provider (in a thread, knowing ``people``) and ``rageval serve --team`` on ``runs`` / ``cache`` (its
    team.toml written to ``root``); stopped after, with the job workers it started."""
    from oidc_provider_mock import User, run_server_in_thread

    users = [User(sub=sub, claims=claims) for sub, (_, claims) in people.items()]
    with run_server_in_thread(port=0, user_claims=users) as provider:
        port = _free_port()
        team_toml = root / "team.toml"
        team_toml.write_text(TEAM_TOML.format(provider_port=provider.server_port, port=port))
        env = {**os.environ, "PYTHONPATH": str(REPO), "RAGEVAL_RUNS_DIR": str(runs), "RAGEVAL_SHIPPED_RUNS_DIR": "",
               "RAGEVAL_CACHE_DIR": str(cache), CLIENT_SECRET_ENV: "client-secret",
               COOKIE_SECRET_ENV: COOKIE_SECRET, **extra_env}
        SHOTS.mkdir(exist_ok=True)
        log = SHOTS / log_name
        with log.open("w") as log_file:
            server = subprocess.Popen([sys.executable, "-m", "rageval", "serve", "--team", str(team_toml),
                                       "--port", str(port)], cwd=REPO, env=env, stdout=log_file,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_healthy(url, server, log)
            yield TeamServer(url, server, log, provider.server_port)
        finally:
            stop_job_workers(cache)
            os.killpg(server.pid, signal.SIGTERM)  # rageval serve and the Streamlit server it started
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)


def stop_job_workers(cache: Path) -> None:
    """Stop the job workers started on the jobs database of ``cache`` (by their pid there)."""
    path = cache / "jobs.sqlite"
    if not path.exists():
        return
    with JobStore(path) as store:
        for job in store.list():
            if job.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(job.pid, signal.SIGTERM)


def sign_in(browser, url: str, sub: str, landing: str = "Findings", *, width: int = 1400, height: int = 1400,
            wait_ms: int = WAIT_MS):
    """A new context of ``browser`` signed in as ``sub`` through the provider's form (its page closed), once the
    dashboard shows the heading ``landing`` (Findings for a member, "No access" for someone the team does not know).
    """
    return sign_in_many(browser, url, [sub], landing, width=width, height=height, wait_ms=wait_ms)[sub]


def sign_in_many(browser, url: str, subs: list[str], landing: str = "Findings", *, width: int = 1400,
                 height: int = 1400, wait_ms: int = WAIT_MS) -> dict:
    """``sub -> context`` as :func:`sign_in`, everyone at once: each step of the sign-in is taken on every page
    before the next step (while Playwright waits for one page, the others go on), so N sign-ins take about as long
    as the slowest rather than the sum."""
    from playwright.sync_api import expect

    contexts = {sub: browser.new_context(viewport={"width": width, "height": height}) for sub in subs}
    try:
        pages = {sub: context.new_page() for sub, context in contexts.items()}
        for page in pages.values():
            page.goto(url, wait_until="commit")
        for page in pages.values():
            page.get_by_role("button", name="Sign in").click(timeout=wait_ms)
        for sub, page in pages.items():
            expect(page.get_by_role("heading", name="Authorize Client")).to_be_visible(timeout=wait_ms)  # provider
            page.get_by_role("button", name=sub, exact=True).click(timeout=wait_ms)
        for page in pages.values():
            expect(page.get_by_role("heading", name=landing)).to_be_visible(timeout=wait_ms)
            page.close()
    except BaseException:
        for context in contexts.values():
            context.close()
        raise
    return contexts
