"""A user's own run, uploaded: validated, converted into a rageval run file that every view shows.

Two input forms (``docs/upload_format.md`` documents both, with examples):

- **TREC**: a run file (``qid Q0 docid rank score tag``), optional qrels (``qid 0 docid rel``), a queries JSONL
  (``{"query_id", "text", "answers"}``) and a passages JSONL (``{"passage_id", "title", "text"}``);
- **JSONL with answers**: one query per line with its text, gold answers, ranked passages (id, title, text,
  score, labels by method, the single-passage answer) and the end-to-end answers from the top k.

Everything is parsed with ``json.loads`` and ``str.split`` (never pickle or eval), as strict UTF-8, within the
size limits of :class:`UploadLimits`. Every problem is a :class:`Problem` naming the file, the 1-based line and
what was expected; errors stop the conversion, warnings do not (the list of which is which is in the format
document). Measures are computed with the engine's own code (:mod:`rageval.measures`) under the conventions of
:func:`rageval.erag.compute_measure_values`; E2E answers are scored by exact match against the gold answers
(:func:`rageval.text_metrics.exact_match`).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import itertools
import json
import math
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval import __version__
from rageval.errors import RagevalError
from rageval.paths import is_shipped, user_runs_dir
from rageval.store import DocOutput, E2EOutput, Label, MeasureValue, Run, list_runs, write_run
from rageval.text_metrics import exact_match
from rageval.types import Passage, Query, Ranking, ScoredPassage

ERROR = "error"
WARNING = "warning"
#: Label method of the judgments read from an uploaded qrels file.
QRELS_METHOD = "qrels"
#: Label method made from a JSONL record's ``gold_passage_ids`` (as the engine's own ``gold`` labels).
GOLD_METHOD = "gold"
#: Measure cutoffs of an uploaded run: these (those not deeper than its longest ranking), plus every E2E k.
STANDARD_CUTOFFS = (1, 3, 5, 10, 20, 50, 100)
TREC_RUN_FIELDS = ("query_id", "Q0", "passage_id", "rank", "score", "tag")
TREC_QRELS_FIELDS = ("query_id", "iteration", "passage_id", "relevance")
#: Ids and label method names: what stays one field in a TREC file and one safe token in a URL.
_ID_PATTERN = re.compile(r"^\S+$")
_METHOD_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_:.\-]{0,63}$")
_RUN_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


class UploadError(RagevalError):
    """An upload that cannot be saved (a bad run name, an existing run not to be replaced, errors left)."""


@dataclass(frozen=True)
class UploadLimits:
    """Size limits of one upload; every one is checked and reported as an error naming the file and line."""

    max_file_bytes: int = 100 * 2**20  # per uploaded file
    max_queries: int = 20_000  # queries per run
    max_passages_per_query: int = 1_000  # ranked passages per query
    max_text_chars: int = 50_000  # per text field (question, answer, title, passage text, output)
    max_id_chars: int = 200  # per id
    max_problems_per_file: int = 50  # problems listed per file and severity; the rest are counted


DEFAULT_LIMITS = UploadLimits()


@dataclass(frozen=True)
class UploadFile:
    """One uploaded file: the name it is reported under, and its bytes."""

    name: str
    data: bytes

    @classmethod
    def from_path(cls, path: str | os.PathLike, limits: UploadLimits = DEFAULT_LIMITS) -> UploadFile:
        """Read ``path``, at most one byte past the size limit (so an oversized file is reported, not loaded)."""
        with open(path, "rb") as handle:
            return cls(str(path), handle.read(limits.max_file_bytes + 1))


@dataclass(frozen=True)
class Problem:
    """What is wrong with an upload, and where: ``file``, 1-based ``line`` (None: the whole file)."""

    severity: str  # ERROR or WARNING
    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}, line {self.line}"
        return f"{self.severity}: {where}: {self.message}"


@dataclass(frozen=True)
class UploadResult:
    """The converted run (None when there are errors) and every problem found, in file order."""

    run: Run | None
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == WARNING)

    @property
    def ok(self) -> bool:
        return self.run is not None and not self.errors


# --- problems ------------------------------------------------------------------------------------------

class _Problems:
    """Collects problems; past ``limit`` per (file, severity) they are only counted, then summarised."""

    def __init__(self, limit: int):
        self.limit = limit
        self._listed: list[Problem] = []
        self._counts: Counter[tuple[str, str]] = Counter()

    def add(self, severity: str, file: str, line: int | None, message: str) -> None:
        self._counts[file, severity] += 1
        if self._counts[file, severity] <= self.limit:
            self._listed.append(Problem(severity, file, line, message))

    def error(self, file: str, line: int | None, message: str) -> None:
        self.add(ERROR, file, line, message)

    def warning(self, file: str, line: int | None, message: str) -> None:
        self.add(WARNING, file, line, message)

    @property
    def has_errors(self) -> bool:
        return any(severity == ERROR for _, severity in self._counts)

    def result(self) -> tuple[Problem, ...]:
        hidden = [Problem(severity, file, None, f"{count - self.limit} more {severity}s in this file are not "
                                                f"listed (the first {self.limit} are)")
                  for (file, severity), count in self._counts.items() if count > self.limit]
        return tuple(self._listed + hidden)


# --- reading files -------------------------------------------------------------------------------------

def _read_lines(file: UploadFile, problems: _Problems, limits: UploadLimits) -> list[tuple[int, str]] | None:
    """The non-blank lines of ``file`` with their 1-based numbers, or None (reported) when the file is too large,
    empty or not UTF-8. Lines end at ``\\n`` only (a JSON string may hold U+2028); a trailing ``\\r`` is dropped."""
    size = len(file.data)
    if size > limits.max_file_bytes:
        problems.error(file.name, None, f"the file is larger than the limit of {limits.max_file_bytes:,} bytes "
                                        "per file")
        return None
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = file.data.count(b"\n", 0, error.start) + 1
        problems.error(file.name, line, f"expected UTF-8 text, found the byte {file.data[error.start]:#04x} "
                                        f"(save the file as UTF-8)")
        return None
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write
    lines = [(number, line.removesuffix("\r")) for number, line in enumerate(text.split("\n"), start=1)
             if line.strip()]
    if not lines:
        problems.error(file.name, None, "the file is empty: expected one record per line")
        return None
    return lines


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _describe(value: Any) -> str:
    """The JSON type of ``value``, for messages ('a string', 'a list', ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, float) and not math.isfinite(value):
        return "a number too large for a float"  # JSON's 1e999 reads as infinity
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _read_json_records(file: UploadFile, problems: _Problems, limits: UploadLimits) -> list[tuple[int, dict]]:
    """Each line of a JSONL file parsed as one JSON object; bad lines are reported and skipped."""
    records = []
    for number, line in _read_lines(file, problems, limits) or ():
        try:
            value = json.loads(line, parse_constant=_reject_constant)
        except json.JSONDecodeError as error:
            problems.error(file.name, number, f"not valid JSON: {error.msg} (column {error.colno}); expected one "
                                              "JSON object per line")
            continue
        except (ValueError, RecursionError) as error:
            problems.error(file.name, number, f"not valid JSON: {error}")
            continue
        if not isinstance(value, dict):
            problems.error(file.name, number, f"expected a JSON object {{...}}, found {_describe(value)}")
            continue
        records.append((number, value))
    return records


