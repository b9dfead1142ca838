"""What a dashboard served for a team writes in its audit log (:mod:`rageval.store.audit`, ``audit.sqlite`` in the
runs folder): the actions' names (``ui.auth.audit(action, detail)`` appends one entry per sign-in, job start or
cancel, upload, queue created and adjudication), and the sessions the log says are over (:func:`read_revocations`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rageval.store.audit import read_entries

SIGN_IN, JOB_START, JOB_CANCEL, JOB_RESUME, UPLOAD, QUEUE_CREATE, ADJUDICATE = (
    "sign_in", "job_start", "job_cancel", "job_resume", "upload", "queue_create", "adjudicate")
#: A session ended on the server: signed out (detail: the session's key), or every session of a person begun
#: before a time, by an admin (detail: user, before as Unix time). Read back by :func:`read_revocations`.
SIGN_OUT, END_SESSIONS = "sign_out", "end_sessions"
#: A run's annotation guideline changed (detail: run, item kind).
GUIDELINE_SET = "guideline_set"


@dataclass(frozen=True)
class Revocations:
    """The sessions the audit log says are over: by session key (signed out), and per person every session whose
    ID token was issued at or before a time (an admin ended them)."""

    sessions: frozenset[str] = frozenset()
    users_before: Mapping[str, float] = field(default_factory=dict)

    def ended(self, user_id: str, session_key: str, issued_at: float) -> bool:
        before = self.users_before.get(user_id)
        return session_key in self.sessions or (before is not None and issued_at <= before)


_revocations: dict[Path, tuple[tuple[int, int], Revocations]] = {}


def read_revocations(path: str | os.PathLike) -> Revocations:
    """The :class:`Revocations` in the audit log ``path`` (none when it does not exist), read again only when the
    file has changed (its size and modification time): every page run of a team's dashboard asks."""
    path = Path(path)
    try:
        stat = path.stat()
    except FileNotFoundError:
        return Revocations()
    version = (stat.st_mtime_ns, stat.st_size)
    remembered = _revocations.get(path)
    if remembered is not None and remembered[0] == version:
        return remembered[1]
    sessions: set[str] = set()
    before: dict[str, float] = {}
    for entry in read_entries(path, actions=(SIGN_OUT, END_SESSIONS)):
        detail = entry.detail
        if entry.action == SIGN_OUT and detail.get("session"):
            sessions.add(str(detail["session"]))
        elif entry.action == END_SESSIONS and detail.get("user") and isinstance(detail.get("before"), int | float):
            user = str(detail["user"])
            before[user] = max(before.get(user, 0.0), float(detail["before"]))
    result = Revocations(frozenset(sessions), before)
    _revocations[path] = (version, result)
    return result
