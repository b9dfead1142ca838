"""Form (a): a TREC run file (``qid Q0 docid rank score tag``) and optional qrels (``qid 0 docid rel``), with the
queries and passages JSONL, into a run ranked as trec_eval ranks it. Lines are split and checked by the one TREC
reader's line rule (:func:`rageval.trec.parse_trec_line`, :func:`rageval.trec.trec_lines`), here reporting every
broken line as a problem rather than stopping at the first."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rageval.labelmethods import QRELS
from rageval.store import Label
from rageval.trec import QRELS as QRELS_LAYOUT
from rageval.trec import RUN as RUN_LAYOUT
from rageval.trec import TrecLayout, TrecLine, TrecLineError, parse_trec_line, repeated_pair_message, trec_lines
from rageval.types import Ranking, ScoredPassage
from rageval.upload.fields import file_problem
from rageval.upload.jsonl import read_passages, read_queries
from rageval.upload.parts import UploadRead, gold_labels
from rageval.upload.problems import (
    DEFAULT_LIMITS,
    Problems,
    UploadFile,
    UploadLimits,
)

TREC_RUN_FIELDS = RUN_LAYOUT.fields
TREC_QRELS_FIELDS = QRELS_LAYOUT.fields


def _read_trec_lines(file: UploadFile, problems: Problems, limits: UploadLimits) -> list[tuple[int, str]] | None:
    """The non-blank lines of a TREC file with their numbers, or None (reported) when the file is too large, not
    text, not UTF-8 (at the first such line) or empty."""
    unreadable = file_problem(file, limits)
    if unreadable:
        problems.error(file.name, None, unreadable)
        return None
    try:
        lines = list(trec_lines(file.data))
    except TrecLineError as error:
        problems.error(file.name, error.line, error.message)
        return None
    if not lines:
        problems.error(file.name, None, "the file is empty: expected one record per line")
        return None
    return lines


def _parse_line(file: UploadFile, number: int, text: str, layout: TrecLayout, problems: Problems,
                limits: UploadLimits) -> TrecLine | None:
    try:
        line = parse_trec_line(text, layout)
    except TrecLineError as error:
        problems.error(file.name, number, error.message)
        return None
    for index in (0, 2):  # query_id and passage_id, in both formats
        if len(line.fields[index]) > limits.max_id_chars:
            problems.error(file.name, number, f"field '{layout.fields[index]}': the id has "
                                              f"{len(line.fields[index]):,} characters; the limit is "
                                              f"{limits.max_id_chars:,}")
            return None
    return line


@dataclass
class _RankedLine:
    line: int
    passage_id: str
    rank: int
    score: float


def _read_trec_run(file: UploadFile, problems: Problems, limits: UploadLimits
                   ) -> tuple[dict[str, list[_RankedLine]], list[str]]:
    """Each query's ranked lines in file order, and the run tags (distinct, in file order)."""
    ranked: dict[str, list[_RankedLine]] = {}
    where: dict[tuple[str, str], int] = {}
    tags: dict[str, None] = {}
    for number, text in _read_trec_lines(file, problems, limits) or ():
        line = _parse_line(file, number, text, RUN_LAYOUT, problems, limits)
        if line is None:
            continue
        query_id, _q0, passage_id, _rank, _score, tag = line.fields
        rank, score = int(line.rank or 0), line.value
        if (query_id, passage_id) in where:
            problems.error(file.name, number, repeated_pair_message(RUN_LAYOUT, query_id, passage_id,
                                                                    where[query_id, passage_id]))
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


def read_trec_qrels(file: UploadFile, problems: Problems, limits: UploadLimits
                    ) -> dict[str, tuple[int, dict[str, float]]]:
    """Each judged query's first line and its judgments ``{passage_id: relevance}``."""
    qrels: dict[str, tuple[int, dict[str, float]]] = {}
    where: dict[tuple[str, str], int] = {}
    for number, text in _read_trec_lines(file, problems, limits) or ():
        line = _parse_line(file, number, text, QRELS_LAYOUT, problems, limits)
        if line is None:
            continue
        query_id, _iteration, passage_id, _relevance = line.fields
        label = line.value
        if (query_id, passage_id) in where:
            problems.error(file.name, number, repeated_pair_message(QRELS_LAYOUT, query_id, passage_id,
                                                                    where[query_id, passage_id]))
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


