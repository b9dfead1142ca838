"""The JSONL readers: the queries and passages files (of the TREC form, and of ``rageval evaluate``'s own files), and
form (b), one JSONL with each query's text, gold answers, ranked passages, labels and answers."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rageval.labelmethods import GOLD, QRELS
from rageval.store import DocOutput, E2EOutput, Label
from rageval.text_metrics import exact_match
from rageval.types import Passage, Query, Ranking, ScoredPassage
from rageval.upload.fields import FieldReader, describe, read_json_records
from rageval.upload.parts import UploadRead, gold_labels
from rageval.upload.problems import DEFAULT_LIMITS, Problems, UploadFile, UploadLimits, raise_first_error

#: Label method names: letters, digits and ``_ : . -``, one safe token in a URL.
_METHOD_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_:.\-]{0,63}$")


_QUERY_FIELDS = ("query_id", "text", "answers", "gold_passage_ids")
_PASSAGE_FIELDS = ("passage_id", "title", "text")


def swapped_file_problem(records: Sequence[tuple[int, dict]], wanted: str) -> str | None:
    """Why the records of a queries file (``wanted="queries"``) or a passages file (``"passages"``) are those of the
    other file, or None: no record has the file's id field and some have the other's. One problem instead of one
    "field 'query_id': missing" per line."""
    own, other = ("query_id", "passage_id") if wanted == "queries" else ("passage_id", "query_id")
    if not records or any(own in record for _, record in records):
        return None
    first = next((record for _, record in records if other in record), None)
    if first is None:
        return None
    kind, one = ("passages", "query") if wanted == "queries" else ("queries", "passage")
    fields = ", ".join(list(first)[:6]) + (", …" if len(first) > 6 else "")
    return (f"these look like {kind} ({fields}), not {wanted}: did you swap the queries and passages files? "
            f"Each {one} needs a '{own}'")


def from_beir(records: Sequence[tuple[int, dict]], wanted: str) -> list[tuple[int, dict]]:
    """BEIR records (``_id``, as ``rageval evaluate`` reads BEIR's ``queries.jsonl`` and ``corpus.jsonl``) in
    rageval's fields, line for line, so that the checks below report on the user's own lines: ``_id`` becomes
    ``query_id`` (``wanted="queries"``; answers and gold passage ids from the record or its ``metadata``) or
    ``passage_id`` (``"passages"``); a record with rageval's own id field is kept as it is."""
    own = "query_id" if wanted == "queries" else "passage_id"
    rewritten = []
    for number, record in records:
        if isinstance(record, dict) and "_id" in record and own not in record:
            given = record.get("metadata")
            metadata: dict = given if isinstance(given, dict) else {}
            native = {own: record["_id"], **{k: v for k, v in record.items() if k not in ("_id", "metadata")}}
            if wanted == "queries":
                for field in ("answers", "gold_passage_ids"):
                    if field not in native and field in metadata:
                        native[field] = metadata[field]
            record = native
        rewritten.append((number, record))
    return rewritten


def read_queries(file: UploadFile, problems: Problems, limits: UploadLimits) -> dict[str, tuple[int, Query]]:
    """A queries JSONL's queries by id, with their line numbers; bad records are reported and skipped."""
    queries: dict[str, tuple[int, Query]] = {}
    seen: set[str] = set()
    records = from_beir(read_json_records(file, problems, limits), "queries")
    swapped = swapped_file_problem(records, "queries")
    if swapped:
        problems.error(file.name, None, swapped)
        return queries
    for number, record in records:
        fields = FieldReader(record, file.name, number, problems, limits)
        fields.warn_unknown(_QUERY_FIELDS, seen)
        query_id, text, answers = fields.identifier("query_id"), fields.text("text"), fields.string_list("answers")
        gold = fields.string_list("gold_passage_ids", "passage id")
        if not fields.ok:
            continue
        assert query_id is not None and text is not None and answers is not None and gold is not None  # fields.ok
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


def read_passages(file: UploadFile, problems: Problems, limits: UploadLimits) -> dict[str, tuple[int, Passage]]:
    """A passages JSONL's passages by id, with their line numbers; bad records are reported and skipped."""
    passages: dict[str, tuple[int, Passage]] = {}
    seen: set[str] = set()
    records = from_beir(read_json_records(file, problems, limits), "passages")
    swapped = swapped_file_problem(records, "passages")
    if swapped:
        problems.error(file.name, None, swapped)
        return passages
    for number, record in records:
        fields = FieldReader(record, file.name, number, problems, limits)
        fields.warn_unknown(_PASSAGE_FIELDS, seen)
        passage_id, title, text = fields.identifier("passage_id"), fields.text("title", False), fields.text("text")
        if not fields.ok:
            continue
        assert passage_id is not None and title is not None and text is not None  # fields.ok: all were read
        if passage_id in passages:
            problems.error(file.name, number, f"passage id {passage_id!r} is used twice (first on line "
                                              f"{passages[passage_id][0]})")
            continue
        passages[passage_id] = (number, Passage(passage_id, title, text, "uploaded"))
    return passages


def read_queries_file(file: UploadFile, limits: UploadLimits = DEFAULT_LIMITS) -> dict[str, tuple[int, Query]]:
    """The queries of a queries JSONL (``query_id``, ``text``, optional ``answers`` and ``gold_passage_ids``) with
    their line numbers, in file order; the first error (file, line, field) raises :class:`UploadError`."""
    problems = Problems(limits.max_problems_per_file)
    queries = read_queries(file, problems, limits)
    raise_first_error(problems)
    return queries


def read_passages_file(file: UploadFile, limits: UploadLimits = DEFAULT_LIMITS) -> dict[str, Passage]:
    """The passages of a passages (corpus) JSONL (``passage_id``, optional ``title``, ``text``), in file order; the
    first error (file, line, field) raises :class:`UploadError`."""
    problems = Problems(limits.max_problems_per_file)
    passages = read_passages(file, problems, limits)
    raise_first_error(problems)
    return {passage_id: passage for passage_id, (_, passage) in passages.items()}


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


def _read_ranked_passages(fields: FieldReader, query_id: str, run: _JsonlRun, seen: set[str]
                          ) -> tuple[list[ScoredPassage], list[Label], list[DocOutput]] | None:
    problems, file, number, limits = fields.problems, fields.file, fields.line, fields.limits
    items = fields.value("passages", required=True)
    if items is None:
        return None
    if not isinstance(items, list):
        fields.fail("passages", f"expected a list of passage objects, best first, found {describe(items)}")
        return None
    if len(items) > limits.max_passages_per_query:
        fields.fail("passages", f"{len(items):,} passages; the limit is {limits.max_passages_per_query:,} per query")
        return None
    ranked, labels, outputs = [], [], []
    scores: list[float | None] = []
    new_passages: dict[str, Passage] = {}
    for index, item in enumerate(items):
        where = f"passages[{index}]."
        if not isinstance(item, dict):
            fields.fail(f"passages[{index}]", f"expected a passage object, found {describe(item)}")
            continue
        passage = FieldReader(item, file, number, problems, limits, where)
        passage.warn_unknown(_RANKED_FIELDS, seen)
        passage_id, title, text = passage.identifier("passage_id"), passage.text("title", False), passage.text("text")
        score = passage.number("score", required=False)
        output = passage.text("output", required=False, non_empty=False) if item.get("output") is not None else None
        method_labels = _read_labels(passage, item.get("labels"))
        if not passage.ok:
            fields.ok = False
            continue
        assert passage_id is not None and title is not None and text is not None  # passage.ok: all were read
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
    given = [s for s in scores if s is not None]
    if given and len(given) < len(scores):
        fields.fail("passages", "give a 'score' for every passage of the list or for none")
        return None
    if not given:  # no scores: the list order is the ranking, shown as n, n-1, ..., 1
        given = [float(len(scores) - i) for i in range(len(scores))]
    elif any(later > earlier for earlier, later in itertools.pairwise(given)):
        problems.warning(file, number, f"query {query_id!r}: the scores are not in descending order; the list "
                                       "order is the ranking")
    for passage_id, new in new_passages.items():
        run.passages.setdefault(passage_id, (number, new))
    return [ScoredPassage(p, s) for p, s in zip(ranked, given)], labels, outputs


def _read_labels(fields: FieldReader, value: Any) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        fields.fail("labels", f'expected an object of label values by method, e.g. {{"erag:em": 1}}, found '
                              f"{describe(value)}")
        return {}
    labels = {}
    for method, label in value.items():
        if not _METHOD_PATTERN.match(method):
            fields.fail("labels", f"method name {method!r}: expected letters, digits and _ : . - (at most 64)")
        elif method == QRELS:
            fields.fail("labels", f"method name {QRELS!r} is kept for uploaded qrels files")
        elif isinstance(label, bool) or not isinstance(label, (int, float)) or not math.isfinite(label):
            fields.fail(f"labels.{method}", f"expected a finite number, found {describe(label)}")
        else:
            labels[method] = float(label)
    return labels


def _read_e2e(fields: FieldReader, query_id: str, depth: int, answers: Sequence[str], seen: set[str]
              ) -> list[E2EOutput] | None:
    value = fields.value("e2e", required=False)
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    outputs: dict[int, E2EOutput] = {}
    for index, item in enumerate(items):
        name = f"e2e[{index}]" if isinstance(value, list) else "e2e"
        if not isinstance(item, dict):
            fields.fail(name, f'expected an object {{"k": ..., "output": ...}}, found {describe(item)}')
            continue
        e2e = FieldReader(item, fields.file, fields.line, fields.problems, fields.limits, name + ".")
        e2e.warn_unknown(_E2E_FIELDS, seen)
        k, output = e2e.value("k", required=True), e2e.text("output", non_empty=False)
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= depth):
            e2e.fail("k", f"expected an integer from 1 to the number of passages listed ({depth}), found "
                          f"{k!r}" if isinstance(k, (int, float)) else f"expected an integer, found {describe(k)}")
        if not e2e.ok:
            fields.ok = False
            continue
        assert output is not None  # e2e.ok: it was read
        if k in outputs:
            fields.fail(name + ".k", f"two end-to-end answers at k={k}")
            continue
        outputs[k] = E2EOutput(query_id, k, output, exact_match(output, answers) if answers else math.nan)
    if not fields.ok:
        return None
    if outputs and not answers:  # the user's answers are kept as they are, never dropped: only not scored
        fields.problems.warning(fields.file, fields.line, f"query {query_id!r} has end-to-end answers but no gold "
                                                          "answers to score them: they are kept, not scored")
    return list(outputs.values())


