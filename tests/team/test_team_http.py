"""What a dashboard served for a team answers over plain HTTP, before anyone signs in (issue 39 item 6):
``rageval serve --team`` started as a user starts it, with a real OpenID Connect provider on loopback
(tests/team_support.py). Streamlit serves ``/_stcore/metrics`` (every session, cache sizes per function) to anyone;
in team mode it is not served. Its job workers never hold the team's secrets (item 8)."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.team_support import team_server

pytestmark = pytest.mark.slow


def status_of(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_metrics_are_not_served_in_team_mode(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    people = {"ada": ("admin", {"email": "ada@example.org", "email_verified": True})}
    with team_server(tmp_path, runs, tmp_path / "cache", people, log_name="streamlit_server_team_http.log") as server:
        assert status_of(f"{server.url}/_stcore/health") == (200, b"ok")
        status, body = status_of(f"{server.url}/_stcore/metrics")
        assert status == 404, body[:200]
        assert b"session" not in body and b"cache_memory_bytes" not in body
        # the Streamlit server's own environment holds neither secret (so no job worker it starts inherits one)
        environ = Path(f"/proc/{_streamlit_pid(server.process.pid)}/environ").read_bytes().split(b"\0")
        assert not [v for v in environ if v.startswith((b"RAGEVAL_OIDC_CLIENT_SECRET=", b"RAGEVAL_COOKIE_SECRET="))]


def _streamlit_pid(serve_pid: int) -> int:
    """The Streamlit server: the child of ``rageval serve``."""
    children = Path(f"/proc/{serve_pid}/task/{serve_pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])
