"""``rageval evaluate`` on a small dataset no code has seen: its own questions with answers, corpus and candidate
lists (rageval's JSONL + a TREC run, and a BEIR folder), through the command line with a tiny model built from a
config; ``info --json`` against what was asked; ``--dry-run`` call counts against the calls the model then gets;
bad input as one line naming file, line and field, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rageval.cli import main
from rageval.generation.base import FakeGenerator
from rageval.pipeline import run as pipeline
from rageval.pipeline.config import build_config
from rageval.pipeline.summary import missing_pieces, run_summary
from rageval.store import RunReader, read_run
from rageval.text_metrics import contains_answer

# A small invented set: 5 questions about 13 short passages, 2 distractors per question, gold passages known.
PASSAGES = {
    "d01": ("Marie Curie", "Marie Curie was a physicist and chemist who worked in Paris."),
    "d02": ("Radium", "Radium was discovered in 1898 by Marie Curie and Pierre Curie."),
    "d03": ("Danube", "The Danube flows through Vienna, Bratislava and Budapest to the Black Sea."),
    "d04": ("Vienna", "Vienna is the capital of Austria."),
    "d05": ("Lake Baikal", "Lake Baikal in Siberia is the deepest lake in the world."),
    "d06": ("Siberia", "Siberia is a region of Russia east of the Ural Mountains."),
    "d07": ("Mount Fuji", "Mount Fuji is the highest mountain in Japan."),
    "d08": ("Tokyo", "Tokyo is the capital of Japan and its largest city."),
    "d09": ("Amazon", "The Amazon river carries more water than any other river."),
    "d10": ("Nile", "The Nile is often called the longest river in Africa."),
    "d11": ("Penguin", "Emperor penguins breed in the Antarctic winter."),
    "d12": ("Antarctica", "Antarctica is the coldest continent."),
    "d13": ("Brazil", "Brasilia is the capital of Brazil."),
}
QUESTIONS = [  # id, text, answers, gold passages, ranked candidates (best first)
    ("u1", "who discovered radium", ["Marie Curie", "Curie"], ["d02"], ["d01", "d02", "d03"]),
    ("u2", "what is the capital of austria", ["Vienna"], ["d04"], ["d03", "d04", "d08"]),
    ("u3", "what is the deepest lake in the world", ["Lake Baikal"], ["d05"], ["d06", "d05", "d01"]),
    ("u4", "what is the highest mountain in japan", ["Mount Fuji"], ["d07"], ["d08", "d07", "d06"]),
    ("u5", "which river carries the most water", ["Amazon"], ["d09"], ["d10", "d09", "d13"]),
]
K = 3


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def dataset(tmp_path) -> dict[str, Path]:
    """The set in rageval's own form: questions JSONL, passages JSONL, a TREC run (descending scores)."""
    folder = tmp_path / "mydata"
    folder.mkdir()
    files = {
        "queries": write_jsonl(folder / "questions.jsonl", [
            {"query_id": q, "text": t, "answers": a, "gold_passage_ids": g} for q, t, a, g, _ in QUESTIONS]),
        "corpus": write_jsonl(folder / "corpus.jsonl", [
            {"passage_id": p, "title": t, "text": x} for p, (t, x) in PASSAGES.items()]),
        "run": folder / "system.trec",
    }
    files["run"].write_text("".join(f"{q} Q0 {p} {rank} {20 - rank} my-retriever\n" for q, _, _, _, ranked in QUESTIONS
                                    for rank, p in enumerate(ranked, start=1)))
    return files


@pytest.fixture
def beir(tmp_path) -> Path:
    """The same set as a BEIR folder: corpus.jsonl (_id/title/text), queries.jsonl (answers in metadata),
    qrels/test.tsv with its header."""
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    write_jsonl(folder / "corpus.jsonl", [{"_id": p, "title": t, "text": x, "metadata": {}}
                                          for p, (t, x) in PASSAGES.items()])
    write_jsonl(folder / "queries.jsonl", [{"_id": q, "text": t, "metadata": {"answers": a}}
                                           for q, t, a, _, _ in QUESTIONS])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{p}\t1\n" for q, _, _, gold, _ in QUESTIONS for p in gold))
    return folder