class _Fields:
    """Typed access to one JSON object's fields; every bad field is reported with file, line and field name."""

    def __init__(self, record: Mapping[str, Any], file: str, line: int, problems: _Problems, limits: UploadLimits,
                 where: str = ""):
        self.record, self.file, self.line, self.problems, self.limits = record, file, line, problems, limits
        self.where = where  # e.g. "passages[3]." for a nested object
        self.ok = True

    def fail(self, key: str, message: str) -> None:
        self.ok = False
        self.problems.error(self.file, self.line, f"field '{self.where}{key}': {message}")

    def value(self, key: str, required: bool) -> Any:
        """The raw value of ``key``; None (reported when ``required``) when it is missing or null."""
        if key in self.record and self.record[key] is not None:
            return self.record[key]
        if required:
            self.fail(key, "missing (required)" if key not in self.record else "null (required)")
        return None

    def identifier(self, key: str) -> str | None:
        value = self.value(key, required=True)
        if value is None:
            return None
        if not isinstance(value, str):
            hint = f' (write it as a string: "{value}")' if isinstance(value, int) and not isinstance(value, bool) else ""
            self.fail(key, f"expected a string id, found {_describe(value)}{hint}")
            return None
        if not _ID_PATTERN.match(value):
            self.fail(key, f"expected a non-empty id without spaces, found {value!r}")
            return None
        if len(value) > self.limits.max_id_chars:
            self.fail(key, f"the id has {len(value):,} characters; the limit is {self.limits.max_id_chars:,}")
            return None
        return value

    def text(self, key: str, required: bool = True, non_empty: bool = True) -> str | None:
        value = self.value(key, required)
        if value is None:
            return None if required else ""
        if not isinstance(value, str):
            self.fail(key, f"expected a string, found {_describe(value)}")
            return None
        if non_empty and required and not value.strip():
            self.fail(key, "expected a non-empty string")
            return None
        return self._within_limit(key, value)

    def _within_limit(self, key: str, value: str) -> str | None:
        if len(value) > self.limits.max_text_chars:
            self.fail(key, f"the text has {len(value):,} characters; the limit is "
                           f"{self.limits.max_text_chars:,} per text field")
            return None
        return value

    def string_list(self, key: str, item: str = "string") -> list[str] | None:
        value = self.value(key, required=False)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            found = _describe(value) if not isinstance(value, list) else "a list with " + next(
                _describe(x) for x in value if not isinstance(x, str))
            self.fail(key, f"expected a list of {item}s, found {found}")
            return None
        for x in value:
            if self._within_limit(key, x) is None:
                return None
        return value

    def number(self, key: str, required: bool) -> float | None:
        value = self.value(key, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(key, f"expected a finite number, found {_describe(value)}")
            return None
        return float(value)

    def warn_unknown(self, known: Iterable[str], seen: set[str]) -> None:
        """A warning, once per file, for each field name this format does not know (a typo such as 'anwsers')."""
        prefix = re.sub(r"\[\d+\]", "[]", self.where)  # passages[3]. -> passages[].: one warning per file
        for key in self.record:
            if key not in known and (prefix + key) not in seen:
                seen.add(prefix + key)
                self.problems.warning(self.file, self.line, f"unknown field '{self.where}{key}' is ignored "
                                                            f"(known fields: {', '.join(known)})")


# --- measures ------------------------------------------------------------------------------------------

def measure_cutoffs(rankings: Iterable[Ranking], e2e_ks: Iterable[int] = ()) -> list[int]:
    """The cutoffs an uploaded run's measures are computed at: :data:`STANDARD_CUTOFFS` up to its longest
    ranking, that depth itself when it is at most 100, and every k with an E2E answer."""
    depth = max((len(r.passages) for r in rankings), default=0)
    cutoffs = {c for c in STANDARD_CUTOFFS if c <= depth} | set(e2e_ks)
    if 0 < depth <= STANDARD_CUTOFFS[-1]:
        cutoffs.add(depth)
    return sorted(cutoffs)


def is_graded(method: str, values: Iterable[float]) -> bool:
    """Whether a label method is scored as graded: the engine says so of its name (eRAG under F1, ROUGE-L,
    BERTScore) or some label lies strictly between 0 and 1 (only P, nDCG and Hit accept those)."""
    from rageval.erag import is_graded_method

    return is_graded_method(method) or any(0.0 < v < 1.0 for v in values)


def compute_upload_measures(labels: Sequence[Label], rankings: Mapping[str, Ranking],
                            cutoffs: Sequence[int]) -> list[MeasureValue]:
    """Per-query values of the engine's measures for every label method, on the stored rankings.

    The conventions of :func:`rageval.erag.compute_measure_values`: every ranked query gets a value (0 when it
    has no relevant passage); P, R, AP, RR, nDCG, Hit at each cutoff and R-precision (graded methods, see
    :func:`is_graded`: P, nDCG, Hit only); methods that label only retrieved passages by their nature
    (``erag:*``, ``contains_answer``, ``llm_relevance``, ``gold_page``; :func:`rageval.erag.is_list_bound_method`)
    see only the labels of the top c at cutoff c, as eRAG defines its labels on R_c; the others (``qrels``,
    ``gold`` and any other name) are global judgments, so unretrieved relevant passages count for recall.
    """
    from rageval.erag import compute_measure_values

    values_by_method: dict[str, list[float]] = {}
    for label in labels:
        values_by_method.setdefault(label.method, []).append(label.value)
    graded = {method for method, values in values_by_method.items() if is_graded(method, values)}
    return compute_measure_values(labels, rankings, cutoffs, graded_methods=graded)


# --- building the run ----------------------------------------------------------------------------------

def _settings(form: str, files: Mapping[str, str], *, dataset: str, retriever: str, model: str | None,
              queries: Sequence[Query], passages: Sequence[Passage], rankings: Sequence[Ranking],
              labels: Sequence[Label], e2e: Sequence[E2EOutput], cutoffs: Sequence[int]) -> dict[str, Any]:
    methods = sorted({x.method for x in labels})
    by_method: dict[str, list[float]] = {}
    for x in labels:
        by_method.setdefault(x.method, []).append(x.value)
    graded = [m for m in methods if is_graded(m, by_method[m])]
    e2e_ks = sorted({e.k for e in e2e})
    depth = max((len(r.passages) for r in rankings), default=0)
    settings: dict[str, Any] = {
        "source": "uploaded", "format": form, "uploaded_files": dict(files), "dataset": dataset,
        "retriever": retriever, "k": e2e_ks[-1] if e2e_ks else depth, "num_queries": len(queries),
        "corpus": {"name": "uploaded passages", "size": len(passages)}, "cutoffs": list(cutoffs),
        "label_methods": methods, "graded_label_methods": graded, "rageval_version": __version__,
        "notes": "An uploaded run: the rankings, labels and answers are the uploader's, as given; rageval "
                 "computed the measures from them" + (" and scored the end-to-end answers by exact match against "
                                                      "the gold answers." if e2e else "."),
    }
    if graded:
        from rageval.erag import GRADED_MEASURES

        settings["graded_measures"] = list(GRADED_MEASURES)
    if e2e:
        settings.update(e2e_ks=e2e_ks, e2e_metric="em")
    if model:
        settings["model_id"] = model
    return settings


def _finish(problems: _Problems, form: str, files: Mapping[str, str], *, dataset: str, retriever: str,
            model: str | None, queries: list[Query], passages: list[Passage], rankings: list[Ranking],
            labels: list[Label], doc_outputs: Sequence[DocOutput] = (),
            e2e: Sequence[E2EOutput] = ()) -> UploadResult:
    if problems.has_errors:
        return UploadResult(None, problems.result())
    cutoffs = measure_cutoffs(rankings, (e.k for e in e2e))
    measures = compute_upload_measures(labels, {r.query_id: r for r in rankings}, cutoffs)
    settings = _settings(form, files, dataset=dataset, retriever=retriever, model=model, queries=queries,
                         passages=passages, rankings=rankings, labels=labels, e2e=e2e, cutoffs=cutoffs)
    run = Run(settings, queries, passages, rankings, doc_outputs=list(doc_outputs), labels=labels,
              e2e_outputs=list(e2e), measure_values=measures)
    return UploadResult(run, problems.result())


# --- form (a): TREC run + qrels + queries + passages ---------------------------------------------------

_QUERY_FIELDS = ("query_id", "text", "answers", "gold_passage_ids")
_PASSAGE_FIELDS = ("passage_id", "title", "text")


def _read_queries(file: UploadFile, problems: _Problems, limits: UploadLimits) -> dict[str, tuple[int, Query]]:
    queries: dict[str, tuple[int, Query]] = {}
    seen: set[str] = set()
    for number, record in _read_json_records(file, problems, limits):
        fields = _Fields(record, file.name, number, problems, limits)
        fields.warn_unknown(_QUERY_FIELDS, seen)
        query_id, text, answers = fields.identifier("query_id"), fields.text("text"), fields.string_list("answers")
        gold = fields.string_list("gold_passage_ids", "passage id")
        if not fields.ok:
            continue
        if query_id in queries:
            problems.error(file.name, number, f"query id {query_id!r} is used twice (first on line "
                                              f"{queries[query_id][0]})")
            continue
        if len(queries) == limits.max_queries:
            problems.error(file.name, number, f"more than {limits.max_queries:,} queries; the limit is "
                                              f"{limits.max_queries:,} per run")
            break
        queries[query_id] = (number, Query(query_id, text, tuple(answers), tuple(dict.fromkeys(gold))))
    return queries


def _read_passages(file: UploadFile, problems: _Problems, limits: UploadLimits) -> dict[str, tuple[int, Passage]]:
    passages: dict[str, tuple[int, Passage]] = {}
    seen: set[str] = set()
    for number, record in _read_json_records(file, problems, limits):
        fields = _Fields(record, file.name, number, problems, limits)
        fields.warn_unknown(_PASSAGE_FIELDS, seen)
        passage_id, title, text = fields.identifier("passage_id"), fields.text("title", False), fields.text("text")
        if not fields.ok:
            continue
        if passage_id in passages:
            problems.error(file.name, number, f"passage id {passage_id!r} is used twice (first on line "
                                              f"{passages[passage_id][0]})")
            continue
        passages[passage_id] = (number, Passage(passage_id, title, text, "uploaded"))
    return passages


def _split_trec_line(file: UploadFile, number: int, line: str, expected: tuple[str, ...],
                     problems: _Problems, limits: UploadLimits) -> list[str] | None:
    fields = line.split()
    if len(fields) != len(expected):
        problems.error(file.name, number, f"expected {len(expected)} whitespace-separated fields "
                                          f"'{' '.join(expected)}', found {len(fields)}")
        return None
    for index in (0, 2):  # query_id and passage_id, in both formats
        if len(fields[index]) > limits.max_id_chars:
            problems.error(file.name, number, f"field '{expected[index]}': the id has {len(fields[index]):,} "
                                              f"characters; the limit is {limits.max_id_chars:,}")
            return None
    return fields


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass
class _RankedLine:
    line: int
    passage_id: str
    rank: int
    score: float


def _read_trec_run(file: UploadFile, problems: _Problems, limits: UploadLimits
                   ) -> tuple[dict[str, list[_RankedLine]], list[str]]:
    """Each query's ranked lines in file order, and the run tags (distinct, in file order)."""
    ranked: dict[str, list[_RankedLine]] = {}
    where: dict[tuple[str, str], int] = {}
    tags: dict[str, None] = {}
    for number, line in _read_lines(file, problems, limits) or ():
        fields = _split_trec_line(file, number, line, TREC_RUN_FIELDS, problems, limits)
        if fields is None:
            continue
        query_id, _q0, passage_id, rank_text, score_text, tag = fields
        score = _finite(score_text)
        if score is None:
            problems.error(file.name, number, f"field 'score': expected a finite number, found {score_text!r}")
            continue
        try:
            rank = int(rank_text)
        except ValueError:
            problems.error(file.name, number, f"field 'rank': expected an integer, found {rank_text!r}")
            continue
        if (query_id, passage_id) in where:
            problems.error(file.name, number, f"query {query_id!r} ranks passage {passage_id!r} twice (first on "
                                              f"line {where[query_id, passage_id]})")
            continue
        if query_id not in ranked and len(ranked) == limits.max_queries:
            problems.error(file.name, number, f"more than {limits.max_queries:,} queries; the limit is "
                                              f"{limits.max_queries:,} per run")
            break
        lines = ranked.setdefault(query_id, [])
        if len(lines) == limits.max_passages_per_query:
            problems.error(file.name, number, f"query {query_id!r} ranks more than "
                                              f"{limits.max_passages_per_query:,} passages; the limit is "
                                              f"{limits.max_passages_per_query:,} per query")
        where[query_id, passage_id] = number
        lines.append(_RankedLine(number, passage_id, rank, score))
        tags[tag] = None
    return ranked, list(tags)


def _read_trec_qrels(file: UploadFile, problems: _Problems, limits: UploadLimits
                     ) -> dict[str, tuple[int, dict[str, float]]]:
    """Each judged query's first line and its judgments ``{passage_id: relevance}``."""
    qrels: dict[str, tuple[int, dict[str, float]]] = {}
    where: dict[tuple[str, str], int] = {}
    for number, line in _read_lines(file, problems, limits) or ():
        fields = _split_trec_line(file, number, line, TREC_QRELS_FIELDS, problems, limits)
        if fields is None:
            continue
        query_id, _iteration, passage_id, label_text = fields
        label = _finite(label_text)
        if label is None:
            problems.error(file.name, number, f"field 'relevance': expected a number, found {label_text!r}")
            continue
        if (query_id, passage_id) in where:
            problems.error(file.name, number, f"query {query_id!r} judges passage {passage_id!r} twice (first on "
                                              f"line {where[query_id, passage_id]})")
            continue
        where[query_id, passage_id] = number
        qrels.setdefault(query_id, (number, {}))[1][passage_id] = label
    return qrels


def _trec_order(lines: list[_RankedLine]) -> list[_RankedLine]:
    """trec_eval's order: score descending, ties by passage id descending (``strcmp``, which Python's ``str``
    order equals on UTF-8); the rank field is not used, as trec_eval does not use it."""
    ordered = sorted(lines, key=lambda x: x.passage_id, reverse=True)
    ordered.sort(key=lambda x: -x.score)  # stable: equal scores keep the id-descending order
    return ordered


def convert_trec_upload(run_file: UploadFile, queries_file: UploadFile, passages_file: UploadFile,
                        qrels_file: UploadFile | None = None, *, dataset: str = "uploaded",
                        retriever: str | None = None, model: str | None = None,
                        limits: UploadLimits = DEFAULT_LIMITS) -> UploadResult:
    """Validate a TREC run (+ qrels) with its queries and passages JSONL and convert them into a :class:`Run`.

    The run's queries are those of the queries file that the run file ranks (in queries-file order); each ranking
    is in trec_eval's order (score descending, ties by passage id descending), so every stored measure equals
    trec_eval's on the same files. The qrels become labels of method ``qrels`` (their positive passages the
    queries' gold passage ids) and are scored with the engine's measures at :func:`measure_cutoffs`.
    """
    problems = _Problems(limits.max_problems_per_file)
    queries = _read_queries(queries_file, problems, limits)
    passages = _read_passages(passages_file, problems, limits)
    ranked, tags = _read_trec_run(run_file, problems, limits)
    qrels = _read_trec_qrels(qrels_file, problems, limits) if qrels_file is not None else {}
    if qrels_file is None:
        problems.warning(run_file.name, None, "no qrels file: the run has no relevance labels and no measures")
    if problems.has_errors:  # cross-file checks only on files valid on their own: no cascade of follow-up errors
        return UploadResult(None, problems.result())

    for query_id, lines in ranked.items():
        if query_id not in queries:
            problems.error(run_file.name, lines[0].line, f"query {query_id!r} is not in {queries_file.name}")
        for x in lines:
            if x.passage_id not in passages:
                problems.error(run_file.name, x.line, f"passage {x.passage_id!r} is not in {passages_file.name} "
                                                      "(the dashboard shows every ranked passage's text)")
        if qrels_file is not None and query_id in queries and query_id not in qrels:
            problems.warning(run_file.name, lines[0].line, f"query {query_id!r} has no judgments in "
                                                           f"{qrels_file.name}: its measures are 0")
    for query_id, (number, _query) in queries.items():
        if query_id not in ranked:
            problems.warning(queries_file.name, number, f"query {query_id!r} is not ranked in {run_file.name}: "
                                                        "it is left out of the run")
    for query_id, (number, judged) in qrels.items():
        if query_id not in queries:
            problems.warning(qrels_file.name, number, f"query {query_id!r} is not in {queries_file.name}: its "
                                                      f"{len(judged)} judgments are ignored")
    ordered = {query_id: _trec_order(lines) for query_id, lines in ranked.items()}
    disagreeing = [lines for query_id, lines in ranked.items()
                   if [x.rank for x in ordered[query_id]] != sorted(x.rank for x in lines)]
    if disagreeing:
        problems.warning(run_file.name, disagreeing[0][0].line,
                         f"the rank field disagrees with the score order for {len(disagreeing)} queries: the ranking "
                         "follows the scores (descending, ties by passage id descending), as trec_eval ranks")

    files = {"run": run_file.name, "queries": queries_file.name, "passages": passages_file.name}
    if qrels_file is not None:
        files["qrels"] = qrels_file.name
    if problems.has_errors:
        return UploadResult(None, problems.result())

    stored = [query for query_id, (_, query) in queries.items() if query_id in ranked]
    # The qrels' positive passages are a judged query's gold passages; otherwise the queries file's own.
    stored = [dataclasses.replace(q, dataset=dataset, gold_passage_ids=tuple(
        p for p, v in qrels[q.query_id][1].items() if v > 0) if q.query_id in qrels else q.gold_passage_ids)
        for q in stored]
    rankings = [Ranking(q.query_id, tuple(ScoredPassage(x.passage_id, x.score)
                                          for x in ordered[q.query_id])) for q in stored]
    labels = [Label(QRELS_METHOD, q.query_id, p, v) for q in stored
              for p, v in qrels.get(q.query_id, (0, {}))[1].items()]
    used = dict.fromkeys([p.passage_id for r in rankings for p in r.passages] + [x.passage_id for x in labels])
    kept_passages = [passages[p][1] for p in used if p in passages]
    return _finish(problems, "trec", files, dataset=dataset, retriever=retriever or ", ".join(tags), model=model,
                   queries=stored, passages=kept_passages, rankings=rankings, labels=labels)


def _raise_first_error(problems: _Problems) -> None:
    errors = [p for p in problems.result() if p.severity == ERROR]
    if errors:
        more = f" ({len(errors) - 1} more problems)" if len(errors) > 1 else ""
        first = errors[0]
        where = first.file if first.line is None else f"{first.file}, line {first.line}"
        raise UploadError(f"{where}: {first.message}{more}")


def read_queries_file(file: UploadFile, limits: UploadLimits = DEFAULT_LIMITS) -> dict[str, tuple[int, Query]]:
    """The queries of a queries JSONL (``query_id``, ``text``, optional ``answers`` and ``gold_passage_ids``) with
    their line numbers, in file order; the first error (file, line, field) raises :class:`UploadError`."""
    problems = _Problems(limits.max_problems_per_file)
    queries = _read_queries(file, problems, limits)
    _raise_first_error(problems)
    return queries


def read_passages_file(file: UploadFile, limits: UploadLimits = DEFAULT_LIMITS) -> dict[str, Passage]:
    """The passages of a passages (corpus) JSONL (``passage_id``, optional ``title``, ``text``), in file order; the
    first error (file, line, field) raises :class:`UploadError`."""
    problems = _Problems(limits.max_problems_per_file)
    passages = _read_passages(file, problems, limits)
    _raise_first_error(problems)
    return {passage_id: passage for passage_id, (_, passage) in passages.items()}


# --- form (b): one JSONL with answers --------------------------------------------------------------------

_RECORD_FIELDS = ("query_id", "text", "answers", "gold_passage_ids", "passages", "e2e")
_RANKED_FIELDS = ("passage_id", "title", "text", "score", "labels", "output")
_E2E_FIELDS = ("k", "output")


@dataclass
class _JsonlRun:
    queries: list[Query] = dataclasses.field(default_factory=list)
    passages: dict[str, tuple[int, Passage]] = dataclasses.field(default_factory=dict)
    rankings: list[Ranking] = dataclasses.field(default_factory=list)
    labels: list[Label] = dataclasses.field(default_factory=list)
    doc_outputs: list[DocOutput] = dataclasses.field(default_factory=list)
    e2e: list[E2EOutput] = dataclasses.field(default_factory=list)


def _read_ranked_passages(fields: _Fields, query_id: str, run: _JsonlRun, seen: set[str]
                          ) -> tuple[list[ScoredPassage], list[Label], list[DocOutput]] | None:
    problems, file, number, limits = fields.problems, fields.file, fields.line, fields.limits
    items = fields.value("passages", required=True)
    if items is None:
        return None
    if not isinstance(items, list):
        fields.fail("passages", f"expected a list of passage objects, best first, found {_describe(items)}")
        return None
    if len(items) > limits.max_passages_per_query:
        fields.fail("passages", f"{len(items):,} passages; the limit is {limits.max_passages_per_query:,} per query")
        return None
    ranked, labels, outputs, scores = [], [], [], []
    new_passages: dict[str, Passage] = {}
    for index, item in enumerate(items):
        where = f"passages[{index}]."
        if not isinstance(item, dict):
            fields.fail(f"passages[{index}]", f"expected a passage object, found {_describe(item)}")
            continue
        passage = _Fields(item, file, number, problems, limits, where)
        passage.warn_unknown(_RANKED_FIELDS, seen)
        passage_id, title, text = passage.identifier("passage_id"), passage.text("title", False), passage.text("text")
        score = passage.number("score", required=False)
        output = passage.text("output", required=False, non_empty=False) if item.get("output") is not None else None
        method_labels = _read_labels(passage, item.get("labels"))
        if not passage.ok:
            fields.ok = False
            continue
        if passage_id in new_passages:
            fields.fail(where + "passage_id", f"passage {passage_id!r} is listed twice for this query")
            continue
        known = run.passages.get(passage_id)
        if known and (known[1].title, known[1].text) != (title, text):
            fields.fail(where + "passage_id", f"passage {passage_id!r} has another title or text than on line "
                                              f"{known[0]} (one id, one passage)")
            continue
        new_passages[passage_id] = Passage(passage_id, title, text, "uploaded")
        scores.append(score)
        ranked.append(passage_id)
        labels += [Label(method, query_id, passage_id, value) for method, value in method_labels.items()]
        if output is not None:
            outputs.append(DocOutput(query_id, passage_id, output))
    if not fields.ok:
        return None
    if any(s is None for s in scores) and not all(s is None for s in scores):
        fields.fail("passages", "give a 'score' for every passage of the list or for none")
        return None
    if all(s is None for s in scores):  # no scores: the list order is the ranking, shown as n, n-1, ..., 1
        scores = [float(len(scores) - i) for i in range(len(scores))]
    elif any(later > earlier for earlier, later in itertools.pairwise(scores)):
        problems.warning(file, number, f"query {query_id!r}: the scores are not in descending order; the list "
                                       "order is the ranking")
    for passage_id, passage in new_passages.items():
        run.passages.setdefault(passage_id, (number, passage))
    return [ScoredPassage(p, s) for p, s in zip(ranked, scores)], labels, outputs


def _read_labels(fields: _Fields, value: Any) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        fields.fail("labels", f'expected an object of label values by method, e.g. {{"erag:em": 1}}, found '
                              f"{_describe(value)}")
        return {}
    labels = {}
    for method, label in value.items():
        if not _METHOD_PATTERN.match(method):
            fields.fail("labels", f"method name {method!r}: expected letters, digits and _ : . - (at most 64)")
        elif method == QRELS_METHOD:
            fields.fail("labels", f"method name {QRELS_METHOD!r} is kept for uploaded qrels files")
        elif isinstance(label, bool) or not isinstance(label, (int, float)) or not math.isfinite(label):
            fields.fail(f"labels.{method}", f"expected a finite number, found {_describe(label)}")
        else:
            labels[method] = float(label)
    return labels


def _read_e2e(fields: _Fields, query_id: str, depth: int, answers: Sequence[str], seen: set[str]
              ) -> list[E2EOutput] | None:
    value = fields.value("e2e", required=False)
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    outputs: dict[int, E2EOutput] = {}
    for index, item in enumerate(items):
        name = f"e2e[{index}]" if isinstance(value, list) else "e2e"
        if not isinstance(item, dict):
            fields.fail(name, f'expected an object {{"k": ..., "output": ...}}, found {_describe(item)}')
            continue
        e2e = _Fields(item, fields.file, fields.line, fields.problems, fields.limits, name + ".")
        e2e.warn_unknown(_E2E_FIELDS, seen)
        k, output = e2e.value("k", required=True), e2e.text("output", non_empty=False)
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= depth):
            e2e.fail("k", f"expected an integer from 1 to the number of passages listed ({depth}), found "
                          f"{k!r}" if isinstance(k, (int, float)) else f"expected an integer, found {_describe(k)}")
        if not e2e.ok:
            fields.ok = False
            continue
        if k in outputs:
            fields.fail(name + ".k", f"two end-to-end answers at k={k}")
            continue
        outputs[k] = E2EOutput(query_id, k, output, exact_match(output, answers))
    if not fields.ok:
        return None
    if outputs and not answers:
        fields.problems.warning(fields.file, fields.line, f"query {query_id!r} has end-to-end answers but no gold "
                                                          "answers to score them: they are not stored")
        return []
    return list(outputs.values())


