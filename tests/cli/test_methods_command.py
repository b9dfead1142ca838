"""``rageval methods [--json]``: every label method with its properties, read from the registry; a judge file named
with ``--labels`` is checked and listed; a bad one is one line naming the file."""

from __future__ import annotations

import json

import pytest

from rageval import labelmethods
from rageval.cli import main
from rageval.labelmethods import METHOD_ORDER
from rageval.paths import REPO_ROOT


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    monkeypatch.setattr(labelmethods, "_REGISTRY", dict(labelmethods._REGISTRY))


def test_methods_lists_every_built_in_with_its_properties(capsys):
    assert main(["methods", "--json"]) == 0
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert set(METHOD_ORDER) | {"qrels", "human"} == set(listed)
    assert listed["umbrela"]["scale"] == "levels" and listed["umbrela"]["relevant_from"] == 2
    assert listed["umbrela"]["prompt"].startswith("umbrela-zeroshot-bing@1#")
    assert listed["erag:f1"]["scale"] == "graded" and listed["erag:f1"]["needs"] == ["gold answers", "a model"]
    assert listed["gold"]["list_bound"] is False and listed["gold_page"]["list_bound"] is True
    assert listed["contains_answer"]["llm_calls_per_passage"] == 0 and listed["llm_relevance"]["colour"] == "#ff7f0e"
    assert main(["methods"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in text[1:]] == [*METHOD_ORDER, "qrels", "human"]


def test_a_judge_file_is_listed_and_a_bad_one_named(tmp_path, capsys):
    judge = REPO_ROOT / "docs" / "judges" / "answer_present.toml"
    assert main(["methods", "--labels", str(judge)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("answer_present   binary")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ndescription = "d"\nprompt = "{question}"\n[parse]\npattern = "y"\nlabels = {y = 1}\n')
    assert main(["methods", "--labels", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}: field 'prompt': expected the placeholders" in err
