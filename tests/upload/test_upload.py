"""The upload engine (rageval/upload.py) on real data: the fixture run of real NQ-open records
(tests/run_fixtures.py) and the shipped BM25 run, written out as TREC files and as the JSONL form, converted back,
read with RunReader and checked against pytrec_eval, the fixture's hand-computed measures and the engine's own
measure code; every validation problem names the right file and line; the limits hold; saving is safe."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import re
import sqlite3
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest
import pytrec_eval

from rageval.cli import main as cli_main
from rageval.erag.measures import compute_measure_values
from rageval.paths import RUNS_DIR
from rageval.store import Label, Run, RunReader, list_runs
from rageval.upload.build import compute_upload_measures
from rageval.upload.convert import convert_jsonl_upload, convert_trec_upload, convert_upload
from rageval.upload.problems import (
    ERROR,
    MAX_UPLOAD_MIB,
    WARNING,
    Problem,
    UploadError,
    UploadFile,
    UploadLimits,
    size_text,
)
from rageval.upload.save import check_run_name, save_upload
from tests.run_fixtures import INJECTION, INJECTION_ID, K, build_small_run

REPO = Path(__file__).resolve().parents[2]
SHIPPED_RUN = RUNS_DIR / "nq_open-bm25-gemma3_270m.sqlite"
FORMAT_DOC = REPO / "docs" / "upload_format.md"
#: Our measure -> pytrec_eval's name, at a cutoff c (RR@c is compared only where c covers the whole ranking).
TREC_NAMES = {"P": "P_{c}", "R": "recall_{c}", "AP": "map_cut_{c}", "nDCG": "ndcg_cut_{c}"}


# --- building the upload files from a run ---------------------------------------------------------------

def lines(rows) -> bytes:
    return ("\n".join(rows) + "\n").encode("utf-8")


def jsonl(records) -> bytes:
    return lines(json.dumps(record) for record in records)


def trec_files(run: Run, method: str = "gold") -> dict[str, UploadFile]:
    """The run's rankings as a TREC run file (its scores, rank field 1..n in stored order), one label method as
    qrels, its queries and passages as the two JSONL files."""
    run_lines = [f"{r.query_id} Q0 {p.passage_id} {rank} {p.score!r} fx"
                 for r in run.rankings for rank, p in enumerate(r.passages, start=1)]
    qrels = [f"{x.query_id} 0 {x.passage_id} {x.value:g}" for x in run.labels if x.method == method]
    queries = [{"query_id": q.query_id, "text": q.text, "answers": list(q.answers)} for q in run.queries]
    passages = [{"passage_id": p.passage_id, "title": p.title, "text": p.text} for p in run.passages]
    return {"run": UploadFile("run.trec", lines(run_lines)), "qrels": UploadFile("gold.qrels", lines(qrels)),
            "queries": UploadFile("queries.jsonl", jsonl(queries)),
            "passages": UploadFile("passages.jsonl", jsonl(passages))}


def jsonl_records(run: Run) -> list[dict]:
    """The fixture run in the JSONL form: eRAG and contains-answer labels, single-passage outputs, gold passage ids,
    the E2E answer at K."""
    passages = {p.passage_id: p for p in run.passages}
    outputs = {(o.query_id, o.passage_id): o.output for o in run.doc_outputs}
    labels: dict[tuple[str, str], dict[str, float]] = {}
    for x in run.labels:
        if x.method != "gold":
            labels.setdefault((x.query_id, x.passage_id), {})[x.method] = x.value
    e2e = {e.query_id: e for e in run.e2e_outputs}
    records = []
    for query, ranking in zip(run.queries, run.rankings):
        records.append({
            "query_id": query.query_id, "text": query.text, "answers": list(query.answers),
            "gold_passage_ids": list(query.gold_passage_ids),
            "passages": [{"passage_id": p.passage_id, "title": passages[p.passage_id].title,
                          "text": passages[p.passage_id].text, "score": p.score,
                          "labels": labels[query.query_id, p.passage_id],
                          "output": outputs[query.query_id, p.passage_id]} for p in ranking.passages],
            "e2e": {"k": e2e[query.query_id].k, "output": e2e[query.query_id].output},
        })
    return records


def convert(files: Mapping[str, UploadFile], **options):
    return convert_upload("trec", files, **options)


def replace(files: Mapping[str, UploadFile], key: str, data: bytes) -> dict[str, UploadFile]:
    return {**files, key: UploadFile(files[key].name, data)}


def trec_eval(qrels: dict, run: dict, cutoffs) -> dict:
    names = {"recip_rank", "Rprec"} | {TREC_NAMES[m].format(c=c) for m in TREC_NAMES for c in cutoffs}
    return pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)


def assert_equals_trec_eval(reader: RunReader, method: str, cutoffs) -> int:
    """Every stored value of ``method`` equals pytrec_eval's on the stored rankings and labels; returns the number
    of values compared."""
    stored = reader.measure_table().query("method == @method").set_index(["measure", "query_id"])["value"]
    rankings = reader.rankings()
    trec_run = {q: {p.passage_id: p.score for p in r.passages} for q, r in rankings.items()}
    qrels: dict[str, dict[str, int]] = {}
    for row in reader.labels(method).itertuples():
        qrels.setdefault(row.query_id, {})[row.passage_id] = int(row.value)
    results = trec_eval(qrels, trec_run, cutoffs)
    compared = 0
    for query_id, theirs in results.items():
        for cutoff in cutoffs:
            for ours, name in TREC_NAMES.items():
                assert stored[f"{ours}@{cutoff}", query_id] == pytest.approx(theirs[name.format(c=cutoff)]), \
                    (method, ours, cutoff, query_id)
            assert stored[f"Hit@{cutoff}", query_id] == float(theirs[f"P_{cutoff}"] > 0)
            if cutoff >= len(rankings[query_id].passages):
                assert stored[f"RR@{cutoff}", query_id] == pytest.approx(theirs["recip_rank"])
            compared += 6
        assert stored["Rprec", query_id] == pytest.approx(theirs["Rprec"])
    return compared


@pytest.fixture(scope="module")
def fixture_run() -> Run:
    return build_small_run()


@pytest.fixture
def files(fixture_run) -> dict[str, UploadFile]:
    return trec_files(fixture_run)


# --- form (a): TREC files -------------------------------------------------------------------------------

def test_trec_upload_round_trip_matches_trec_eval_and_the_fixture(fixture_run, files, tmp_path):
    result = convert(files, dataset="nq_open", model=None)
    assert result.ok and result.problems == ()
    path = save_upload(result.run, tmp_path, "fixture-upload")
    with RunReader(path) as reader:
        settings = reader.settings()
        assert settings["source"] == "uploaded" and settings["format"] == "trec"
        assert settings["uploaded_files"] == {"run": "run.trec", "qrels": "gold.qrels", "queries": "queries.jsonl",
                                              "passages": "passages.jsonl"}
        assert settings["uploaded_at"] == settings["created_at"] and settings["name"] == "fixture-upload"
        assert settings["retriever"] == "fx" and settings["dataset"] == "nq_open"
        # Depth K=5 -> cutoffs 1, 3 (standard ones up to 5) and 5 (the depth).
        assert settings["cutoffs"] == [1, 3, 5] and settings["label_methods"] == ["qrels"]
        # tests/run_fixtures.py: 6 questions, 7 passages (6 gold + the injection), rankings of K=5.
        assert reader.counts()["queries"] == 6 and reader.counts()["passages"] == 7
        assert reader.counts()["rankings"] == 6 * K
        assert {q: r.passage_ids for q, r in reader.rankings().items()} == \
            {r.query_id: r.passage_ids for r in fixture_run.rankings}
        qrels = reader.labels("qrels").sort_values(["query_id", "passage_id"])
        gold = sorted((x.query_id, x.passage_id, x.value) for x in fixture_run.labels if x.method == "gold")
        assert list(qrels[["query_id", "passage_id", "value"]].itertuples(index=False, name=None)) == gold
        assert reader.query("nq:0").gold_passage_ids == ("nq_oracle:0",)
        assert reader.query("nq:0").answers == fixture_run.queries[0].answers
        assert assert_equals_trec_eval(reader, "qrels", [1, 3, 5]) == 6 * 3 * 6
        # The fixture computed its gold measures at K=5 by hand from trec_eval's definitions.
        ours = reader.measure_table().query("method == 'qrels'").set_index(["measure", "query_id"])["value"]
    for value in fixture_run.measure_values:
        if value.method == "gold":
            assert ours[value.measure, value.query_id] == pytest.approx(value.value), value


def test_shipped_bm25_run_uploaded_as_trec_files_scores_as_its_gold_measures():
    """The shipped run's BM25 rankings and gold labels (300 real NQ questions), uploaded as TREC files: every
    measure equals pytrec_eval's, and equals the engine's stored gold measures wherever the stored order is
    trec_eval's order (ties in BM25 scores may be ordered otherwise by the retriever)."""
    with RunReader(SHIPPED_RUN) as reader:
        shipped_rankings = reader.rankings()
        stored = reader.measure_table().query("method == 'gold'").set_index(["measure", "query_id"])["value"]
        labels = reader.labels("gold")
        queries = [reader.query(q) for q in reader.query_table()["query_id"]]
    with sqlite3.connect(f"file:{SHIPPED_RUN}?mode=ro", uri=True) as connection:
        passages = connection.execute("SELECT passage_id, title, text FROM passages").fetchall()
    from rageval.types import Passage

    run = Run({}, queries, [Passage(*row) for row in passages], list(shipped_rankings.values()),
              labels=[Label("gold", *row) for row in labels[["query_id", "passage_id", "value"]].itertuples(
                  index=False, name=None)])
    result = convert(trec_files(run), dataset="nq_open")
    assert result.errors == ()
    # Where BM25 scores tie, the file's rank order is not trec_eval's: one warning says so for the whole file.
    assert [p.message.split(":")[0] for p in result.warnings] == \
        ["the rank field disagrees with the score order for 32 queries"]
    converted = {(m.measure, m.query_id): m.value for m in result.run.measure_values}
    converted_order = {r.query_id: r.passage_ids for r in result.run.rankings}
    same_order = {q for q, r in shipped_rankings.items() if r.passage_ids == converted_order[q]}
    assert len(same_order) == 300 - 32
    compared = 0
    for (measure, query_id), value in stored.items():
        if query_id in same_order and (measure, query_id) in converted:
            assert converted[measure, query_id] == pytest.approx(value), (measure, query_id)
            compared += 1
    assert compared == len(same_order) * (6 * 3 + 1)  # 6 measures at 1, 5, 10 and Rprec
    trec_run = {r.query_id: {p.passage_id: p.score for p in r.passages} for r in result.run.rankings}
    qrels: dict[str, dict[str, int]] = {}
    for x in result.run.labels:
        qrels.setdefault(x.query_id, {})[x.passage_id] = int(x.value)
    results = trec_eval(qrels, trec_run, [1, 3, 5, 10])
    assert len(results) == 300
    for query_id, theirs in results.items():
        for cutoff in (1, 3, 5, 10):
            for ours, name in TREC_NAMES.items():
                assert converted[f"{ours}@{cutoff}", query_id] == pytest.approx(theirs[name.format(c=cutoff)])
        assert converted["RR@10", query_id] == pytest.approx(theirs["recip_rank"])
        assert converted["Rprec", query_id] == pytest.approx(theirs["Rprec"])


