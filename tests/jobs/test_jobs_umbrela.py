"""A re-score job with UMBRELA's graded relevance (``--labels umbrela``): the same job code as the yes/no LLM
relevance, with UMBRELA's prompt and parser. Its grades are stored under ``umbrela@<model>``, a reply without a
``##final score: 0-3`` line is stored as unparsed (no label), the queries with one are left out of the method's
measures, and the other queries' nDCG is pytrec_eval's on the grades. A second run of the job asks the model
nothing: the unparsed items count as answered."""

from __future__ import annotations

import pytest
import pytrec_eval

from rageval.generation.base import FakeGenerator
from rageval.jobs.control import create_job
from rageval.jobs.spec import JobSpec, JobStore
from rageval.jobs.worker import run_job
from rageval.store import RunReader
from rageval.store.jobs import DONE
from rageval.text_metrics import contains_answer
from tests.run_fixtures import N_QUERIES, K, build_small_run, make_small_run

MODEL = "fake-grader"
METHOD = f"umbrela@{MODEL}"
SMALL = build_small_run()
QUESTIONS = {query.text: query.answers for query in SMALL.queries}
#: The text of the first query's top passage: the fake grader's reply to it has no score line.
JUNK_FOR = next(p.text for p in SMALL.passages if p.passage_id == SMALL.rankings[0].passage_ids[0])


def grader_rule(prompt: str) -> str:
    """3 when the passage holds a gold answer, else 0; junk for the first query's top passage."""
    query = prompt.split("\nQuery: ", 1)[1].split("\nPassage: ", 1)[0]
    passage = prompt.split("\nPassage: ", 1)[1].split("\n\nSplit this problem", 1)[0]
    text = passage.split("\n", 1)[-1]
    if text.strip() == " ".join(JUNK_FOR.split()) or text.strip() == JUNK_FOR.strip():
        return "I cannot tell."
    return "##final score: 3" if contains_answer(passage, QUESTIONS[query]) else "##final score: 0"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))


def test_an_umbrela_job_stores_grades_and_unparsed_answers(tmp_path):
    run = make_small_run(tmp_path / "run.sqlite")
    with JobStore(tmp_path / "jobs.sqlite") as store:
        job = create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai", label_kind="umbrela",
                                           llm_cache=str(tmp_path / "llm.sqlite")), store)
        assert job.method == METHOD
        model = FakeGenerator(rule=grader_rule, model_id=MODEL)
        assert run_job(job.job_id, store, generator=model, log=lambda _: None).status == DONE
        asked = model.prompts_seen
        with RunReader(run) as reader:
            labels = reader.labels(METHOD)
            unparsed = reader.unparsed_answers(METHOD)
            measures = reader.measure_table()
            rankings = reader.rankings()
            counts = reader.unparsed_counts()
            settings = reader.settings()
        assert asked == N_QUERIES * K == len(labels) + len(unparsed)
        assert set(labels["value"]) <= {0.0, 3.0} and 3.0 in set(labels["value"])
        assert len(unparsed) > 0 and set(unparsed["answer"]) == {"I cannot tell."}
        assert counts == [(METHOD, MODEL, len(unparsed), N_QUERIES * K)]
        assert settings["rescored"][METHOD]["prompt"].startswith("umbrela-zeroshot-bing@1#")
        assert settings["rescored"][METHOD]["decoding"]["max_new_tokens"] == 24

        left_out = set(unparsed["query_id"])
        ours = measures[measures["method"] == METHOD]
        assert set(ours["query_id"]) == set(rankings) - left_out and set(ours["query_id"])
        grades: dict[str, dict[str, int]] = {}
        for q, p, v in zip(labels["query_id"], labels["passage_id"], labels["value"]):
            if q not in left_out:
                grades.setdefault(q, {})[p] = int(v)
        trec_run = {q: {p.passage_id: p.score for p in r.passages} for q, r in rankings.items() if q in grades}
        expected = pytrec_eval.RelevanceEvaluator(grades, {f"ndcg_cut_{K}", f"P_{K}"}).evaluate(trec_run)
        values = ours.set_index(["measure", "query_id"])["value"]
        for query_id in grades:
            assert values[(f"nDCG@{K}", query_id)] == pytest.approx(expected[query_id][f"ndcg_cut_{K}"])
            # grade 3 >= 2: relevant, so P on the grades' binary view is P on these 0/3 grades.
            assert values[(f"P@{K}", query_id)] == pytest.approx(expected[query_id][f"P_{K}"])

        # Run again: every item is answered (labelled or unparsed), so the model is not asked again.
        again = create_job(JobSpec.from_flat(str(run), model=MODEL, backend="openai", label_kind="umbrela",
                                             llm_cache=str(tmp_path / "llm.sqlite")), store)
        fresh = FakeGenerator(rule=grader_rule, model_id=MODEL)
        assert run_job(again.job_id, store, generator=fresh, log=lambda _: None).status == DONE
        assert fresh.prompts_seen == 0


def test_rescore_start_probes_through_the_llm_cache_so_the_job_asks_the_tried_passages_nothing(
        tmp_path, monkeypatch, capsys):
    """Issue 41, item 8: the CLI's probe goes through the job's LLM-call cache (``--cache``); the job then asks
    the model only the passages the probe did not."""
    from rageval.cli import main
    from rageval.generation import factory

    run = make_small_run(tmp_path / "run.sqlite")
    asked: list[str] = []

    def grader(prompt: str) -> str:
        asked.append(prompt)
        return grader_rule(prompt)

    monkeypatch.setattr(factory, "load_generator", lambda settings: FakeGenerator(grader, model_id=MODEL))
    folder = tmp_path / "grader"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # a model folder: found; the fake generator stands in for it
    code = main(["rescore", "start", str(run), "--labels", "umbrela", "--model", str(folder), "--jobs-db",
                 str(tmp_path / "jobs.sqlite"), "--cache", str(tmp_path / "llm.sqlite")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"this model ({MODEL}) answered " in out and " of 5 in UMBRELA's format" in out
    assert len(asked) == len(set(asked)) == N_QUERIES * K  # 5 by the probe, the rest by the job: none twice
