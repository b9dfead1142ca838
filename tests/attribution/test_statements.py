"""Statements and inline citations of attributed answers, on the real HAGRID dev answers."""

from __future__ import annotations

import json

import pytest

from rageval.attribution import statements as st
from rageval.attribution.statements import (
    CITATION,
    Statement,
    missing_citations,
    parse_citations,
    split_sentences,
    split_statements,
)
from rageval.data.loaders import read_hagrid
from rageval.paths import DATA_DIR


@pytest.fixture(scope="module")
def hagrid():
    return {r.query_id: r for r in read_hagrid(DATA_DIR / "hagrid" / "hagrid_dev.jsonl.gz")}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    import os

    previous = os.environ.get("RAGEVAL_CACHE_DIR")
    os.environ["RAGEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("punkt-cache"))
    st.sentence_tokenizer.cache_clear()
    try:
        yield st.sentence_tokenizer()
    finally:
        st.sentence_tokenizer.cache_clear()
        if previous is None:
            os.environ.pop("RAGEVAL_CACHE_DIR", None)
        else:
            os.environ["RAGEVAL_CACHE_DIR"] = previous


def answers(hagrid):
    return [(r, a) for r in hagrid.values() for a in r.answers]


@pytest.mark.parametrize(("sentence", "text", "citations"), [
    ("Bonanza was filmed at the Bonanza Creek Movie Ranch in New Mexico [2, 4].",
     "Bonanza was filmed at the Bonanza Creek Movie Ranch in New Mexico.", (2, 4)),
    ("The name Canada comes from the word \"kanata\" [2][3]", "The name Canada comes from the word \"kanata\"", (2, 3)),
    ("It was born on May 15, 1867. [1]", "It was born on May 15, 1867.", (1,)),
    ("A [3] and B [1, 3].", "A and B.", (3, 1)),
    ("No citation at all.", "No citation at all.", ()),
    ("[ 1 ,2 ]", "", (1, 2)),
])
def test_parse_citations(sentence, text, citations):
    assert parse_citations(sentence) == (text, citations)


def test_a_marker_after_the_period_stays_with_its_sentence(hagrid, tokenizer):
    answer = next(a for _, a in answers(hagrid) if "Charles Taze Russell. [2] Later" in a.text)
    statements = split_statements(answer.text, tokenizer)
    assert statements[0].text.endswith("Charles Taze Russell.") and statements[0].citations == (2,)
    assert statements[1].text.startswith("Later, the movement split")
    assert not statements[1].raw.startswith("[")


def test_every_hagrid_answer_splits_without_losing_or_inventing_text_or_citations(hagrid, tokenizer):
    for record, answer in answers(hagrid):
        statements = split_statements(answer.text, tokenizer)
        assert "".join("".join(s.raw.split()) for s in statements) == "".join(answer.text.split()), record.query_id
        cited = [int(n) for group in CITATION.findall(answer.text) for n in group.split(",")]
        assert {c for s in statements for c in s.citations} == set(cited), record.query_id
        assert not any(CITATION.search(s.text) for s in statements), record.query_id


def test_sentences_agree_with_hagrid_annotators_single_sentence_units(hagrid, tokenizer):
    """HAGRID's annotators cut answers into citation units; where a unit is one sentence, our split finds it."""
    def key(text):
        return parse_citations(text)[0].rstrip(" .,;:")

    found = total = 0
    for _, answer in answers(hagrid):
        ours = {key(s.raw) for s in split_statements(answer.text, tokenizer)}
        for unit in answer.sentences:
            if len(split_sentences(unit.text, tokenizer)) == 1:
                total += 1
                found += key(unit.text) in ours
    assert total > 1500
    assert found / total >= 0.9, f"{found}/{total}"


def test_abbreviations_learned_from_the_corpus_do_not_end_sentences(tokenizer):
    sentences = split_sentences("The U.S. Army was founded in 1775 [1]. Dr. Smith agreed [1][3].", tokenizer)
    assert sentences == ["The U.S. Army was founded in 1775 [1].", "Dr. Smith agreed [1][3]."]


def test_answers_without_citations_and_empty_answers(hagrid, tokenizer):
    uncited = [a for _, a in answers(hagrid) if not CITATION.search(a.text)]
    assert uncited  # HAGRID has answers that cite nothing
    statements = split_statements(uncited[0].text, tokenizer)
    assert statements and all(s.citations == () for s in statements)
    assert split_statements("", tokenizer) == [] and split_statements("  [1] ", tokenizer) == []


def test_citations_to_missing_quotes_are_reported(hagrid, tokenizer):
    flagged = []
    for record, answer in answers(hagrid):
        missing = missing_citations(split_statements(answer.text, tokenizer), [q.idx for q in record.quotes])
        if missing:
            flagged.append((record, missing))
    assert flagged  # real HAGRID answers cite quotes their query does not have
    record, missing = flagged[0]
    assert not set(missing) & {q.idx for q in record.quotes}
    statements = [Statement("a", (1, 4), "a [1, 4]"), Statement("b", (4, 2), "b [4][2]")]
    assert missing_citations(statements, [1, 2, 3]) == [4]


def test_punkt_parameters_are_cached_and_reload_identically(tokenizer, monkeypatch):
    from nltk.tokenize import punkt

    from rageval.corpus import build_corpus

    files = list(st.punkt_parameters_path("x").parent.glob("punkt-*.json"))
    assert len(files) == 1
    stored = json.loads(files[0].read_text())
    assert "u.s" in stored["abbrev_types"] and "dr" in stored["abbrev_types"]

    def no_training(*args, **kwargs):
        raise AssertionError("trained again instead of loading the cached parameters")

    monkeypatch.setattr(punkt.PunktTrainer, "train", no_training)
    texts = [p.text for p in build_corpus().passages if p.source in st.TRAINING_SOURCES]
    reloaded = st.train_punkt(texts)
    assert reloaded.abbrev_types == tokenizer._params.abbrev_types
    assert reloaded.sent_starters == tokenizer._params.sent_starters
