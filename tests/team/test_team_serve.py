"""``rageval serve``'s checks and its secrets file (rageval.team.serve), and the command's one-line refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rageval.errors import RagevalError
from rageval.paths import REPO_ROOT
from rageval.team.config import CLIENT_SECRET_ENV, COOKIE_SECRET_ENV, TEAM_ENV, TeamConfigError
from rageval.team.serve import ServeError, ServePlan, is_loopback, plan_serve, run_plan

SECRETS = {CLIENT_SECRET_ENV: "client", COOKIE_SECRET_ENV: "c" * 40}
TEAM = """
[provider]
server_metadata_url = "https://id.example.org/.well-known/openid-configuration"
client_id = "rageval"
redirect_uri = "http://127.0.0.1:8600/oauth2callback"
[roles]
admin = ["ada@example.org"]
"""


def test_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")


def test_local_mode_and_the_open_to_everyone_flag():
    plan = plan_serve()
    assert plan.command[1:3] == ["-m", "ui.serve"] and "127.0.0.1" in plan.command and plan.secrets_text is None
    assert TEAM_ENV not in plan.env
    with pytest.raises(ServeError, match=r"--address 0\.0\.0\.0 is reachable from other machines"):
        plan_serve(address="0.0.0.0")
    assert "0.0.0.0" in plan_serve(address="0.0.0.0", open_to_everyone=True).command


def test_team_mode_refusals(tmp_path):
    team = tmp_path / "team.toml"
    team.write_text(TEAM)
    with pytest.raises(TeamConfigError, match="no cookie secret"):
        plan_serve(team=team, port=8600, environ={CLIENT_SECRET_ENV: "x"})
    with pytest.raises(ServeError, match="names port 8600 of this machine, but the dashboard would listen on 8501"):
        plan_serve(team=team, environ=SECRETS)
    with pytest.raises(ServeError, match="contradicts --team"):
        plan_serve(team=team, port=8600, open_to_everyone=True, environ=SECRETS)
    plan = plan_serve(team=team, port=8600, address="0.0.0.0", environ=SECRETS)  # signed in: any address
    assert plan.env[TEAM_ENV] == str(team.resolve()) and "client" in plan.secrets_text


def test_the_secrets_file_is_private_outside_the_checkout_and_gone_after(tmp_path, monkeypatch):
    """run_plan hands the secrets to the server as --secrets.files; a stand-in server reports what it got."""
    report = tmp_path / "report.json"
    script = ("import json, os, sys, stat; path = sys.argv[sys.argv.index('--secrets.files') + 1]; "
              "json.dump({'path': path, 'mode': stat.S_IMODE(os.stat(path).st_mode), 'text': open(path).read(), "
              f"'team': os.environ.get('{TEAM_ENV}'), 'secrets': [os.environ.get(k) for k in {list(SECRETS)!r}]}}, "
              f"open({str(report)!r}, 'w'))")
    plan = ServePlan([sys.executable, "-c", script], {TEAM_ENV: "/x/team.toml"}, "[auth]\ncookie_secret = \"s\"\n",
                     tmp_path / "team.toml")
    monkeypatch.setattr(os, "environ", {**os.environ, **SECRETS})  # as a user exports them before rageval serve
    assert run_plan(plan, announce=lambda line: None) == 0
    got = json.loads(report.read_text())
    # issue 39 item 8: the server (and so the job workers it starts) never holds the secrets in its environment
    assert got["secrets"] == [None, None]
    assert got["mode"] == 0o600 and got["text"].startswith("[auth]") and got["team"] == "/x/team.toml"
    assert not str(got["path"]).startswith(str(REPO_ROOT))
    assert not __import__("pathlib").Path(got["path"]).exists()  # removed with the server


@pytest.mark.parametrize("args, line", [
    (["serve", "--address", "0.0.0.0"], "rageval: error: --address 0.0.0.0 is reachable from other machines"),
    (["serve", "--team", "/nonexistent/team.toml"], "rageval: error: /nonexistent/team.toml: no such file"),
])
def test_the_command_refuses_with_one_line(args, line):
    result = subprocess.run([sys.executable, "-m", "rageval", *args], capture_output=True, text=True, cwd=REPO_ROOT,
                            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert result.returncode == 2 and result.stderr.startswith(line) and len(result.stderr.splitlines()) == 1
    assert issubclass(ServeError, RagevalError)