def run_cli(args, capsys, monkeypatch, cache: Path):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(cache))
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_evaluate_on_own_data_through_the_cli_with_a_tiny_model(dataset, tiny_model_dir, tmp_path, capsys,
                                                                 monkeypatch):
    out = tmp_path / "runs" / "mine.sqlite"
    args = ["evaluate", "--queries", dataset["queries"], "--corpus", dataset["corpus"], "--run", dataset["run"],
            "--model", tiny_model_dir, "--k", "1,3", "--methods", "all", "--max-new-tokens", 3,
            "--label-metrics", "em,f1", "--judges", "llm,em,token_f1", "--out", out]
    code, stdout, err = run_cli(args, capsys, monkeypatch, tmp_path / "cache")
    assert code == 0, err
    assert f"wrote {out}" in stdout
    for stage in ("erag", "e2e", "llm_relevance", "semi_gold", "llm_judge"):
        assert stage in err  # one progress bar per LLM stage

    code, stdout, err = run_cli(["info", out, "--json"], capsys, monkeypatch, tmp_path / "cache")
    assert code == 0, err
    summary = json.loads(stdout)
    n = len(QUESTIONS)
    assert set(summary) == {"queries", "labels", "e2e", "reteval", "failures", "attribution"}
    assert summary["queries"] == n and summary["attribution"] == {}
    # eRAG and the per-passage baselines label every candidate down to k=3; gold is the user's gold_passage_ids as
    # the upload reads them (1 for a gold passage, 0 for every other candidate: what they brought, kept as given).
    # The random tiny model answers neither Yes nor No: its relevance answers are all unparsed, so no llm_relevance.
    assert summary["labels"] == {"erag:em": n * K, "erag:f1": n * K, "contains_answer": n * K,
                                 "gold": n * K, "gold_page": n * K}
    unparsed = {judge: (count, answers) for judge, _, count, answers in RunReader(out).unparsed_counts()}
    assert unparsed["llm_relevance"] == (n * K, n * K)
    assert sorted(summary["e2e"], key=int) == ["1", "3"] and all(v["n"] == n for v in summary["e2e"].values())
    for k in ("1", "3"):
        assert set(summary["reteval"][k]) <= {"llm", "em", "token_f1"}
        assert all(v["yes"] + v["no"] == n for judge, v in summary["reteval"][k].items() if judge != "llm")
    # The LLM judge's verdicts and its unread answers make up every (query, k) it was asked about.
    llm_verdicts = sum(v["yes"] + v["no"] for k in ("1", "3") for j, v in summary["reteval"][k].items() if j == "llm")
    assert llm_verdicts + unparsed.get("llm/semi_gold", (0, 0))[0] == 2 * n
    assert set(summary["failures"]) <= {"1", "3"}
    assert all(set(c) <= set("ABCDEF") for c in summary["failures"].values())
    assert missing_pieces(summary, RunReader(out).settings()) == {}

    run = read_run(out)
    by_query = {r.query_id: r.passage_ids for r in run.rankings}
    assert by_query == {q: tuple(ranked) for q, _, _, _, ranked in QUESTIONS}  # the user's lists, in their order
    # contains-answer is recomputed here independently of the pipeline
    expected = {(q, p): float(contains_answer(f"{PASSAGES[p][0]}\n{PASSAGES[p][1]}", a))
                for q, _, a, _, ranked in QUESTIONS for p in ranked}
    assert {(x.query_id, x.passage_id): x.value for x in run.labels if x.method == "contains_answer"} == expected
    settings = run.settings
    assert settings["model_id"] == str(tiny_model_dir) and settings["config"]["run"] == str(dataset["run"].resolve())
    assert settings["llm_calls"]["cache_misses"] > 0

    # A rerun costs no LLM call: everything comes from the LLM-call cache.
    again = tmp_path / "runs" / "again.sqlite"
    code, _, err = run_cli([*args[:-1], again], capsys, monkeypatch, tmp_path / "cache")
    assert code == 0, err
    assert RunReader(again).settings()["llm_calls"]["cache_misses"] == 0

    # The stored config reruns: info --config prints TOML that --config reads back to the same settings.
    code, stdout, _ = run_cli(["info", out, "--config"], capsys, monkeypatch, tmp_path / "cache")
    assert code == 0
    (tmp_path / "again.toml").write_text(stdout)
    from rageval.pipeline.config import read_config_file

    assert build_config(read_config_file(tmp_path / "again.toml"), {}).as_dict() == settings["config"]