def convert_jsonl_upload(file: UploadFile, *, dataset: str = "uploaded", retriever: str | None = None,
                         model: str | None = None, limits: UploadLimits = DEFAULT_LIMITS) -> UploadResult:
    """Validate a JSONL run with answers (one query per line, see ``docs/upload_format.md``) and convert it.

    Each record's passages are its ranking in list order; its ``labels`` become label methods of the same names,
    its ``gold_passage_ids`` the method ``gold`` (1 for them, 0 for the other listed passages), its ``output``\\ s
    the single-passage answers, and its ``e2e`` answers are scored by exact match against its ``answers``.
    """
    problems = _Problems(limits.max_problems_per_file)
    run = _JsonlRun()
    first_line: dict[str, int] = {}
    seen: set[str] = set()
    for number, record in _read_json_records(file, problems, limits):
        fields = _Fields(record, file.name, number, problems, limits)
        fields.warn_unknown(_RECORD_FIELDS, seen)
        query_id, text = fields.identifier("query_id"), fields.text("text")
        answers, gold = fields.string_list("answers"), fields.string_list("gold_passage_ids", "passage id")
        if query_id in first_line:
            fields.fail("query_id", f"query id {query_id!r} is used twice (first on line {first_line[query_id]})")
        if not fields.ok:
            continue
        if len(first_line) == limits.max_queries:
            problems.error(file.name, number, f"more than {limits.max_queries:,} queries; the limit is "
                                              f"{limits.max_queries:,} per run")
            break
        first_line[query_id] = number
        read = _read_ranked_passages(fields, query_id, run, seen)
        if read is None:
            continue
        ranked, labels, outputs = read
        if gold and any(x.method == GOLD_METHOD for x in labels):
            fields.fail("gold_passage_ids", f"give gold passages either as 'gold_passage_ids' or as "
                                            f"'{GOLD_METHOD}' labels, not both")
            continue
        if gold:
            listed = [p.passage_id for p in ranked]
            labels += [Label(GOLD_METHOD, query_id, p, 1.0) for p in dict.fromkeys(gold)]
            labels += [Label(GOLD_METHOD, query_id, p, 0.0) for p in listed if p not in gold]
        if not ranked:
            problems.warning(file.name, number, f"query {query_id!r} lists no passages: its measures are 0")
        e2e = _read_e2e(fields, query_id, len(ranked), answers, seen)
        if e2e is None:
            continue
        run.queries.append(Query(query_id, text, tuple(answers), tuple(dict.fromkeys(gold)), dataset))
        run.rankings.append(Ranking(query_id, tuple(ranked)))
        run.labels += labels
        run.doc_outputs += outputs
        run.e2e += e2e
    return _finish(problems, "jsonl", {"jsonl": file.name}, dataset=dataset,
                   retriever=retriever or "not stated by the uploader", model=model, queries=run.queries,
                   passages=[p for _, p in run.passages.values()], rankings=run.rankings, labels=run.labels,
                   doc_outputs=run.doc_outputs, e2e=run.e2e)


