"""The audit log (rageval.store.audit): appended, read back newest first, and refusing UPDATE and DELETE even
through a plain sqlite3 connection."""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from rageval.errors import StoreError
from rageval.store import audit
from rageval.store.files import kind_of
from rageval.store.schemas import AUDIT
from rageval.team.audit import END_SESSIONS, JOB_START, SIGN_IN, SIGN_OUT, UPLOAD, read_revocations


def test_append_and_read_back(tmp_path):
    path = audit.audit_path(tmp_path)
    assert audit.read_entries(path) == []
    when = dt.datetime(2026, 11, 28, 16, 0, 1, 500, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    first = audit.append(path, "ada@example.org", SIGN_IN, {"role": "admin"}, at=when)
    audit.append(path, "bo@example.org", JOB_START, {"job": 3, "run": "r.sqlite"})
    assert kind_of(path) == AUDIT
    assert first.at == "2026-11-28T14:00:01+00:00"  # stored in UTC
    entries = audit.read_entries(path)
    assert [(e.user_id, e.action) for e in entries] == [("bo@example.org", "job_start"),
                                                        ("ada@example.org", "sign_in")]
    assert entries[0].detail == {"job": 3, "run": "r.sqlite"}
    assert audit.read_entries(path, limit=1)[0].entry == entries[0].entry


def test_update_and_delete_are_refused(tmp_path):
    path = audit.audit_path(tmp_path)
    audit.append(path, "ada@example.org", UPLOAD, {"run": "x"})
    connection = sqlite3.connect(path)
    try:
        for statement in ("UPDATE audit SET user_id = 'mallory'", "DELETE FROM audit"):
            with pytest.raises(sqlite3.DatabaseError, match="append-only"):
                connection.execute(statement)
        connection.rollback()
    finally:
        connection.close()
    assert [e.user_id for e in audit.read_entries(path)] == ["ada@example.org"]


def test_not_an_audit_log(tmp_path):
    path = tmp_path / "audit.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x)")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match=str(path)):
        audit.append(path, "ada@example.org", UPLOAD)


# --- issue 39 item 4: INSERT OR REPLACE refused; a hash chain; rageval audit verify ------------------------------

def three_entries(tmp_path):
    path = audit.audit_path(tmp_path)
    for user, action in (("ada@example.org", SIGN_IN), ("bo@example.org", JOB_START),
                         ("cy@example.org", UPLOAD)):
        audit.append(path, user, action, {"n": user[:2]})
    return path


def test_insert_or_replace_is_refused(tmp_path):
    """Before v2, INSERT OR REPLACE onto entry 1 passed the UPDATE and DELETE triggers and rewrote it."""
    path = three_entries(tmp_path)
    connection = sqlite3.connect(path)
    try:
        last_hash = connection.execute("SELECT hash FROM audit WHERE entry = 3").fetchone()[0]
        for entry in (1, 3):
            row = connection.execute("SELECT * FROM audit WHERE entry = ?", (entry,)).fetchone()
            # entry 3 forged with the last hash as its previous one: only the no-replace trigger stands in the way
            forged = (entry, row[1], "mallory", row[3], row[4], last_hash if entry == 3 else row[5], row[6])
            for verb in ("INSERT OR REPLACE", "REPLACE"):
                with pytest.raises(sqlite3.DatabaseError, match=r"append-only" if entry == 3 else r"append-only|chain"):
                    connection.execute(f"{verb} INTO audit VALUES ({', '.join('?' * len(forged))})", forged)
        with pytest.raises(sqlite3.DatabaseError, match="hash chain"):  # a new entry must carry the last hash
            connection.execute("INSERT INTO audit (at, user_id, action, detail, prev_hash, hash) "
                               "VALUES ('x', 'mallory', 'sign_in', '{}', 'bad', 'bad')")
        connection.rollback()
    finally:
        connection.close()
    assert [e.user_id for e in audit.read_entries(path)][-1] == "ada@example.org"
    assert audit.verify(path).ok


def tamper(path, *statements):
    """What someone who can write the file does: drop the triggers, then change it."""
    connection = sqlite3.connect(path)
    for name in ("audit_no_update", "audit_no_delete", "audit_no_replace", "audit_chain"):
        connection.execute(f"DROP TRIGGER {name}")
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()


