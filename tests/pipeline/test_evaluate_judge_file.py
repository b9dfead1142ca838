"""``rageval evaluate --labels FILE.toml``: a judge file that restates UMBRELA (its published prompt, its score line,
levels 0-3 relevant from 2) run beside the built-in ``umbrela`` on the invented set of tests/pipeline gives the same
labels, the same unparsed answers and the same measures: the file is a label method like the built-in one. The run
keeps the file's prompt under its hash and the kind, and the config keeps the file."""

from __future__ import annotations

import json

import pytest

from rageval import labelmethods
from rageval.generation.base import FakeGenerator, first_capitalised_span
from rageval.pipeline import run as pipeline
from rageval.pipeline.config import build_config
from rageval.prompts import UMBRELA_ZERO_SHOT
from rageval.store import read_run
from tests.erag.test_umbrela import grade_rule
from tests.pipeline.test_pipeline import QUESTIONS, dataset  # noqa: F401 (a fixture)

NAME = "umbrela_from_a_file"


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    monkeypatch.setattr(labelmethods, "_REGISTRY", dict(labelmethods._REGISTRY))


def judge_file(path):
    prompt = UMBRELA_ZERO_SHOT.instruction.replace("{query}", "{question}").replace("{passage}", "{title}\n{passage}")
    path.write_text(f'name = "{NAME}"\ndescription = "UMBRELA, restated as a judge file"\nmax_new_tokens = 24\n'
                    f"prompt = {json.dumps(prompt)}\n[parse]\n"
                    "pattern = '##\\s*final\\s+score\\s*:\\s*(-?\\d+(?:\\.\\d+)?)'\nlevels = [0, 1, 2, 3]\n"
                    "relevant_from = 2\n", encoding="utf-8")
    return path


def test_a_judge_file_restating_umbrela_gives_umbrelas_labels_and_measures(dataset, tmp_path,  # noqa: F811
                                                                               tiny_model_dir):
    judge = judge_file(tmp_path / "umbrela.toml")
    config = build_config({}, {"queries": str(dataset["queries"]), "corpus": str(dataset["corpus"]),
                               "run": str(dataset["run"]), "model": str(tiny_model_dir), "k": "1,3",
                               "methods": "e2e,baselines", "label_metrics": "em", "umbrela": True, "labels": str(judge),
                               "cache": str(tmp_path / "llm.sqlite"), "out": str(tmp_path / "runs" / "file.sqlite")})

    def rule(prompt: str) -> str:
        if prompt.startswith("Given a query and a passage"):
            return grade_rule(prompt)
        if prompt.rstrip().endswith("Relevant:"):
            return "Yes"
        return first_capitalised_span(prompt)

    run = read_run(pipeline.evaluate(config, generator=FakeGenerator(rule, model_id="fake:grader/v1"),
                                     log=lambda _: None))

    def of(method, rows, key):
        return sorted(key(x) for x in rows if getattr(x, "method", getattr(x, "judge", None)) == method)

    assert of(NAME, run.labels, lambda x: (x.query_id, x.passage_id, x.value)) == of(
        "umbrela", run.labels, lambda x: (x.query_id, x.passage_id, x.value))
    assert of(NAME, run.unparsed, lambda x: (x.query_id, x.item, x.answer)) == of(
        "umbrela", run.unparsed, lambda x: (x.query_id, x.item, x.answer)) != []
    assert of(NAME, run.measure_values, lambda x: (x.measure, x.query_id, x.value)) == of(
        "umbrela", run.measure_values, lambda x: (x.measure, x.query_id, x.value)) != []
    settings = run.settings
    kind = labelmethods.method_kind(NAME)
    assert kind.judge.template.identifier in settings["prompts"]  # the file's prompt, under its hash
    assert settings["label_kinds"][NAME]["relevant_from"] == 2 and settings["config"]["labels"] == str(judge)
    assert settings["llm_calls"]["by_stage"][NAME]["calls"] == len(QUESTIONS) * 3