def _ranking(run: Run, query_id: str) -> list[str]:
    return next(list(r.passage_ids) for r in run.rankings if r.query_id == query_id)


def test_ties_and_rank_field_follow_trec_eval_and_graded_qrels(fixture_run, tmp_path):
    """Tied scores ranked 1..4 in file order: the ranking follows the scores, ties by passage id descending (as
    trec_eval), with one warning about the rank field; grade-2 judgments give graded nDCG gains, as trec_eval's."""
    queries = fixture_run.queries[:2]
    pool = [p.passage_id for p in fixture_run.passages][:4]
    run_lines = [f"{queries[0].query_id} Q0 {pid} {i + 1} 1.5 tied" for i, pid in enumerate(pool)]
    run_lines += [f"{queries[1].query_id} Q0 {pid} {i + 1} {10 - i} tied" for i, pid in enumerate(pool)]
    qrels = [f"{queries[0].query_id} 0 {pool[0]} 2", f"{queries[0].query_id} 0 {pool[3]} 1",
             f"{queries[1].query_id} 0 {pool[2]} 2", f"{queries[1].query_id} 0 nq_oracle:5 1"]
    files = trec_files(fixture_run)
    files = replace(replace(files, "run", lines(run_lines)), "qrels", lines(qrels))
    result = convert(files)
    assert [(p.severity, p.file, p.line) for p in result.problems] == [
        (WARNING, "queries.jsonl", n, ) for n in (3, 4, 5, 6)] + [(WARNING, "run.trec", 1)]
    assert "not ranked in run.trec" in result.problems[0].message
    assert "rank field disagrees with the score order for 1 queries" in result.problems[-1].message
    # trec_eval's tie order: passage id descending.
    assert _ranking(result.run, queries[0].query_id) == sorted(pool, reverse=True)
    with RunReader(save_upload(result.run, tmp_path, "ties")) as reader:
        assert assert_equals_trec_eval(reader, "qrels", [1, 3, 4]) == 2 * 3 * 6


