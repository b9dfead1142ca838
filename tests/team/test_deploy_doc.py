"""docs/deploy.md as an operator follows it (issue 39 item 10): the startup line it quotes is the one rageval
prints, its backup script copies every run (subfolders too), its proxies send HSTS and refuse /_stcore/metrics,
the systemd unit lets the service write its caches, the loopback redirect URI is said, one rule for the secrets."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rageval.team.serve import ServePlan, run_plan

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
TEXT = DOC.read_text(encoding="utf-8")


def block_after(marker: str) -> str:
    """The fenced code block that holds ``marker``."""
    for block in re.findall(r"```[a-z]*\n(.*?)```", TEXT, re.S):
        if marker in block:
            return block
    raise AssertionError(f"no code block with {marker!r} in {DOC}")


def test_the_quoted_startup_line_is_what_rageval_serve_prints():
    said: list[str] = []
    plan = ServePlan([sys.executable, "-c", "pass"], {}, "[auth]\n", Path("/etc/rageval/team.toml"))
    assert run_plan(plan, announce=said.append) == 0
    assert said and f"# {said[0]}" in block_after("journalctl -u rageval -f")


def test_the_backup_script_copies_every_run_subfolders_too(tmp_path):
    runs, cache, backups = tmp_path / "runs", tmp_path / "cache", tmp_path / "backup"
    files = ["a.sqlite", "annotations.sqlite", "audit.sqlite", "attribution/b.sqlite", "ium/deep/c.sqlite"]
    for name in [*files, "../cache/jobs.sqlite"]:
        path = runs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path) as connection:
            connection.execute("CREATE TABLE t (name TEXT)")
            connection.execute("INSERT INTO t VALUES (?)", (name,))
        connection.close()
    script = (block_after("/etc/cron.daily/rageval-backup").replace("/var/lib/rageval/runs", str(runs))
              .replace("/var/cache/rageval", str(cache)).replace("/srv/backup/rageval", str(backups)))
    subprocess.run(["sh", "-c", script], check=True, timeout=60)
    [day] = backups.iterdir()
    copied = sorted(str(p.relative_to(day / "runs")) for p in (day / "runs").rglob("*.sqlite"))
    assert copied == sorted(files)
    for name in files:
        with sqlite3.connect(day / "runs" / name) as connection:
            assert connection.execute("SELECT name FROM t").fetchall() == [(name,)]
        connection.close()
    assert (day / "jobs.sqlite").exists()


def test_both_proxies_send_hsts_and_refuse_metrics():
    caddy, nginx = block_after("reverse_proxy 127.0.0.1:8501"), block_after("proxy_pass http://127.0.0.1:8501")
    assert "Strict-Transport-Security" in caddy and "respond /_stcore/metrics 404" in caddy
    assert "Strict-Transport-Security" in nginx and "location = /_stcore/metrics { return 404; }" in nginx


def test_the_unit_lets_the_service_write_what_it_writes():
    unit = block_after("ProtectSystem=strict")
    writable = re.search(r"^ReadWritePaths=(.*)$", unit, re.M).group(1).split()
    home = re.search(r"--home-dir (\S+)", TEXT).group(1)
    assert any(p.startswith(home + "/") for p in writable), "caches under $HOME are read-only under strict"
    made = " ".join(re.findall(r"install -d .*", block_after("useradd --system")))
    for path in writable:
        assert path in made or any(path.startswith(m) for m in ("/var/lib/rageval", "/var/cache/rageval")), path


def test_loopback_redirect_and_one_rule_for_secrets():
    assert "http://127.0.0.1:PORT/oauth2callback" in TEXT
    assert "-m 600 /dev/null /etc/rageval/secrets.toml" in TEXT
    assert not re.search(r"-m 640 [^\n]*secrets", TEXT)


class _SetsCookies(http.server.BaseHTTPRequestHandler):
    """An upstream that answers as Streamlit's OIDC callback does: a redirect setting its cookies without Secure."""

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Set-Cookie", "_streamlit_user=signed; HttpOnly; Path=/; SameSite=Lax")
        self.send_header("Set-Cookie", "_streamlit_xsrf=token; Path=/; SameSite=Lax")
        self.send_header("Location", "/")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _headers_through(port: int, path: str) -> tuple[int, list[tuple[str, str]]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.getheaders()
    finally:
        connection.close()


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def _caddy_config(upstream: int, port: int) -> str:
    site = block_after("reverse_proxy 127.0.0.1:8501").replace("127.0.0.1:8501", f"127.0.0.1:{upstream}")
    return "{\n\tadmin off\n\tauto_https off\n}\n" + site.replace("rageval.example.org", f"http://127.0.0.1:{port}")


def _nginx_config(upstream: int, port: int, folder: Path) -> str:
    server = block_after("proxy_pass http://127.0.0.1:8501").replace("127.0.0.1:8501", f"127.0.0.1:{upstream}")
    server = re.sub(r"listen 443 ssl;", f"listen 127.0.0.1:{port};", server)
    server = re.sub(r"\n\s*ssl_certificate(_key)? [^\n]*", "", server)  # plain HTTP on loopback
    return (f"pid {folder}/nginx.pid;\nerror_log {folder}/error.log;\nevents {{}}\nhttp {{\naccess_log off;\n"
            f"client_body_temp_path {folder};\nproxy_temp_path {folder};\n{server}}}\n")


@pytest.mark.parametrize("proxy", ["caddy", "nginx"])
def test_the_proxy_examples_mark_cookies_secure_send_hsts_and_refuse_metrics(proxy, tmp_path):
    """The doc's Caddyfile and nginx server block, run by the real proxies (Debian's caddy 2.6 / nginx 1.22) in
    front of an upstream that sets cookies as Streamlit's sign-in does: every Set-Cookie leaves the proxy with
    Secure (Streamlit 1.67 sets its user cookie without it), HSTS is sent, /_stcore/metrics is refused."""
    binary = shutil.which(proxy) or (f"/usr/sbin/{proxy}" if Path(f"/usr/sbin/{proxy}").exists() else None)
    if binary is None:
        pytest.skip(f"{proxy} is not installed (Debian: apt-get install {proxy})")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SetsCookies)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = _free_port()
    if proxy == "caddy":
        config = tmp_path / "Caddyfile"
        config.write_text(_caddy_config(upstream.server_address[1], port), encoding="utf-8")
        command = [binary, "run", "--config", str(config), "--adapter", "caddyfile"]
    else:
        config = tmp_path / "nginx.conf"
        config.write_text(_nginx_config(upstream.server_address[1], port, tmp_path), encoding="utf-8")
        command = [binary, "-c", str(config), "-p", str(tmp_path), "-g", "daemon off;"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={
        **os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)})
    try:
        _wait_for(port)
        status, headers = _headers_through(port, "/oauth2callback?code=x&state=y")
        cookies = [value for name, value in headers if name.lower() == "set-cookie"]
        assert status == 302 and len(cookies) == 2
        assert all(re.search(r";\s*Secure\b", cookie, re.I) for cookie in cookies), cookies
        assert any(name.lower() == "strict-transport-security" for name, _ in headers)
        assert _headers_through(port, "/_stcore/metrics")[0] == 404
    finally:
        process.terminate()
        process.wait(timeout=20)
        upstream.shutdown()
