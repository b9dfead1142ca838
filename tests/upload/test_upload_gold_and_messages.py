"""The TREC form's ``gold_passage_ids`` used as the run's judgments (no qrels file), checked against the same gold
passages given as a qrels file and against pytrec_eval; and the whole-file problems that replace a line-by-line
flood: a CSV or TSV file given for a JSONL one, the queries and passages files swapped (issue 34, items 5 and 7)."""

from __future__ import annotations

import json

import pytest
import pytrec_eval

from rageval.upload.convert import convert_jsonl_upload
from rageval.upload.parts import gold_labels
from rageval.upload.problems import ERROR, WARNING, UploadFile
from tests.run_fixtures import build_small_run
from tests.upload.test_upload import FORMAT_DOC, convert, jsonl, jsonl_records, lines, replace, trec_files

#: nq:0's gold passages: its ranked gold passage and one passage of the file it does not rank (recall counts it).
EXTRA_GOLD = {"nq:0": ("nq_oracle:0", "nq_oracle:5")}


@pytest.fixture(scope="module")
def fixture_run():
    return build_small_run()


def gold_ids(run) -> dict[str, tuple[str, ...]]:
    return {q.query_id: EXTRA_GOLD.get(q.query_id, q.gold_passage_ids) for q in run.queries}


def with_gold(run) -> dict[str, UploadFile]:
    """The fixture as TREC files whose queries carry ``gold_passage_ids`` (nq:0 with an unranked one), no qrels."""
    files = trec_files(run)
    gold = gold_ids(run)
    queries = [{"query_id": q.query_id, "text": q.text, "answers": list(q.answers),
                "gold_passage_ids": list(gold[q.query_id])} for q in run.queries]
    return {**replace(files, "queries", jsonl(queries)), "qrels": None}


def test_gold_passage_ids_are_the_labels_when_there_is_no_qrels_file(fixture_run):
    result = convert(with_gold(fixture_run))
    assert result.ok and result.problems == ()  # no "no qrels file" warning: the field is the judgments
    run = result.run
    assert run.settings["label_methods"] == ["gold"]
    gold = gold_ids(fixture_run)
    for ranking in run.rankings:
        labelled = {x.passage_id: x.value for x in run.labels if x.query_id == ranking.query_id}
        expected = dict.fromkeys(gold[ranking.query_id], 1.0) | {
            p: 0.0 for p in ranking.passage_ids if p not in gold[ranking.query_id]}
        assert labelled == expected  # 1 for each gold passage, 0 for every other ranked one: no "–" left
    assert "nq_oracle:5" in {p.passage_id for p in run.passages}  # the unranked gold passage is kept, with its text


def test_gold_measures_equal_those_of_the_same_judgments_as_a_qrels_file(fixture_run):
    """Independent checks: the engine's qrels path on a qrels file written from the same gold ids, and
    pytrec_eval on the uploaded rankings."""
    files = with_gold(fixture_run)
    gold = gold_ids(fixture_run)
    qrels_file = UploadFile("gold.qrels", lines(f"{q} 0 {p} 1" for q, ps in gold.items() for p in ps))
    by_gold = convert(files).run
    by_qrels = convert({**files, "qrels": qrels_file}).run
    ours = {(m.measure, m.query_id): m.value for m in by_gold.measure_values if m.method == "gold"}
    theirs = {(m.measure, m.query_id): m.value for m in by_qrels.measure_values if m.method == "qrels"}
    assert len(ours) == len(theirs) > 100 and ours == pytest.approx(theirs)
    trec_run = {r.query_id: {p.passage_id: p.score for p in r.passages} for r in by_gold.rankings}
    trec_qrels = {q: dict.fromkeys(ps, 1) for q, ps in gold.items()}
    names = {"recall_5", "P_5", "ndcg_cut_5", "Rprec"}
    evaluated = pytrec_eval.RelevanceEvaluator(trec_qrels, names).evaluate(trec_run)
    for query_id, values in evaluated.items():
        assert ours["R@5", query_id] == pytest.approx(values["recall_5"])
        assert ours["P@5", query_id] == pytest.approx(values["P_5"])
        assert ours["nDCG@5", query_id] == pytest.approx(values["ndcg_cut_5"])
        assert ours["Rprec", query_id] == pytest.approx(values["Rprec"])
    assert ours["R@5", "nq:0"] == 0.5  # one of its two gold passages is ranked


