"""``team.toml``: who may use a dashboard served for a team, and through which OpenID Connect provider.

    [provider]                         # any standard OpenID Connect provider (Google, Entra, Okta, Keycloak, GitLab)
    server_metadata_url = "https://accounts.example.org/.well-known/openid-configuration"
    client_id = "rageval"
    redirect_uri = "https://rageval.example.org/oauth2callback"   # the dashboard's URL + /oauth2callback
    groups_claim = "groups"            # optional: the ID-token claim that lists a person's groups
    # trust_email_without_verified_claim = true   # only for a provider that never sends email_verified (below)

    [session]
    max_hours = 12                     # a sign-in older than this (its ID token's iat) must sign in again

    [roles]                            # each entry: an email, "@domain" (every verified email there), "group:NAME"
    admin = ["ada@example.org"]
    operator = ["group:ml-ops"]
    annotator = ["@annotators.example.org"]
    viewer = ["@example.org"]

An email counts (for an email or an @domain entry, and as the person's id) only when the ID token says
``email_verified`` is ``true`` (or the string ``"true"``, as some providers send it). A provider that never sends
the claim but verifies every address itself (a company directory where nobody chooses their own email) is named
explicitly: ``trust_email_without_verified_claim = true`` in ``[provider]``; then an email *without* the claim
counts too, while ``email_verified = false`` still never does. Without that line such people are matched only by
their groups, and their id is the provider's subject.

The secrets (the provider's client secret, the key that signs the session cookie) are never in this file: they
come from the environment (:data:`CLIENT_SECRET_ENV`, :data:`COOKIE_SECRET_ENV`) or a secrets file the user names
(``rageval serve --secrets FILE``), which must lie outside the checkout. A person matching several entries gets
the highest of their roles; a person matching none gets no role (a page saying so, no run data). Everything here is
pure: parsing and matching, no Streamlit.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import RagevalError
from rageval.team.roles import ROLES

#: Set by ``rageval serve --team`` for the Streamlit process: the path of the team's ``team.toml`` (ui.auth reads it).
TEAM_ENV = "RAGEVAL_TEAM"
CLIENT_SECRET_ENV = "RAGEVAL_OIDC_CLIENT_SECRET"
COOKIE_SECRET_ENV = "RAGEVAL_COOKIE_SECRET"
#: Never handed to the Streamlit server's environment (it reads them from its secrets file), so never inherited by
#: the job workers it starts either.
SECRET_ENVS = (CLIENT_SECRET_ENV, COOKIE_SECRET_ENV)
#: The least length of a cookie secret (Streamlit warns below 14 bytes; a signing key that short is guessable).
MIN_COOKIE_SECRET = 32
DEFAULT_MAX_HOURS = 12.0
PROVIDER_KEYS = ("server_metadata_url", "client_id", "redirect_uri")
CALLBACK_PATH = "/oauth2callback"  # the path Streamlit serves the provider's answer on
#: The explicit opt-in for a provider that sends no ``email_verified`` claim (never the default).
TRUST_KEY = "trust_email_without_verified_claim"
PROVIDER_OPTIONS = ("groups_claim", TRUST_KEY)


class TeamConfigError(RagevalError):
    """A problem with ``team.toml`` or the team's secrets: one line naming the file and the key."""


@dataclass(frozen=True)
class Rule:
    """One entry of ``[roles]``: ``kind`` email, domain or group, and the value it matches (lower case except
    groups, which providers spell as they like)."""

    role: str
    kind: str
    value: str


