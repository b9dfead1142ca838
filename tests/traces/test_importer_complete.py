"""An imported run through "compute missing pieces" (rageval.pipeline.run.complete_run_file, what the dashboard's
job and ``rageval rescore start RUN --complete`` run) with the test LLM: the traces' answers are the run's E2E
answers and are never generated again; the passages get the model's labels; a run without gold answers gets what
needs none."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from rageval.cli import main
from rageval.generation.base import FakeGenerator, first_capitalised_span
from rageval.generation.cache import LLMCache
from rageval.generation.factory import ModelSettings
from rageval.generation.server import serve
from rageval.jobs.control import lacking_pieces
from rageval.jobs.spec import COMPLETE, JobSpec
from rageval.labelmethods import CONTAINS_ANSWER, LLM_RELEVANCE
from rageval.pipeline.run import complete_run_file
from rageval.pipeline.summary import missing_pieces, run_summary
from rageval.store import RunReader, read_run
from rageval.traces.importer import content_id, import_traces
from rageval.traces.records import RETRIEVED, TraceRecord
from tests.traces.trace_fixtures import PARIS, doc, ragas_like_records, two_stage_records

MODEL = "fake-span"


def reader_and_judge(prompt: str) -> str:
    """The fake model: the first capitalised span of the prompt's passage (``first_capitalised_span``), and for a
    Yes/No relevance prompt (its last line ``Relevant:``) Yes when it finds such a span there, else No, as a real
    model's reply would read (a reply neither Yes nor No would be unparsed: no label)."""
    if prompt.rstrip().endswith("Relevant:"):
        return "Yes" if first_capitalised_span(prompt) else "No"
    return first_capitalised_span(prompt)
RAGAS_FILE = Path(__file__).parent / "fixtures" / "ragas_dataset.jsonl"


@pytest.fixture
def served(tmp_path, monkeypatch):
    """rageval's OpenAI-compatible server serving the fake model on loopback (the cache under tmp_path)."""
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with serve(FakeGenerator(reader_and_judge, model_id=MODEL), model_name=MODEL) as running:
        yield running


class CountingGenerator(FakeGenerator):
    """The fake generator, remembering every prompt it answered."""

    def __init__(self):
        super().__init__(reader_and_judge, model_id="fake:first-span/traces")
        self.prompts: list[str] = []

    def generate(self, prompts, settings):
        self.prompts += list(prompts)
        return super().generate(prompts, settings)


def complete(path: Path, tmp_path: Path) -> CountingGenerator:
    generator = CountingGenerator()
    with LLMCache(tmp_path / "llm.sqlite") as cache:
        complete_run_file(path, ModelSettings(model="fake"), generator=generator, cache=cache, log=lambda m: None)
    return generator


def test_a_ragas_file_rageval_never_saw_goes_through_import_and_completion_with_its_answers_kept(tmp_path):
    # Hand-made records whose eRAG labels are known (the real RAGAS file goes through the commands below).
    records = ragas_like_records()
    path = tmp_path / "ragas.sqlite"
    import_traces(records, path, format_name="ragas")
    assert missing_pieces(run_summary(path), read_run(path).settings) == {"erag": "missing", "baselines": "missing"}
    generator = complete(path, tmp_path)
    run = read_run(path)
    # The stored answers are the file's, at k = 2 (the length of each list), and nothing else was generated.
    assert sorted((o.query_id, o.k, o.output) for o in run.e2e_outputs) == sorted(
        (r.trace_id, 2, r.answer) for r in records)
    assert len(generator.prompts) == len(set(generator.prompts))  # (each prompt once)
    passages_per_prompt = [sum(text in prompt for text in {d.content for r in records for d in r.stages[RETRIEVED]})
                           for prompt in generator.prompts]
    assert max(passages_per_prompt) == 1  # no prompt holds a whole list: no E2E answer was generated
    # Every passage has an eRAG label and an LLM relevance label; eRAG's is 1 exactly where the passage starts with
    # the gold answer (the fake model answers with the first capitalised span of its passage).
    labels = {(x.method, x.query_id, x.passage_id): x.value for x in run.labels}
    for record in records:
        for document in record.stages[RETRIEVED]:
            key = (record.trace_id, content_id(document.content))
            assert labels[("erag:em", *key)] == float(document.content.startswith(record.gold_answers[0]))
            assert ("llm_relevance", *key) in labels
    assert missing_pieces(run_summary(path), run.settings) == {}
    assert run.settings["e2e_answers"] == "imported" and run.settings["k"] == 2
    assert run.settings["completed"][-1]["pieces"] == ["erag", "baselines"]