#: The two upload forms and the files each takes (``convert_upload``'s ``files`` keys); ``qrels`` is optional.
FORMS = {"trec": ("run", "qrels", "queries", "passages"), "jsonl": ("jsonl",)}


def convert_upload(form: str, files: Mapping[str, UploadFile | None], *, dataset: str = "uploaded",
                   retriever: str | None = None, model: str | None = None,
                   limits: UploadLimits = DEFAULT_LIMITS) -> UploadResult:
    """:func:`convert_trec_upload` (``form="trec"``: files ``run``, ``queries``, ``passages``, optional ``qrels``)
    or :func:`convert_jsonl_upload` (``form="jsonl"``: file ``jsonl``); a missing required file raises
    UploadError."""
    if form not in FORMS:
        raise UploadError(f"upload form {form!r}: expected one of {', '.join(FORMS)}")
    missing = [key for key in FORMS[form] if key != "qrels" and files.get(key) is None]
    if missing:
        raise UploadError(f"missing the {', '.join(missing)} file(s) of a {form} upload")
    options = {"dataset": dataset or "uploaded", "retriever": retriever or None, "model": model or None,
               "limits": limits}
    if form == "jsonl":
        return convert_jsonl_upload(files["jsonl"], **options)
    return convert_trec_upload(files["run"], files["queries"], files["passages"], files.get("qrels"), **options)