class CountingGenerator(FakeGenerator):
    """The fake reader, counting every prompt that reaches the model (behind the LLM-call cache)."""

    def __init__(self, model_id: str):
        super().__init__(model_id=model_id)
        self.prompts = 0

    def generate(self, prompts, settings):
        self.prompts += len(prompts)
        return super().generate(prompts, settings)


def _config(dataset, tmp_path, model_dir, **values):
    return build_config({}, {"queries": str(dataset["queries"]), "corpus": str(dataset["corpus"]),
                             "run": str(dataset["run"]), "model": str(model_dir), "k": "1,3",
                             "label_metrics": "em,f1", "judges": "llm,em,token_f1",
                             "cache": str(tmp_path / "llm.sqlite"), "out": str(tmp_path / "out.sqlite"), **values})


def test_dry_run_counts_equal_the_calls_the_real_run_makes(dataset, tiny_model_dir, tmp_path):
    model_id = str(tiny_model_dir)  # what expected_model_id gives for a local folder
    config = _config(dataset, tmp_path, tiny_model_dir, methods="erag,e2e,baselines")
    report = pipeline.dry_run(config, log=lambda _: None)
    assert report.model_id == model_id and not (tmp_path / "out.sqlite").exists()
    n = len(QUESTIONS)
    assert report.calls["erag"]["calls"] == n * K and report.calls["llm_relevance"]["calls"] == n * K
    counting = CountingGenerator(model_id)
    pipeline.evaluate(config, generator=counting, log=lambda _: None)
    assert report.new_calls == counting.prompts > 0
    stored = RunReader(tmp_path / "out.sqlite").settings()["llm_calls"]["by_stage"]
    assert {s: c["new"] for s, c in stored.items()} == {s: c["new"] for s, c in report.calls.items()}

    # With everything above cached, only LLM-retEval's calls are new. Semi-gold prompts depend on nothing
    # generated, so they are predicted exactly; the judge's prompts hold the semi-gold answers, unknown before
    # they exist, so the dry run gives an upper bound for them (distinct answers; equal answers share a call).
    full = _config(dataset, tmp_path, tiny_model_dir, methods="all")
    report = pipeline.dry_run(full, log=lambda _: None)
    assert report.calls["erag"]["new"] == report.calls["e2e"]["new"] == report.calls["llm_relevance"]["new"] == 0
    counting = CountingGenerator(model_id)
    pipeline.evaluate(full, generator=counting, log=lambda _: None)
    stored = RunReader(tmp_path / "out.sqlite").settings()["llm_calls"]["by_stage"]
    assert stored["semi_gold"]["new"] == report.calls["semi_gold"]["new"] == len(QUESTIONS) * 3
    assert 0 < stored["llm_judge"]["new"] <= report.calls["llm_judge"]["new"]
    assert counting.prompts == stored["semi_gold"]["new"] + stored["llm_judge"]["new"]
    # ... and once they exist, the dry run knows every call is made: nothing new.
    assert pipeline.dry_run(full, log=lambda _: None).new_calls == 0


