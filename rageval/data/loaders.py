"""Readers for the shipped ``data/*.gz`` files: they validate every field they use and return typed records.

Each reader opens the gzip file directly and checks the type of every field it reads. A malformed file (bad
gzip, bad JSON) or record (missing field, wrong type, empty question, answers not a list of strings) raises
:class:`~rageval.errors.DataError` naming the file, the line (1-based; ``record N`` for the files that hold one
JSON list, N = list index + 1) and the field, never a bare ``KeyError`` or ``JSONDecodeError``.

Records that are not a :class:`~rageval.types.Passage` are small frozen dataclasses defined here; the two
Wikipedia corpus files are read straight into ``Passage`` objects (ids ``2wiki:<record>``, ``wiki18:<id>``).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import DataError
from rageval.types import Passage

NLI_LABELS = frozenset({"entailment", "neutral", "contradiction", "not_entailment"})
NLI_SPLITS = frozenset({"train", "dev", "test"})


# --------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class NqGoldRecord:
    """One question of ``nq_open_gold_test_2889.json.gz``: the NQ long answer is its gold passage (no title).

    The text is PTB-tokenised (``"Röntgen , of Germany"``), unlike the other files.
    """

    record: int  # list index + 1
    example_id: str  # NQ example id (an int64 in the file, kept as its decimal string)
    question: str
    answers: tuple[str, ...]
    text: str
    idx_gold_in_corpus: int  # row of the passage in DPR's psgs_w100 (as the source repository computed it)


@dataclass(frozen=True)
class NqOracleRecord:
    """One line of ``nq_open_oracle_psgs_w100.jsonl.gz``: a question with one gold DPR 100-word passage."""

    line: int
    question: str
    answers: tuple[str, ...]
    title: str  # ctxs[0].title
    text: str  # ctxs[0].text
    has_answer: bool  # ctxs[0].hasanswer
    gold_title: str  # nq_annotated_gold.title: the Wikipedia page of the NQ long answer
    gold_long_answer: str  # nq_annotated_gold.long_answer (untokenised)


@dataclass(frozen=True)
class HotpotContext:
    """One paragraph offered with a HotpotQA distractor question; ``is_supporting`` marks the 2 gold ones."""

    context_id: str
    title: str
    text: str
    is_supporting: bool


@dataclass(frozen=True)
class HotpotRecord:
    line: int
    question_id: str
    question: str
    answers: tuple[str, ...]  # every span of every answers_objects entry
    contexts: tuple[HotpotContext, ...]


@dataclass(frozen=True)
class HagridQuote:
    """A candidate passage of a HAGRID query; answers cite it as ``[idx]``."""

    idx: int
    docid: str  # MIRACL-en id, ``<wikipedia page id>#<passage number>``
    text: str


@dataclass(frozen=True)
class HagridSentence:
    """One statement of a HAGRID answer with its human labels (1 yes, 0 no, None not labelled)."""

    index: int
    text: str
    informative: int | None
    attributable: int | None


@dataclass(frozen=True)
class HagridAnswer:
    text: str
    answer_type: str  # "long" or "short"
    informative: int | None
    attributable: int | None
    sentences: tuple[HagridSentence, ...]


@dataclass(frozen=True)
class HagridRecord:
    line: int
    query_id: str
    query: str
    quotes: tuple[HagridQuote, ...]
    answers: tuple[HagridAnswer, ...]


@dataclass(frozen=True)
class HagridRetrieved:
    docid: str
    title: str
    text: str
    score: float


@dataclass(frozen=True)
class HagridRunRecord:
    """One query of the BM25 + MonoT5 HAGRID run: its retrieved passages, best first."""

    line: int
    query_id: str
    retrieved: tuple[HagridRetrieved, ...]


@dataclass(frozen=True)
class KiltProvenance:
    """A Wikipedia paragraph range (KILT knowledge source) supporting an answer; the files carry no text."""

    wikipedia_id: str
    title: str
    start_paragraph_id: int
    end_paragraph_id: int


@dataclass(frozen=True)
class KiltRecord:
    line: int
    id: str
    input: str
    answers: tuple[str, ...]
    provenance: tuple[KiltProvenance, ...]  # over every output entry, in file order


@dataclass(frozen=True)
class NliPair:
    """A premise/hypothesis pair; ``label`` is entailment | neutral | contradiction | not_entailment."""

    premise: str
    hypothesis: str
    label: str
    split: str  # train | dev | test
    source: str
    id: str


# ----------------------------------------------------------------------------------- low-level reading


def _decode_error(path: Path, exc: Exception, line: int | None) -> DataError:
    if isinstance(exc, EOFError):
        reason = "truncated gzip file (unexpected end of stream)"
    elif isinstance(exc, UnicodeDecodeError):
        reason = f"not valid UTF-8 ({exc.reason})"
    else:
        reason = f"not a readable gzip file ({exc})"
    return DataError(path, reason, line=line)


def iter_jsonl_gz(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a gzip-compressed JSON-lines file.

    Line numbers are 1-based and count blank lines, so they match what ``zcat | sed -n Np`` shows.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    line_number = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(path, f"invalid JSON ({exc.msg} at column {exc.colno})",
                                    line=line_number) from None
                if not isinstance(value, dict):
                    raise DataError(path, f"expected a JSON object, got {type(value).__name__}",
                                    line=line_number)
                yield line_number, value
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise _decode_error(path, exc, line_number + 1) from None


def read_json_gz(path: str | Path) -> Any:
    """Parse a gzip-compressed file holding one JSON document (the two ``*.json.gz`` files hold one list)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            content = handle.read()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise _decode_error(path, exc, None) from None
    try:
        return json.loads(content)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON ({exc.msg} at column {exc.colno})", line=exc.lineno) from None


