"""``rageval team check TEAM.toml --claims CLAIMS.json [--json]`` (issue 39 item 3): the identity, role and entry
the dashboard would give a set of ID-token claims, through the command line as an admin runs it."""

from __future__ import annotations

import json

import pytest

from rageval.cli import main
from tests.team.test_team_config import GOOD


@pytest.fixture
def team_toml(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text(GOOD)
    return path


def run(capsys, tmp_path, team_toml, claims, *extra):
    claims_file = tmp_path / "claims.json"
    claims_file.write_text(json.dumps(claims))
    status = main(["team", "check", str(team_toml), "--claims", str(claims_file), *extra])
    return status, capsys.readouterr()


@pytest.mark.parametrize("claims, expected", [
    ({"sub": "1", "email": "Ada@Example.org", "email_verified": True},
     {"identity": "ada@example.org", "role": "admin", "rule": "ada@example.org"}),
    ({"sub": "2", "email": "cy@annotators.example.org", "email_verified": "true"},
     {"identity": "cy@annotators.example.org", "role": "annotator", "rule": "@annotators.example.org"}),
    ({"sub": "3", "email": "bo@example.org", "email_verified": "false", "groups": ["ml-ops"]},
     {"identity": "3", "role": "operator", "rule": "group:ml-ops"}),
    ({"sub": "4", "email": "ada@example.org"}, {"identity": "4", "role": None, "rule": None}),
    ({"sub": "5", "email": "eve@elsewhere.org", "email_verified": True},
     {"identity": "eve@elsewhere.org", "role": None, "rule": None}),
])
def test_json(capsys, tmp_path, team_toml, claims, expected):
    status, out = run(capsys, tmp_path, team_toml, claims, "--json")
    result = json.loads(out.out)
    assert {key: result[key] for key in expected} == expected
    assert status == (0 if expected["role"] else 1)


def test_text_names_why_an_email_did_not_count(capsys, tmp_path, team_toml):
    status, out = run(capsys, tmp_path, team_toml, {"sub": "4", "email": "ada@example.org"})
    assert status == 1
    assert "role:     (none" in out.out
    assert "email_verified is missing" in out.out and "trust_email_without_verified_claim" in out.out


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "expected a JSON object of ID-token claims"),
    ("{not json", "not valid JSON (line 1"),
])
def test_bad_claims_file_is_one_line(capsys, tmp_path, team_toml, text, message):
    claims_file = tmp_path / "claims.json"
    claims_file.write_text(text)
    assert main(["team", "check", str(team_toml), "--claims", str(claims_file)]) == 2
    err = capsys.readouterr().err
    assert str(claims_file) in err and message in err and "Traceback" not in err