def read_jsonl_upload(file: UploadFile, *, dataset: str = "uploaded", retriever: str | None = None,
                      model: str | None = None, limits: UploadLimits = DEFAULT_LIMITS) -> UploadRead:
    """Validate a JSONL run with answers (one query per line, see ``docs/upload_format.md``) and read the parts of a
    run (:func:`rageval.upload.convert.convert_jsonl_upload` builds the run from them).

    Each record's passages are its ranking in list order; its ``labels`` become label methods of the same names,
    its ``gold_passage_ids`` the method ``gold`` (1 for them, 0 for the other listed passages), its ``output``\\ s
    the single-passage answers, and its ``e2e`` answers are scored by exact match against its ``answers``.
    """
    problems = Problems(limits.max_problems_per_file)
    run = _JsonlRun()
    first_line: dict[str, int] = {}
    seen: set[str] = set()
    for number, record in read_json_records(file, problems, limits):
        fields = FieldReader(record, file.name, number, problems, limits)
        fields.warn_unknown(_RECORD_FIELDS, seen)
        query_id, text = fields.identifier("query_id"), fields.text("text")
        answers, gold = fields.string_list("answers"), fields.string_list("gold_passage_ids", "passage id")
        if query_id in first_line:
            fields.fail("query_id", f"query id {query_id!r} is used twice (first on line {first_line[query_id]})")
        if not fields.ok:
            continue
        assert query_id is not None and text is not None and answers is not None and gold is not None  # fields.ok
        if len(first_line) == limits.max_queries:
            problems.error(file.name, number, f"more than {limits.max_queries:,} queries; the limit is "
                                              f"{limits.max_queries:,} per run")
            break
        first_line[query_id] = number
        read = _read_ranked_passages(fields, query_id, run, seen)
        if read is None:
            continue
        ranked, labels, outputs = read
        if gold and any(x.method == GOLD for x in labels):
            fields.fail("gold_passage_ids", f"give gold passages either as 'gold_passage_ids' or as "
                                            f"'{GOLD}' labels, not both")
            continue
        if gold:
            labels += gold_labels(query_id, gold, [p.passage_id for p in ranked])
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
    return UploadRead(problems, "jsonl", {"jsonl": file.name}, dataset=dataset,
                      retriever=retriever or "not stated by the uploader", model=model, queries=run.queries,
                      passages=[p for _, p in run.passages.values()], rankings=run.rankings, labels=run.labels,
                      doc_outputs=run.doc_outputs, e2e=run.e2e)
