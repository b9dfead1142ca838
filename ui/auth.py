"""Who is using the dashboard and what they may do: the one place pages ask.

Local mode (the default, ``streamlit run app.py`` on 127.0.0.1): no sign-in, every action allowed, and the
annotator is the name typed on the Annotate page (or ``?annotator=``). Team mode (``rageval serve --team
team.toml``, which sets :data:`TEAM_ENV` for the Streamlit process) signs people in with OpenID Connect through
``st.login`` and maps them to a role (:mod:`rageval.team.roles`, by :mod:`rageval.team.config`); there the identity
comes from the sign-in only (the provider's verified email, else its subject): never from a URL parameter or a
widget.

The interface the pages use: :func:`team_mode`, :func:`current_identity`, :func:`allowed`, :func:`require` (at the
top of a page: stops it before it reads anything), :func:`check` (inside an action: raises :class:`NotAllowed`,
which the pages show as they show any :class:`~rageval.errors.RagevalError`), :func:`audit`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import secrets
import sys
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import streamlit as st

from rageval.errors import RagevalError
from rageval.store import audit as audit_store
from rageval.team import audit as audit_log
from rageval.team.config import TEAM_ENV, TeamConfig, load_team_config, normalise_identity, session_key
from rageval.team.roles import (
    ADJUDICATE,
    ADMIN,
    END_SESSIONS,
    LABEL,
    MANAGE_QUEUES,
    READ_AUDIT,
    RUN_JOBS,
    UPLOAD,
    VIEW,
    can,
)
from ui.format import escape_markdown

NO_ROLE = ""  # Identity.role of someone signed out, or signed in with no role in team.toml

#: What each action lets a person do, for the line that refuses it.
DOING = {VIEW: "read the pages", LABEL: "label", RUN_JOBS: "start or cancel jobs and compute missing pieces",
         UPLOAD: "upload runs", MANAGE_QUEUES: "create annotation queues", ADJUDICATE: "adjudicate labels",
         READ_AUDIT: "read the audit log", END_SESSIONS: "end people's sessions"}


class NotAllowed(RagevalError):
    """An action this session's role may not take (or a session not signed in)."""


@dataclass(frozen=True)
class Identity:
    """The person using this session: a stable id (team mode: the provider's email or subject, empty when signed
    out; local mode: the typed annotator name, possibly empty), a name to show, and a role (local mode: admin,
    everything allowed; team mode: the role team.toml gives, :data:`NO_ROLE` when none)."""

    user_id: str
    display_name: str
    role: str
    team_mode: bool
    expired: bool = False  # team mode: signed in longer ago than team.toml's [session] max_hours
    ended: bool = False  # team mode: the session was ended on the server (signed out, or by an admin)


def team_mode() -> bool:
    """Whether this dashboard is served for a team (sign-in and roles)."""
    return bool(os.environ.get(TEAM_ENV))


@functools.lru_cache(maxsize=4)
def _team_config(path: str) -> TeamConfig:
    return load_team_config(path)


def team_config() -> TeamConfig:
    """The team's ``team.toml`` (checked by ``rageval serve`` before the server started)."""
    return _team_config(os.environ[TEAM_ENV])


def _claims() -> dict[str, Any] | None:
    """The signed-in person's ID-token claims (Streamlit's signed session cookie), None when signed out."""
    if not st.user.is_logged_in:
        return None
    return st.user.to_dict()


def _expired(claims: dict[str, Any], max_hours: float) -> bool:
    issued = claims.get("iat")
    if isinstance(issued, bool) or not isinstance(issued, int | float):
        return True  # every OpenID Connect ID token has iat; a session without one is not one we issued
    return dt.datetime.now(dt.UTC).timestamp() - float(issued) > max_hours * 3600