def test_completing_a_two_stage_run_keeps_both_stages_and_labels_the_passages_of_both(tmp_path):
    path = tmp_path / "two.sqlite"
    records = two_stage_records()
    import_traces(records, path, format_name="openinference")
    before = read_run(path)
    complete(path, tmp_path)
    after = read_run(path)
    assert after.trace_rankings == before.trace_rankings
    assert after.e2e_outputs == before.e2e_outputs
    erag = {(x.query_id, x.passage_id): x.value for x in after.labels if x.method == "erag:em"}
    every = {(r.trace_id, content_id(d.content)): d.content.startswith(r.gold_answers[0])
             for r in records for documents in r.stages.values() for d in documents}
    assert erag == {key: float(helps) for key, helps in every.items()}  # the reranker's drops included
    # The measures are those of the main (reranked) list: erag:em P@1 of q-france is 1 (Paris reranked first).
    values = {(m.method, m.measure, m.query_id): m.value for m in after.measure_values}
    assert values[("erag:em", "P@1", "q-france")] == 1.0 and values[("erag:em", "P@2", "q-germany")] == 0.0


def test_traces_without_gold_answers_get_what_needs_none(tmp_path):
    records = [TraceRecord("t1", "What is the capital of France?", {RETRIEVED: [doc(0, PARIS, "p1")]},
                           answer="Paris", source="x, line 1")]
    path = tmp_path / "nogold.sqlite"
    import_traces(records, path, format_name="langsmith")
    assert missing_pieces(run_summary(path), read_run(path).settings) == {"baselines": "missing"}
    spec = JobSpec.from_flat(str(path), model="fake", backend="openai", label_kind=COMPLETE)
    assert lacking_pieces(spec) == {"baselines": "missing"}  # not refused for lack of gold answers
    generator = complete(path, tmp_path)
    run = read_run(path)
    assert {x.method for x in run.labels} == {LLM_RELEVANCE} and CONTAINS_ANSWER not in run.settings["label_methods"]
    assert [(o.output, o.k) for o in run.e2e_outputs] == [("Paris", 1)]
    assert len(generator.prompts) == 1  # the one relevance question
    assert missing_pieces(run_summary(path), run.settings) == {}


@pytest.mark.slow
def test_with_no_code_a_ragas_file_goes_through_import_and_rescore_complete(tmp_path, served, capsys):
    """The user's path, commands only: ``rageval import ragas FILE`` then ``rageval rescore start RUN --complete
    --backend openai`` against an OpenAI-compatible server (rageval's own, serving the fake model, as a team's
    vLLM would serve theirs). The file is the one RAGAS' own ``EvaluationDataset.to_jsonl`` wrote
    (tests/traces/fixtures/make_ragas.py): questions rageval never saw, one row without a ``response``, one without
    a ``reference``."""
    server = served
    rows = [json.loads(line) for line in RAGAS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    run = tmp_path / "runs" / "ragas.sqlite"
    assert main(["import", "ragas", str(RAGAS_FILE), "--out", str(run)]) == 0
    code = main(["rescore", "start", str(run), "--complete", "--backend", "openai", "--base-url", server.base_url,
                 "--model", MODEL, "--jobs-db", str(tmp_path / "jobs.sqlite"), "--cache", str(tmp_path / "llm.sqlite")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "job 1: done" in out
    with RunReader(run) as reader:
        answers = reader.e2e_table()
        # The stored answers are the file's responses, each at the length of the list it came from; none generated.
        assert sorted(zip(answers["k"], answers["output"])) == sorted(
            (len(row["retrieved_contexts"]), row["response"]) for row in rows if row.get("response"))
        assert {"erag:em", "llm_relevance"} <= set(reader.label_methods())
        assert missing_pieces(run_summary(run), reader.settings()) == {}


def test_a_run_where_some_traces_have_gold_answers_gets_erag_on_those_only(tmp_path):
    records = ragas_like_records()
    records[1] = dataclasses.replace(records[1], gold_answers=())  # ragas-1: no reference answer
    path = tmp_path / "mixed.sqlite"
    import_traces(records, path, format_name="ragas")
    assert missing_pieces(run_summary(path), read_run(path).settings) == {"erag": "missing", "baselines": "missing"}
    complete(path, tmp_path)
    run = read_run(path)
    erag = {x.query_id for x in run.labels if x.method == "erag:em"}
    relevance = {x.query_id for x in run.labels if x.method == LLM_RELEVANCE}
    assert erag == {"ragas-0", "ragas-2"} and relevance == {"ragas-0", "ragas-1", "ragas-2"}
    assert [q.query_id for q in run.queries] == ["ragas-0", "ragas-1", "ragas-2"]
    assert sorted((o.query_id, o.output) for o in run.e2e_outputs) == sorted((r.trace_id, r.answer) for r in records)
    values = {(m.method, m.measure, m.query_id): m.value for m in run.measure_values}
    assert values[("erag:em", "P@1", "ragas-2")] == 1.0 and ("erag:em", "P@1", "ragas-1") not in values
    assert missing_pieces(run_summary(path), run.settings) == {}