@dataclass(frozen=True)
class TeamConfig:
    path: Path
    server_metadata_url: str
    client_id: str
    redirect_uri: str
    groups_claim: str | None
    max_hours: float
    rules: tuple[Rule, ...]
    trust_email_without_verified_claim: bool = False

    def verified_email(self, claims: Mapping[str, Any]) -> str | None:
        """The claims' email in lower case when it counts (see :func:`verified_email`), else None."""
        return verified_email(claims, trust_missing_claim=self.trust_email_without_verified_claim)

    def user_id(self, claims: Mapping[str, Any]) -> str | None:
        """The person's id under this team's rule for emails (see :func:`user_id`)."""
        return user_id(claims, trust_missing_claim=self.trust_email_without_verified_claim)

    def match(self, claims: Mapping[str, Any]) -> tuple[str | None, Rule | None]:
        """The highest role whose entries match ``claims`` and the first entry that gives it; (None, None) when no
        entry matches. An email (and its domain) counts only when verified (:meth:`verified_email`)."""
        email = self.verified_email(claims)
        domain = email.rpartition("@")[2] if email else None
        groups = self.groups_of(claims)
        best: Rule | None = None
        for rule in self.rules:
            matched = ((rule.kind == "email" and rule.value == email)
                       or (rule.kind == "domain" and rule.value == domain)
                       or (rule.kind == "group" and rule.value in groups))
            if matched and (best is None or ROLES.index(rule.role) > ROLES.index(best.role)):
                best = rule
        return (best.role, best) if best else (None, None)

    def role_for(self, claims: Mapping[str, Any]) -> str | None:
        """The highest role whose entries match the signed-in person's ``claims`` (their ID token's), else None."""
        return self.match(claims)[0]

    def names_without_a_role(self, names: Sequence[str], action: str) -> list[str]:
        """The ``names`` (identities typed by an admin, e.g. a queue's annotators) that no email or @domain entry
        gives a role allowed ``action``: as typed, such a person would never see what is meant for them (a
        ``group:`` entry may still give them a role; a name cannot show its groups)."""
        from rageval.team.roles import can

        return [name for name in names
                if not can(self.role_for({"sub": name, "email": name, "email_verified": True}), action)]

    def groups_of(self, claims: Mapping[str, Any]) -> set[str]:
        if not self.groups_claim:
            return set()
        value = claims.get(self.groups_claim)
        if isinstance(value, str):
            return {value}
        if isinstance(value, list):
            return {str(v) for v in value}
        return set()


def normalise_identity(name: str) -> str:
    """A typed identity as the dashboard stores a signed-in person's: blanks collapsed, and an email (anything with
    an ``@``) in lower case, as :func:`verified_email` gives it. A provider's subject (no ``@``) keeps its case."""
    name = " ".join(str(name).split())
    return name.lower() if "@" in name else name