def test_dry_run_does_not_load_a_model(dataset, tmp_path, monkeypatch):
    import rageval.generation.factory as factory
    import rageval.generation.transformers_backend as transformers_backend

    def refuse(*args, **kwargs):
        pytest.fail("the dry run loaded a model")

    # every way in: the factory (where the pipeline imported it from) and the in-process backend itself
    monkeypatch.setattr(factory, "load_generator", refuse)
    monkeypatch.setattr(pipeline, "load_generator", refuse)
    monkeypatch.setattr(transformers_backend.TransformersGenerator, "__init__", refuse)
    config = _config(dataset, tmp_path, "gemma-3-270m", methods="all")
    report = pipeline.dry_run(config, log=lambda _: None)
    assert report.model_id.startswith("google/gemma-3-270m") and report.new_calls > 0
    assert any("llm_judge" in line and "at most" in line for line in report.lines())


@pytest.mark.slow
def test_beir_folder_with_bm25_over_its_corpus(beir, tmp_path):
    """BEIR's files as they are: answers from metadata, gold passages from the qrels TSV, BM25 over the corpus."""
    config = build_config({}, {"queries": str(beir / "queries.jsonl"), "corpus": str(beir / "corpus.jsonl"),
                               "qrels": str(beir / "qrels" / "test.tsv"), "retriever": "bm25", "k": "1,3",
                               "methods": "erag,e2e,baselines", "label_metrics": "em", "llm_relevance": False,
                               "cache": str(tmp_path / "llm.sqlite"), "out": str(tmp_path / "beir.sqlite")})
    path = pipeline.evaluate(config, generator=FakeGenerator(), log=lambda _: None)
    run = read_run(path)
    assert [q.query_id for q in run.queries] == [q for q, *_ in QUESTIONS]
    assert {q.query_id: q.answers for q in run.queries} == {q: tuple(a) for q, _, a, _, _ in QUESTIONS}
    assert {q.query_id: q.gold_passage_ids for q in run.queries} == {q: tuple(g) for q, _, _, g, _ in QUESTIONS}
    assert all(1 <= len(r.passages) <= K for r in run.rankings)  # BM25 returns only passages sharing a term
    assert "bm25" in run.settings["retriever"] and run_summary(path)["labels"]["qrels"] == len(QUESTIONS)
    # BM25 ranks each question's one gold passage (the only passage sharing its key words) first in 4 of 5.
    firsts = sum(r.passage_ids[0] in q.gold_passage_ids for q, r in zip(run.queries, run.rankings))
    assert firsts >= 4


def _rewrite(path: Path, line: int, record) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] = record if isinstance(record, str) else json.dumps(record)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("damage, expected", [
    (("queries", 2, "{not json"), r"questions\.jsonl, line 2: .*JSON"),
    (("queries", 3, {"query_id": "u3", "text": "what is the deepest lake in the world"}),
     r"questions\.jsonl, line 3, field 'answers': query 'u3' has no answers"),
    (("queries", 4, {"query_id": "u1", "text": "again", "answers": ["x"]}),
     r"questions\.jsonl, line 4: .*'u1' is used twice"),
    (("corpus", 5, {"passage_id": "d05", "title": "Lake Baikal", "text": ""}), r"corpus\.jsonl, line 5: field 'text'"),
    (("run", 2, "u1 Q0 d99 2 18 my-retriever"), r"system\.trec, line 2: passage 'd99' is not in .*corpus\.jsonl"),
    (("queries", 1, {"query_id": "u1", "text": "who discovered radium", "answers": "Curie"}),
     r"questions\.jsonl, line 1: field 'answers': expected a list of strings"),
])
def test_bad_input_is_one_line_naming_file_line_and_field_and_writes_nothing(dataset, tmp_path, capsys, monkeypatch,
                                                                            damage, expected):
    import re

    which, line, record = damage
    _rewrite(dataset[which], line, record)
    out = tmp_path / "never.sqlite"
    code, _, err = run_cli(["evaluate", "--queries", dataset["queries"], "--corpus", dataset["corpus"],
                            "--run", dataset["run"], "--out", out, "--dry-run"], capsys, monkeypatch,
                           tmp_path / "cache")
    assert code == 2 and not out.exists()
    message = err.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("rageval: error: "), err
    assert re.search(expected, message[0]), message[0]
    assert "Traceback" not in err