def test_one_gold_rule_for_both_upload_forms(fixture_run):
    """The JSONL form's field gives the same gold labels and measures as the TREC form's."""
    records = jsonl_records(fixture_run)
    single = convert_jsonl_upload(UploadFile("run.jsonl", jsonl(records))).run
    trec = convert({**trec_files(fixture_run), "queries": UploadFile("queries.jsonl", jsonl(
        {"query_id": r["query_id"], "text": r["text"], "answers": r["answers"],
         "gold_passage_ids": r["gold_passage_ids"]} for r in records)), "qrels": None}).run
    def key(x):
        return x.method, x.query_id, x.passage_id

    assert sorted((x for x in single.labels if x.method == "gold"), key=key) == sorted(trec.labels, key=key)
    def where(m):
        return m.measure, m.query_id

    gold_measures = sorted((m for m in single.measure_values if m.method == "gold"), key=where)
    assert gold_measures == sorted(trec.measure_values, key=where)
    assert gold_labels("q", ["b", "a", "b"], ["a", "c", "b", "d"]) == [
        *gold_labels("q", ["b", "a"], []), *gold_labels("q", [], ["c", "d"])]
    assert [x.value for x in gold_labels("q", ["b", "a"], ["a", "c", "b", "d"])] == [1.0, 1.0, 0.0, 0.0]


def test_no_qrels_and_no_gold_is_still_a_warning(fixture_run):
    result = convert({**trec_files(fixture_run), "qrels": None})
    assert result.ok and result.run.labels == [] and result.run.measure_values == []
    assert [(p.severity, p.file, p.line, p.message) for p in result.problems] == [
        (WARNING, "run.trec", None, "no qrels file and no 'gold_passage_ids' in queries.jsonl: the run has no "
                                    "relevance labels and no measures")]


def test_a_query_without_gold_and_a_gold_passage_not_in_the_passages_file_are_warnings(fixture_run):
    files = with_gold(fixture_run)
    queries = [json.loads(line) for line in files["queries"].data.decode().splitlines()]
    queries[2]["gold_passage_ids"] = []
    queries[3]["gold_passage_ids"] = ["nowhere:1"]
    result = convert(replace(files, "queries", jsonl(queries)))
    assert result.ok
    assert [(p.severity, p.line, p.message) for p in result.problems] == [
        (WARNING, 3, "query 'nq:2' has no 'gold_passage_ids' (and there is no qrels file): its gold measures are 0"),
        (WARNING, 4, "field 'gold_passage_ids': passage 'nowhere:1' is not in passages.jsonl: it counts as relevant "
                     "and unretrieved, and has no text to show")]
    measures = {(m.measure, m.query_id): m.value for m in result.run.measure_values}
    assert measures["nDCG@5", "nq:2"] == 0.0 and measures["R@5", "nq:3"] == 0.0 and measures["R@5", "nq:1"] == 1.0


def test_the_format_documents_gold_example_converts():
    """The queries example with ``gold_passage_ids`` in docs/upload_format.md, with the document's run and passages."""
    text = FORMAT_DOC.read_text()
    blocks = [block.split("```")[0] for block in text.split("```json\n")[1:]]
    queries = next(b for b in blocks if '"gold_passage_ids": ["p2", "p3"]' in b)
    passages = next(b for b in blocks if b.startswith('{"passage_id": "p1"'))
    run = text.split("```text\n")[1].split("```")[0]
    result = convert({"run": UploadFile("run.trec", run.encode()), "queries": UploadFile("queries.jsonl",
                     queries.encode()), "passages": UploadFile("passages.jsonl", passages.encode())})
    assert result.ok and result.problems == ()
    gold = {(x.query_id, x.passage_id): x.value for x in result.run.labels}
    assert gold == {("q1", "p1"): 1.0, ("q1", "p2"): 0.0, ("q2", "p2"): 1.0, ("q2", "p3"): 1.0}


