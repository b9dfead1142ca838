"""Measures from columnar runs and qrels (tables and TREC files), without Python dicts in between.

A run is a table ``query_id, passage_id, score``; qrels are a table ``query_id, passage_id, label``.
Ids become integer codes once (a categorical column's own codes, or :func:`pandas.factorize`; TREC
files arrive coded from :mod:`rageval.trec`), each query's scores and passage codes are laid out as
dense ``[n_queries x width]`` matrices, the rank of every positively labelled retrieved passage under
trec_eval's order (score descending, then passage id descending) is counted
(:mod:`rageval.measures.ranks`), and the same :class:`~rageval.measures.ranked_labels.RankedLabels` that the
dict path fills is filled, so every measure runs through its one kernel.

>>> import pandas as pd
>>> run = pd.DataFrame({"query_id": ["q1", "q1"], "passage_id": ["d1", "d2"], "score": [0.5, 0.9]})
>>> qrels = pd.DataFrame({"query_id": ["q1"], "passage_id": ["d1"], "label": [1]})
>>> compute_measures_from_frames(["P@1", "RR"], run, qrels)["value"].tolist()
[0.0, 0.5]
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rageval.measures.base import Measure
from rageval.measures.compute import (
    _per_query_frame,
    _ranked_labels,
    required_depths,
    requires_judgments,
    without_huge_pages,
)
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.ranks import rank_entries
from rageval.measures.registry import parse_measure
from rageval.trec import (
    QRELS,
    QRELS_COLUMNS,
    RUN,
    RUN_COLUMNS,
    ExtraFields,
    TrecTable,
    check_no_missing_ids,
    first_repeated_pair,
    id_codes,
    pad_rows,
    read_trec_qrels,
    read_trec_run,
    read_trec_table,
    require_columns,
    write_trec_qrels,
    write_trec_run,
)

__all__ = [
    "QRELS_COLUMNS",
    "RUN_COLUMNS",
    "build_ranked_labels_from_frames",
    "compute_measures_from_files",
    "compute_measures_from_frames",
    "read_trec_qrels",
    "read_trec_run",
    "write_trec_qrels",
    "write_trec_run",
]


@without_huge_pages()
def compute_measures_from_frames(
    measures: Iterable[Measure | str],
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    queries: Iterable[str] | None = None,
) -> pd.DataFrame:
    """:func:`~rageval.measures.compute_measures_from_run` for a run and qrels given as tables.

    ``run`` has columns ``query_id, passage_id, score`` (one row per retrieved passage, e.g. from
    :func:`~rageval.trec.read_trec_run`); ``qrels`` has ``query_id, passage_id, label``. Passages are
    ranked as trec_eval ranks them: score descending, then passage id descending (``strcmp``). The
    result is the long table ``query_id, measure, value`` with the conventions of
    :func:`~rageval.measures.compute_measures`: rows for every query of ``queries`` if given, else
    every query of ``qrels`` in first-seen order; each measure's default (0.0) for a query with no
    ranking or no relevant passage; unjudged passages count as label 0. A passage listed twice in a
    query's ranking, a (query, passage) judged twice, a label that is not a number or a score that is
    not finite raise ``ValueError`` naming the query.
    """
    parsed = list(dict.fromkeys(map(parse_measure, measures)))
    depth, ideal_depth = required_depths(parsed)
    labels = build_ranked_labels_from_frames(run, qrels, queries=queries, depth=depth, ideal_depth=ideal_depth,
                                             judgments=requires_judgments(parsed))
    return _per_query_frame(parsed, labels)


@without_huge_pages()
def compute_measures_from_files(
    measures: Iterable[Measure | str],
    run_path: str | os.PathLike,
    qrels_path: str | os.PathLike,
    *,
    queries: Iterable[str] | None = None,
    extra_fields: ExtraFields = "error",
) -> pd.DataFrame:
    """:func:`compute_measures_from_frames` of a TREC run file and a TREC qrels file.

    The files are read by :func:`~rageval.trec.read_trec_table` (errors name the file and line) and
    measured from their integer codes; the reader's checks (finite numbers, no passage twice in a query)
    are not repeated.
    """
    parsed = list(dict.fromkeys(map(parse_measure, measures)))
    depth, ideal_depth = required_depths(parsed)
    run = _Columns.of_table(read_trec_table(run_path, RUN, extra_fields))
    qrels = _Columns.of_table(read_trec_table(qrels_path, QRELS, extra_fields))
    labels = _build_ranked_labels(run, qrels, queries, depth, ideal_depth, requires_judgments(parsed), checked=True)
    del run, qrels  # the measure kernels' temporaries are the peak: a million queries' codes need not wait
    return _per_query_frame(parsed, labels)


def build_ranked_labels_from_frames(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    queries: Iterable[str] | None = None,
    depth: int | None = None,
    ideal_depth: int | None = None,
    judgments: bool = False,
) -> RankedLabels:
    """:class:`RankedLabels` of a run table ranked by score, against a qrels table.

    The columnar counterpart of :func:`~rageval.measures.build_ranked_labels_from_run`, with the
    same queries, depths, ``judgments`` and label semantics. The run is laid out as a ``[n_queries x width]`` score
    matrix (width: the longest ranking), so memory grows with the longest ranking.
    """
    require_columns(run, RUN_COLUMNS, "run")
    require_columns(qrels, QRELS_COLUMNS, "qrels")
    return _build_ranked_labels(_Columns.of_run(run), _Columns.of_qrels(qrels), queries, depth, ideal_depth,
                                judgments, checked=False)


@dataclass(frozen=True)
class _Columns:
    """A run or qrels as codes: row ``i`` is (``query_ids[query_codes[i]]``, ``passage_ids[passage_codes[i]]``,
    ``values[i]``); ``frame`` is the table it came from (for messages), None for a file."""

    query_codes: np.ndarray
    query_ids: pd.Index
    passage_codes: np.ndarray
    passage_ids: pd.Index
    values: np.ndarray
    frame: pd.DataFrame | None = None

    @classmethod
    def of_table(cls, table: TrecTable) -> _Columns:
        return cls(table.query_codes, table.query_ids, table.passage_codes, table.passage_ids, table.values)

    @classmethod
    def of_run(cls, run: pd.DataFrame) -> _Columns:
        check_no_missing_ids(run, "run")
        return cls(*id_codes(run["query_id"]), *id_codes(run["passage_id"]), run["score"].to_numpy(np.float64),
                   run)

    @classmethod
    def of_qrels(cls, qrels: pd.DataFrame) -> _Columns:
        check_no_missing_ids(qrels, "qrels")
        column = qrels["label"]
        labels = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(np.isnan(labels))
        if len(bad):
            row = int(bad[0])
            raise ValueError(f"qrels: query {qrels['query_id'].iloc[row]!r}, passage "
                             f"{qrels['passage_id'].iloc[row]!r}: label {column.iloc[row]!r} is not a number")
        return cls(*id_codes(qrels["query_id"]), *id_codes(qrels["passage_id"]), labels, qrels)


def _build_ranked_labels(run: _Columns, qrels: _Columns, queries: Iterable[str] | None, depth: int | None,
                         ideal_depth: int | None, judgments: bool, *, checked: bool) -> RankedLabels:
    """The label matrices of ``run`` against ``qrels`` (``judgments``: every judged retrieved passage placed, NaN
    elsewhere; see :func:`~rageval.measures.requires_judgments`); ``checked``: the inputs come from the TREC reader,
    which already refused non-finite numbers and repeated (query, passage) pairs."""
    query_ids, judged_query_rows = _evaluated_queries(qrels, queries)
    judged_rows = judged_query_rows[qrels.query_codes] if len(qrels.query_codes) else np.empty(0, np.int64)
    evaluated = judged_rows >= 0
    judged_rows, judged_codes, judged_labels = \
        judged_rows[evaluated], qrels.passage_codes[evaluated], qrels.values[evaluated]
    if not checked:
        _check_unique_judgments(query_ids, judged_rows, judged_codes, qrels.passage_ids)

    rows, passage_codes, scores = _run_rows(run, query_ids, checked)
    lengths = np.bincount(rows, minlength=len(query_ids)).astype(np.int64)
    width = int(lengths.max(initial=0))
    score_matrix = pad_rows(scores, lengths, width, fill=-np.inf)  # -inf never ranks above a real score
    code_matrix = pad_rows(passage_codes, lengths, width, fill=-1)
    if not checked:
        _check_unique_passages(query_ids, code_matrix)

    # Each judged passage's code in the run (-1: never retrieved), through the distinct ids only.
    run_code_of = run.passage_ids.get_indexer(qrels.passage_ids)
    judged_run_codes = run_code_of[judged_codes] if len(judged_codes) else judged_codes.astype(np.int64)
    kept = lengths if depth is None else np.minimum(lengths, depth)
    labels = np.full((len(query_ids), int(kept.max(initial=0))), np.nan if judgments else 0.0)
    # Only positively labelled retrieved passages add gain: find their ranks (all judged ones for the judgments).
    candidates = np.flatnonzero(((judged_labels > 0) | judgments) & (judged_run_codes >= 0))
    ranks = rank_entries(score_matrix, judged_rows[candidates], code_matrix=code_matrix,
                         codes=judged_run_codes[candidates].astype(code_matrix.dtype))
    entries, rank = candidates[ranks.found], ranks.above[ranks.found]
    entry_rows = judged_rows[entries]
    if len(ranks.tie_entries):
        # trec_eval puts the greater id first among equal scores; compare the few tied ids as strings.
        tied_rows = judged_rows[candidates[ranks.tie_entries]]
        others = code_matrix[tied_rows, ranks.tie_columns]
        own = judged_run_codes[candidates[ranks.tie_entries]]
        greater = _strings(run.passage_ids, others) > _strings(run.passage_ids, own)
        extra = np.bincount(ranks.tie_entries, weights=greater, minlength=len(candidates)).astype(np.int64)
        rank = rank + extra[ranks.found]
    inside = rank < kept[entry_rows]
    labels[entry_rows[inside], rank[inside]] = judged_labels[entries[inside]]
    return _ranked_labels(query_ids, judged_rows, judged_labels, labels, lengths, ideal_depth, judgments)


def _evaluated_queries(qrels: _Columns, queries: Iterable[str] | None) -> tuple[tuple, np.ndarray]:
    """The evaluated query ids and, for each of the qrels' query codes, its row among them (-1: not evaluated)."""
    if queries is None:
        # Every judged query, in first-seen order: the codes' own order when they are numbered so (as TREC
        # files and factorised columns are), else renumbered.
        codes = qrels.query_codes
        seen = np.zeros(len(qrels.query_ids), dtype=bool)
        seen[codes] = True
        if _in_first_seen_order(codes) and seen.all():
            return tuple(qrels.query_ids.tolist()), np.arange(len(qrels.query_ids))
        _, uniques = pd.factorize(codes)
        row_of_code = np.full(len(qrels.query_ids), -1, dtype=np.int64)
        row_of_code[uniques] = np.arange(len(uniques))
        return tuple(qrels.query_ids.take(uniques).tolist()), row_of_code
    query_ids = tuple(queries)
    index = pd.Index(query_ids, dtype=object)
    if index.has_duplicates:
        raise ValueError(f"queries lists {index[index.duplicated()][0]!r} more than once")
    return query_ids, index.get_indexer(np.asarray(qrels.query_ids, dtype=object))


