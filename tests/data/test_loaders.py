"""Readers of the shipped data: real-file counts and contents, and clear errors on malformed input.

Expected row counts come from the tables in data/README.md (copied from /work/shared/data/README.md).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from rageval import data as d
from rageval.errors import DataError
from rageval.paths import DATA_DIR

# ------------------------------------------------------------------------------------- real files


@pytest.mark.parametrize(("relative", "reader", "rows"), [
    (d.NQ_GOLD_FILE, d.read_nq_open_gold, 2889),
    (d.NQ_ORACLE_FILE, d.read_nq_open_oracle, 2655),
    (d.HOTPOTQA_FILE, d.read_hotpotqa, 400),
    (d.HAGRID_FILE, d.read_hagrid, 716),
    (d.HAGRID_RUN_FILE, d.read_hagrid_run, 716),
    (d.KILT_HOTPOTQA_FILE, d.read_kilt, 5600),
    (d.KILT_WOW_FILE, d.read_kilt, 3054),
    (d.CORPUS_2WIKI_FILE, d.read_corpus_2wiki, 6119),
    (d.CORPUS_WIKI18_FILE, d.read_corpus_wiki18, 1000),
])
def test_real_file_row_counts(relative, reader, rows):
    assert len(reader(DATA_DIR / relative)) == rows


# Per-split counts: data/README.md, NLI table.
NLI_SPLIT_COUNTS = {
    "snli": {"dev": 9842, "test": 9824},
    "fever": {"train": 10660, "dev": 1318, "test": 1354},
    "climate_fever": {"train": 6100, "dev": 775, "test": 800},
    "covidfact": {"train": 3263, "dev": 419, "test": 401},
    "healthver": {"dev": 1917, "test": 1823},
    "glue_rte": {"train": 2490, "dev": 277},
    "control": {"train": 6719, "dev": 799, "test": 805},
    "fever_docnli": {"train": 12053, "dev": 1481, "test": 4311},
    "mnli_docnli": {"train": 11670, "dev": 2104, "test": 5871},
    "mctest": {"train": 1744, "dev": 656, "test": 3360},
    "drop": {"train": 19020, "dev": 6036, "test": 6170},
    "summedits": {"dev": 986, "test": 3695},
    "vitaminc": {"test": 55197},
    "anli": {"test": 3200},
}


@pytest.mark.parametrize("name", sorted(NLI_SPLIT_COUNTS))
def test_nli_split_counts(name):
    pairs = d.read_nli_pairs(DATA_DIR / d.NLI_FILES[name])
    assert Counter(p.split for p in pairs) == NLI_SPLIT_COUNTS[name]
    assert {p.label for p in pairs} <= d.loaders.NLI_LABELS


def test_nli_split_filter_keeps_only_the_requested_split():
    path = DATA_DIR / d.NLI_FILES["glue_rte"]
    dev = d.read_nli_pairs(path, splits={"dev"})
    assert len(dev) == 277 and {p.split for p in dev} == {"dev"}
    with pytest.raises(ValueError, match="validation"):
        d.read_nli_pairs(path, splits=["validation"])


def test_nq_gold_first_record():
    first = d.read_nq_open_gold(DATA_DIR / d.NQ_GOLD_FILE)[0]
    # zcat data/nq_open/nq_open_gold_test_2889.json.gz | python -c 'import json,sys; print(json.load(sys.stdin)[0])'
    assert first.example_id == "-3290814144789249484"
    assert first.question == "who got the first nobel prize in physics"
    assert first.answers == ("Wilhelm Conrad Röntgen",)
    assert first.text.startswith("The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen , of")


def test_nq_oracle_first_line():
    first = d.read_nq_open_oracle(DATA_DIR / d.NQ_ORACLE_FILE)[0]
    assert first.line == 1
    assert first.title == first.gold_title == "List of Nobel laureates in Physics"
    assert first.has_answer is True
    assert first.text.startswith("The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, of")


def test_hotpotqa_has_two_supporting_paragraphs_per_question():
    records = d.read_hotpotqa(DATA_DIR / d.HOTPOTQA_FILE)
    # data/README.md: "exactly 2 supporting (gold) paragraphs per question".
    assert all(sum(c.is_supporting for c in r.contexts) == 2 for r in records)
    assert records[0].answers == ("Animorphs",)
    assert sum(len(r.contexts) for r in records) == 3949  # zcat ... | jq '.contexts | length' | paste -sd+ | bc


def test_hagrid_answers_and_human_labels():
    records = d.read_hagrid(DATA_DIR / d.HAGRID_FILE)
    answers = [a for r in records for a in r.answers]
    sentences = [s for a in answers for s in a.sentences]
    # data/README.md: "1,318 answers, 2,388 sentences with human labels".
    assert (len(answers), len(sentences)) == (1318, 2388)
    assert {s.attributable for s in sentences} == {0, 1, None}
    first = records[0]
    assert first.query_id == "3120" and first.quotes[1].docid == "3897876#0" and first.quotes[1].idx == 2


def test_hagrid_run_has_two_scored_passages_per_query():
    run = d.read_hagrid_run(DATA_DIR / d.HAGRID_RUN_FILE)
    assert all(len(r.retrieved) == 2 for r in run)
    first = run[0]
    assert first.retrieved[0].title == "Persecution of Jehovah's Witnesses in Nazi Germany"
    assert first.retrieved[0].score == pytest.approx(-0.02462373673915863)


def test_kilt_provenance():
    first = d.read_kilt(DATA_DIR / d.KILT_HOTPOTQA_FILE)[0]
    assert first.answers == ("yes",)
    assert [(p.wikipedia_id, p.title) for p in first.provenance] == [("2816539", "Scott Derrickson"),
                                                                     ("10520", "Ed Wood")]


def test_wiki18_titles_quoted_and_unquoted():
    passages = {p.passage_id: p for p in d.read_corpus_wiki18(DATA_DIR / d.CORPUS_WIKI18_FILE)}
    assert passages["wiki18:0"].title == "Evan Morris"  # contents '"Evan Morris"\nEvan Morris Evan L. ...'
    assert not any(p.title.startswith('"') or "\n" in p.title for p in passages.values())
    assert d.parse_title_contents('Absalon\ndragged forth') == ("Absalon", "dragged forth")
    assert d.parse_title_contents('"A"\n') is None


# ---------------------------------------------------------------------------------- malformed input


def _write_gz(path, text: str):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


def _jsonl(*rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


NLI_ROW = {"premise": "p", "hypothesis": "h", "label": "entailment", "split": "dev", "source": "s", "id": "x"}


def test_not_gzip(tmp_path):
    path = tmp_path / "plain.jsonl.gz"
    path.write_text(_jsonl(NLI_ROW))
    with pytest.raises(DataError, match="gzip") as info:
        d.read_nli_pairs(path)
    assert str(path) in str(info.value) and info.value.line == 1


def test_truncated_gzip(tmp_path):
    path = _write_gz(tmp_path / "t.jsonl.gz", _jsonl(*[NLI_ROW] * 200))
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(DataError, match="truncated") as info:
        d.read_nli_pairs(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="not found"):
        d.read_hagrid(tmp_path / "nope.jsonl.gz")


def test_truncated_json_line_names_file_and_line(tmp_path):
    path = _write_gz(tmp_path / "nli.jsonl.gz", _jsonl(NLI_ROW) + '{"premise": "p", "hypo')
    with pytest.raises(DataError) as info:
        d.read_nli_pairs(path)
    assert info.value.line == 2
    assert str(info.value).startswith(f"{path}, line 2: invalid JSON")


def test_missing_field_names_file_line_and_field(tmp_path):
    row = dict(NLI_ROW)
    del row["hypothesis"]
    path = _write_gz(tmp_path / "nli.jsonl.gz", _jsonl(NLI_ROW, NLI_ROW, row))
    with pytest.raises(DataError) as info:
        d.read_nli_pairs(path)
    assert str(info.value) == f"{path}, line 3, field 'hypothesis': missing field"


def test_bad_label_is_rejected(tmp_path):
    path = _write_gz(tmp_path / "nli.jsonl.gz", _jsonl({**NLI_ROW, "label": "maybe"}))
    with pytest.raises(DataError, match="line 1, field 'label'"):
        d.read_nli_pairs(path)


def _oracle_row(**changes):
    row = {"question": "who wrote it", "answers": ["Ann"],
           "ctxs": [{"title": "T", "text": "Ann wrote it.", "hasanswer": True, "isgold": True}],
           "nq_annotated_gold": {"title": "T", "long_answer": "Ann wrote it."}}
    row.update(changes)
    return row


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"answers": "Ann"}, "answers", "expected a non-empty list of strings"),
    ({"answers": ["Ann", 3]}, "answers[1]", "expected a non-empty string"),
    ({"answers": []}, "answers", "expected a non-empty list of strings"),
    ({"question": "  "}, "question", "expected a non-empty string"),
    ({"question": 7}, "question", "expected a string, got int"),
    ({"ctxs": []}, "ctxs", "expected a non-empty list"),
    ({"ctxs": [{"title": "T", "text": 5, "hasanswer": True}]}, "ctxs[0].text", "expected a string, got int"),
    ({"nq_annotated_gold": {"long_answer": ""}}, "nq_annotated_gold.title", "missing field"),
])
def test_oracle_wrong_types_name_the_field(tmp_path, change, field, message):
    path = _write_gz(tmp_path / "oracle.jsonl.gz", _jsonl(_oracle_row(), _oracle_row(**change)))
    with pytest.raises(DataError) as info:
        d.read_nq_open_oracle(path)
    assert (info.value.line, info.value.field) == (2, field)
    assert str(info.value).startswith(f"{path}, line 2, field {field!r}: {message}")


def test_json_list_file_says_record(tmp_path):
    good = {"example_id": 1, "question": "q", "answers": ["a"], "text": "t", "idx_gold_in_corpus": 5}
    path = _write_gz(tmp_path / "gold.json.gz", json.dumps([good, {**good, "idx_gold_in_corpus": "5"}]))
    with pytest.raises(DataError) as info:
        d.read_nq_open_gold(path)
    assert str(info.value) == f"{path}, record '2', field 'idx_gold_in_corpus': expected an integer, got str"


def test_json_list_file_that_is_not_a_list(tmp_path):
    path = _write_gz(tmp_path / "c.json.gz", json.dumps({"title": "T", "text": "x"}))
    with pytest.raises(DataError, match="expected one JSON list"):
        d.read_corpus_2wiki(path)


def test_hotpotqa_nested_field_and_hagrid_label(tmp_path):
    ctx = {"id": "0", "title": "T", "paragraph_text": "x", "is_supporting": "yes"}
    row = {"question_id": "a", "question_text": "q", "answers_objects": [{"spans": ["x"]}], "contexts": [ctx]}
    path = _write_gz(tmp_path / "h.jsonl.gz", _jsonl(row))
    with pytest.raises(DataError, match=r"line 1, field 'contexts\[0\].is_supporting': expected true or false"):
        d.read_hotpotqa(path)
    sentence = {"text": "s", "index": 0, "informative": 1, "attributable": 2}
    answer = {"answer": "s", "answer_type": "long", "informative": 1, "attributable": 1, "sentences": [sentence]}
    row = {"query_id": 1, "query": "q", "quotes": [{"idx": 1, "docid": "1#0", "text": "t"}], "answers": [answer]}
    path = _write_gz(tmp_path / "g.jsonl.gz", _jsonl(row))
    with pytest.raises(DataError, match=r"field 'answers\[0\].sentences\[0\].attributable': expected 0, 1 or null"):
        d.read_hagrid(path)


def test_hagrid_run_scores_must_match_passages(tmp_path):
    row = {"query_id": 1, "retrieved": [{"docid": "1#0", "text": "t", "title": "T"}], "scores": [1.0, 2.0]}
    path = _write_gz(tmp_path / "r.jsonl.gz", _jsonl(row))
    with pytest.raises(DataError, match="line 1, field 'scores': expected 1 scores"):
        d.read_hagrid_run(path)


def test_blank_lines_are_skipped_but_counted(tmp_path):
    path = _write_gz(tmp_path / "x.jsonl.gz", "\n" + json.dumps({"a": 1}) + "\n\n[1]\n")
    it = d.iter_jsonl_gz(path)
    assert next(it) == (2, {"a": 1})
    with pytest.raises(DataError, match="line 4: expected a JSON object"):
        next(it)