# --- saving ---------------------------------------------------------------------------------------------

def check_run_name(name: str) -> str | None:
    """Why ``name`` cannot name a run file (None when it can): letters, digits, ``_ . -``, at most 100 characters,
    starting with a letter or digit, so it stays one file inside the runs folder and one ``?run=`` value."""
    if not name:
        return "give the run a name"
    if not _RUN_NAME_PATTERN.match(name) or ".." in name:
        return (f"run name {name!r}: use letters, digits and _ . - only (at most 100, starting with a letter or "
                "digit, no '..'), so it names one file inside the runs folder")
    return None


def run_file_path(folder: str | os.PathLike, name: str) -> Path:
    """The run file ``<folder>/<name>.sqlite``; an invalid name (:func:`check_run_name`) raises UploadError."""
    problem = check_run_name(name)
    if problem:
        raise UploadError(problem)
    folder = Path(folder).resolve()
    path = folder / f"{name}.sqlite"
    if path.parent != folder:  # the pattern already prevents it; this keeps the guarantee explicit
        raise UploadError(f"run name {name!r} would leave the runs folder {folder}")
    return path


def name_in_use(folder: str | os.PathLike, name: str) -> Path | None:
    """The run file the dashboard already lists under ``name`` (``?run=<name>``), if any."""
    return next((p for p in list_runs(folder) if p.stem == name), None)