def _iter_json_list_gz(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(record_number, object)`` over a gzip file holding one JSON list of objects (1-based numbers)."""
    value = read_json_gz(path)
    if not isinstance(value, list):
        raise DataError(path, f"expected one JSON list of records, got {type(value).__name__}")
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise DataError(path, f"expected a JSON object, got {type(item).__name__}", record=str(number))
        yield number, item


# ------------------------------------------------------------------------------------------ validation


@dataclass(frozen=True)
class _At:
    """Where a record sits in its file, so every validation error can name file, line or record, and field."""

    path: Path
    line: int | None = None
    record: str | None = None

    def error(self, field: str, message: str) -> DataError:
        return DataError(self.path, message, line=self.line, record=self.record, field=field)


_MISSING = object()


def _field(obj: dict, key: str, at: _At, name: str) -> Any:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        raise at.error(name, "missing field")
    return value


def _dict(obj: dict, key: str, at: _At, prefix: str = "") -> dict:
    name = prefix + key
    value = _field(obj, key, at, name)
    if not isinstance(value, dict):
        raise at.error(name, f"expected an object, got {type(value).__name__}")
    return value


def _list(obj: dict, key: str, at: _At, prefix: str = "", *, non_empty: bool = False) -> list:
    name = prefix + key
    value = _field(obj, key, at, name)
    if not isinstance(value, list):
        raise at.error(name, f"expected a list, got {type(value).__name__}")
    if non_empty and not value:
        raise at.error(name, "expected a non-empty list")
    return value


def _objects(obj: dict, key: str, at: _At, prefix: str = "", *, non_empty: bool = False) -> list[tuple[str, dict]]:
    """A list of JSON objects, each paired with its field name for errors (``contexts[3].``)."""
    items = _list(obj, key, at, prefix, non_empty=non_empty)
    out = []
    for i, item in enumerate(items):
        name = f"{prefix}{key}[{i}]"
        if not isinstance(item, dict):
            raise at.error(name, f"expected an object, got {type(item).__name__}")
        out.append((name + ".", item))
    return out


def _text(obj: dict, key: str, at: _At, prefix: str = "", *, non_empty: bool = True) -> str:
    name = prefix + key
    value = _field(obj, key, at, name)
    if not isinstance(value, str):
        raise at.error(name, f"expected a string, got {type(value).__name__}")
    if non_empty and not value.strip():
        raise at.error(name, "expected a non-empty string")
    return value


def _integer(obj: dict, key: str, at: _At, prefix: str = "") -> int:
    name = prefix + key
    value = _field(obj, key, at, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.error(name, f"expected an integer, got {type(value).__name__}")
    return value


def _number(obj: dict, key: str, at: _At, prefix: str = "") -> float:
    name = prefix + key
    value = _field(obj, key, at, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise at.error(name, f"expected a number, got {type(value).__name__}")
    return float(value)


def _flag(obj: dict, key: str, at: _At, prefix: str = "") -> bool:
    name = prefix + key
    value = _field(obj, key, at, name)
    if not isinstance(value, bool):
        raise at.error(name, f"expected true or false, got {type(value).__name__}")
    return value


def _label01(obj: dict, key: str, at: _At, prefix: str = "") -> int | None:
    """A human binary label: 0, 1 or null (not labelled)."""
    name = prefix + key
    value = _field(obj, key, at, name)
    if value is None:
        return None
    if isinstance(value, bool) or value not in (0, 1):
        raise at.error(name, f"expected 0, 1 or null, got {value!r}")
    return int(value)


def _identifier(obj: dict, key: str, at: _At, prefix: str = "") -> str:
    """An id that files store as a string or an integer; returned as a string."""
    name = prefix + key
    value = _field(obj, key, at, name)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise at.error(name, f"expected a string or integer id, got {type(value).__name__}")
    if isinstance(value, str) and not value.strip():
        raise at.error(name, "expected a non-empty id")
    return str(value)


def _answers(obj: dict, key: str, at: _At, prefix: str = "") -> tuple[str, ...]:
    """Gold answers: a non-empty list of non-empty strings."""
    name = prefix + key
    value = _field(obj, key, at, name)
    if not isinstance(value, list) or not value:
        raise at.error(name, f"expected a non-empty list of strings, got {_describe(value)}")
    for i, answer in enumerate(value):
        if not isinstance(answer, str) or not answer.strip():
            raise at.error(f"{name}[{i}]", f"expected a non-empty string, got {_describe(answer)}")
    return tuple(value)


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    return repr(value) if isinstance(value, str) else type(value).__name__


# ------------------------------------------------------------------------------------ typed readers


def read_nq_open_gold(path: str | Path) -> list[NqGoldRecord]:
    """Read ``nq_open/nq_open_gold_test_2889.json.gz`` (one JSON list; errors say ``record N``)."""
    path = Path(path)
    records = []
    for number, obj in _iter_json_list_gz(path):
        at = _At(path, record=str(number))
        records.append(NqGoldRecord(
            record=number,
            example_id=_identifier(obj, "example_id", at),
            question=_text(obj, "question", at),
            answers=_answers(obj, "answers", at),
            text=_text(obj, "text", at),
            idx_gold_in_corpus=_integer(obj, "idx_gold_in_corpus", at),
        ))
    return records


def read_nq_open_oracle(path: str | Path) -> list[NqOracleRecord]:
    """Read ``nq_open/nq_open_oracle_psgs_w100.jsonl.gz``: the gold DPR passage is ``ctxs[0]``."""
    path = Path(path)
    records = []
    for line, obj in iter_jsonl_gz(path):
        at = _At(path, line=line)
        (ctx_name, ctx), *_ = _objects(obj, "ctxs", at, non_empty=True)
        gold = _dict(obj, "nq_annotated_gold", at)
        records.append(NqOracleRecord(
            line=line,
            question=_text(obj, "question", at),
            answers=_answers(obj, "answers", at),
            title=_text(ctx, "title", at, ctx_name),
            text=_text(ctx, "text", at, ctx_name),
            has_answer=_flag(ctx, "hasanswer", at, ctx_name),
            gold_title=_text(gold, "title", at, "nq_annotated_gold.", non_empty=False),
            gold_long_answer=_text(gold, "long_answer", at, "nq_annotated_gold.", non_empty=False),
        ))
    return records


def _hotpot_answers(obj: dict, at: _At) -> tuple[str, ...]:
    """Every answer span; an entry without spans falls back to its ``number`` (HotpotQA-style answer objects)."""
    answers: list[str] = []
    for name, answer in _objects(obj, "answers_objects", at, non_empty=True):
        spans = _list(answer, "spans", at, name)
        for i, span in enumerate(spans):
            if not isinstance(span, str) or not span.strip():
                raise at.error(f"{name}spans[{i}]", f"expected a non-empty string, got {_describe(span)}")
        number = answer.get("number", "")
        if not spans and isinstance(number, str) and number.strip():
            spans = [number]
        answers.extend(s for s in spans if s not in answers)
    if not answers:
        raise at.error("answers_objects", "no answer span in any answers_objects entry")
    return tuple(answers)


def read_hotpotqa(path: str | Path) -> list[HotpotRecord]:
    """Read ``hotpotqa/hotpotqa_dev400_distractor.jsonl.gz`` (question, answer spans, ~10 paragraphs)."""
    path = Path(path)
    records = []
    for line, obj in iter_jsonl_gz(path):
        at = _At(path, line=line)
        contexts = tuple(
            HotpotContext(
                context_id=_identifier(ctx, "id", at, name),
                title=_text(ctx, "title", at, name),
                text=_text(ctx, "paragraph_text", at, name),
                is_supporting=_flag(ctx, "is_supporting", at, name),
            )
            for name, ctx in _objects(obj, "contexts", at, non_empty=True)
        )
        records.append(HotpotRecord(
            line=line,
            question_id=_identifier(obj, "question_id", at),
            question=_text(obj, "question_text", at),
            answers=_hotpot_answers(obj, at),
            contexts=contexts,
        ))
    return records


def _hagrid_answer(name: str, obj: dict, at: _At) -> HagridAnswer:
    sentences = tuple(
        HagridSentence(
            index=_integer(s, "index", at, s_name),
            text=_text(s, "text", at, s_name),
            informative=_label01(s, "informative", at, s_name),
            attributable=_label01(s, "attributable", at, s_name),
        )
        for s_name, s in _objects(obj, "sentences", at, name)
    )
    return HagridAnswer(
        text=_text(obj, "answer", at, name),
        answer_type=_text(obj, "answer_type", at, name),
        informative=_label01(obj, "informative", at, name),
        attributable=_label01(obj, "attributable", at, name),
        sentences=sentences,
    )


def read_hagrid(path: str | Path) -> list[HagridRecord]:
    """Read ``hagrid/hagrid_dev.jsonl.gz``: query, candidate quotes, answers with human-labelled sentences."""
    path = Path(path)
    records = []
    for line, obj in iter_jsonl_gz(path):
        at = _At(path, line=line)
        quotes = tuple(
            HagridQuote(idx=_integer(q, "idx", at, name), docid=_identifier(q, "docid", at, name),
                        text=_text(q, "text", at, name))
            for name, q in _objects(obj, "quotes", at, non_empty=True)
        )
        answers = tuple(_hagrid_answer(name, a, at) for name, a in _objects(obj, "answers", at))
        records.append(HagridRecord(line=line, query_id=_identifier(obj, "query_id", at),
                                    query=_text(obj, "query", at), quotes=quotes, answers=answers))
    return records


def read_hagrid_run(path: str | Path) -> list[HagridRunRecord]:
    """Read ``hagrid/hagrid_dev_run_bm25_monot5_top2.jsonl.gz``; ``scores[i]`` belongs to ``retrieved[i]``."""
    path = Path(path)
    records = []
    for line, obj in iter_jsonl_gz(path):
        at = _At(path, line=line)
        retrieved = _objects(obj, "retrieved", at)
        scores = _list(obj, "scores", at)
        if len(scores) != len(retrieved):
            raise at.error("scores", f"expected {len(retrieved)} scores (one per retrieved passage), "
                                     f"got {len(scores)}")
        passages = []
        for i, ((name, item), score) in enumerate(zip(retrieved, scores)):
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise at.error(f"scores[{i}]", f"expected a number, got {type(score).__name__}")
            passages.append(HagridRetrieved(docid=_identifier(item, "docid", at, name),
                                            title=_text(item, "title", at, name, non_empty=False),
                                            text=_text(item, "text", at, name), score=float(score)))
        records.append(HagridRunRecord(line=line, query_id=_identifier(obj, "query_id", at),
                                       retrieved=tuple(passages)))
    return records


def read_kilt(path: str | Path) -> list[KiltRecord]:
    """Read a KILT dev file (``kilt/*-dev-kilt.jsonl.gz``): input, answers and Wikipedia provenance."""
    path = Path(path)
    records = []
    for line, obj in iter_jsonl_gz(path):
        at = _At(path, line=line)
        answers: list[str] = []
        provenance: list[KiltProvenance] = []
        for name, output in _objects(obj, "output", at, non_empty=True):
            # KILT output entries may hold an answer, provenance, or both.
            if "answer" in output:
                answers.append(_text(output, "answer", at, name))
            if "provenance" in output:
                for p_name, p in _objects(output, "provenance", at, name):
                    provenance.append(KiltProvenance(
                        wikipedia_id=_identifier(p, "wikipedia_id", at, p_name),
                        title=_text(p, "title", at, p_name),
                        start_paragraph_id=_integer(p, "start_paragraph_id", at, p_name),
                        end_paragraph_id=_integer(p, "end_paragraph_id", at, p_name),
                    ))
        if not answers:
            raise at.error("output", "no output entry has an 'answer'")
        records.append(KiltRecord(line=line, id=_identifier(obj, "id", at), input=_text(obj, "input", at),
                                  answers=tuple(answers), provenance=tuple(provenance)))
    return records


def read_nli_pairs(path: str | Path, splits: Collection[str] | None = None) -> list[NliPair]:
    """Read an ``nli/*.jsonl.gz`` file; keep only rows whose split is in ``splits`` (all when None)."""
    path = Path(path)
    if splits is not None:
        unknown = set(splits) - NLI_SPLITS
        if unknown:
            raise ValueError(f"unknown NLI split(s) {sorted(unknown)}; expected some of {sorted(NLI_SPLITS)}")
    pairs = []
    for line, obj in iter_jsonl_gz(path):
        at = _At(path, line=line)
        label = _text(obj, "label", at)
        if label not in NLI_LABELS:
            raise at.error("label", f"expected one of {sorted(NLI_LABELS)}, got {label!r}")
        split = _text(obj, "split", at)
        if split not in NLI_SPLITS:
            raise at.error("split", f"expected one of {sorted(NLI_SPLITS)}, got {split!r}")
        pair = NliPair(premise=_text(obj, "premise", at), hypothesis=_text(obj, "hypothesis", at), label=label,
                       split=split, source=_text(obj, "source", at), id=_identifier(obj, "id", at))
        if splits is None or split in splits:
            pairs.append(pair)
    return pairs


def read_corpus_2wiki(path: str | Path) -> list[Passage]:
    """Read ``corpus/2wikimultihopqa_corpus.json.gz`` (one JSON list) as passages ``2wiki:<record>`` (1-based)."""
    path = Path(path)
    passages = []
    for number, obj in _iter_json_list_gz(path):
        at = _At(path, record=str(number))
        passages.append(Passage(passage_id=f"2wiki:{number}", title=_text(obj, "title", at, non_empty=False),
                                text=_text(obj, "text", at), source="2wiki"))
    return passages


def parse_title_contents(contents: str) -> tuple[str, str] | None:
    """Split DPR/FlashRAG ``contents`` ``'"Title"\\ntext'`` into (title, text); the quotes are optional.

    Returns None when there is no newline or the text is empty.
    """
    title, sep, text = contents.partition("\n")
    if not sep or not text.strip():
        return None
    title = title.strip()
    if len(title) >= 2 and title[0] == '"' and title[-1] == '"':
        title = title[1:-1]
    return title, text


def read_corpus_wiki18(path: str | Path) -> list[Passage]:
    """Read ``corpus/wiki18_100w_sample1000.jsonl.gz`` as passages ``wiki18:<id>`` (the file's local ids)."""
    path = Path(path)
    passages = []
    for line, obj in iter_jsonl_gz(path):
        at = _At(path, line=line)
        parsed = parse_title_contents(_text(obj, "contents", at))
        if parsed is None:
            raise at.error("contents", 'expected "Title" on the first line and the text after it')
        title, text = parsed
        passages.append(Passage(passage_id=f"wiki18:{_identifier(obj, 'id', at)}", title=title, text=text,
                                source="wiki18"))
    return passages
