"""Split an answer into statements and read each statement's inline citations.

An attributed answer cites its passages inline: ``... Russell [2].``, ``... Russell. [2]``, ``[1, 2]`` or
``[1][2]``. A *statement* is one sentence of the answer with the citations that belong to it; its ``text`` has the
markers removed, which is what an entailment model judges (Djeddal et al., CIKM 2024; ALCE, Gao et al. 2023).

Sentences come from nltk's Punkt (Kiss & Strunk, 2006) trained here, without any download, on the rageval
corpus' Wikipedia passages (HAGRID quotes, wiki-18, NQ DPR passages: ~0.5M words, ~7 s), plus a short list of
English title abbreviations Punkt cannot learn from that text (``Dr.``, ``Mr.``, ...). The learned parameters are
cached as JSON under the user cache, keyed by the training text's hash. A citation marker that Punkt leaves at the
start of the next sentence (``... Russell. [2] Later, ...``) is moved back to the sentence it ends.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: One inline citation group: ``[3]`` or ``[1, 2]``; consecutive groups (``[1][2]``) are read one by one.
CITATION = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")
_LEADING_CITATIONS = re.compile(r"^(?:\s*\[\s*\d+(?:\s*,\s*\d+)*\s*\])+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])")
#: Title abbreviations Wikipedia text rarely shows Punkt (lower case, without the final period).
EXTRA_ABBREVIATIONS = ("dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "vs", "no", "fig", "gen", "col", "lt",
                       "sgt", "capt", "rev", "hon", "mt", "ft", "approx", "etc", "inc", "ltd", "co", "corp")
TRAINING_SOURCES = ("hagrid", "wiki18", "nq_oracle")


@dataclass(frozen=True)
class Statement:
    """One sentence of an answer: ``text`` without citation markers, the cited passage numbers in order of first
    mention, and the ``raw`` sentence as written."""

    text: str
    citations: tuple[int, ...]
    raw: str


def parse_citations(sentence: str) -> tuple[str, tuple[int, ...]]:
    """``(text without markers, cited numbers)`` of one sentence:
    ``"a [1][2], b [2, 3]."`` -> ``("a, b.", (1, 2, 3))``."""
    cited = [int(n) for group in CITATION.findall(sentence) for n in group.split(",")]
    text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(CITATION.sub(" ", sentence).split()))
    return text, tuple(dict.fromkeys(cited))


def punkt_parameters_path(text_hash: str) -> Path:
    from rageval.paths import cache_dir

    return cache_dir() / "punkt" / f"punkt-{text_hash[:16]}.json"


def train_punkt(texts: Iterable[str]):
    """Punkt parameters learned from ``texts`` (plus :data:`EXTRA_ABBREVIATIONS`), cached as JSON by text hash."""
    from nltk.tokenize.punkt import PunktParameters, PunktTrainer

    text = "\n\n".join(texts)
    text_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    path = punkt_parameters_path(text_hash)
    params = PunktParameters()
    if path.is_file():
        stored = json.loads(path.read_text())
        params.abbrev_types = set(stored["abbrev_types"])
        params.collocations = {tuple(pair) for pair in stored["collocations"]}
        params.sent_starters = set(stored["sent_starters"])
        for word, flags in stored["ortho_context"].items():
            params.ortho_context[word] = flags
    else:
        trainer = PunktTrainer()
        trainer.train(text, finalize=True)
        params = trainer.get_params()
        params.abbrev_types |= set(EXTRA_ABBREVIATIONS)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({
            "abbrev_types": sorted(params.abbrev_types), "collocations": sorted(params.collocations),
            "sent_starters": sorted(params.sent_starters), "ortho_context": dict(params.ortho_context)}))
        temporary.replace(path)
    return params


@lru_cache(maxsize=1)
def sentence_tokenizer(corpus=None):
    """The Punkt tokenizer trained on the corpus' Wikipedia passages (see the module docstring); ``corpus``
    defaults to :func:`rageval.corpus.build_corpus` (pass one already built to skip rebuilding it)."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    if corpus is None:
        from rageval.corpus import build_corpus

        corpus = build_corpus()
    return PunktSentenceTokenizer(train_punkt(p.text for p in corpus.passages if p.source in TRAINING_SOURCES))


def split_sentences(answer: str, tokenizer=None) -> list[str]:
    """The answer's sentences, each keeping the citation markers that end it (a marker Punkt put at the start
    of the next sentence is moved back)."""
    tokenizer = tokenizer if tokenizer is not None else sentence_tokenizer()
    sentences: list[str] = []
    for sentence in tokenizer.tokenize(answer.strip()):
        leading = _LEADING_CITATIONS.match(sentence)
        if leading and sentences:
            sentences[-1] = f"{sentences[-1]} {leading.group(0).strip()}"
            sentence = sentence[leading.end():].strip()
        if sentence:
            sentences.append(sentence)
    return sentences


def split_statements(answer: str, tokenizer=None) -> list[Statement]:
    """:func:`split_sentences` then :func:`parse_citations`; an empty answer has no statement, and a sentence
    that is nothing but markers is folded into the one before it."""
    statements = []
    for sentence in split_sentences(answer, tokenizer):
        text, citations = parse_citations(sentence)
        if text:
            statements.append(Statement(text, citations, sentence))
    return statements


def missing_citations(statements: Sequence[Statement], passage_numbers: Iterable[int]) -> list[int]:
    """Cited numbers that name no given passage (e.g. ``[7]`` when 5 passages were given), in order."""
    known = set(passage_numbers)
    return list(dict.fromkeys(n for s in statements for n in s.citations if n not in known))
