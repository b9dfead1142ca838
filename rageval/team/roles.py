"""Roles and the actions each may take on a dashboard served for a team (``rageval serve --team team.toml``).

Each role can do everything the one before it can: a viewer reads the pages; an annotator also labels in the
queues assigned to them; an operator also starts and cancels jobs, uploads runs and computes missing pieces; an
admin also creates queues, adjudicates, reads the audit log and ends people's sessions. In local mode (the default:
one person, 127.0.0.1, no sign-in) every action is allowed.
"""

from __future__ import annotations

VIEWER, ANNOTATOR, OPERATOR, ADMIN = "viewer", "annotator", "operator", "admin"
ROLES = (VIEWER, ANNOTATOR, OPERATOR, ADMIN)

VIEW, LABEL, RUN_JOBS, UPLOAD, MANAGE_QUEUES, ADJUDICATE, READ_AUDIT, END_SESSIONS = (
    "view", "label", "run_jobs", "upload", "manage_queues", "adjudicate", "read_audit", "end_sessions")
ACTIONS = (VIEW, LABEL, RUN_JOBS, UPLOAD, MANAGE_QUEUES, ADJUDICATE, READ_AUDIT, END_SESSIONS)

#: The least role that may take each action.
LEAST_ROLE = {VIEW: VIEWER, LABEL: ANNOTATOR, RUN_JOBS: OPERATOR, UPLOAD: OPERATOR,
              MANAGE_QUEUES: ADMIN, ADJUDICATE: ADMIN, READ_AUDIT: ADMIN, END_SESSIONS: ADMIN}


def can(role: str | None, action: str) -> bool:
    """Whether ``role`` may take ``action`` (``None``: signed out, or signed in with no role: nothing)."""
    if action not in LEAST_ROLE:
        raise ValueError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    if role not in ROLES:
        return False
    return ROLES.index(role) >= ROLES.index(LEAST_ROLE[action])