def session_key(claims: Mapping[str, Any]) -> str:
    """One sign-in's key: sha256 over the ID token's issuer, subject, issue time and nonce (a new sign-in, a new
    key), so a session can be ended on the server (:mod:`rageval.team.audit` ``SIGN_OUT``) while its cookie lives."""
    import hashlib
    import json

    text = json.dumps([claims.get(k) for k in ("iss", "sub", "iat", "nonce")], default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def email_is_verified(claims: Mapping[str, Any], *, trust_missing_claim: bool = False) -> bool:
    """Whether the ID token vouches for its email: ``email_verified`` is ``true`` or the string ``"true"`` (any
    case). A missing claim counts only with ``trust_missing_claim`` (team.toml's explicit opt-in for a provider
    that never sends it); ``false``, ``"false"``, ``null``, ``0`` or anything else never count."""
    if "email_verified" not in claims:
        return trust_missing_claim
    value = claims["email_verified"]
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def verified_email(claims: Mapping[str, Any], *, trust_missing_claim: bool = False) -> str | None:
    """The claims' email in lower case when :func:`email_is_verified`, else None."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        return None
    if not email_is_verified(claims, trust_missing_claim=trust_missing_claim):
        return None
    return email.strip().lower()


def user_id(claims: Mapping[str, Any], *, trust_missing_claim: bool = False) -> str | None:
    """The id labels, jobs, uploads and audit entries are stored under: the verified email, else the provider's
    subject (``sub``, prefixed by nothing: it is unique per provider), else None (not signed in)."""
    email = verified_email(claims, trust_missing_claim=trust_missing_claim)
    if email:
        return email
    sub = claims.get("sub")
    return str(sub) if sub not in (None, "") else None


def load_team_config(path: str | os.PathLike) -> TeamConfig:
    """Read and check ``team.toml``; :class:`TeamConfigError` with one line per problem (file and key)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TeamConfigError(f"{path}: no such file (the team's sign-in and roles; see rageval serve --help)") \
            from None
    except (OSError, UnicodeDecodeError) as error:
        raise TeamConfigError(f"{path}: cannot read it ({error})") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise TeamConfigError(f"{path}: not valid TOML ({error})") from None
    return parse_team_config(document, path)


def parse_team_config(document: Mapping[str, Any], path: Path) -> TeamConfig:
    problems: list[str] = []
    unknown = sorted(set(document) - {"provider", "session", "roles"})
    problems += [f"{path}: unknown section or key {key!r} (expected [provider], [session], [roles])"
                 for key in unknown]
    provider = document.get("provider")
    if not isinstance(provider, Mapping):
        problems.append(f"{path}: no [provider] section: team mode signs people in through an OpenID Connect "
                        f"provider ({', '.join(PROVIDER_KEYS)})")
        provider = {}
    else:
        for key in sorted(set(provider) - {*PROVIDER_KEYS, *PROVIDER_OPTIONS, "client_secret", "cookie_secret"}):
            problems.append(f"{path}: [provider] unknown key {key!r} (expected {', '.join(PROVIDER_KEYS)}, "
                            f"{', '.join(PROVIDER_OPTIONS)})")
        for key in ("client_secret", "cookie_secret"):
            if key in provider:
                problems.append(f"{path}: [provider] {key}: secrets never go in team.toml; set ${CLIENT_SECRET_ENV} "
                                f"and ${COOKIE_SECRET_ENV}, or name a secrets file outside the checkout (--secrets)")
        for key in PROVIDER_KEYS:
            value = provider.get(key)
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{path}: [provider] {key}: missing (a non-empty string)")
        for key in ("server_metadata_url", "redirect_uri"):
            value = provider.get(key)
            if isinstance(value, str) and value and not value.startswith(("https://", "http://")):
                problems.append(f"{path}: [provider] {key}: {value!r} is not an http(s) URL")
        redirect = provider.get("redirect_uri")
        if isinstance(redirect, str) and redirect.startswith("http") and not redirect.endswith(CALLBACK_PATH):
            problems.append(f"{path}: [provider] redirect_uri: {redirect!r} must end with {CALLBACK_PATH} (the "
                            "dashboard's address + /oauth2callback, as registered with the provider)")
        groups_claim = provider.get("groups_claim")
        if groups_claim is not None and (not isinstance(groups_claim, str) or not groups_claim):
            problems.append(f"{path}: [provider] groups_claim: expected a claim name (a string)")
        trust = provider.get(TRUST_KEY, False)
        if not isinstance(trust, bool):
            problems.append(f"{path}: [provider] {TRUST_KEY}: expected true or false, got {trust!r}")
    session = document.get("session", {})
    max_hours = DEFAULT_MAX_HOURS
    if not isinstance(session, Mapping):
        problems.append(f"{path}: session: expected a [session] table")
    else:
        for key in sorted(set(session) - {"max_hours"}):
            problems.append(f"{path}: [session] unknown key {key!r} (expected max_hours)")
        value = session.get("max_hours", DEFAULT_MAX_HOURS)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            problems.append(f"{path}: [session] max_hours: expected a number of hours above 0, got {value!r}")
        else:
            max_hours = float(value)
    rules, role_problems = _parse_roles(document.get("roles"), path)
    problems += role_problems
    if problems:
        raise TeamConfigError("\n".join(problems))
    return TeamConfig(path=path, server_metadata_url=provider["server_metadata_url"].strip(),
                      client_id=provider["client_id"].strip(), redirect_uri=provider["redirect_uri"].strip(),
                      groups_claim=provider.get("groups_claim"), max_hours=max_hours, rules=tuple(rules),
                      trust_email_without_verified_claim=provider.get(TRUST_KEY) is True)


def _parse_roles(roles: Any, path: Path) -> tuple[list[Rule], list[str]]:
    if roles is None:
        return [], [f"{path}: no [roles] section: nobody could use the dashboard (map emails, @domains or "
                    f"group:NAME to {', '.join(ROLES)})"]
    if not isinstance(roles, Mapping):
        return [], [f"{path}: roles: expected a [roles] table"]
    rules: list[Rule] = []
    problems: list[str] = []
    for role, entries in roles.items():
        if role not in ROLES:
            problems.append(f"{path}: [roles] {role!r}: unknown role (expected one of {', '.join(ROLES)})")
            continue
        if not isinstance(entries, list):
            problems.append(f"{path}: [roles] {role}: expected a list of strings (emails, @domains, group:NAME)")
            continue
        for number, entry in enumerate(entries, start=1):
            rule = _parse_entry(role, entry)
            if rule is None:
                problems.append(f"{path}: [roles] {role}, entry {number} {entry!r}: expected an email "
                                "(name@example.org), a domain (@example.org) or a group (group:NAME)")
            else:
                rules.append(rule)
    if not rules and not problems:
        problems.append(f"{path}: [roles] maps nobody to a role: nobody could use the dashboard")
    return rules, problems


def _parse_entry(role: str, entry: Any) -> Rule | None:
    if not isinstance(entry, str):
        return None
    entry = entry.strip()
    if entry.startswith("group:") and len(entry) > len("group:"):
        return Rule(role, "group", entry[len("group:"):])
    if entry.startswith("@") and "." in entry[1:] and "@" not in entry[1:] and " " not in entry:
        return Rule(role, "domain", entry[1:].lower())
    name, at, domain = entry.partition("@")
    if at and name and "." in domain and "@" not in domain and " " not in entry:
        return Rule(role, "email", entry.lower())
    return None


# --- the secrets -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Secrets:
    client_secret: str
    cookie_secret: str


def load_secrets(environ: Mapping[str, str], secrets_file: str | os.PathLike | None = None,
                 checkout: str | os.PathLike | None = None) -> Secrets:
    """The provider's client secret and the cookie-signing secret: from ``secrets_file`` (TOML with
    ``client_secret`` and ``cookie_secret``; refused inside ``checkout``, so it is never committed, and refused
    unless its mode is 600 or stricter: nobody but its owner may read it) where given,
    else from :data:`CLIENT_SECRET_ENV` and :data:`COOKIE_SECRET_ENV`. One line per missing secret."""
    values: dict[str, Any] = {}
    source = "the environment"
    if secrets_file is not None:
        file = Path(secrets_file).expanduser().resolve()
        if checkout is not None and file.is_relative_to(Path(checkout).resolve()):
            raise TeamConfigError(f"{file}: the secrets file is inside the checkout ({checkout}); keep secrets "
                                  "outside the repository (e.g. /etc/rageval/secrets.toml, mode 600)")
        try:
            mode = file.stat().st_mode & 0o777
        except FileNotFoundError:
            raise TeamConfigError(f"{file}: no such secrets file") from None
        except OSError as error:
            raise TeamConfigError(f"{file}: cannot read the secrets file ({error})") from None
        if mode & 0o077:
            raise TeamConfigError(f"{file}: the secrets file has mode {mode:04o}, open to its group or to others; "
                                  f"it must be 600, owned by the user the dashboard runs as (chmod 600 {file})")
        try:
            values = tomllib.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TeamConfigError(f"{file}: no such secrets file") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise TeamConfigError(f"{file}: cannot read the secrets file ({error})") from None
        unknown = sorted(set(values) - {"client_secret", "cookie_secret"})
        if unknown:
            raise TeamConfigError(f"{file}: unknown key {unknown[0]!r} (expected client_secret, cookie_secret)")
        source = str(file)
    else:
        values = {"client_secret": environ.get(CLIENT_SECRET_ENV, ""),
                  "cookie_secret": environ.get(COOKIE_SECRET_ENV, "")}
    names = {"client_secret": CLIENT_SECRET_ENV, "cookie_secret": COOKIE_SECRET_ENV}
    problems = []
    for key, env in names.items():
        value = values.get(key)
        where = f"${env}" if secrets_file is None else f"{key} in {source}"
        if not isinstance(value, str) or not value:
            what = ("no client secret: set " + where + " to the secret the provider gave for this client"
                    if key == "client_secret" else
                    "no cookie secret: set " + where + " to a long random string (python -c 'import secrets; "
                    "print(secrets.token_urlsafe(32))'); it signs the session cookie")
            problems.append(f"rageval serve --team: {what}")
        elif key == "cookie_secret" and len(value) < MIN_COOKIE_SECRET:
            problems.append(f"rageval serve --team: the cookie secret ({where}) has {len(value)} characters; use at "
                            f"least {MIN_COOKIE_SECRET} random ones")
    if problems:
        raise TeamConfigError("\n".join(problems))
    return Secrets(client_secret=values["client_secret"], cookie_secret=values["cookie_secret"])


def streamlit_auth_secrets(config: TeamConfig, secrets: Secrets) -> str:
    """The ``[auth]`` section ``st.login`` reads (Streamlit's secrets.toml), as TOML text: the default provider's
    ``server_metadata_url``, ``client_id``, ``client_secret``, the ``redirect_uri`` and the ``cookie_secret``."""
    values = {"redirect_uri": config.redirect_uri, "cookie_secret": secrets.cookie_secret,
              "client_id": config.client_id, "client_secret": secrets.client_secret,
              "server_metadata_url": config.server_metadata_url}
    lines = ["[auth]"] + [f"{key} = {_toml_string(value)}" for key, value in values.items()]
    lines += ["", "[auth.client_kwargs]", 'scope = "openid email profile"']
    return "\n".join(lines) + "\n"


def _toml_string(value: str) -> str:
    """A TOML basic string of ``value`` (JSON escapes are TOML's for these characters)."""
    import json

    return json.dumps(value, ensure_ascii=False)


# --- checking a config against a person's claims (rageval team check) ----------------------------------------------

@dataclass(frozen=True)
class ClaimsCheck:
    """What the dashboard would make of one set of ID-token claims: the id it stores the person under (None: the
    sign-in would be refused), the role (None: no role), the team.toml entry that gave it, and why an email that
    was there did not count."""

    identity: str | None
    role: str | None
    rule: str | None
    notes: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"identity": self.identity, "role": self.role, "rule": self.rule, "notes": list(self.notes)}


