"""team.toml parsing, role matching and the secrets (rageval.team.config), on real files."""

from __future__ import annotations

import pytest

from rageval.team.config import (
    CLIENT_SECRET_ENV,
    COOKIE_SECRET_ENV,
    TeamConfigError,
    load_secrets,
    load_team_config,
    streamlit_auth_secrets,
    user_id,
)
from rageval.team.roles import ACTIONS, ADMIN, ANNOTATOR, LEAST_ROLE, OPERATOR, ROLES, VIEWER, can

GOOD = """
[provider]
server_metadata_url = "http://localhost:9400/.well-known/openid-configuration"
client_id = "rageval"
redirect_uri = "http://127.0.0.1:8501/oauth2callback"
groups_claim = "groups"

[session]
max_hours = 2

[roles]
admin = ["Ada@Example.org"]
operator = ["group:ml-ops"]
annotator = ["@annotators.example.org"]
viewer = ["@example.org", "@annotators.example.org"]
"""


def write(tmp_path, text):
    path = tmp_path / "team.toml"
    path.write_text(text)
    return path


def test_roles_by_email_domain_and_group(tmp_path):
    config = load_team_config(write(tmp_path, GOOD))
    assert config.max_hours == 2.0 and config.client_id == "rageval"
    yes = {"email_verified": True}
    assert config.role_for({"sub": "1", "email": "ada@example.org", **yes}) == ADMIN  # emails compare in lower case
    assert config.role_for({"sub": "2", "email": "bo@example.org", "groups": ["ml-ops"], **yes}) == OPERATOR
    assert config.role_for({"sub": "3", "email": "cy@annotators.example.org", **yes}) == ANNOTATOR  # the highest
    assert config.role_for({"sub": "4", "email": "di@example.org", **yes}) == VIEWER
    assert config.role_for({"sub": "5", "email": "eve@elsewhere.org", **yes}) is None
    assert config.role_for({"sub": "6", "groups": "ml-ops"}) == OPERATOR  # one group as a string
    # An email the provider marks unverified matches nothing (anyone can type one at some providers).
    assert config.role_for({"sub": "7", "email": "ada@example.org", "email_verified": False}) is None
    assert config.role_for({"sub": "8", "email": "ada@example.org.evil.com", **yes}) is None


@pytest.mark.parametrize("verified, counts", [
    (True, True), ("true", True), ("TRUE", True),  # some providers send the claim as a string
    (False, False), ("false", False), ("False", False), (None, False), (0, False), (1, False), ("yes", False),
    ("missing", False),  # no claim at all: not verified unless team.toml says so explicitly
])
def test_email_counts_only_when_the_token_says_verified(tmp_path, verified, counts):
    """issue 39 item 2: the string "false" and a missing claim used to count as verified, for exact-email and
    @domain rules alike (and as the person's id)."""
    config = load_team_config(write(tmp_path, GOOD))
    for email, role in (("ada@example.org", ADMIN), ("di@example.org", VIEWER)):
        claims = {"sub": "s1", "email": email}
        if verified != "missing":
            claims["email_verified"] = verified
        assert config.role_for(claims) == (role if counts else None)
        assert config.user_id(claims) == (email if counts else "s1")


def test_a_provider_without_the_claim_is_named_explicitly(tmp_path):
    """``trust_email_without_verified_claim = true``: a missing claim counts; an explicit false still never does."""
    text = GOOD.replace('groups_claim = "groups"', 'groups_claim = "groups"\ntrust_email_without_verified_claim = true')
    config = load_team_config(write(tmp_path, text))
    assert config.trust_email_without_verified_claim
    assert config.role_for({"sub": "1", "email": "ada@example.org"}) == ADMIN
    assert config.user_id({"sub": "1", "email": "Ada@example.org"}) == "ada@example.org"
    for refused in (False, "false"):
        assert config.role_for({"sub": "1", "email": "ada@example.org", "email_verified": refused}) is None
    assert not load_team_config(write(tmp_path, GOOD)).trust_email_without_verified_claim  # never the default
    bad = GOOD.replace('groups_claim = "groups"', 'groups_claim = "groups"\ntrust_email_without_verified_claim = "yes"')
    with pytest.raises(TeamConfigError, match="trust_email_without_verified_claim: expected true or false"):
        load_team_config(write(tmp_path, bad))