def read_trec_upload(run_file: UploadFile, queries_file: UploadFile, passages_file: UploadFile,
                     qrels_file: UploadFile | None = None, *, dataset: str = "uploaded",
                     retriever: str | None = None, model: str | None = None,
                     limits: UploadLimits = DEFAULT_LIMITS) -> UploadRead:
    """Validate a TREC run (+ qrels) with its queries and passages JSONL and read the parts of a :class:`Run`
    (:func:`rageval.upload.convert.convert_trec_upload` builds the run from them).

    The run's queries are those of the queries file that the run file ranks (in queries-file order); each ranking
    is in trec_eval's order (score descending, ties by passage id descending), so every stored measure equals
    trec_eval's on the same files. The qrels become labels of method ``qrels`` (their positive passages the
    queries' gold passage ids); without a qrels file, the queries file's ``gold_passage_ids`` become the method
    ``gold`` (:func:`rageval.upload.parts.gold_labels`). Either is scored with the engine's measures at
    :func:`measure_cutoffs`.
    """
    problems = Problems(limits.max_problems_per_file)
    queries = read_queries(queries_file, problems, limits)
    passages = read_passages(passages_file, problems, limits)
    ranked, tags = _read_trec_run(run_file, problems, limits)
    qrels = read_trec_qrels(qrels_file, problems, limits) if qrels_file is not None else {}
    gold_given = qrels_file is None and any(query.gold_passage_ids for query_id, (_, query) in queries.items()
                                            if query_id in ranked)
    # Said only of a queries file that was read and names no gold passage at all: a file whose records failed is
    # reported by its own errors, and gold ids of queries the run does not rank are a cross-file problem below.
    gold_anywhere = any(query.gold_passage_ids for _, query in queries.values())
    if qrels_file is None and queries and not gold_anywhere:
        problems.warning(run_file.name, None, f"no qrels file and no 'gold_passage_ids' in {queries_file.name}: the "
                                              "run has no relevance labels and no measures")
    if problems.has_errors:  # cross-file checks only on files valid on their own: no cascade of follow-up errors
        return UploadRead(problems, "trec")

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
    for query_id, (number, query) in queries.items():
        if query_id not in ranked:
            problems.warning(queries_file.name, number, f"query {query_id!r} is not ranked in {run_file.name}: "
                                                        "it is left out of the run")
        elif gold_given and not query.gold_passage_ids:
            problems.warning(queries_file.name, number, f"query {query_id!r} has no 'gold_passage_ids' (and there "
                                                        "is no qrels file): its gold measures are 0")
        elif gold_given:
            unknown = [p for p in query.gold_passage_ids if p not in passages]
            if unknown:
                problems.warning(queries_file.name, number, f"field 'gold_passage_ids': passage {unknown[0]!r} is "
                                                            f"not in {passages_file.name}: it counts as relevant and "
                                                            "unretrieved, and has no text to show")
    for query_id, (number, judged) in qrels.items():  # (qrels only with a qrels file)
        if query_id not in queries and qrels_file is not None:
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
        return UploadRead(problems, "trec")

    stored = [query for query_id, (_, query) in queries.items() if query_id in ranked]
    # The qrels' positive passages are a judged query's gold passages; otherwise the queries file's own.
    stored = [dataclasses.replace(q, dataset=dataset, gold_passage_ids=tuple(
        p for p, v in qrels[q.query_id][1].items() if v > 0) if q.query_id in qrels else q.gold_passage_ids)
        for q in stored]
    rankings = [Ranking(q.query_id, tuple(ScoredPassage(x.passage_id, x.score)
                                          for x in ordered[q.query_id])) for q in stored]
    labels = [Label(QRELS, q.query_id, p, v) for q in stored
              for p, v in qrels.get(q.query_id, (0, {}))[1].items()]
    if gold_given:  # the queries file's gold passages are the run's judgments: the method gold
        labels = [x for q, r in zip(stored, rankings) if q.gold_passage_ids
                  for x in gold_labels(q.query_id, q.gold_passage_ids, r.passage_ids)]
    used = dict.fromkeys([p.passage_id for r in rankings for p in r.passages] + [x.passage_id for x in labels])
    kept_passages = [passages[p][1] for p in used if p in passages]
    return UploadRead(problems, "trec", files, dataset=dataset, retriever=retriever or ", ".join(tags), model=model,
                      queries=stored, passages=kept_passages, rankings=rankings, labels=labels)