# --- form (b): one JSONL with answers ---------------------------------------------------------------------

def test_jsonl_upload_matches_the_engine_and_the_fixture(fixture_run, tmp_path):
    result = convert_jsonl_upload(UploadFile("run.jsonl", jsonl(jsonl_records(fixture_run))), model="fake-reader")
    assert result.ok and result.problems == ()
    run = result.run
    assert run.settings["e2e_ks"] == [K] and run.settings["k"] == K and run.settings["model_id"] == "fake-reader"
    assert run.settings["label_methods"] == ["contains_answer", "erag:em", "gold"]
    # The engine's own measure code on the fixture's labels gives the same values.
    engine = compute_measure_values(list(fixture_run.labels), {r.query_id: r for r in fixture_run.rankings},
                                    run.settings["cutoffs"])
    assert sorted(run.measure_values, key=repr) == sorted(engine, key=repr)
    # ... and so do the fixture's hand-computed (trec_eval definitions) measures at K.
    ours = {(m.method, m.measure, m.query_id): m.value for m in run.measure_values}
    for value in fixture_run.measure_values:
        assert ours[value.method, value.measure, value.query_id] == pytest.approx(value.value), value
    # E2E answers are re-scored by exact match against the gold answers: the fixture's scores.
    assert [(e.query_id, e.k, e.output, e.score) for e in run.e2e_outputs] == \
        [(e.query_id, e.k, e.output, e.score) for e in fixture_run.e2e_outputs]
    assert sorted(run.doc_outputs, key=repr) == sorted(fixture_run.doc_outputs, key=repr)
    with RunReader(save_upload(run, tmp_path, "jsonl-upload")) as reader:
        assert reader.main_k() == K and reader.e2e_ks() == [K]
        assert reader.query("nq:5").gold_passage_ids == ("nq_oracle:5",)  # query 5's gold passage is not ranked
        # eRAG labels are list-bound (cut to the top c at cutoff c, as rageval.erag), so trec_eval's full-label
        # values agree at c = the depth; the engine check above covers the smaller cutoffs.
        assert_equals_trec_eval(reader, "erag:em", [5])
        assert_equals_trec_eval(reader, "gold", [1, 3, 5])


