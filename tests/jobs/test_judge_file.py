"""A user's own LLM judge in one TOML file (docs/judges/answer_present.toml) through ``rageval rescore start RUN
--labels FILE.toml`` against rageval's OpenAI-compatible server serving a fake model: the run stores the judge's
prompt and hash, a reply the parser cannot read is unparsed (no label), and the labels are in ``info --json``,
``rageval methods``, the Query inspector, the export and the trust report like any built-in method's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from rageval import labelmethods
from rageval.annotations import AnnotationStore
from rageval.cli import main
from rageval.generation.base import FakeGenerator
from rageval.generation.server import serve
from rageval.store import RunReader
from rageval.text_metrics import contains_answer
from tests.run_fixtures import N_QUERIES, K, build_small_run, make_small_run

REPO = Path(__file__).resolve().parents[2]
JUDGE = REPO / "docs" / "judges" / "answer_present.toml"
MODEL = "fake-judge"
METHOD = f"answer_present@{MODEL}"
SMALL = build_small_run()
#: The first query's top passage: the fake judge's reply to it is one the parser cannot read.
JUNK_FOR = next(p for p in SMALL.passages if p.passage_id == SMALL.rankings[0].passage_ids[0])


def judge_rule(prompt: str) -> str:
    """Yes when the passage (as the judge file's prompt shows it) contains a gold answer, else No; a shrug for
    JUNK_FOR's passage."""
    answers = prompt.split("Gold answers: ", 1)[1].split("\n", 1)[0].split("; ")
    passage = prompt.split("\nPassage (", 1)[1].split("): ", 1)[1].rsplit("\nDoes the passage", 1)[0]
    if passage == JUNK_FOR.text.strip():
        return "Perhaps."
    return "Yes" if contains_answer(passage, answers) else "No"


@pytest.fixture(autouse=True)
def own_registry(monkeypatch, tmp_path):
    """The judge file's registration ends with the test; caches and runs under tmp_path."""
    monkeypatch.setattr(labelmethods, "_REGISTRY", dict(labelmethods._REGISTRY))
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "runs"))


def test_a_toml_judge_rescores_a_run_and_shows_everywhere(tmp_path, capsys):
    run = make_small_run(tmp_path / "runs" / "fixture.sqlite")
    db = tmp_path / "jobs.sqlite"
    with serve(FakeGenerator(judge_rule, model_id=MODEL), model_name=MODEL) as server:
        code = main(["rescore", "start", str(run), "--labels", str(JUDGE), "--backend", "openai", "--base-url",
                     server.base_url, "--model", MODEL, "--jobs-db", str(db), "--cache", str(tmp_path / "llm.sqlite")])
    out = capsys.readouterr().out
    assert code == 0 and f"job 1: {METHOD}, {N_QUERIES * K} items" in out, out

    with RunReader(run) as reader:
        labels = reader.labels(METHOD)
        unparsed = reader.unparsed_answers(METHOD)
        settings = reader.settings()
        measures = reader.measure_table()
    # Every passage asked once: a label, or an unparsed reply (never a "no").
    assert len(labels) + len(unparsed) == N_QUERIES * K and set(unparsed["answer"]) == {"Perhaps."}
    expected = {(r.query_id, p): float(contains_answer(next(x for x in SMALL.passages if x.passage_id == p).text,
                                                       next(q for q in SMALL.queries if q.query_id == r.query_id)
                                                       .answers))
                for r in SMALL.rankings for p in r.passage_ids[:K] if p != JUNK_FOR.passage_id}
    assert dict(zip(zip(labels["query_id"], labels["passage_id"]), labels["value"])) == expected
    # The run keeps the prompt, its hash and the kind, so any later reader scores the labels by the judge's rules.
    stored = settings["rescored"][METHOD]
    assert stored["prompt"].startswith("judge-answer_present@1#") and "{passage}" in stored["prompt_text"]
    assert stored["judge_file"] == str(JUDGE.resolve())
    assert settings["label_kinds"]["answer_present"]["list_bound"] is True
    first_query = SMALL.rankings[0].query_id
    left_out = set(unparsed["query_id"])  # the queries with an unread reply have no value for the method
    assert first_query in left_out and set(measures[measures["method"] == METHOD]["query_id"]) == {
        q.query_id for q in SMALL.queries} - left_out

    assert main(["info", str(run), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["labels"][METHOD] == len(labels), info["labels"]

    assert main(["methods", "--json", "--labels", str(JUDGE)]) == 0
    listed = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert listed["answer_present"]["needs"] == ["a model", "gold answers"]
    assert listed["answer_present"]["prompt"] == stored["prompt"]

    out_csv = tmp_path / "labels.csv"
    assert main(["export", str(run), "--out", str(out_csv)]) == 0
    capsys.readouterr()
    with out_csv.open(newline="") as handle:
        exported = [row for row in csv.DictReader(handle) if row["method"] == METHOD]
    assert len(exported) == len(labels)

    items = [(r.query_id, p, rank) for r in SMALL.rankings for rank, p in enumerate(r.passage_ids[:K], start=1)]
    people = AnnotationStore(tmp_path / "annotations.sqlite")
    people.create_sample("fixture", pd.DataFrame(items, columns=["query_id", "passage_id", "rank"]), len(items), 3,
                         "tester")
    people.save_passage_labels("fixture", [(q, p, int(expected.get((q, p), 0.0)), "ann") for q, p, _ in items])
    assert main(["trust", str(run), "--json", "--annotations", str(people.path), "--plan", "0"]) == 0
    trust = json.loads(capsys.readouterr().out)
    assert trust["methods"][METHOD]["kappa"] == pytest.approx(1.0)  # the person agrees with every label

    html = tmp_path / "report.html"
    assert main(["report", str(run), "--html", str(html)]) == 0
    capsys.readouterr()
    assert METHOD in html.read_text(encoding="utf-8")  # its correlation with the answers, in the chart and table

    # A fresh page process that never read the judge file shows the method's column from the run itself.
    monkeypatch_registry = dict(labelmethods._REGISTRY)
    monkeypatch_registry.pop("answer_present")
    labelmethods._REGISTRY.clear()
    labelmethods._REGISTRY.update(monkeypatch_registry)
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    app.query_params.update(run="fixture", query=first_query)
    app.switch_page("app_pages/1_Query_inspector.py")
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    ranked = next(df.value for df in app.dataframe if "Passage" in df.value.columns)
    assert METHOD in ranked.columns