def test_flag_errors_and_read_only_shipped_folder(dataset, tmp_path, capsys, monkeypatch):
    from rageval.paths import RUNS_DIR

    base = ["evaluate", "--queries", dataset["queries"], "--corpus", dataset["corpus"], "--dry-run"]
    code, _, err = run_cli([*base, "--run", dataset["run"], "--retriever", "bm25"], capsys, monkeypatch, tmp_path)
    assert code == 2 and "not both" in err
    code, _, err = run_cli([*base, "--run", dataset["run"], "--k", "0,3"], capsys, monkeypatch, tmp_path)
    assert code == 2 and "--k" in err
    code, _, err = run_cli([*base, "--run", dataset["run"], "--methods", "erag,magic"], capsys, monkeypatch, tmp_path)
    assert code == 2 and "--methods" in err
    code, _, err = run_cli([*base, "--run", dataset["run"], "--out", RUNS_DIR / "mine.sqlite"], capsys, monkeypatch,
                           tmp_path)
    assert code == 2 and "read-only" in err and not (RUNS_DIR / "mine.sqlite").exists()
    code, _, err = run_cli([*base, "--run", dataset["run"], "--model", tmp_path / "no-such-model"], capsys,
                           monkeypatch, tmp_path)
    assert code == 2 and "no-such-model" in err


def test_a_retriever_without_questions_is_a_one_line_error(dataset, tmp_path, capsys, monkeypatch):
    """No --queries with --retriever: the error says what is missing (it was a TypeError on ``Path(None)``)."""
    code, _, err = run_cli(["evaluate", "--corpus", dataset["corpus"], "--retriever", "bm25", "--dry-run"], capsys,
                           monkeypatch, tmp_path)
    assert code == 2 and "--queries and --corpus are required" in err and "Traceback" not in err


def test_config_file_and_flags_and_default_out_in_the_user_runs_folder(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(tmp_path / "user-runs"))
    (tmp_path / "evaluate.toml").write_text(
        f'queries = "{dataset["queries"]}"\ncorpus = "mydata/corpus.jsonl"\nrun = "{dataset["run"]}"\n'
        'k = [1, 3]\nmethods = ["erag", "e2e"]\nmodel = "gemma-3-270m"\n')
    code, stdout, err = run_cli(["evaluate", "--config", tmp_path / "evaluate.toml", "--k", "2", "--dry-run"],
                                capsys, monkeypatch, tmp_path / "cache")
    assert code == 0, err
    assert "k = 2;" in stdout and "methods: erag, e2e" in stdout  # the flag won over the file's k
    assert f"run file: {tmp_path / 'user-runs' / 'questions-system-gemma-3-270m.sqlite'}" in stdout
    (tmp_path / "bad.toml").write_text('queries = "q.jsonl"\nretriver = "bm25"\n')
    code, _, err = run_cli(["evaluate", "--config", tmp_path / "bad.toml", "--dry-run"], capsys, monkeypatch, tmp_path)
    assert code == 2 and "bad.toml" in err and "retriver" in err


def test_prompt_template_is_a_file(dataset, tmp_path):
    (tmp_path / "qa.toml").write_text('name = "terse"\nversion = "2"\ninstruction = "Reply with a name only."\n'
                                      '[[examples]]\ntitle = "T"\npassage = "Paris is in France."\n'
                                      'question = "where is paris"\nanswer = "France"\n')
    seen = []

    class Recording(FakeGenerator):
        def generate(self, prompts, settings):
            seen.extend(prompts)
            return super().generate(prompts, settings)

    config = _config(dataset, tmp_path, "gemma-3-270m", methods="erag", label_metrics="em",
                     prompt_template=str(tmp_path / "qa.toml"))
    path = pipeline.evaluate(config, generator=Recording(), log=lambda _: None)
    assert seen and all(p.startswith("Reply with a name only.") and "where is paris" in p for p in seen)
    assert RunReader(path).settings()["prompt"].startswith("terse@2#")