def save_upload(run: Run, folder: str | os.PathLike, name: str, *, overwrite: bool = False,
                uploaded_at: dt.datetime | None = None, command: str | None = None) -> Path:
    """Write the converted ``run`` as ``<folder>/<name>.sqlite``, atomically, and return its path.

    Its settings get the run's name and the upload time (``uploaded_at``, ``created_at``). An existing run of
    that name is replaced only with ``overwrite=True``; a run of that name in a sub-folder is never shadowed.
    The file appears whole or not at all: it is written to a temporary sibling, then linked (no overwrite) or
    renamed (overwrite) into place.
    """
    path = run_file_path(folder, name)
    if is_shipped(path):
        raise UploadError(f"{path.parent}: the shipped runs folder is read-only; save uploads into your runs folder "
                          f"({user_runs_dir()}, or $RAGEVAL_RUNS_DIR)")
    existing = name_in_use(path.parent, name)
    if existing is not None and existing.resolve() != path:
        raise UploadError(f"run name {name!r} is already used by {existing}; choose another name")
    if path.exists() and not overwrite:
        raise UploadError(f"a run named {name!r} exists ({path}); confirm to replace it, or choose another name")
    when = (uploaded_at or dt.datetime.now(dt.UTC)).replace(microsecond=0).isoformat()
    settings = {**run.settings, "name": name, "uploaded_at": when, "created_at": when}
    if command:
        settings["command"] = command
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".upload.tmp", dir=path.parent)
    os.close(handle)
    temporary = Path(temporary_name)
    try:
        write_run(dataclasses.replace(run, settings=settings), temporary)
        if overwrite:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)  # fails if a run of that name appeared meanwhile
            except FileExistsError:
                raise UploadError(f"a run named {name!r} appeared meanwhile ({path}); nothing was replaced") from None
    finally:
        temporary.unlink(missing_ok=True)
    return path