def current_identity(typed_name: str = "") -> Identity:
    """The person of this session. Local mode: ``typed_name`` (what the Annotate page asked for), role admin.
    Team mode: from the sign-in only (``typed_name`` is ignored); signed out or expired: no id and no role."""
    if not team_mode():
        return Identity(user_id=typed_name, display_name=typed_name, role=ADMIN, team_mode=False)
    claims = _claims()
    config = team_config()
    person = config.user_id(claims) if claims else None
    if not claims or not person:
        return Identity(user_id="", display_name="", role=NO_ROLE, team_mode=True)
    name = str(claims.get("name") or person)
    if _expired(claims, config.max_hours):
        return Identity(user_id="", display_name=name, role=NO_ROLE, team_mode=True, expired=True)
    if audit_log.read_revocations(audit_file()).ended(person, session_key(claims), float(claims["iat"])):
        return Identity(user_id="", display_name=name, role=NO_ROLE, team_mode=True, expired=True, ended=True)
    return Identity(user_id=person, display_name=name, role=config.role_for(claims) or NO_ROLE, team_mode=True)


def allowed(action: str) -> bool:
    """Whether this session may take ``action`` (:data:`rageval.team.roles.ACTIONS`); always, in local mode."""
    return can(current_identity().role, action)


def check(action: str) -> Identity:
    """This session's identity if it may take ``action``; else :class:`NotAllowed` (for the actions inside a page:
    a button's handler calls it on the server, whatever the browser shows or sends)."""
    identity = current_identity()
    if identity.team_mode and not can(identity.role, action):
        who = identity.user_id or "a session that is not signed in"
        role = f" (role {identity.role})" if identity.role else " (no role)"
        raise NotAllowed(f"{who}{role} may not {DOING.get(action, action)} on this dashboard")
    return identity


def require(action: str) -> Identity:
    """Stop the page (before it reads any run data) unless this session may take ``action``; the identity.
    Signed out (or expired): the sign-in page. Signed in with no role, or a role below ``action``: one line saying
    so. In local mode it returns at once."""
    identity = current_identity()
    if not identity.team_mode:
        return identity
    if not identity.user_id:
        render_sign_in(identity)
        st.stop()
    note_sign_in(identity)
    if not can(identity.role, action):
        if identity.role == NO_ROLE:
            st.title("No access")
            st.warning(escape_markdown(f"You are signed in as {identity.user_id}, but this dashboard's team gives "
                                       "you no role. Ask an admin of the dashboard to add you to its team.toml."),
                       icon=":material/block:")
        else:
            st.title("Not for your role")
            st.warning(escape_markdown(f"You are signed in as {identity.user_id} (role {identity.role}), which may "
                                       f"not {DOING.get(action, action)}."), icon=":material/block:")
        render_account(st)
        st.stop()
    return identity


@contextlib.contextmanager
def errors_with_an_id(page_title: str) -> Iterator[None]:
    """Team mode, around a page's run: an exception the page did not handle is shown as one short line with an id
    (no traceback, no server path), and the server log gets the id with the whole trace. Streamlit's own stop and
    rerun signals (``BaseException``) pass through."""
    try:
        yield
    except Exception:
        error_id = secrets.token_hex(4)
        print(f"rageval: error {error_id} on page {page_title!r} for {current_identity().user_id or '-'}:\n"
              + traceback.format_exc(), file=sys.stderr, flush=True)
        st.error(f"Something went wrong on this page (error {error_id}). The dashboard's administrator finds "
                 "the details under that id in the server log.", icon=":material/error:")


def page_link(where: Any, page: str, **kwargs: Any) -> bool:
    """``where.page_link(page, **kwargs)`` (``where``: ``st`` or a column) when this session's role has ``page``
    (:data:`ui.navigation.BY_FILE`'s ``action``); nothing otherwise, since Streamlit raises on a link to a page that
    is not in the session's navigation. Whether it drew the link. Every link between pages goes through here
    (tests/ui/test_team_pages.py checks that none calls ``page_link`` directly)."""
    from ui.navigation import BY_FILE

    entry = BY_FILE.get(page)
    if entry is not None and not allowed(entry.action):
        return False
    where.page_link(page, **kwargs)
    return True