def test_script_text_survives_as_text(fixture_run, files, tmp_path):
    """The injection passage (tests/run_fixtures.py) keeps its markup byte for byte in both forms."""
    for result in (convert(files), convert_jsonl_upload(UploadFile("r.jsonl", jsonl(jsonl_records(fixture_run))))):
        with RunReader(save_upload(result.run, tmp_path, "x", overwrite=True)) as reader:
            ranking = reader.ranking_table("nq:0").set_index("passage_id")
            assert INJECTION in ranking.at[INJECTION_ID, "text"]
            assert ranking.at[INJECTION_ID, "title"] == "Escaping test <b>bold?</b>"


def test_graded_jsonl_labels_get_the_graded_measures(fixture_run):
    records = jsonl_records(fixture_run)
    for record in records:
        for i, passage in enumerate(record["passages"]):
            passage["labels"] = {"utility": [1.0, 0.5, 0.0, 0.25, 0.0][i]}
    result = convert_jsonl_upload(UploadFile("graded.jsonl", jsonl(records)))
    assert result.ok and result.run.settings["graded_label_methods"] == ["utility"]
    measures = {m.measure for m in result.run.measure_values if m.method == "utility"}
    assert measures == {f"{m}@{c}" for m in ("P", "nDCG", "Hit") for c in (1, 3, 5)}
    p5 = {m.query_id: m.value for m in result.run.measure_values if m.method == "utility" and m.measure == "P@5"}
    assert p5 == {q.query_id: pytest.approx((1.0 + 0.5 + 0.25) / 5) for q in fixture_run.queries}  # mean label


def test_the_format_documents_examples_convert():
    """The example files of docs/upload_format.md convert without a problem, and their E2E answers score as stated
    by exact match: "Darwin" is not "Charles Darwin"; "Canberra" is."""
    blocks = dict(re.findall(r"#### `([^`]+)`\n+```\w*\n(.*?)```", FORMAT_DOC.read_text(), flags=re.DOTALL))
    assert set(blocks) == {"run.trec", "gold.qrels", "queries.jsonl", "passages.jsonl", "run.jsonl"}
    example = {name: UploadFile(name, text.encode()) for name, text in blocks.items()}
    trec = convert_trec_upload(example["run.trec"], example["queries.jsonl"], example["passages.jsonl"],
                               example["gold.qrels"])
    assert trec.ok and trec.problems == ()
    assert {q.query_id: q.gold_passage_ids for q in trec.run.queries} == {"q1": ("p1",), "q2": ("p3", "p4")}
    single = convert_jsonl_upload(example["run.jsonl"])
    assert single.ok and single.problems == ()
    assert [(e.query_id, e.k, e.score) for e in single.run.e2e_outputs] == [("q1", 2, 0.0), ("q2", 1, 1.0),
                                                                            ("q2", 2, 1.0)]
    assert single.run.settings["graded_label_methods"] == ["erag:f1"]


# --- validation: file and line of every problem -----------------------------------------------------------

def problems_of(result) -> list[tuple[str, str, int | None]]:
    return [(p.severity, p.file, p.line) for p in result.problems]


def only_problem(result, severity=ERROR) -> Problem:
    found = [p for p in result.problems if p.severity == severity]
    assert len(found) == 1, [str(p) for p in result.problems]
    return found[0]