def test_users_own_measures_are_stored_with_the_run(dataset, tmp_path):
    """``measures`` (flag, config value or TOML list) adds measures in ir_measures' syntax to the stored set, for
    every label method, and the run records them (settings ``extra_measures``)."""
    from rageval.errors import RagevalError
    from rageval.pipeline.config import read_config_file

    (tmp_path / "m.toml").write_text(
        'measures = ["P(rel=1, judged_only=True)@2", "NumQ", "nDCG(dcg=\'exp-log2\')@3"]\n')
    assert read_config_file(tmp_path / "m.toml")["measures"] == \
        "P(rel=1, judged_only=True)@2,NumQ,nDCG(dcg='exp-log2')@3"
    config = _config(dataset, tmp_path, "gemma-3-270m", methods="erag", label_metrics="em",
                     measures=read_config_file(tmp_path / "m.toml")["measures"])
    extras = ("P(judged_only=True,rel=1)@2", "NumQ", "nDCG(dcg='exp-log2')@3")
    assert config.options().measures == extras  # canonical spellings
    path = pipeline.evaluate(config, generator=FakeGenerator(model_id="fake"), log=lambda _: None)
    with RunReader(path) as reader:
        assert reader.settings()["extra_measures"] == list(extras)
        table = reader.measure_table()
    assert "erag:em" in set(table["method"])
    for method in set(table["method"]):
        stored = set(table[table["method"] == method]["measure"])
        assert set(extras) <= stored and {"P@1", "nDCG@3", "Rprec"} <= stored, method
    assert (table[table["measure"] == "NumQ"]["value"] == 1.0).all()
    with pytest.raises(RagevalError, match="measures: unknown measure 'Prec'"):
        _config(dataset, tmp_path, "gemma-3-270m", measures="P@5,Prec@5")


def test_eval_retrieval_on_own_beir_data(beir, tmp_path, capsys, monkeypatch):
    """``rageval eval-retrieval --queries --corpus --qrels``: retrievers scored on the user's own files; R@5 and
    nDCG@10 cross-checked with pytrec_eval on the stored rankings."""
    import pytrec_eval

    code, _, err = run_cli(["eval-retrieval", "--queries", beir / "queries.jsonl", "--corpus",
                            beir / "corpus.jsonl", "--qrels", beir / "qrels" / "test.tsv", "--systems", "bm25",
                            "--k", 10, "--out-dir", tmp_path / "retrieval",
                            "--measures", "R@5, nDCG@10, P(rel=1)@3, SetF(beta=0.5), NumRelRet"],
                           capsys, monkeypatch, tmp_path / "c")
    assert code == 0, err
    path = tmp_path / "retrieval" / "retrieval-queries-bm25.sqlite"
    run = read_run(path)
    qrels = {q: dict.fromkeys(gold, 1) for q, _, _, gold, _ in QUESTIONS}
    trec = {r.query_id: {p.passage_id: p.score for p in r.passages} for r in run.rankings}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"recall.5", "ndcg_cut.10", "P.3", "num_rel_ret"}).evaluate(trec)
    stored = {(m.measure, m.query_id): m.value for m in run.measure_values}
    assert {m.measure for m in run.measure_values} == {"R@5", "nDCG@10", "P(rel=1)@3", "SetF(beta=0.5)", "NumRelRet"}
    for query_id, values in expected.items():
        assert stored["R@5", query_id] == pytest.approx(values["recall_5"])
        assert stored["nDCG@10", query_id] == pytest.approx(values["ndcg_cut_10"])
        assert stored["P(rel=1)@3", query_id] == pytest.approx(values["P_3"])
        assert stored["NumRelRet", query_id] == values["num_rel_ret"]
    code, _, err = run_cli(["eval-retrieval", "--queries", beir / "queries.jsonl", "--corpus", beir / "corpus.jsonl",
                            "--measures", "R@5,P(rel=2@3"], capsys, monkeypatch, tmp_path / "c")
    assert code == 2 and "--measures: cannot parse measure 'P(rel=2@3'" in err and "Traceback" not in err