def _in_first_seen_order(codes: np.ndarray) -> bool:
    """Whether codes 0, 1, 2, ... first appear in that order."""
    if not len(codes):
        return True
    highest = np.maximum.accumulate(codes)
    return bool(codes[0] == 0 and (codes[1:] <= highest[:-1] + 1).all())


def _check_unique_judgments(query_ids, rows: np.ndarray, passage_codes: np.ndarray, passage_ids) -> None:
    repeat = first_repeated_pair(rows, passage_codes, len(passage_ids))
    if repeat is not None:
        entry = repeat[1]
        raise ValueError(f"qrels of query {query_ids[rows[entry]]!r} judge passage "
                         f"{passage_ids[passage_codes[entry]]!r} more than once")


def _run_rows(run: _Columns, query_ids: tuple, checked: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run's lines of evaluated queries grouped by query row: (row, passage code, score).

    Passage codes index the run's passage ids in first-seen order, not sorted: ties are rare and are
    resolved on the id strings themselves.
    """
    evaluated = pd.Index(query_ids, dtype=object)
    if run.query_ids.equals(evaluated):
        row_of_query = np.arange(len(query_ids))
    else:
        row_of_query = evaluated.get_indexer(np.asarray(run.query_ids, dtype=object))
    rows = row_of_query[run.query_codes] if len(run.query_codes) else np.empty(0, dtype=np.int64)
    passage_codes, scores = run.passage_codes, run.values
    keep = rows >= 0
    if not keep.all():
        rows, passage_codes, scores = rows[keep], passage_codes[keep], scores[keep]
    bad = np.empty(0, dtype=np.int64) if checked else np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        raise ValueError(f"run: query {query_ids[rows[bad[0]]]!r} has a score that is not finite: {scores[bad[0]]}")
    if len(rows) and (rows[1:] < rows[:-1]).any():
        order = np.argsort(rows, kind="stable")  # fast on runs already grouped by query
        rows, passage_codes, scores = rows[order], passage_codes[order], scores[order]
    return rows, passage_codes, scores


def _check_unique_passages(query_ids, code_matrix: np.ndarray) -> None:
    ordered = np.sort(code_matrix, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    rows = np.flatnonzero(repeated.any(axis=1))
    if len(rows):
        raise ValueError(f"ranking of query {query_ids[int(rows[0])]!r} lists a passage id more than once")


def _strings(ids: pd.Index, codes: np.ndarray) -> np.ndarray:
    """The ids at ``codes`` as Python strings: their ``<`` is code point order, i.e. strcmp on UTF-8."""
    return np.asarray(ids.take(codes), dtype=object)
