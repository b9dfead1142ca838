"""UMBRELA as a label method (Upadhyay et al. 2024; TREC RAG 2024's assessor), and LLM judges' unreadable answers.

- the prompt is UMBRELA's published zero-shot text, checked by the sha256 of castorini/umbrela's
  src/umbrela/prompts/qrel_zeroshot_bing.txt at commit 16cba3ebdfb79477850196695e06eef5ce96f339 (1,341 characters),
  with the query and the passage filled in;
- ``##final score: N`` parsing: the score lines, junk, out-of-range and non-integer numbers;
- the labels of a judge fed junk (a rule, and the tiny random Gemma the generation tests use) are unparsed, never 0;
- an end-to-end ``rageval evaluate --umbrela`` on a small invented set: graded labels stored, nDCG on them equal to
  pytrec_eval's on the same grades, the binary measures pytrec_eval's on grade >= 2, a query with an unread answer
  left out of the measures, the count in ``rageval info`` and on the Findings page; an older run file without the
  ``unparsed_answers`` table still opens.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3

import pytest
import pytrec_eval

from rageval.erag.baselines import compute_judge_labels, judge_of
from rageval.generation.base import FakeGenerator, first_capitalised_span
from rageval.labelmethods import LLM_RELEVANCE, UMBRELA, relevant_grade
from rageval.pipeline import run as pipeline
from rageval.pipeline.config import build_config
from rageval.prompts import UMBRELA_ZERO_SHOT, build_umbrela_prompt, parse_umbrela
from rageval.store import RunReader, read_run, write_run
from rageval.types import Passage, Query, Ranking, ScoredPassage
from tests.pipeline.test_pipeline import PASSAGES, QUESTIONS, dataset  # noqa: F401 (a fixture)

#: sha256 of the published prompt file's text (read from the repository, not from this code).
PUBLISHED_SHA256 = "c92537a4f97293dfe1fd5f3dccc3f7dea44e3ace65061a74dbf8afc833441546"

#: A grader for the invented set: 3 for the passage that holds a gold answer, 1 for one on the question's topic
#: words, 0 otherwise; junk (no score line) for the Nile passage, a score out of range for the Tokyo one.
GOLD_WORDS = {"u1": "discovered in 1898", "u2": "capital of Austria", "u3": "deepest lake", "u4": "highest mountain",
              "u5": "more water"}


def grade_rule(prompt: str) -> str:
    query = re.search(r"\nQuery: (.*)\nPassage: ", prompt).group(1)
    passage = prompt.split("\nPassage: ", 1)[1].split("\n\nSplit this problem", 1)[0]
    if passage.startswith("Nile"):
        return "The passage talks about a river."
    if passage.startswith("Tokyo"):
        return "##final score: 7"
    qid = next(q for q, text, *_ in QUESTIONS if text == query)
    words = GOLD_WORDS[qid]
    if words in passage:
        return "##final score: 3"
    return "##final score: 1" if any(w in passage.lower() for w in query.split()[-2:]) else "##final score: 0"


def test_the_prompt_is_umbrelas_published_text_with_query_and_passage_filled_in():
    text = UMBRELA_ZERO_SHOT.instruction
    assert len(text) == 1341 and hashlib.sha256(text.encode("utf-8")).hexdigest() == PUBLISHED_SHA256
    passage = Passage("p1", "Vienna", "Vienna is the capital of {Austria}.", "test")
    prompt = build_umbrela_prompt(" what is the capital of austria ", passage)
    head, tail = text.split("{query}")
    assert prompt.startswith(head) and prompt.endswith(tail.split("{passage}")[1])
    assert "\nQuery: what is the capital of austria\nPassage: Vienna\nVienna is the capital of {Austria}.\n\n" in prompt
    assert "{query}" not in prompt and prompt.endswith("##final score: score without providing any reasoning.")


@pytest.mark.parametrize(("reply", "grade"), [
    ("##final score: 2", 2), ("##final score: 0", 0), ("##Final Score: 3", 3), ("## final score:1", 1),
    ("M: 2, T: 1\n##final score: 3", 3), ("##final score: 2\n##final score: 3", 2), ("##final score: 3.", 3),
    ("##final score: 4", None), ("##final score: -1", None), ("##final score: 2.5", None), ("##final score: 10", None),
    ("final score: 2", None), ("3", None), ("The passage is relevant.", None), ("", None), ("##final score: two", None),
])
def test_parse_reads_the_final_score_line_and_nothing_else(reply, grade):
    assert parse_umbrela(reply) == grade


def _ranking(query_id: str, passage_ids) -> Ranking:
    return Ranking(query_id, tuple(ScoredPassage(p, float(-i)) for i, p in enumerate(passage_ids)))


def test_umbrela_labels_are_grades_and_unread_replies_are_unparsed_never_zero():
    passages = {p: Passage(p, t, x, "test") for p, (t, x) in PASSAGES.items()}
    queries = [Query(q, t, tuple(a), tuple(g), "test") for q, t, a, g, _ in QUESTIONS]
    rankings = {q: _ranking(q, ranked) for q, *_, ranked in QUESTIONS}
    generator = FakeGenerator(grade_rule, model_id="fake:grader/v1")
    labels, evidence, unparsed = compute_judge_labels(queries, rankings, passages, generator, 3, UMBRELA)
    by_pair = {(x.query_id, x.passage_id): x.value for x in labels}
    assert by_pair[("u1", "d02")] == 3.0 and by_pair[("u2", "d04")] == 3.0 and by_pair[("u3", "d05")] == 3.0
    assert {x.method for x in labels} == {UMBRELA} and set(by_pair.values()) <= {0.0, 1.0, 2.0, 3.0}
    # The Nile passage got no score line, the Tokyo one a 7: both unparsed, with no label (not a 0).
    assert sorted((u.query_id, u.item, u.answer) for u in unparsed) == [
        ("u2", "d08", "##final score: 7"), ("u4", "d08", "##final score: 7"),
        ("u5", "d10", "The passage talks about a river.")]
    assert all(u.judge == UMBRELA and u.model == "fake:grader/v1" for u in unparsed)
    assert not set(by_pair) & {(u.query_id, u.item) for u in unparsed}
    assert len(labels) + len(unparsed) == 15 and len(evidence) == len(labels)
    assert relevant_grade(UMBRELA) == 2 and relevant_grade(f"{UMBRELA}@gemma") == 2
    assert relevant_grade(LLM_RELEVANCE) is None


def test_a_junk_model_gives_unparsed_answers_for_both_llm_relevance_judgements(tiny_model_dir):
    from rageval.generation.transformers_backend import TransformersGenerator

    passages = {p: Passage(p, t, x, "test") for p, (t, x) in PASSAGES.items()}
    queries = [Query(q, t, tuple(a), tuple(g), "test") for q, t, a, g, _ in QUESTIONS[:2]]
    rankings = {q: _ranking(q, ranked) for q, *_, ranked in QUESTIONS[:2]}
    tiny = TransformersGenerator(tiny_model_dir, batch_size=6)  # random weights: its replies are noise
    for method in (UMBRELA, LLM_RELEVANCE):
        labels, _, unparsed = compute_judge_labels(queries, rankings, passages, tiny, 3, method)
        replies = [u.answer for u in unparsed]
        assert labels == [] and len(unparsed) == 6, replies
        assert all(judge_of(method).parse(reply) is None for reply in replies)


@pytest.fixture
def umbrela_run(dataset, tmp_path, tiny_model_dir):  # noqa: F811 (the fixture imported above)
    config = build_config({}, {"queries": str(dataset["queries"]), "corpus": str(dataset["corpus"]),
                               "run": str(dataset["run"]), "model": str(tiny_model_dir), "k": "1,3",
                               "methods": "e2e,baselines",
                               "label_metrics": "em", "umbrela": True, "cache": str(tmp_path / "llm.sqlite"),
                               "out": str(tmp_path / "runs" / "graded.sqlite")})

    def rule(prompt: str) -> str:
        if prompt.startswith("Given a query and a passage"):
            return grade_rule(prompt)
        final = prompt.rsplit("\n\n", 1)[-1]
        if final.rstrip().endswith("Relevant:"):
            return "Perhaps" if "Nile" in final else ("Yes" if "Curie" in final else "No")
        return first_capitalised_span(prompt)  # the QA prompts: E2E answers

    return pipeline.evaluate(config, generator=FakeGenerator(rule, model_id="fake:grader/v1"), log=lambda _: None)


def _trec(qrels, run, measures):
    evaluator = pytrec_eval.RelevanceEvaluator({q: {p: int(v) for p, v in rels.items()} for q, rels in qrels.items()},
                                               measures)
    return evaluator.evaluate(run)


def test_evaluate_with_umbrela_stores_grades_and_its_measures_are_pytrec_evals(umbrela_run):
    run = read_run(umbrela_run)
    settings = run.settings
    assert UMBRELA in settings["label_methods"] and UMBRELA not in settings["graded_label_methods"]
    assert any(key.startswith("umbrela-zeroshot-bing@1#") for key in settings["prompts"])
    assert settings["llm_calls"]["by_stage"][UMBRELA]["calls"] == len(QUESTIONS) * 3
    grades = {}
    for x in run.labels:
        if x.method == UMBRELA:
            grades.setdefault(x.query_id, {})[x.passage_id] = x.value
    assert {v for rels in grades.values() for v in rels.values()} <= {0.0, 1.0, 2.0, 3.0}
    assert any(v == 3.0 for rels in grades.values() for v in rels.values())
    unparsed = {(u.judge, u.query_id, u.item) for u in run.unparsed}
    assert {(UMBRELA, "u2", "d08"), (UMBRELA, "u4", "d08"), (UMBRELA, "u5", "d10"),
            (LLM_RELEVANCE, "u5", "d10")} == unparsed
    measured = {}
    for v in run.measure_values:
        if v.method == UMBRELA:
            measured.setdefault(v.measure, {})[v.query_id] = v.value
    # u2, u4, u5 had an unread answer: left out of UMBRELA's measures (no value, rather than a 0 for that passage).
    assert set(measured["nDCG@3"]) == set(measured["P@3"]) == {"u1", "u3"}
    trec_run = {r.query_id: {p: 10.0 - i for i, p in enumerate(r.passage_ids)} for r in run.rankings}
    on_grades = _trec(grades, trec_run, {"ndcg_cut_3"})
    relevant = {q: {p: float(v >= 2) for p, v in rels.items()} for q, rels in grades.items()}
    on_relevant = _trec(relevant, trec_run, {"P_3", "recip_rank"})
    # At cutoff 1 a list-bound method sees the label of the top passage only (eRAG's G_q on R_1).
    top_one = {q: {p: v for p, v in rels.items() if p == run_order[q][0]} for q, rels in grades.items()
               for run_order in [{r.query_id: r.passage_ids for r in run.rankings}]}
    at_one = _trec(top_one, trec_run, {"ndcg_cut_1"})
    for query_id in ("u1", "u3"):
        assert measured["nDCG@3"][query_id] == pytest.approx(on_grades[query_id]["ndcg_cut_3"])
        assert measured["nDCG@1"][query_id] == pytest.approx(at_one[query_id]["ndcg_cut_1"])
        assert measured["P@3"][query_id] == pytest.approx(on_relevant[query_id]["P_3"])
        assert measured["RR@3"][query_id] == pytest.approx(on_relevant[query_id]["recip_rank"])
    # Grade 1 is not relevant for P, but a gain for nDCG: u3's top 3 hold grades 1, 3, 0.
    assert [grades["u3"][p] for p in ("d06", "d05", "d01")] == [1.0, 3.0, 0.0]
    assert measured["P@3"]["u3"] == pytest.approx(1 / 3) and measured["Hit@1"]["u3"] == 0.0
    assert 0 < measured["nDCG@3"]["u3"] < 1  # grades 1, 3, 0: not the ideal order 3, 1, 0
    # UMBRELA's correlations with E2E joined the table, over the 2 queries it measured.
    rows = [c for c in run.correlations if c.method == UMBRELA]
    assert rows and {c.n for c in rows} == {2}


def test_the_unparsed_counts_are_shown_by_rageval_info(umbrela_run, capsys):
    from rageval.cli import main

    with RunReader(umbrela_run) as reader:
        counts = reader.unparsed_counts()
    assert counts == [(LLM_RELEVANCE, "fake:grader/v1", 1, 15), (UMBRELA, "fake:grader/v1", 3, 15)]
    assert main(["info", str(umbrela_run)]) == 0
    out = capsys.readouterr().out
    assert "3 of 15 answers of the judge fake:grader/v1 could not be parsed (umbrela: " in out
    assert "1 of 15 answers of the judge fake:grader/v1 could not be parsed (llm_relevance: " in out
    assert re.search(r"share of labels >= 2 \(umbrela\): 0\.\d{3} over 12 labels \(mean grade", out)


def test_the_findings_and_correlations_pages_say_how_many_answers_were_unparsed(umbrela_run, monkeypatch):
    from tests.ui.test_app import CORRELATIONS, HOME, start

    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(umbrela_run.parent))
    for page in (HOME, CORRELATIONS):
        app = start(page, run="graded")
        # One compact notice, each judge's sentence in the "Unread judge answers" expander (issue 42, item 4).
        (details,) = [e for e in app.expander if e.label == "Unread judge answers"]
        sentences = [m.value.replace("\\", "").lstrip("- ") for m in details.markdown]
        sentences = [line.lstrip("- ") for text in sentences for line in text.splitlines()]
        assert any(w.startswith("3 of 15 answers of the judge fake:grader/v1 could not be parsed (UMBRELA: ")
                   and "left out of UMBRELA's measures" in w for w in sentences), (page, sentences)
        assert any(w.startswith("1 of 15 answers of the judge fake:grader/v1 could not be parsed (LLM relevance")
                   for w in sentences), (page, sentences)


def test_a_run_file_without_the_unparsed_table_still_opens(umbrela_run, tmp_path):
    old = tmp_path / "old.sqlite"
    write_run(read_run(umbrela_run), old)
    with sqlite3.connect(old) as connection:
        connection.execute("DROP TABLE unparsed_answers")
    with RunReader(old) as reader:
        assert reader.unparsed_counts() == [] and reader.unparsed_answers().empty
        assert UMBRELA in reader.label_methods()
    assert list(read_run(old).unparsed) == []


def test_answers_an_older_rageval_stored_as_no_are_counted_from_their_evidence(monkeypatch):
    """The shipped NQ run was built when an unread reply was stored as No, with its evidence saying so: the count
    is read back, and equals the replies (quoted in the evidence) that parse_yes_no cannot read."""
    from pathlib import Path

    from rageval.prompts import parse_yes_no
    from tests.app_helpers import use_shipped_runs
    from tests.ui.test_app import HOME, start

    path = Path("data/runs/nq_open-bm25-gemma3_270m.sqlite")
    with RunReader(path) as reader:
        counted = {judge: (count, answers) for judge, _, count, answers in reader.counted_as_no()}
        evidence = reader.label_evidence()
        verdicts = reader.verdicts()
        assert reader.unparsed_counts() == []

    def unread(texts) -> int:
        replies = [re.search(r" replied '(.*)'", text, re.DOTALL).group(1) for text in texts]
        return sum(parse_yes_no(reply) is None for reply in replies)

    relevance = evidence[evidence["method"] == LLM_RELEVANCE]["evidence"]
    assert counted[LLM_RELEVANCE] == (unread(relevance), len(relevance)) and counted[LLM_RELEVANCE][0] > 0
    for reference in ("semi_gold", "gold_answers"):
        judged = verdicts[(verdicts["judge"] == "llm") & (verdicts["reference"] == reference)]["evidence"]
        assert counted[f"llm/{reference}"] == (unread(judged), len(judged))
    use_shipped_runs(monkeypatch)
    app = start(HOME, run=path.stem)
    (details,) = [e for e in app.expander if e.label == "Unread judge answers"]
    warnings = [line.lstrip("- ") for m in details.markdown for line in m.value.replace("\\", "").splitlines()]
    count, answers = counted[LLM_RELEVANCE]
    assert any(w.startswith(f"{count} of {answers:,} answers of the judge google/gemma-3-270m") and
               "stored them as No" in w for w in warnings), warnings