# --- whole-file problems ------------------------------------------------------------------------------------

CSV_QUERIES = b'query_id,text,answers\nnq:0,who wrote it,"[""x""]"\nnq:1,"a, b",\n\nnq:2,c,d\nnq:3,e,f\nnq:4,g,h\n'


@pytest.mark.parametrize("data, name", [
    (CSV_QUERIES, "CSV file"),
    (CSV_QUERIES.replace(b",", b"\t"), "tab-separated (TSV) file"),
    (CSV_QUERIES.replace(b",", b";"), "CSV file (with ';')"),
])
def test_a_delimited_file_given_as_jsonl_is_one_problem(fixture_run, data, name):
    result = convert(replace(trec_files(fixture_run), "queries", data))
    assert [(p.severity, p.file, p.line, p.message) for p in result.problems] == [
        (ERROR, "queries.jsonl", None, f"this looks like a {name} (first line: query_id, text, answers): expected "
                                       "JSON lines, one object a line")]  # not six "not valid JSON"


def test_a_delimited_file_in_the_jsonl_form_and_a_long_header_are_shortened():
    header = ",".join(f"column_{i}" for i in range(9)) + ",a_very_long_column_name_of_more_than_thirty_chars"
    result = convert_jsonl_upload(UploadFile("run.jsonl", (header + "\n1,2\n").encode()))
    (problem,) = result.problems
    assert problem.line is None and problem.message == (
        "this looks like a CSV file (first line: column_0, column_1, column_2, column_3, column_4, column_5, …): "
        "expected JSON lines, one object a line")


def test_broken_json_is_not_taken_for_csv(fixture_run):
    """Lines that start as JSON (an object, a list) keep their per-line messages, even with commas in them."""
    result = convert(replace(trec_files(fixture_run), "queries", b'{"query_id": "nq:0", "text": "a",\n'))
    assert [p.message.split(":")[0] for p in result.problems] == ["not valid JSON"]
    result = convert(replace(trec_files(fixture_run), "queries", b'["nq:0", "a"]\n'))
    assert [p.message for p in result.problems] == ["expected a JSON object {...}, found a list"]
    result = convert(replace(trec_files(fixture_run), "queries", b"just words\n"))
    assert [p.message.split(":")[0] for p in result.problems] == ["not valid JSON"]  # no separator: no table


def test_swapped_queries_and_passages_files_are_one_problem_each(fixture_run):
    files = trec_files(fixture_run)
    swapped = {**files, "queries": UploadFile("queries.jsonl", files["passages"].data),
               "passages": UploadFile("passages.jsonl", files["queries"].data)}
    result = convert(swapped)
    assert [(p.severity, p.file, p.line, p.message) for p in result.problems] == [
        (ERROR, "queries.jsonl", None, "these look like passages (passage_id, title, text), not queries: did you "
                                       "swap the queries and passages files? Each query needs a 'query_id'"),
        (ERROR, "passages.jsonl", None, "these look like queries (query_id, text, answers), not passages: did you "
                                        "swap the queries and passages files? Each passage needs a 'passage_id'")]
    one_wrong = convert(replace(files, "queries", files["passages"].data))
    assert len(one_wrong.problems) == 1 and one_wrong.problems[0].message.startswith("these look like passages")


def test_a_queries_file_with_some_ids_missing_keeps_its_per_line_errors(fixture_run):
    """Only a file where no record has its id field is taken for the other file."""
    files = trec_files(fixture_run)
    rows = files["queries"].data.decode().splitlines()
    rows[1] = '{"passage_id": "nq_oracle:1", "text": "t"}'
    result = convert(replace(files, "queries", "\n".join(rows).encode()))
    assert [(p.line, p.message) for p in result.errors] == [(2, "field 'query_id': missing (required)")]
