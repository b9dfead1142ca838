"""Where a helping passage was lost (rageval.traces.stages), on hand-made cases where each passage's fate is known:
the three traces of tests/traces/trace_fixtures.two_stage_records (Paris reranked into the top k and used;
Berlin reranked out; Rome never retrieved) plus one whose helping passage is in the top k of a wrong answer."""

from __future__ import annotations

import math

from rageval.store import Label, RunReader, RunWriter
from rageval.traces.importer import content_id, import_traces
from rageval.traces.records import RERANKED, RETRIEVED, TraceRecord
from rageval.traces.stages import FATES, analyse_run, helpful_method, passage_fates, stage_table
from tests.traces.trace_fixtures import BERLIN, MILAN, PARIS, ROME, doc, two_stage_records


def spain() -> TraceRecord:
    madrid = "Madrid is the capital of Spain."
    return TraceRecord("q-spain", "What is the capital of Spain?",
                       {RETRIEVED: [doc(0, MILAN, score=2.0), doc(1, madrid, score=1.0)],
                        RERANKED: [doc(0, MILAN, score=0.9), doc(1, madrid, score=0.8)]},
                       answer="Milan", gold_answers=("Madrid",), span_ids={RETRIEVED: "r4", RERANKED: "rr4"},
                       source="traces.jsonl, line 4")


def test_the_fate_of_each_helping_passage_and_the_table(tmp_path):
    records = [*two_stage_records(), spain()]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q-france 0 {content_id(PARIS)} 1\nq-germany 0 {content_id(BERLIN)} 1\nq-italy 0 rome 1\n"
                     f"q-spain 0 {content_id(spain().stages[RETRIEVED][1].content)} 1\n")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"passage_id": "rome", "title": "", "text": "' + ROME + '"}\n')
    path = tmp_path / "run.sqlite"
    import_traces(records, path, format_name="openinference", corpus=corpus, qrels=qrels)
    # eRAG labels as a completion writes them: 1 where the passage starts with the gold answer (every listed one).
    erag = [Label("erag:em", r.trace_id, content_id(d.content), float(d.content.startswith(r.gold_answers[0])))
            for r in records for documents in r.stages.values() for d in documents]
    with RunWriter(path) as writer:
        writer.put_labels(list({(x.query_id, x.passage_id): x for x in erag}.values()), [])
    madrid = content_id(spain().stages[RETRIEVED][1].content)
    with RunReader(path) as reader:
        assert helpful_method(reader.label_methods()) == "erag:em"
        analysis = analyse_run(reader)
        by_qrels = analyse_run(reader, "qrels")
    assert analysis.method == "erag:em" and analysis.stages == (RERANKED, RETRIEVED)
    assert [(f.query_id, f.passage_id, f.fate, f.first_rank, f.final_rank, f.k) for f in analysis.fates] == [
        ("q-france", content_id(PARIS), "used", 3, 1, 2),
        ("q-germany", content_id(BERLIN), "out_of_top_k", 2, None, 2),
        ("q-spain", madrid, "not_used", 2, 2, 2)]  # q-italy: Rome is in no list, so no eRAG label names it
    assert {f.query_id: f.fate for f in by_qrels.fates}["q-italy"] == "never_retrieved"
    table = analysis.table.set_index("query_id")
    assert list(table.index) == ["q-france", "q-germany", "q-italy", "q-spain", "all"]
    assert table.loc["all", list(FATES)].tolist() == [0, 1, 1, 1, 0] and table.loc["all", "helpful"] == 3
    assert table.loc["q-italy", "helpful"] == 0


def test_fates_by_hand_k_and_unscored_answers():
    first = {"q": ["a", "b", "c", "d"]}
    final = {"q": ["c", "a", "b"], "single": ["x", "y"]}
    fates = passage_fates(first, final, {"q": 2, "single": 1}, {"q": ["a", "b", "z"], "single": ["y", "x"]},
                          {"q": math.nan, "single": 1.0})
    assert [(f.query_id, f.passage_id, f.fate) for f in fates] == [
        ("q", "a", "use_unknown"),      # final rank 2 <= k, answer unscored
        ("q", "b", "out_of_top_k"),     # final rank 3 > k = 2
        ("q", "z", "never_retrieved"),
        ("single", "x", "used"),        # one stage: the final list is the first stage's
        ("single", "y", "out_of_top_k")]
    table = stage_table(fates, ["q", "single"]).set_index("query_id")
    assert table.loc["all"].tolist() == [5, 1, 2, 0, 1, 1]