TREC_CASES = [
    # (file, line number to break, replacement line, expected message fragment)
    ("run", 3, "nq:0 Q0 nq_oracle:3 3 21.0", "expected 6 whitespace-separated fields"),
    ("run", 2, "nq:0 Q0 test:injection 2 high fx", "field 'score': expected a finite number, found 'high'"),
    ("run", 2, "nq:0 Q0 test:injection 2 nan fx", "field 'score': expected a finite number, found 'nan'"),
    ("run", 4, "nq:0 Q0 nq_oracle:3 third 21.0 fx", "field 'rank': expected an integer, found 'third'"),
    ("run", 5, "nq:0 Q0 nq_oracle:0 5 20.0 fx", "query 'nq:0' ranks passage 'nq_oracle:0' twice (first on line 1)"),
    ("run", 5, "nq:0 Q0 nq_oracle:99 5 20.0 fx", "passage 'nq_oracle:99' is not in passages.jsonl"),
    ("run", 7, "nq:9 Q0 nq_oracle:1 1 20.0 fx", "query 'nq:9' is not in queries.jsonl"),
    ("qrels", 2, "nq:1 0 nq_oracle:1", "expected 4 whitespace-separated fields"),
    ("qrels", 2, "nq:1 0 nq_oracle:1 yes", "field 'relevance': expected a finite number, found 'yes'"),
    ("qrels", 3, "nq:0 0 nq_oracle:0 1", "query 'nq:0' judges passage 'nq_oracle:0' twice (first on line 1)"),
    ("queries", 7, '{"query_id": "nq:1", "text": "who"', "not valid JSON"),
    ("queries", 7, '["nq:1", "who"]', "expected a JSON object {...}, found a list"),
    ("queries", 7, '{"query_id": "nq:2"}', "field 'text': missing (required)"),
    ("queries", 7, '{"query_id": 2, "text": "q"}', ('field \'query_id\': expected a string id, found a '
                                                    'number (write it as a string: "2")')),
    ("queries", 7, '{"query_id": "nq:2", "text": "q", "answers": "Paris"}',
     "field 'answers': expected a list of strings, found a string"),
    ("queries", 7, '{"query_id": "nq 2", "text": "q"}', "expected a non-empty id without spaces"),
    ("queries", 7, '{"query_id": "nq:1", "text": "again"}', "query id 'nq:1' is used twice (first on line 2)"),
    ("queries", 7, '{"query_id": "nq:2", "text": "q", "answers": [NaN]}', "NaN is not a number JSON allows"),
    ("passages", 8, '{"passage_id": "nq_oracle:0", "text": "again"}',
     "passage id 'nq_oracle:0' is used twice (first on line 1)"),
    ("passages", 8, '{"passage_id": "extra", "title": 3, "text": "x"}',
     "field 'title': expected a string, found a number"),
]


@pytest.mark.parametrize("key, number, line, message", TREC_CASES, ids=[c[3][:40] for c in TREC_CASES])
def test_each_trec_form_error_names_its_file_and_line(files, key, number, line, message):
    """One line replaced (or, one past the end, added): exactly one error, at that file and line."""
    rows = files[key].data.decode().split("\n")  # ends with "" after the last newline: replacing it appends
    rows[number - 1] = line
    result = convert(replace(files, key, "\n".join(rows).encode()))
    problem = only_problem(result)
    assert (problem.file, problem.line) == (files[key].name, number)
    assert message in problem.message
    assert result.run is None and not result.ok
    assert str(problem).startswith(f"error: {files[key].name}, line {number}: ")


def test_warnings_keep_the_run_and_name_their_line(files):
    qrels = files["qrels"].data + b"nq:77 0 nq_oracle:1 1\nnq:77 0 nq_oracle:2 1\n"
    queries = files["queries"].data.replace(b'"answers"', b'"anwsers"', 1)
    result = convert(replace(replace(files, "qrels", qrels), "queries", queries))
    assert result.ok
    unknown, unjudged = result.warnings[0], result.warnings[1]
    assert (unknown.file, unknown.line) == ("queries.jsonl", 1) and "unknown field 'anwsers'" in unknown.message
    assert (unjudged.file, unjudged.line) == ("gold.qrels", len(files["qrels"].data.splitlines()) + 1)
    assert unjudged.message == "query 'nq:77' is not in queries.jsonl: its 2 judgments are ignored"
    no_qrels = convert({**files, "qrels": None})
    assert no_qrels.ok and no_qrels.run.labels == [] and no_qrels.run.measure_values == []
    assert problems_of(no_qrels) == [(WARNING, "run.trec", None)]


def test_a_run_query_without_judgments_is_a_warning(files):
    qrels = b"\n".join(row for row in files["qrels"].data.split(b"\n") if not row.startswith(b"nq:2 "))
    result = convert(replace(files, "qrels", qrels))
    assert problems_of(result) == [(WARNING, "run.trec", 11)]  # nq:2's first run line (K=5 lines per query)
    assert result.warnings[0].message == "query 'nq:2' has no judgments in gold.qrels: its measures are 0"
    assert {m.value for m in result.run.measure_values if m.query_id == "nq:2"} == {0.0}


def test_not_utf8_and_empty_files_are_errors(files):
    data = files["passages"].data.split(b"\n")
    data[2] = data[2].replace(b"a", b"\xe9", 1)  # a Latin-1 byte
    problem = only_problem(convert(replace(files, "passages", b"\n".join(data))))
    assert (problem.file, problem.line) == ("passages.jsonl", 3)
    assert problem.message.startswith("expected UTF-8 text, found the byte 0xe9")
    problem = only_problem(convert(replace(files, "queries", b"\n \n")))
    assert (problem.file, problem.line, problem.message) == ("queries.jsonl", None,
                                                             "the file is empty: expected one record per line")
    bom = convert(replace(files, "queries", b"\xef\xbb\xbf" + files["queries"].data))
    assert bom.ok and bom.problems == ()