def rule_text(rule: Rule) -> str:
    """The entry as written in ``[roles]`` (lower case where it compares so): ``ada@x.org``, ``@x.org``,
    ``group:NAME``."""
    return {"email": rule.value, "domain": "@" + rule.value, "group": "group:" + rule.value}[rule.kind]


def check_claims(config: TeamConfig, claims: Mapping[str, Any]) -> ClaimsCheck:
    """The identity, role and matching entry for ``claims``, exactly as the dashboard decides at sign-in."""
    role, rule = config.match(claims)
    notes: list[str] = []
    email = claims.get("email")
    if isinstance(email, str) and "@" in email and config.verified_email(claims) is None:
        said = ("is missing" if "email_verified" not in claims
                else f"is {json_text(claims['email_verified'])}")
        notes.append(f"the email {email!r} does not count: email_verified {said} (only true or \"true\" count"
                     + ("" if "email_verified" in claims else f"; a provider that never sends it: {TRUST_KEY} = "
                        "true in [provider]") + ")")
    if config.groups_claim and config.groups_claim not in claims:
        notes.append(f"no {config.groups_claim!r} claim: no group: entry can match")
    identity = config.user_id(claims)
    if identity is None:
        notes.append("neither a verified email nor a sub claim: the sign-in gives no identity")
    return ClaimsCheck(identity=identity, role=role if identity else None,
                       rule=rule_text(rule) if rule and identity else None, notes=tuple(notes))


def json_text(value: Any) -> str:
    import json

    return json.dumps(value)


def load_claims(path: str | os.PathLike) -> dict[str, Any]:
    """A JSON object of ID-token claims (as a provider's token or userinfo endpoint gives them); a
    :class:`TeamConfigError` naming the file otherwise."""
    import json

    path = Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TeamConfigError(f"{path}: no such claims file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise TeamConfigError(f"{path}: cannot read it ({error})") from None
    except json.JSONDecodeError as error:
        raise TeamConfigError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    if not isinstance(value, dict):
        raise TeamConfigError(f"{path}: expected a JSON object of ID-token claims ({{\"sub\": ..., \"email\": ...}}),"
                              f" got a {type(value).__name__}")
    return value


def check_claims_file(team_toml: str | os.PathLike, claims_file: str | os.PathLike) -> ClaimsCheck:
    """:func:`check_claims` for ``team.toml`` and a claims JSON file (``rageval team check``)."""
    return check_claims(load_team_config(team_toml), load_claims(claims_file))