def test_the_run_stores_what_the_correlations_page_shows(dataset, tmp_path):
    """Every (label method, measure) x E2E k correlation is stored with the run, equal to what
    ``correlation_table_at_k`` gives from the stored measures and E2E scores (the Correlations page's numbers)."""
    from rageval.correlations import correlation_table_at_k
    from rageval.stats.correlation import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED

    config = build_config({}, {"queries": str(dataset["queries"]), "corpus": str(dataset["corpus"]),
                               "run": str(dataset["run"]), "k": "1,3", "methods": "erag,e2e,baselines",
                               "label_metrics": "em,f1", "llm_relevance": False,
                               "cache": str(tmp_path / "llm.sqlite"), "out": str(tmp_path / "out.sqlite")})
    path = pipeline.evaluate(config, generator=FakeGenerator(), log=lambda _: None)
    with RunReader(path) as reader:
        stored, measures, e2e = reader.correlations(), reader.measure_table(), reader.e2e_table()
        settings = reader.settings()
    assert sorted(stored["k"].unique()) == [1, 3]
    for k in (1, 3):
        expected = correlation_table_at_k(measures, e2e, k, DEFAULT_RESAMPLES, with_rprec=True).drop(columns="family")
        got = stored[stored["k"] == k].drop(columns=["k", "n_resamples", "confidence"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
        assert set(got["measure"]) == {m for m in measures["measure"] if m.endswith(f"@{k}") or m == "Rprec"}
    assert (stored["n"] == len(QUESTIONS)).all() and stored["tau"].notna().any()
    assert set(stored["n_resamples"]) == {DEFAULT_RESAMPLES} and set(stored["confidence"]) == {DEFAULT_CONFIDENCE}
    assert settings["correlations"] == {"n_resamples": DEFAULT_RESAMPLES, "confidence": DEFAULT_CONFIDENCE,
                                        "seed": DEFAULT_SEED, "interval": "percentile bootstrap over queries",
                                        "ks": [1, 3]}
    assert "correlations" in settings["timing_s"]
    assert read_run(path).correlations  # read back whole, so a completing job keeps (and recomputes) them


def test_correlations_are_added_to_a_run_that_lacks_them_and_nothing_else_changes(dataset, tmp_path):
    from dataclasses import replace

    from rageval.pipeline.evaluate import store_correlations
    from rageval.store import write_run

    config = build_config({}, {"queries": str(dataset["queries"]), "corpus": str(dataset["corpus"]),
                               "run": str(dataset["run"]), "k": "1,3", "methods": "erag,e2e,baselines",
                               "label_metrics": "em", "llm_relevance": False,
                               "cache": str(tmp_path / "llm.sqlite"), "out": str(tmp_path / "out.sqlite")})
    built = read_run(pipeline.evaluate(config, generator=FakeGenerator(), log=lambda _: None))
    older = tmp_path / "older.sqlite"  # a run as the shipped ones were built: no correlations stored
    write_run(replace(built, correlations=[], settings={**built.settings, "correlations": None}), older)
    assert store_correlations(older, command="rageval demo-runs --correlations-only") == len(built.correlations)
    after = read_run(older)
    # What evaluate_run stores (the Correlations page's numbers); NaN where a coefficient is undefined.
    pd.testing.assert_frame_equal(pd.DataFrame(after.correlations), pd.DataFrame(built.correlations))
    assert after.settings["correlations"] == built.settings["correlations"]
    assert after.settings["correlations_added"]["command"] == "rageval demo-runs --correlations-only"
    for table in ("queries", "passages", "rankings", "labels", "e2e_outputs", "measure_values", "doc_outputs",
                  "verdicts", "failure_cases", "label_evidence"):
        assert getattr(after, table) == getattr(built, table), table
    assert store_correlations(older) == 0  # has them now: the file is left alone