@pytest.mark.parametrize(("encoding", "said"), [
    ("utf-16-le", "the file is UTF-16 (little-endian, without a byte-order mark); save it as UTF-8"),
    ("utf-16-be", "the file is UTF-16 (big-endian, without a byte-order mark); save it as UTF-8"),
    ("utf-16", "the file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8"),
    ("utf-32-le", "the file is UTF-32 (without a byte-order mark); save it as UTF-8"),
    ("utf-32", "the file is UTF-32 (it starts with a UTF-32 byte-order mark); save it as UTF-8"),
])
def test_a_file_in_another_encoding_is_named_as_such(files, encoding, said):
    """UTF-16-LE without a byte-order mark is valid UTF-8 (each ASCII character followed by a NUL byte): it must be
    reported as UTF-16, not as "not valid JSON" on every line."""
    text = files["queries"].data.decode("utf-8")
    problem = only_problem(convert(replace(files, "queries", text.encode(encoding))))
    assert (problem.file, problem.line, problem.message) == ("queries.jsonl", None, said)
    problem = only_problem(convert(replace(files, "run", files["run"].data.decode().encode(encoding))))
    assert (problem.file, problem.message) == ("run.trec", said)  # TREC files too


def test_latin1_bytes_compressed_and_binary_files_are_named(files):
    latin1 = files["passages"].data.decode("utf-8").replace("a", "é", 1).encode("latin-1")
    problem = only_problem(convert(replace(files, "passages", latin1)))
    assert problem.message == ("expected UTF-8 text, found the byte 0xe9 ('é' in Windows-1252/Latin-1: the file looks "
                               "saved in that encoding); save the file as UTF-8")
    problem = only_problem(convert(replace(files, "queries", gzip.compress(files["queries"].data))))
    assert problem.message == "the file is gzip-compressed, not text: decompress it (gunzip) and give the text file"
    problem = only_problem(convert(replace(files, "run", b"SQLite format 3\x00" + bytes(200))))
    assert problem.message.startswith("the file is an SQLite database (a rageval run file?), not text")
    problem = only_problem(convert(replace(files, "qrels", b"\x00\x01\x02\x03binary" * 20)))
    assert problem.message == "the file holds NUL bytes: it is not a text file (save it as UTF-8 text)"


JSONL_CASES = [
    # (record index, how to break it, field/message fragment)
    (1, lambda r: r.pop("passages"), "field 'passages': missing (required)"),
    (2, lambda r: r["passages"][1].update(score="high"),
     "field 'passages[1].score': expected a finite number, found a string"),
    (2, lambda r: r["passages"][1].pop("score"), "give a 'score' for every passage of the list or for none"),
    (3, lambda r: r["passages"][0]["labels"].update({"erag:em": True}),
     "field 'passages[0].labels.erag:em': expected a finite number, found true/false"),
    (3, lambda r: r["passages"][0]["labels"].update({"my label": 1}), "method name 'my label'"),
    (3, lambda r: r["passages"][0]["labels"].update({"qrels": 1}), "'qrels' is kept for uploaded qrels files"),
    (4, lambda r: r.update(e2e={"k": 6, "output": "x"}),
     "field 'e2e.k': expected an integer from 1 to the number of passages listed (5), found 6"),
    (4, lambda r: r.update(e2e=[{"k": 1, "output": "x"}, {"k": 1, "output": "y"}]), "two end-to-end answers at k=1"),
    (5, lambda r: r["passages"][3].update(text="changed"), "has another title or text than on line"),
    (5, lambda r: r["passages"].append(dict(r["passages"][0])), "is listed twice for this query"),
    (5, lambda r: r["passages"][0]["labels"].update(gold=1), "either as 'gold_passage_ids' or as 'gold' labels"),
    (0, lambda r: r["passages"][0].update(passage_id=7), "field 'passages[0].passage_id': expected a string id"),
]


@pytest.mark.parametrize("index, change, message", JSONL_CASES, ids=[c[2][:40] for c in JSONL_CASES])
def test_each_jsonl_form_error_names_its_line(fixture_run, index, change, message):
    records = jsonl_records(fixture_run)
    change(records[index])
    result = convert_jsonl_upload(UploadFile("mine.jsonl", jsonl(records)))
    problem = only_problem(result)
    assert (problem.file, problem.line) == ("mine.jsonl", index + 1)
    assert message in problem.message
    assert result.run is None


def test_a_number_json_reads_as_infinity_is_an_error(fixture_run):
    records = jsonl_records(fixture_run)
    records[2]["passages"][1]["labels"]["erag:em"] = 123456.5  # a marker, written as 1e999 below
    data = jsonl(records).replace(b"123456.5", b"1e999")
    problem = only_problem(convert_jsonl_upload(UploadFile("inf.jsonl", data)))
    assert problem.line == 3
    assert problem.message == ("field 'passages[1].labels.erag:em': expected a finite number, found a number too "
                               "large for a float")


