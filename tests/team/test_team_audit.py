"""The audit log (rageval.team.audit): appended, read back newest first, and refusing UPDATE and DELETE even
through a plain sqlite3 connection."""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from rageval.errors import StoreError
from rageval.store.files import kind_of
from rageval.store.schemas import AUDIT
from rageval.team import audit


def test_append_and_read_back(tmp_path):
    path = audit.audit_path(tmp_path)
    assert audit.read_entries(path) == []
    when = dt.datetime(2026, 11, 28, 16, 0, 1, 500, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    first = audit.append(path, "ada@example.org", audit.SIGN_IN, {"role": "admin"}, at=when)
    audit.append(path, "bo@example.org", audit.JOB_START, {"job": 3, "run": "r.sqlite"})
    assert kind_of(path) == AUDIT
    assert first.at == "2026-11-28T14:00:01+00:00"  # stored in UTC
    entries = audit.read_entries(path)
    assert [(e.user_id, e.action) for e in entries] == [("bo@example.org", "job_start"),
                                                        ("ada@example.org", "sign_in")]
    assert entries[0].detail == {"job": 3, "run": "r.sqlite"}
    assert audit.read_entries(path, limit=1)[0].entry == entries[0].entry


def test_update_and_delete_are_refused(tmp_path):
    path = audit.audit_path(tmp_path)
    audit.append(path, "ada@example.org", audit.UPLOAD, {"run": "x"})
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
        audit.append(path, "ada@example.org", audit.UPLOAD)