def test_the_chain_verifies_and_names_the_first_bad_entry(tmp_path, capsys):
    from rageval.cli import main

    path = three_entries(tmp_path)
    result = audit.verify(tmp_path)  # the runs folder or the file
    assert result.ok and result.entries == 3 and result.last_hash == audit.read_entries(path)[0].hash
    assert main(["audit", "verify", str(tmp_path)]) == 0
    assert "all 3 entries verify" in capsys.readouterr().out
    tamper(path, "UPDATE audit SET user_id = 'mallory' WHERE entry = 2")
    result = audit.verify(path)
    assert (result.ok, result.first_bad) == (False, 2) and "was changed" in result.problem
    assert main(["audit", "verify", str(tmp_path), "--json"]) == 1
    out = capsys.readouterr().out
    assert '"first_bad_entry": 2' in out and '"ok": false' in out


def test_a_removed_entry_breaks_the_chain_after_it(tmp_path):
    path = three_entries(tmp_path)
    tamper(path, "DELETE FROM audit WHERE entry = 2")
    result = audit.verify(path)
    assert result.first_bad == 3 and "removed, replaced or inserted" in result.problem


def test_dropped_triggers_alone_are_named(tmp_path):
    path = three_entries(tmp_path)
    tamper(path)
    result = audit.verify(path)
    assert not result.ok and result.first_bad is None and "triggers are gone" in result.problem


def test_a_v1_log_is_upgraded_and_chained_at_its_next_append(tmp_path):
    """An audit log written by rageval before v2 (its own v1 schema, built here as v1 wrote it)."""
    path = audit.audit_path(tmp_path)
    connection = sqlite3.connect(path)
    connection.executescript("""
        CREATE TABLE audit (entry INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, user_id TEXT NOT NULL,
                            action TEXT NOT NULL, detail TEXT NOT NULL);
        CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: entries are never changed'); END;
        CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: entries are never deleted'); END;
        INSERT INTO audit (at, user_id, action, detail) VALUES ('2026-11-28T14:00:01+00:00', 'ada@example.org',
                                                                'sign_in', '{"role": "admin"}');
        INSERT INTO audit (at, user_id, action, detail) VALUES ('2026-11-28T14:05:00+00:00', 'bo@example.org',
                                                                'upload', '{"run": "r"}');
        PRAGMA application_id = 1380009804;
        PRAGMA user_version = 1;
    """)
    connection.close()
    assert [e.user_id for e in audit.read_entries(path)] == ["bo@example.org", "ada@example.org"]
    before = audit.verify(path)
    assert not before.ok and "carries no hashes yet" in before.problem
    audit.append(path, "cy@example.org", SIGN_IN)
    entries = audit.read_entries(path)
    assert [(e.entry, e.user_id) for e in entries] == [(3, "cy@example.org"), (2, "bo@example.org"),
                                                       (1, "ada@example.org")]
    assert entries[2].detail == {"role": "admin"} and entries[2].at == "2026-11-28T14:00:01+00:00"
    assert audit.verify(path).ok
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == AUDIT.version == 2
    with pytest.raises(sqlite3.DatabaseError, match=r"append-only|hash chain"):  # the v2 triggers, after the upgrade
        connection.execute("INSERT OR REPLACE INTO audit SELECT * FROM audit WHERE entry = 1")
    connection.close()


def test_entries_of_some_actions_and_the_sessions_they_end(tmp_path):
    """read_entries(actions=...) keeps only those actions' entries; team mode's revocations are read through it."""
    path = audit.audit_path(tmp_path)
    audit.append(path, "ada@example.org", SIGN_IN)
    audit.append(path, "ada@example.org", SIGN_OUT, {"session": "k1"})
    audit.append(path, "vic@example.org", END_SESSIONS, {"user": "bo@example.org", "before": 100.0})
    audit.append(path, "vic@example.org", END_SESSIONS, {"user": "bo@example.org", "before": 50})
    ended = audit.read_entries(path, actions=(SIGN_OUT, END_SESSIONS))
    assert [e.entry for e in ended] == [4, 3, 2]
    assert [e.detail for e in audit.read_entries(path, actions=(SIGN_OUT,), limit=1)] == [{"session": "k1"}]
    revoked = read_revocations(path)
    assert revoked.sessions == {"k1"} and revoked.users_before == {"bo@example.org": 100.0}
    assert revoked.ended("bo@example.org", "k9", 99.0) and not revoked.ended("bo@example.org", "k9", 101.0)
    assert revoked.ended("ada@example.org", "k1", 0.0) and not revoked.ended("ada@example.org", "k2", 0.0)
