"""docs/deploy.md as an operator follows it (issue 39 item 10): the startup line it quotes is the one rageval
prints, its backup script copies every run (subfolders too), its proxies send HSTS and refuse /_stcore/metrics,
the systemd unit lets the service write its caches, the loopback redirect URI is said, one rule for the secrets."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

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
