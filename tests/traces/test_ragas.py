"""RAGAS evaluation datasets (JSON Lines and CSV written by ragas 0.4.3's own ``EvaluationDataset.to_jsonl`` /
``to_csv``: tests/traces/fixtures/make_ragas.py) read into trace records, compared with the samples RAGAS was
given (``SAMPLES``)."""

from __future__ import annotations

import pytest

from rageval.errors import DataError
from rageval.traces.readers import read_traces
from rageval.traces.records import RETRIEVED
from tests.traces.fixtures.make_ragas import CSV, JSONL, SAMPLES


def expected() -> list:
    rows = []
    for sample in SAMPLES:
        ids = sample.get("retrieved_context_ids")
        documents = [(str(ids[i]) if ids else "", text) for i, text in enumerate(sample["retrieved_contexts"])]
        reference = sample.get("reference")
        rows.append((sample["user_input"], documents, sample.get("response"), (reference,) if reference else ()))
    return rows


@pytest.mark.parametrize("path", [JSONL, CSV])
def test_ragas_files_read_into_their_samples(path):
    records = read_traces("ragas", [path])
    assert [(r.question, [(d.document_id, d.content) for d in r.stages[RETRIEVED]], r.answer, r.gold_answers)
            for r in records] == expected()
    assert [[d.position for d in r.stages[RETRIEVED]] for r in records] == [
        list(range(len(s["retrieved_contexts"]))) for s in SAMPLES]


@pytest.mark.parametrize("path", [JSONL, CSV])
def test_what_a_row_lacks_is_kept_and_listed(path):
    records = read_traces("ragas", [path])
    assert [r.missing for r in records] == [
        (), ("retrieved[0].document_id", "retrieved[1].document_id"), ("answer",), ("gold_answers",)]


def test_sources_name_the_file_and_line():
    assert [r.source for r in read_traces("ragas", [CSV])] == [f"{CSV}, line {n}" for n in (2, 3, 4, 5)]
    assert len({r.trace_id for r in read_traces("ragas", [JSONL, CSV])}) == 2 * len(SAMPLES)


def test_answers_field_names_another_column():
    records = read_traces("ragas", [JSONL], answers_field="reference")
    assert [r.answer for r in records] == [s.get("reference") for s in SAMPLES]


def test_a_bad_list_cell_names_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(CSV.read_text().replace("['Berlin is the capital of Germany and its largest city.']",
                                            "[unclosed"))
    with pytest.raises(DataError) as raised:
        read_traces("ragas", [path])
    assert (raised.value.line, raised.value.field) == (4, "retrieved_contexts")


def test_ids_that_do_not_match_the_contexts_name_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = JSONL.read_text().splitlines()
    lines[0] = lines[0].replace('["p1", "p2"]', '["p1"]')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"line 1, field 'retrieved_context_ids'"):
        read_traces("ragas", [path])


def test_multi_turn_samples_are_refused_by_line(tmp_path):
    path = tmp_path / "multi.jsonl"
    path.write_text(JSONL.read_text() + '{"user_input": [{"content": "Hi", "type": "human"}]}\n')
    with pytest.raises(DataError, match=r"line 5, field 'user_input': multi-turn samples"):
        read_traces("ragas", [path])