def render_sign_in(identity: Identity | None = None) -> None:
    """The page of a session that is not signed in: what this is and a Sign in button; no run data."""
    st.title("rageval")
    if identity is not None and identity.ended:
        st.info("This session was ended (you signed out here or elsewhere, or an admin ended it): sign in again to "
                "go on.", icon=":material/logout:")
    elif identity is not None and identity.expired:
        st.info("Your sign-in has expired: sign in again to go on.", icon=":material/schedule:")
    st.write("This dashboard is served for a team: sign in to see its runs.")
    st.button("Sign in", icon=":material/login:", type="primary", on_click=st.login, key="auth.sign_in")


def render_account(where: Any) -> None:
    """Who is signed in, with which role, and a Sign out button (team mode)."""
    identity = current_identity()
    if not identity.team_mode or not (identity.user_id or identity.expired):
        return
    where.caption(escape_markdown(f"Signed in as {identity.user_id or identity.display_name}"
                                  + (f" · {identity.role}" if identity.role else " · no role")))
    where.button("Sign out", icon=":material/logout:", on_click=sign_out, key="auth.sign_out")


def sign_out() -> None:
    """The Sign out button: end this session on the server (an audit entry with its key, so a copy of its cookie is
    refused from now on), then Streamlit's sign-out (the cookie removed from this browser)."""
    identity = current_identity()
    claims = _claims()
    if identity.team_mode and identity.user_id and claims:
        audit(audit_log.SIGN_OUT, {"session": session_key(claims)})
    st.logout()


def end_sessions(typed_user: str) -> str:
    """An admin ends every session of a person begun until now (they must sign in again); the id as stored.
    Refused (:class:`NotAllowed`) for anyone else; audited."""
    check(END_SESSIONS)
    user = normalise_identity(typed_user)
    if not user:
        raise NotAllowed("name the person whose sessions to end (their email, or the provider's subject)")
    audit(audit_log.END_SESSIONS, {"user": user, "before": dt.datetime.now(dt.UTC).timestamp()})
    return user


_seen_lock = threading.Lock()
_seen_sign_ins: set[tuple[str, Any]] = set()


def note_sign_in(identity: Identity) -> None:
    """Audit a sign-in once per ID token (its ``iat``) in this server process, at the first page it opens."""
    claims = _claims() or {}
    key = (identity.user_id, claims.get("iat"))
    with _seen_lock:
        if key in _seen_sign_ins:
            return
        _seen_sign_ins.add(key)
    issued = claims.get("iat")
    audit(audit_log.SIGN_IN, {"role": identity.role or None, "issuer": claims.get("iss"),
                              "issued_at": dt.datetime.fromtimestamp(issued, dt.UTC).isoformat()
                              if isinstance(issued, int | float) else None})


def audit_file():
    """The audit log of this runs folder (``audit.sqlite`` beside the runs)."""
    from rageval.paths import user_runs_dir

    return audit_store.audit_path(user_runs_dir())


def audit(action: str, detail: dict | None = None) -> None:
    """Append ``action`` by the current identity to the audit log (team mode only; local mode keeps none)."""
    identity = current_identity()
    if not identity.team_mode or not identity.user_id:
        return
    entry = audit_store.append(audit_file(), identity.user_id, action, detail)
    print(audit_store.entry_line(entry), file=sys.stderr, flush=True)  # the server log: a copy off the file (deploy.md)



def verify_audit() -> audit_store.Verification:
    """The audit log's hash chain walked entry by entry (:func:`rageval.store.audit.verify`); admins only."""
    check(READ_AUDIT)
    return audit_store.verify(audit_file())


def read_audit(limit: int | None = None) -> list[audit_store.AuditEntry]:
    """The audit log's entries, newest first (read at each call: it is never cached); admins only."""
    check(READ_AUDIT)
    return audit_store.read_entries(audit_file(), limit=limit)


def audit_frame(entries: list[audit_store.AuditEntry]):
    """The entries as a table: when (UTC), who, what, and the details as text (shown as text, never markup)."""
    import json

    import pandas as pd

    return pd.DataFrame({"when (UTC)": [e.at for e in entries], "who": [e.user_id for e in entries],
                         "action": [e.action for e in entries],
                         "details": [json.dumps(e.detail, sort_keys=True) for e in entries],
                         "entry": [e.entry for e in entries], "hash": [e.hash[:12] for e in entries]})