def test_user_id_is_the_email_else_the_subject():
    assert user_id({"sub": "abc", "email": "Ada@Example.org", "email_verified": True}) == "ada@example.org"
    assert user_id({"sub": "abc", "email": "Ada@Example.org"}) == "abc"
    assert user_id({"sub": "abc", "email": "ada@example.org", "email_verified": False}) == "abc"
    assert user_id({"sub": "abc"}) == "abc"
    assert user_id({}) is None


@pytest.mark.parametrize("text, expected", [
    ("[roles]\nadmin = ['a@b.org']\n", "no [provider] section"),
    (GOOD.replace('client_id = "rageval"\n', ""), "[provider] client_id: missing"),
    (GOOD.replace("/oauth2callback", "/callback"), "must end with /oauth2callback"),
    (GOOD.replace('client_id = "rageval"', 'client_id = "rageval"\nclient_secret = "x"'), "secrets never go in"),
    (GOOD.replace("admin =", "boss ="), "[roles] 'boss': unknown role"),
    (GOOD.replace('"group:ml-ops"', '"ml-ops"'), "[roles] operator, entry 1 'ml-ops'"),
    (GOOD.replace("max_hours = 2", "max_hours = 0"), "[session] max_hours"),
    (GOOD.split("[roles]")[0], "no [roles] section"),
    ("[provider\n", "not valid TOML"),
])
def test_each_problem_is_one_line_naming_file_and_key(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(TeamConfigError) as raised:
        load_team_config(path)
    message = str(raised.value)
    assert expected in message and str(path) in message
    assert all(line.startswith(str(path)) for line in message.splitlines())


def test_missing_file(tmp_path):
    with pytest.raises(TeamConfigError, match="no such file"):
        load_team_config(tmp_path / "nope.toml")


def test_secrets_from_env_or_a_file_outside_the_checkout(tmp_path):
    secret = "s" * 40
    got = load_secrets({CLIENT_SECRET_ENV: "c", COOKIE_SECRET_ENV: secret})
    assert (got.client_secret, got.cookie_secret) == ("c", secret)
    with pytest.raises(TeamConfigError) as raised:
        load_secrets({})
    lines = str(raised.value).splitlines()
    assert len(lines) == 2 and "no client secret" in lines[0] and "no cookie secret" in lines[1]
    assert f"${COOKIE_SECRET_ENV}" in lines[1]
    with pytest.raises(TeamConfigError, match="at least 32"):
        load_secrets({CLIENT_SECRET_ENV: "c", COOKIE_SECRET_ENV: "short"})
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    inside = checkout / "secrets.toml"
    inside.write_text(f'client_secret = "c"\ncookie_secret = "{secret}"\n')
    with pytest.raises(TeamConfigError, match="inside the checkout"):
        load_secrets({}, inside, checkout=checkout)
    outside = tmp_path / "secrets.toml"
    outside.write_text(f'client_secret = "c"\ncookie_secret = "{secret}"\n')
    outside.chmod(0o600)
    assert load_secrets({}, outside, checkout=checkout).cookie_secret == secret


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o620])
def test_a_secrets_file_open_to_group_or_others_is_refused(tmp_path, mode):
    """issue 39 item 8: one rule (600), checked: the docs said 640, the README 600, and nothing checked."""
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'client_secret = "c"\ncookie_secret = "{"s" * 40}"\n')
    secrets.chmod(mode)
    with pytest.raises(TeamConfigError, match=f"has mode {mode:04o}, open to its group or to others.*chmod 600"):
        load_secrets({}, secrets)
    secrets.chmod(0o400)
    assert load_secrets({}, secrets).client_secret == "c"


def test_streamlit_auth_section_reads_back_as_toml(tmp_path):
    import tomllib

    config = load_team_config(write(tmp_path, GOOD))
    secret = 'q"uote\\' + "x" * 40
    text = streamlit_auth_secrets(config, load_secrets({CLIENT_SECRET_ENV: "c", COOKIE_SECRET_ENV: secret}))
    auth = tomllib.loads(text)["auth"]
    assert auth["cookie_secret"] == secret and auth["client_secret"] == "c"
    assert auth["redirect_uri"] == config.redirect_uri and auth["client_kwargs"]["scope"] == "openid email profile"


def test_can_each_role_everything_the_one_before_can():
    for action in ACTIONS:
        allowed = [role for role in ROLES if can(role, action)]
        assert allowed == list(ROLES[ROLES.index(LEAST_ROLE[action]):])
        assert not can(None, action) and not can("nobody", action)
    with pytest.raises(ValueError):
        can(ADMIN, "fly")
