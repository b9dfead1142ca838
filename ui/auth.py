"""Who is using the dashboard and what they may do: the one place pages ask.

Local mode (the default, ``streamlit run app.py`` on 127.0.0.1): no sign-in, every action allowed, and the
annotator is the name typed on the Annotate page (or ``?annotator=``). Team mode (``rageval serve --team
team.toml``) signs people in with OpenID Connect through ``st.login`` and maps them to a role
(:mod:`rageval.team.roles`); there the identity comes from the sign-in only.

Team mode is filled in by the "Served to a team" work; this module fixes the interface the pages use:
:func:`team_mode`, :func:`current_identity`, :func:`allowed`, :func:`require`, :func:`audit`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rageval.team.roles import ADMIN, can

#: Set by ``rageval serve --team`` for the Streamlit process: the path of the team's ``team.toml``.
TEAM_ENV = "RAGEVAL_TEAM"


@dataclass(frozen=True)
class Identity:
    """The person using this session: a stable id (team mode: the provider's email or subject; local mode: the
    typed annotator name, possibly empty), a name to show, and a role (local mode: admin, everything allowed)."""

    user_id: str
    display_name: str
    role: str
    team_mode: bool


def team_mode() -> bool:
    """Whether this dashboard is served for a team (sign-in and roles)."""
    return bool(os.environ.get(TEAM_ENV))


def current_identity(typed_name: str = "") -> Identity:
    """The person of this session. Local mode: ``typed_name`` (what the Annotate page asked for), role admin."""
    return Identity(user_id=typed_name, display_name=typed_name, role=ADMIN, team_mode=False)


def allowed(action: str) -> bool:
    """Whether this session may take ``action`` (:data:`rageval.team.roles.ACTIONS`); always, in local mode."""
    return can(current_identity().role, action)


def require(action: str) -> Identity:
    """Stop the page (before it reads any run data) unless this session may take ``action``; the identity."""
    return current_identity()


def audit(action: str, detail: dict | None = None) -> None:
    """Append ``action`` by the current identity to the audit log (team mode only; local mode keeps none)."""
    return None