# --- command line ---------------------------------------------------------------------------------------

def cmd_upload(args: argparse.Namespace) -> int:
    """``rageval upload``: validate, print every problem as ``severity: file, line N: message``, then write."""
    limits = DEFAULT_LIMITS
    if not args.check and not args.name:
        raise UploadError("give --name (or --check to validate only)")
    if args.name and check_run_name(args.name):
        raise UploadError(check_run_name(args.name))

    def read(path: Path) -> UploadFile:
        if path.is_dir():
            raise UploadError(f"{path}: is a folder; expected a file")
        if not path.exists():
            raise UploadError(f"{path}: no such file")
        try:
            return UploadFile.from_path(path, limits)
        except OSError as error:
            raise UploadError(f"{path}: cannot be read ({error.strerror or error})") from None

    trec = {"run": args.run, "qrels": args.qrels, "queries": args.queries, "passages": args.passages}
    if args.jsonl and any(trec.values()):
        raise UploadError("give either --jsonl or the TREC files (--run --queries --passages [--qrels]), not both")
    form, paths = ("jsonl", {"jsonl": args.jsonl}) if args.jsonl else ("trec", trec)
    result = convert_upload(form, {key: read(path) if path else None for key, path in paths.items()},
                            dataset=args.dataset, retriever=args.retriever, model=args.model, limits=limits)
    for problem in result.problems:
        print(problem, file=sys.stderr)
    if not result.ok:
        print(f"rageval upload: {len(result.errors)} error(s); nothing was written", file=sys.stderr)
        return 1
    if args.check:
        print(f"valid: {len(result.run.queries)} queries, {len(result.warnings)} warning(s)")
        return 0
    path = save_upload(result.run, args.runs_dir or user_runs_dir(), args.name, overwrite=args.overwrite,
                       command="rageval " + " ".join(sys.argv[1:]))
    print(f"wrote {path} ({len(result.run.queries)} queries, {len(result.warnings)} warning(s))")
    return 0