def test_jsonl_warnings(fixture_run):
    records = jsonl_records(fixture_run)
    records[1]["passages"][0]["score"] = -1.0  # below the next one's score
    records[2]["answers"] = []
    records[3]["passages"], records[3]["e2e"] = [], []
    records[3]["gold_passage_ids"] = []
    records[4]["retriever"] = "bm25"
    result = convert_jsonl_upload(UploadFile("w.jsonl", jsonl(records)))
    assert result.ok
    assert [(p.line, p.message) for p in result.problems] == [
        (2, "query 'nq:1': the scores are not in descending order; the list order is the ranking"),
        (3, "query 'nq:2' has end-to-end answers but no gold answers to score them: they are kept, not scored"),
        (4, "query 'nq:3' lists no passages: its measures are 0"),
        (5, ("unknown field 'retriever' is ignored (known fields: query_id, text, answers, gold_passage_ids, "
             "passages, e2e)")),
    ]
    assert _ranking(result.run, "nq:1")[0] == records[1]["passages"][0]["passage_id"]  # list order kept
    assert {e.query_id for e in result.run.e2e_outputs} == {"nq:0", "nq:1", "nq:2", "nq:4", "nq:5"}
    unscored = [e for e in result.run.e2e_outputs if e.query_id == "nq:2"]  # the user's answer kept, no score
    assert [e.output for e in unscored] == [records[2]["e2e"]["output"]] and math.isnan(unscored[0].score)


# --- limits ----------------------------------------------------------------------------------------------

def test_size_limits(fixture_run, files):
    largest = max(files.values(), key=lambda f: len(f.data))
    small = UploadLimits(max_file_bytes=len(largest.data) - 1)
    problem = only_problem(convert(files, limits=small))
    assert (problem.file, problem.line) == (largest.name, None)
    assert problem.message == (f"the file is {len(largest.data):,} bytes, larger than the limit of "
                               f"{small.max_file_bytes:,} bytes ({size_text(small.max_file_bytes)}) per file")
    read = UploadFile.from_path(Path(__file__), small)
    assert read.data == Path(__file__).read_bytes()[:len(largest.data)]  # one byte past the limit, no more
    assert read.size == Path(__file__).stat().st_size  # the size reported is the file's

    errors = convert(files, limits=UploadLimits(max_queries=4)).errors
    assert [(p.file, p.line) for p in errors] == [("queries.jsonl", 5), ("run.trec", 21)]  # the 5th query of each
    assert all("more than 4 queries; the limit is 4 per run" in p.message for p in errors)

    errors = convert(files, limits=UploadLimits(max_passages_per_query=4)).errors
    assert [(p.file, p.line) for p in errors] == [("run.trec", 5 * n) for n in range(1, 7)]  # each query's 5th
    assert errors[0].message == "query 'nq:0' ranks more than 4 passages; the limit is 4 per query"
    errors = convert_jsonl_upload(UploadFile("r.jsonl", jsonl(jsonl_records(fixture_run))),
                                  limits=UploadLimits(max_passages_per_query=4)).errors
    assert [p.line for p in errors] == [1, 2, 3, 4, 5, 6]
    assert errors[0].message == "field 'passages': 5 passages; the limit is 4 per query"

    longest = max(len(p.text) for p in fixture_run.passages)
    result = convert(files, limits=UploadLimits(max_text_chars=longest - 1))
    number = 1 + max(range(len(fixture_run.passages)), key=lambda i: len(fixture_run.passages[i].text))
    assert problems_of(result) == [(ERROR, "passages.jsonl", number)]
    message = result.errors[0].message
    assert f"field 'text': the text has {longest:,} characters; the limit is {longest - 1:,}" in message


def test_problem_lists_are_capped_per_file(files):
    bad_run = lines(f"q{i} Q0 d{i} 1 nope fx" for i in range(80))
    result = convert(replace(files, "run", bad_run), limits=UploadLimits(max_problems_per_file=10))
    errors = [p for p in result.errors if p.file == "run.trec"]
    assert [p.line for p in errors[:10]] == list(range(1, 11))
    assert errors[10] == Problem(ERROR, "run.trec", None, "70 more errors in this file are not listed "
                                                          "(the first 10 are)")


# --- saving -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["", "../escape", "a/b", ".hidden", "x..y", "name with space", "a" * 101,
                                  "/abs", "x\\y"])
def test_names_that_would_escape_or_clash_are_refused(files, tmp_path, name):
    assert check_run_name(name) is not None
    with pytest.raises(UploadError):
        save_upload(convert(files).run, tmp_path, name)
    assert list(tmp_path.iterdir()) == []


