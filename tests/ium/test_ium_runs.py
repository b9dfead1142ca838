"""``rageval ium --runs`` (issue 19): IUM with one agent per eRAG run file, on runs this test builds itself.

Data: the first 24 NQ-open questions of the shipped oracle file (each with its gold passage; a question's 6
candidates are its gold passage, at rank 1 + i mod 6, and the next questions' gold passages) and the first 18
HotpotQA dev questions (each with its own first 6 paragraphs, in file order). Runs: ``rageval evaluate``'s pipeline
on TREC files of those candidates, every LLM call going to a fake LLM served by ``rageval.generation.server`` (so
the runs record an OpenAI-compatible model, as a user's would): ``fake-reader`` answers right when any passage of its
prompt holds a gold answer, ``fake-first`` only when the first one does. Three runs: NQ x fake-reader (EM), NQ x
fake-first (accuracy), HotpotQA x fake-reader (F1). ``rageval ium --runs`` then trains a tiny cross-encoder (2-layer
BERT, random weights) on their labels and asks the same served models for what the runs do not hold.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from rageval.cli import main
from rageval.data.loaders import read_hotpotqa
from rageval.generation.base import FakeGenerator
from rageval.generation.server import serve
from rageval.paths import DATA_DIR
from rageval.store import RunReader
from rageval.store.ium import read_ium_run
from rageval.types import Passage
from tests.retrieval.test_rerank import tiny_bert_dir  # noqa: F401  (a session fixture)
from tests.run_fixtures import read_oracle_head
from tests.ui.test_app import REPO, start

AGENTS_PAGE = str(REPO / "app_pages" / "4_Agents_IUM.py")
DEPTH = 6
N_NQ, N_HOTPOT = 24, 18


def _dataset() -> tuple[list[dict], list[dict], dict[str, list[str]], dict[str, list[str]]]:
    """Questions (rageval's JSONL records), passages, the candidates of each question, and answers by question."""
    queries, gold = read_oracle_head(N_NQ)
    questions, passages, ranked = [], {p.passage_id: p for p in gold}, {}
    for i, q in enumerate(queries):
        others = [gold[(i + step) % len(gold)].passage_id for step in range(1, DEPTH)]
        at = i % DEPTH
        ranked[q.query_id] = [*others[:at], q.gold_passage_ids[0], *others[at:]][:DEPTH]
        questions.append({"query_id": q.query_id, "text": q.text, "answers": list(q.answers),
                          "gold_passage_ids": list(q.gold_passage_ids), "dataset": "nq_open"})
    for record in read_hotpotqa(DATA_DIR / "hotpotqa" / "hotpotqa_dev400_distractor.jsonl.gz")[:N_HOTPOT]:
        qid = f"hotpotqa:{record.question_id}"
        ids = []
        for context in record.contexts[:DEPTH]:
            pid = f"hotpotqa:{record.question_id}:{context.context_id}"
            passages[pid] = Passage(pid, context.title, context.text, "hotpotqa")
            ids.append(pid)
        ranked[qid] = ids
        questions.append({"query_id": qid, "text": record.question, "answers": list(record.answers),
                          "gold_passage_ids": [f"hotpotqa:{record.question_id}:{c.context_id}"
                                               for c in record.contexts if c.is_supporting], "dataset": "hotpotqa"})
    answers = {" ".join(q["text"].split()): q["answers"] for q in questions}
    records = [{"passage_id": p.passage_id, "title": p.title, "text": p.text} for p in passages.values()]
    return questions, records, ranked, answers


def reader(answers: dict[str, list[str]], first_only: bool):
    """A fake LLM rule over rageval's QA prompt: the gold answer when a passage of the prompt's last block (the
    first one only, with ``first_only``) contains it, else "unknown"."""

    def rule(prompt: str) -> str:
        last = prompt.split("\n\n")[-1]
        question = re.findall(r"Question: (.*)", last)[-1].strip()
        read = last.rsplit("Question:", 1)[0]
        if first_only:
            read = "\n".join(read.split("\n")[:2])
        for answer in answers.get(question, ()):
            if answer.lower() in read.lower():
                return answer
        return "unknown"

    return rule


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _evaluate(files: dict, dataset: str, server, model: str, metric: str, out: Path, cache: Path) -> Path:
    from rageval.pipeline import run as pipeline
    from rageval.pipeline.config import build_config

    config = build_config({}, {"queries": str(files[f"{dataset}-queries"]), "corpus": str(files["passages"]),
                               "run": str(files[f"{dataset}-run"]), "k": f"1,2,{DEPTH}", "methods": "erag,e2e",
                               "label_metrics": "em,f1,accuracy", "metric": metric, "dataset": dataset,
                               "backend": "openai", "base_url": server.base_url, "model": model, "batch_size": 8,
                               "out": str(out), "cache": str(cache)})
    return pipeline.evaluate(config, log=lambda _: None)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The three runs (and the served fake models, up for the whole module)."""
    folder = tmp_path_factory.mktemp("ium-runs")
    questions, passages, ranked, answers = _dataset()
    files = {"passages": _jsonl(folder / "passages.jsonl", passages)}
    for dataset in ("nq_open", "hotpotqa"):
        mine = [q for q in questions if q["dataset"] == dataset]
        files[f"{dataset}-queries"] = _jsonl(folder / f"{dataset}.jsonl",
                                             [{k: v for k, v in q.items() if k != "dataset"} for q in mine])
        files[f"{dataset}-run"] = folder / f"{dataset}.trec"
        files[f"{dataset}-run"].write_text("".join(
            f"{q['query_id']} Q0 {pid} {rank} {DEPTH + 1 - rank} mine\n" for q in mine
            for rank, pid in enumerate(ranked[q["query_id"]], start=1)))
    cache = folder / "llm.sqlite"
    runs = folder / "runs"
    with serve(FakeGenerator(reader(answers, False), "fake-reader"), model_name="fake-reader") as full, \
            serve(FakeGenerator(reader(answers, True), "fake-first"), model_name="fake-first") as first:
        paths = [_evaluate(files, "nq_open", full, "fake-reader", "em", runs / "nq-reader.sqlite", cache),
                 _evaluate(files, "nq_open", first, "fake-first", "accuracy", runs / "nq-first.sqlite", cache),
                 _evaluate(files, "hotpotqa", full, "fake-reader", "f1", runs / "hotpot-reader.sqlite", cache)]
        yield {"folder": folder, "runs": paths, "cache": cache, "files": files, "answers": answers,
               "servers": (full, first)}


def ium_args(world, encoder: Path, out: Path, *runs, cache: Path | None = None) -> list[str]:
    return ["ium", "--runs", *map(str, runs or world["runs"]), "--encoder", str(encoder), "--iterations", "2",
            "--epochs", "1", "--train-k", "3", "--batch-sizes", "3", "--test-share", "0.4", "--no-checkpoints",
            "--cache", str(cache or world["cache"]), "--out", str(out)]


@pytest.fixture(scope="module")
def ium_run(world, tiny_bert_dir, tmp_path_factory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("ium-out") / "ium" / "mine.sqlite"
    assert main(ium_args(world, tiny_bert_dir, out)) == 0
    return out


def test_each_run_is_an_agent_with_its_own_identity_and_questions(world, ium_run):
    settings, tables = read_ium_run(ium_run)
    agents = tables["agents"].set_index("name")
    assert list(agents.index) == ["nq_open/fake-reader/em/k2", "nq_open/fake-first/accuracy/k2",
                                  "hotpotqa/fake-reader/f1/k2"]
    assert list(agents["task_id"]) == ["nq_open", "nq_open", "hotpotqa"]
    assert list(agents["model_id"]) == ["fake-reader", "fake-first", "fake-reader"]
    assert list(agents["generator"]) == ["openai-compatible:fake-reader", "openai-compatible:fake-first",
                                         "openai-compatible:fake-reader"]
    assert list(agents["run"]) == [p.name for p in world["runs"]]
    assert settings["source"] == "runs" and [r["path"] for r in settings["runs"]] == [str(p) for p in world["runs"]]
    assert settings["plan"]["config"]["encoder"] and settings["plan"]["config"]["init"] is None
    queries = tables["queries"]
    # The split is by question: the two NQ agents share their test questions, and no question is trained on by
    # one agent and tested on by another.
    test_of = {a: set(g.query_id) for a, g in queries[queries.split == "test"].groupby("agent")}
    train_of = {a: set(g.query_id) for a, g in queries[queries.split == "train"].groupby("agent")}
    assert test_of["nq_open/fake-reader/em/k2"] == test_of["nq_open/fake-first/accuracy/k2"]
    assert not set().union(*test_of.values()) & set().union(*train_of.values())
    for run, name in zip(settings["runs"], agents.index):
        assert run["train"] == len(train_of[name]) and run["test"] == len(test_of[name])
        assert run["train"] + run["test"] == run["questions"] == (N_NQ if "nq" in name else N_HOTPOT)


def test_iteration_one_learns_from_every_stored_label(world, ium_run):
    settings, tables = read_ium_run(ium_run)
    feedback, queries = tables["feedback"], tables["queries"]
    for path, run in zip(world["runs"], settings["runs"]):
        with RunReader(path) as reader:
            labels = reader.labels(f"erag:{run['metric']}")
        train = set(queries[(queries.agent == run["agent"]) & (queries.split == "train")].query_id)
        stored = labels[labels.query_id.isin(train)].set_index(["query_id", "passage_id"]).value.sort_index()
        used = feedback[(feedback.phase == "offline-IUM@t1") & (feedback.agent == run["agent"])]
        used = used.set_index(["query_id", "passage_id"]).utility.sort_index()
        assert len(stored) == len(train) * DEPTH
        pd.testing.assert_series_equal(used, stored, check_names=False)
        assert settings["llm_calls"][run["agent"]]["stored_labels"] >= len(stored)
    # Later iterations and online batches serve top 3 of the same 6 labelled candidates: still no model call for
    # feedback; the answers to the reranked test lists are the only calls the run could not answer.
    phases = set(feedback.phase)
    assert {"offline-IUM@t2", "online-IUM@b3"} <= phases


def test_the_first_stage_answers_are_the_runs_own_and_every_method_is_scored(world, ium_run):
    settings, tables = read_ium_run(ium_run)
    outcomes = tables["outcomes"]
    for method in ("first-stage", "reranker-individual", "reranker-dataset", "uRAG", "offline-IUM",
                   "offline-IUM@t0", "offline-IUM@t1", "offline-IUM@t2", "offline-IUM-nonpersonalised@t2",
                   "online-IUM@b3", "online-IUM"):
        for run in settings["runs"]:
            rows = outcomes[(outcomes.method == method) & (outcomes.agent == run["agent"])]
            assert len(rows) == run["test"], (method, run["agent"])
    for path, run in zip(world["runs"], settings["runs"]):
        with RunReader(path) as reader:
            stored = reader.e2e_table()
        stored = stored[stored.k == 2].set_index("query_id").output
        mine = outcomes[(outcomes.method == "first-stage") & (outcomes.agent == run["agent"])]
        assert dict(zip(mine.query_id, mine.output)) == {q: stored[q] for q in mine.query_id}
        assert settings["llm_calls"][run["agent"]]["stored_answers"] >= run["test"]
    # The fake readers' answers are real utilities: the full reader is right on some first-stage lists.
    assert outcomes[outcomes.method == "first-stage"].score.max() == 1.0
    significance = tables["significance"]
    assert {"first-stage", "offline-IUM"} <= set(significance.method_a) | set(significance.method_b)
    pairs = set(zip(tables["personalisation"].agent_a, tables["personalisation"].agent_b))
    assert pairs == {("nq_open/fake-reader/em/k2", "nq_open/fake-first/accuracy/k2")}


def test_the_agents_page_shows_the_run(ium_run, monkeypatch):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(ium_run.parent.parent))
    app = start(AGENTS_PAGE)
    frames = [df.value for df in app.dataframe]
    agents = next(f for f in frames if "Agent" in f.columns and "Run file" in f.columns)
    assert list(agents["Run file"]) == ["nq-reader.sqlite", "nq-first.sqlite", "hotpot-reader.sqlite"]
    summary = next(f for f in frames if "first-stage" in f.columns)
    assert "offline-IUM" in summary.columns and "macro average" in summary.index
    intervals = next(f for f in frames if "Macro average % [95% interval]" in f.columns).set_index("Method")
    assert intervals.loc["first-stage", "Minus the first stage, points [95% interval]"] == "–"
    macro = summary.loc["macro average", "offline-IUM"]
    assert re.fullmatch(rf"{macro:.1f} \[\d+\.\d, \d+\.\d\]",
                        intervals.loc["offline-IUM", "Macro average % [95% interval]"])
    assert re.fullmatch(r"[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\]",
                        intervals.loc["offline-IUM", "Minus the first stage, points [95% interval]"])
    captions = " ".join(c.value for c in app.caption)
    assert "3 run files" in captions and "test queries per agent" in captions
    assert not app.exception


def test_warm_start_from_a_saved_cross_encoder_is_recorded(world, tiny_bert_dir, tmp_path):  # noqa: F811
    from rageval.ium.learning import IumConfig, new_model
    from rageval.retrieval.rerank import CrossEncoder, CrossEncoderSettings

    saved = CrossEncoder.from_encoder(tiny_bert_dir, CrossEncoderSettings(max_length=128), model_id="nq-like",
                                      seed=3, device="cpu").save(tmp_path / "saved")
    tokens = ("[task:nq_open]", "[model:fake-reader]")
    warm = new_model(tokens, IumConfig(init=str(saved)), "ium-test")
    cold = new_model(tokens, IumConfig(encoder=str(tiny_bert_dir)), "ium-test")
    assert warm.settings.special_tokens == tokens and warm.settings.max_length == 128
    assert all(t in warm.tokenizer.get_vocab() for t in tokens)
    pair = [("[task:nq_open] [model:fake-reader] who?", "Title: T. Text.")]
    loaded = CrossEncoder.load(saved)
    plain = [("who?", "Title: T. Text.")]
    assert warm.score_pairs(plain) == pytest.approx(loaded.score_pairs(plain), abs=1e-6)  # the saved weights
    assert warm.score_pairs(pair) != pytest.approx(cold.score_pairs(pair), abs=1e-6)
    assert warm.lineage != cold.lineage
    out = tmp_path / "warm.sqlite"
    assert main([*ium_args(world, tiny_bert_dir, out, world["runs"][0]), "--init", str(saved),
                 "--first-labels", "2"]) == 0
    settings, tables = read_ium_run(out)
    assert settings["plan"]["config"]["init"] == str(saved.resolve()) == settings["warm_start"]
    # --first-labels 2: iteration 1 learns from the labels of each training question's first 2 candidates only.
    first = tables["feedback"][tables["feedback"].phase == "offline-IUM@t1"]
    assert settings["first_labels"] == 2 and len(first) == 2 * settings["runs"][0]["train"]
    with RunReader(world["runs"][0]) as reader:
        rankings = reader.rankings()
    assert {(q, p) for q, p in zip(first.query_id, first.passage_id)} == {
        (q, p) for q in set(first.query_id) for p in rankings[q].passage_ids[:2]}


def test_bad_runs_are_one_error_naming_the_file(world, tiny_bert_dir, tmp_path, capsys):  # noqa: F811
    from tests.user_run_fixtures import build_uploaded_run

    out = tmp_path / "out.sqlite"
    uploaded = build_uploaded_run(tmp_path / "upload", tmp_path, "no-labels")
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database\n")
    copy = Path(shutil.copy(world["runs"][0], tmp_path / "copy.sqlite"))
    for runs, expected in (([world["runs"][0], uploaded], f"{uploaded}: no eRAG labels under"),
                           ([text], str(text)),
                           ([world["runs"][0], copy], f"{copy}: the same agent as {world['runs'][0]}")):
        assert main(ium_args(world, tiny_bert_dir, out, *runs)) == 2
        error = capsys.readouterr().err
        assert error.startswith("rageval: error: ") and expected in error, error
        assert "Traceback" not in error and not out.exists()


def test_runs_that_disagree_on_a_passage_are_one_error_and_question_ids_are_per_agent(world, tiny_bert_dir,  # noqa: F811
                                                                                        tmp_path, capsys):
    import dataclasses
    import random

    from rageval.ium.agents import AgentSpec
    from rageval.ium.learning import FeedbackRow, queries_by_agent, training_examples
    from rageval.store import read_run, write_run
    from rageval.types import Query

    run = read_run(world["runs"][1])
    changed = dataclasses.replace(run.passages[0], text="Another text under the same id.")
    other = write_run(dataclasses.replace(run, passages=[changed, *run.passages[1:]]), tmp_path / "other.sqlite")
    out = tmp_path / "out.sqlite"
    assert main(ium_args(world, tiny_bert_dir, out, world["runs"][0], other)) == 2
    error = capsys.readouterr().err
    assert f"{other}: passage {changed.passage_id!r} is not the passage of that id in {world['runs'][0]}" in error
    # Two agents may use one question id for two questions (two uploads numbered 1..n): each keeps its own text.
    specs = {name: AgentSpec(name, name, name, "m", 1, "em") for name in ("a", "b")}
    queries = queries_by_agent({"a": [Query("1", "who wrote hamlet")], "b": [Query("1", "what is the capital")]})
    rows = [FeedbackRow("a", "1", "p", 1.0), FeedbackRow("b", "1", "p", 0.0)]
    examples = training_examples(rows, specs, queries, {"p": run.passages[0]}, True, 0.0, random.Random(0))
    assert [text for text, _, _ in examples] == ["[task:a] [model:m] who wrote hamlet",
                                                 "[task:b] [model:m] what is the capital"]


def test_a_model_that_cannot_be_reached_is_one_clear_error(world, tiny_bert_dir, tmp_path, capsys):  # noqa: F811
    """A run whose model server is down, with an empty LLM cache: training needs no model (the run's labels), the
    reranked lists' answers do: one error naming the run, the model and how many answers it lacks."""
    answers = world["answers"]
    with serve(FakeGenerator(reader(answers, False), "fake-gone"), model_name="fake-gone") as server:
        run = _evaluate(world["files"], "hotpotqa", server, "fake-gone", "em", tmp_path / "gone.sqlite",
                        tmp_path / "llm.sqlite")
    out = tmp_path / "out.sqlite"
    assert main(ium_args(world, tiny_bert_dir, out, run, cache=tmp_path / "empty.sqlite")) == 2
    error = capsys.readouterr().err
    assert re.search(rf"rageval: error: {re.escape(str(run))}: \d+ answers of this run's model are neither in the "
                     r"run nor in the LLM-call cache, and the model did not answer: cannot reach", error), error
    assert not out.exists()


def test_the_results_section_reads_a_run_of_run_files(ium_run):
    from rageval.ium.results_section import ium_sections

    text = "\n".join(ium_sections(ium_run))
    assert "| agent | first stage | reranker/agent |" in text and "| macro average |" in text
    assert "test queries per agent (each run's questions split by a seeded hash, test share 0.4" in text
    assert "starting from an untrained head" in text and "`nq-reader.sqlite`" in text
    assert "every eRAG label the runs hold on the training questions' candidates" in text


def test_the_macro_interval_and_the_difference_are_read_from_the_outcomes(ium_run):
    from rageval.ium.experiment import macro_interval, summary_table

    _, tables = read_ium_run(ium_run)
    outcomes, agents = tables["outcomes"], tables["agents"]
    macro = summary_table(outcomes).loc["macro average"]
    level = macro_interval(outcomes, agents, "offline-IUM")
    assert level.mean == pytest.approx(macro["offline-IUM"]) and level.low <= level.mean <= level.high
    difference = macro_interval(outcomes, agents, "offline-IUM", "first-stage")
    assert difference.mean == pytest.approx(macro["offline-IUM"] - macro["first-stage"])
    assert difference.low <= difference.mean <= difference.high


def test_the_results_report_has_the_ablation_the_test_size_and_an_honest_direction(world, ium_run,
                                                                                    tiny_bert_dir,  # noqa: F811
                                                                                    tmp_path):
    from rageval.ium.results_section import ABLATION_ARMS, DEMO_RUNS_IUM, ium_report

    folder = tmp_path / "ium"
    (folder / "ablation").mkdir(parents=True)
    shutil.copy(ium_run, folder / DEMO_RUNS_IUM)
    args = ium_args(world, tiny_bert_dir, tmp_path / "unused.sqlite")
    args = args[:args.index("--out")]
    for _, name in ABLATION_ARMS[:2]:  # the third arm is left unbuilt
        assert main([*args, "--label-ablation", str(folder / name)]) == 0
    text = "\n".join(ium_report(folder))
    assert "| engine | macro average % | minus first stage |" in text
    assert re.search(r"\*\*The paper's direction (holds here|does not hold here|is neither shown nor refuted here)"
                     r"\*\*: offline IUM minus each run's own ranking: [+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\] points",
                     text), text
    ablation = [line for line in text.splitlines() if line.startswith(("| recipe", "| untrained", "| NQ reranker"))]
    assert len(ablation) == len(ABLATION_ARMS) and ablation[0].split("|")[3:] == ablation[1].split("|")[3:]
    assert re.search(r"\| \d+\.\d \[\d+\.\d, \d+\.\d\] \|", ablation[0]), ablation[0]
    assert all("_not built: `" in row for row in ablation[2:])  # the same two arms above, then the unbuilt ones
    assert "paired test answers" in text and "| scenario | p10 | p01 | n (Connor) | n (exact test) |" in text
    assert ium_report(tmp_path / "nothing") == []


def test_the_direction_sentence_follows_the_interval():
    from rageval.ium.results_section import direction_sentence
    from rageval.stats.intervals import MeanInterval

    assert "holds here" in direction_sentence(MeanInterval(0.03, 0.01, 0.05, 100), "BM25")
    assert "does not hold here" in direction_sentence(MeanInterval(-0.03, -0.05, -0.01, 100), "BM25")
    assert "neither shown nor refuted" in direction_sentence(MeanInterval(0.01, -0.01, 0.03, 100), "BM25")


def test_a_label_ablation_arm_scores_the_served_lists_by_the_stored_labels(world, tiny_bert_dir, tmp_path,  # noqa: F811
                                                                          capsys):
    from rageval.errors import RagevalError
    from rageval.ium.experiment import macro_interval
    from rageval.ium.run_file_agents import read_label_ablation
    from rageval.store import read_run

    out = tmp_path / "arm.json"
    args = [a for a in ium_args(world, tiny_bert_dir, tmp_path / "unused.sqlite") if a not in ("--out",)]
    args = args[:args.index(str(tmp_path / "unused.sqlite"))]
    assert main([*args, "--first-labels", "2", "--label-ablation", str(out)]) == 0
    assert not (tmp_path / "unused.sqlite").exists()
    arm = read_label_ablation(out)
    assert arm.settings["first_labels"] == 2 and arm.settings["new_calls"] == 0  # every candidate is labelled
    assert set(arm.outcomes.method) == {"first-stage", "offline-IUM@t1", "offline-IUM@t2"}
    # The first stage's score is the mean stored label of each test question's top k, read here from the runs.
    first = arm.outcomes[arm.outcomes.method == "first-stage"]
    for path, agent in zip(world["runs"], arm.agents.name):
        run = read_run(path)
        method = f"erag:{run.settings['e2e_metric']}"
        value = {(x.query_id, x.passage_id): x.value for x in run.labels if x.method == method}
        ranking = {r.query_id: r.passage_ids for r in run.rankings}
        mine = first[first.agent == agent]
        expected = [sum(value[(q, p)] for p in ranking[q][:2]) / 2 for q in mine.query_id]
        assert mine.score.tolist() == pytest.approx(expected)
    difference = macro_interval(arm.outcomes, arm.agents, "offline-IUM@t2", "first-stage")
    assert difference.low <= difference.mean <= difference.high
    assert "label ablation" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(RagevalError, match=r"bad\.json: not an IUM label-ablation file"):
        read_label_ablation(tmp_path / "bad.json")