def add_parsers(sub) -> None:
    upload = sub.add_parser("upload", help="validate your own run (TREC run + qrels + queries/passages JSONL, or "
                                           "one JSONL with answers; docs/upload_format.md) into a run file")
    upload.add_argument("--name", help="run name: the file <runs-dir>/<name>.sqlite and the dashboard's ?run=")
    upload.add_argument("--jsonl", type=Path, help="one JSONL with queries, ranked passages and answers")
    upload.add_argument("--run", type=Path, help="TREC run file: qid Q0 docid rank score tag")
    upload.add_argument("--qrels", type=Path, help="TREC qrels file: qid 0 docid relevance (optional)")
    upload.add_argument("--queries", type=Path, help='queries JSONL: {"query_id", "text", "answers"}')
    upload.add_argument("--passages", type=Path, help='passages JSONL: {"passage_id", "title", "text"}')
    upload.add_argument("--dataset", default="uploaded", help="dataset name shown with every number")
    upload.add_argument("--retriever", help="retriever name (default: the TREC run tag)")
    upload.add_argument("--model", help="the RAG LLM that produced the answers, if any")
    upload.add_argument("--runs-dir", type=Path, default=None,
                        help="folder of the run files (default: your runs folder, $RAGEVAL_RUNS_DIR, else "
                             "~/.local/share/rageval/runs; the shipped data/runs is read-only)")
    upload.add_argument("--overwrite", action="store_true", help="replace an existing run of that name")
    upload.add_argument("--check", action="store_true", help="only validate; write nothing")
    upload.set_defaults(handler=cmd_upload)