def test_save_never_replaces_without_consent(files, tmp_path):
    run = convert(files).run
    first = save_upload(run, tmp_path, "mine")
    mtime = first.stat().st_mtime_ns
    with pytest.raises(UploadError, match="exists"):
        save_upload(run, tmp_path, "mine")
    assert first.stat().st_mtime_ns == mtime
    second = save_upload(dataclasses.replace(run, settings={**run.settings, "dataset": "v2"}), tmp_path, "mine",
                         overwrite=True)
    with RunReader(second) as reader:
        assert reader.settings()["dataset"] == "v2"
    (tmp_path / "sub").mkdir()
    save_upload(run, tmp_path / "sub", "nested")
    with pytest.raises(UploadError, match="already used by"):
        save_upload(run, tmp_path, "nested", overwrite=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["mine.sqlite", "nested.sqlite", "sub"]  # no temp files
    assert [p.name for p in list_runs(tmp_path)] == ["mine.sqlite", "nested.sqlite"]


def test_compute_upload_measures_is_the_engine_convention_for_engine_methods(fixture_run):
    """For the engine's own label methods the upload's measures are exactly rageval.erag's."""
    rankings = {r.query_id: r for r in fixture_run.rankings}
    assert sorted(compute_upload_measures(fixture_run.labels, rankings, [1, 3, 5]), key=repr) == \
        sorted(compute_measure_values(fixture_run.labels, rankings, [1, 3, 5]), key=repr)


# --- command line ------------------------------------------------------------------------------------------

def write_files(folder: Path, files: Mapping[str, UploadFile]) -> dict[str, Path]:
    paths = {}
    for key, file in files.items():
        paths[key] = folder / file.name
        paths[key].write_bytes(file.data)
    return paths


def test_cli_upload_writes_a_run_and_reports_problems(files, fixture_run, tmp_path, capsys):
    paths = write_files(tmp_path, files)
    runs = tmp_path / "runs"
    args = ["upload", "--run", str(paths["run"]), "--qrels", str(paths["qrels"]), "--queries", str(paths["queries"]),
            "--passages", str(paths["passages"]), "--runs-dir", str(runs), "--dataset", "nq_open"]
    assert cli_main([*args, "--name", "cli-run"]) == 0
    assert "wrote" in capsys.readouterr().out
    with RunReader(runs / "cli-run.sqlite") as reader:
        assert reader.settings()["dataset"] == "nq_open" and reader.counts()["queries"] == 6
        assert reader.settings()["command"].startswith("rageval ")  # the command line as typed (sys.argv)
    assert cli_main([*args, "--name", "cli-run"]) == 2  # exists: a RagevalError, reported by the CLI
    assert "exists" in capsys.readouterr().err

    paths["run"].write_bytes(files["run"].data + b"nq:0 Q0 nowhere 6 1.0\n")
    assert cli_main([*args, "--name", "broken"]) == 1
    err = capsys.readouterr().err
    assert f"error: {paths['run']}, line 31: expected 6 whitespace-separated fields" in err
    assert not (runs / "broken.sqlite").exists()

    single = tmp_path / "run.jsonl"
    single.write_bytes(jsonl(jsonl_records(fixture_run)))
    assert cli_main(["upload", "--check", "--jsonl", str(single), "--runs-dir", str(runs)]) == 0
    assert capsys.readouterr().out.startswith("valid: 6 queries")
    assert sorted(p.name for p in runs.iterdir()) == ["cli-run.sqlite"]


def test_cli_upload_defaults_to_the_user_runs_folder_and_names_bad_paths(files, tmp_path, capsys, monkeypatch):
    paths = write_files(tmp_path, files)
    user_runs = tmp_path / "user-runs"
    monkeypatch.setenv("RAGEVAL_RUNS_DIR", str(user_runs))
    args = ["upload", "--run", str(paths["run"]), "--queries", str(paths["queries"]), "--passages",
            str(paths["passages"])]
    assert cli_main([*args, "--name", "mine"]) == 0
    assert f"wrote {user_runs / 'mine.sqlite'}" in capsys.readouterr().out

    # A missing file and a folder given as a file: one line each, exit 2, no traceback, nothing written.
    for bad, reason in ((tmp_path / "nope.trec", "no such file"), (tmp_path, "is a folder; expected a file")):
        assert cli_main(["upload", "--run", str(bad), "--queries", str(paths["queries"]), "--passages",
                         str(paths["passages"]), "--name", "bad"]) == 2
        err = capsys.readouterr().err
        assert f"{bad}: {reason}" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in user_runs.iterdir()) == ["mine.sqlite"]

    # A runs folder that is a file: one line, nothing written.
    assert cli_main([*args, "--name", "mine2", "--runs-dir", str(paths["run"])]) == 2
    err = capsys.readouterr().err
    assert err == f"rageval: error: runs folder {paths['run']}: is a file, not a folder; save the run into a folder\n"

    # The shipped runs folder is refused.
    shipped = tmp_path / "shipped"
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", str(shipped))
    assert cli_main([*args, "--name", "mine", "--runs-dir", str(shipped)]) == 2
    assert "the shipped runs folder is read-only" in capsys.readouterr().err
    assert not shipped.exists()


def test_one_size_limit_for_the_engine_the_cli_and_the_page(files, tmp_path, capsys):
    """The engine, ``rageval upload`` and the Upload page's widgets (Streamlit's ``server.maxUploadSize``, in MiB)
    share one limit and one message; the CLI reports a file over it by its size without loading it."""
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MIB
    assert UploadLimits().max_file_bytes == MAX_UPLOAD_MIB * 2**20
    page = (REPO / "app_pages" / "10_Upload.py").read_text(encoding="utf-8")
    assert page.count("file_uploader(") == page.count("max_upload_size=MAX_UPLOAD_MIB")

    paths = write_files(tmp_path, files)
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:  # sparse: 150 MiB on paper, nothing on disk
        handle.truncate(150 * 2**20)
    assert cli_main(["upload", "--check", "--run", str(paths["run"]), "--queries", str(big), "--passages",
                     str(paths["passages"])]) == 1
    err = capsys.readouterr().err
    assert f"error: {big}: the file is 150 MiB, larger than the limit of 100 MiB per file" in err
    assert "Traceback" not in err
