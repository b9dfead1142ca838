"""Per-query measure values from rankings and qrels, then their aggregation.

The dict inputs are converted once into dense ``[n_queries x depth]`` label matrices
(:class:`RankedLabels`); every measure is then a handful of numpy array operations over all queries
at once, with no Python loop over queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat

import numpy as np
import pandas as pd

from rageval.measures.base import Measure, RankedLabels
from rageval.measures.registry import parse_measure

Rankings = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, float]]
ScoredRun = Mapping[str, Mapping[str, float]]

_EMPTY: Mapping[str, float] = {}


def rank_by_score(run: ScoredRun) -> dict[str, list[str]]:
    """Order each query's passages by score, best first, breaking ties exactly as trec_eval does.

    trec_eval sorts by score descending and breaks ties by document id descending (``strcmp``, so
    ``"d9"`` ranks before ``"d10"``); Python's string order equals ``strcmp`` on UTF-8 bytes, so the
    rankings, and every measure computed on them, match trec_eval on tied scores. The input order of
    ``run`` is kept for the queries. Scores must be finite.
    """
    query_ids, scored = list(run), list(run.values())
    lengths = _lengths(scored)
    total = int(lengths.sum())
    passage_ids = np.fromiter(chain.from_iterable(scored), dtype=object, count=total)
    scores = np.fromiter(chain.from_iterable(s.values() for s in scored), dtype=np.float64, count=total)
    _check_scores(scores, lengths, query_ids)
    starts = np.cumsum(lengths) - lengths
    order = _order_by_score_then_id_desc(scores, passage_ids, lengths, starts)
    ranked = passage_ids[order]
    return {query_id: ranked[start:start + length].tolist()
            for query_id, start, length in zip(query_ids, starts.tolist(), lengths.tolist())}


def _order_by_score_then_id_desc(
    scores: np.ndarray, passage_ids: np.ndarray, lengths: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Flat indices that sort every query's block by (score desc, passage id desc)."""
    width = int(lengths.max(initial=0))
    negated = _pad(-scores, lengths, width, fill=np.inf)  # padding sorts after every real score
    order = np.argsort(negated, axis=1)
    ordered = np.take_along_axis(negated, order, axis=1)
    tied_with_next = (ordered[:, 1:] == ordered[:, :-1]) & np.isfinite(ordered[:, 1:])
    if tied_with_next.any():
        in_tie = np.zeros_like(ordered, dtype=bool)
        in_tie[:, 1:] |= tied_with_next
        in_tie[:, :-1] |= tied_with_next
        tie_rows, tie_positions = np.nonzero(in_tie)
        tie_columns = order[tie_rows, tie_positions]
        # Only tied passages need their ids compared; a global rank among them orders every tie group.
        id_rank = np.empty(len(tie_rows), dtype=np.float64)
        id_rank[np.argsort(passage_ids[starts[tie_rows] + tie_columns], kind="stable")] = np.arange(len(tie_rows))
        secondary = np.zeros_like(negated)
        secondary[tie_rows, tie_columns] = -id_rank
        rows_with_ties = np.unique(tie_rows)
        order[rows_with_ties] = np.lexsort((secondary[rows_with_ties], negated[rows_with_ties]), axis=1)
    valid = np.arange(width) < lengths[:, None]
    return (starts[:, None] + order)[valid]


def build_ranked_labels(
    rankings: Rankings,
    qrels: Qrels,
    *,
    queries: Iterable[str] | None = None,
    depth: int | None = None,
    ideal_depth: int | None = None,
    judgments: bool = False,
) -> RankedLabels:
    """Lay out the labels of every ranking as the dense matrices of :class:`RankedLabels`.

    The evaluated queries are ``queries`` if given, else every query of ``qrels`` (a judged query,
    even one whose label mapping is empty). A query without a ranking is evaluated on an empty one;
    rankings of queries outside that set are ignored, since without judgments they cannot be scored
    (trec_eval ignores them too; unlike trec_eval, a judged query that was not retrieved for counts,
    as with ``trec_eval -c``). Unjudged passages get label 0. ``depth`` keeps only the top ``depth``
    ranks and ``ideal_depth`` only that many ideal gains (None: all), which is all a set of cutoff
    measures needs. ``judgments=True`` also fills ``ranked_judgments`` (see :func:`requires_judgments`).
    Passage ids must be unique within a ranking.
    """
    query_ids = tuple(qrels) if queries is None else tuple(queries)
    judged = [qrels.get(query_id, _EMPTY) for query_id in query_ids]
    ranked_lists = [rankings.get(query_id, ()) for query_id in query_ids]
    lengths = _lengths(ranked_lists)
    if depth is not None:
        ranked_lists = [ranked if len(ranked) <= depth else ranked[:depth] for ranked in ranked_lists]
    kept = lengths if depth is None else np.minimum(lengths, depth)
    _check_unique(query_ids, ranked_lists, kept)
    unjudged = np.nan if judgments else 0.0
    lookups = (map(labels.get, ranked, repeat(unjudged)) for labels, ranked in zip(judged, ranked_lists))
    flat_labels = _floats(chain.from_iterable(lookups), int(kept.sum()), query_ids, judged)
    labels = _pad(flat_labels, kept, width=int(kept.max(initial=0)), fill=unjudged)
    judged_rows, judged_labels = _judged_table(query_ids, judged)
    return _ranked_labels(query_ids, judged_rows, judged_labels, labels, lengths, ideal_depth, judgments)


def build_ranked_labels_from_run(
    run: ScoredRun,
    qrels: Qrels,
    *,
    queries: Iterable[str] | None = None,
    depth: int | None = None,
    ideal_depth: int | None = None,
    judgments: bool = False,
) -> RankedLabels:
    """:func:`build_ranked_labels` of ``rank_by_score(run)``, computed without sorting the run.

    Only the rank of each positively labelled passage matters to the measures, so instead of sorting
    every query's passages this counts, for each judged passage that was retrieved, the passages that
    rank above it under trec_eval's order (score descending, then passage id descending); with
    ``judgments=True`` every judged retrieved passage is placed, whatever its label. The same queries are
    evaluated as in :func:`build_ranked_labels`.
    """
    query_ids = tuple(qrels) if queries is None else tuple(queries)
    judged = [qrels.get(query_id, _EMPTY) for query_id in query_ids]
    scored = [run.get(query_id, _EMPTY) for query_id in query_ids]
    lengths = _lengths(scored)
    scores = np.fromiter(chain.from_iterable(s.values() for s in scored), dtype=np.float64, count=int(lengths.sum()))
    _check_scores(scores, lengths, query_ids)
    kept = lengths if depth is None else np.minimum(lengths, depth)
    labels = np.full((len(query_ids), int(kept.max(initial=0))), np.nan if judgments else 0.0)
    # -inf padding never ranks above a real score nor ties with one.
    score_matrix = _pad(scores, lengths, width=int(lengths.max(initial=0)), fill=-np.inf)

    judged_rows, judged_labels = _judged_table(query_ids, judged)
    lookups = (map(s.get, j, repeat(np.nan)) for s, j in zip(scored, judged))
    judged_scores = np.fromiter(chain.from_iterable(lookups), dtype=np.float64, count=len(judged_rows))
    # Only positive retrieved labels add gain; the judgments place every judged retrieved passage.
    useful = ~np.isnan(judged_scores) if judgments else (judged_labels > 0) & ~np.isnan(judged_scores)
    entries = np.flatnonzero(useful)
    rows, entry_scores = judged_rows[entries], judged_scores[entries]

    rank, tie_entries, tie_columns = _count_better(score_matrix, rows, entry_scores)
    if len(tie_entries):
        judged_ids = np.fromiter(chain.from_iterable(judged), dtype=object, count=len(judged_rows))
        tied_rows = rows[tie_entries]
        needed_rows, slot = np.unique(tied_rows, return_inverse=True)
        needed = [scored[row] for row in needed_rows.tolist()]
        needed_lengths = _lengths(needed)
        row_ids = np.fromiter(chain.from_iterable(needed), dtype=object, count=int(needed_lengths.sum()))
        row_starts = np.cumsum(needed_lengths) - needed_lengths
        # trec_eval puts the greater id first among equal scores.
        greater = row_ids[row_starts[slot] + tie_columns] > judged_ids[entries[tie_entries]]
        rank += np.bincount(tie_entries, weights=greater, minlength=len(rank)).astype(np.int64)
    inside = rank < kept[rows]
    labels[rows[inside], rank[inside]] = judged_labels[entries[inside]]
    return _ranked_labels(query_ids, judged_rows, judged_labels, labels, lengths, ideal_depth, judgments)


def _count_better(
    score_matrix: np.ndarray, rows: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each (row, score): how many scores of that row are greater, and the ties to resolve.

    Returns the counts of strictly greater scores and the pairs (entry, column) of every other
    column of the entry's row holding an equal score (the entry's own column included, which
    compares as equal id and so never counts).
    """
    above = np.empty(len(rows), dtype=np.int64)
    tie_entries, tie_columns = [], []
    chunk = max(1, 2**22 // max(score_matrix.shape[1], 1))  # bounds each temporary to ~4M cells
    for start in range(0, len(rows), chunk):
        block = score_matrix[rows[start:start + chunk]]
        own = scores[start:start + chunk, None]
        above[start:start + chunk] = (block > own).view(np.uint8).sum(axis=1, dtype=np.int64)
        equal = block == own
        tied = np.flatnonzero(equal.view(np.uint8).sum(axis=1, dtype=np.int64) > 1)  # more than itself
        entry, column = np.nonzero(equal[tied])
        tie_entries.append(tied[entry] + start)
        tie_columns.append(column)
    if not tie_entries:
        return above, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return above, np.concatenate(tie_entries), np.concatenate(tie_columns)


def _judged_table(query_ids, judged) -> tuple[np.ndarray, np.ndarray]:
    """Every judgment flattened, query after query: (row of its query, label)."""
    rows = np.repeat(np.arange(len(query_ids)), _lengths(judged))
    return rows, _floats(chain.from_iterable(j.values() for j in judged), len(rows), query_ids, judged)


def _ranked_labels(
    query_ids, judged_rows: np.ndarray, judged_labels: np.ndarray, labels: np.ndarray, lengths: np.ndarray, ideal_depth,
    judgments: bool = False,
) -> RankedLabels:
    """Complete :class:`RankedLabels` from the ranked label matrix and the flattened judgments.

    With ``judgments`` the matrix holds every judged ranked passage's label and NaN elsewhere; without, the
    positive labels and 0 elsewhere.
    """
    relevance = np.clip(judged_labels, 0.0, 1.0)
    fractional = (relevance > 0) & (relevance < 1)
    ranked_judgments = None
    if judgments:
        ranked_judgments = labels.copy()
        ranked_judgments.flags.writeable = False
        np.nan_to_num(labels, copy=False, nan=0.0)
    gains = np.maximum(labels, 0.0, out=labels)  # ``labels`` is a fresh array owned by the caller
    # With labels <= 1 (binary and eRAG labels) relevance equals the gains: share the matrix.
    ranked_relevance = gains if judged_labels.max(initial=0.0) <= 1.0 else np.minimum(gains, 1.0)
    gains.flags.writeable = ranked_relevance.flags.writeable = False
    return RankedLabels(
        query_ids=query_ids,
        gains=gains,
        relevance=ranked_relevance,
        ideal_gains=_ideal_gains(judged_rows, np.maximum(judged_labels, 0.0), len(query_ids), ideal_depth),
        n_relevant=np.bincount(judged_rows, weights=relevance, minlength=len(query_ids)),
        has_fractional=np.bincount(judged_rows, weights=fractional, minlength=len(query_ids)) > 0,
        lengths=lengths,
        ranked_judgments=ranked_judgments,
        judgment_rows=_read_only(judged_rows),
        judgment_labels=_read_only(judged_labels),
    )


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _lengths(collections: Sequence) -> np.ndarray:
    return np.fromiter(map(len, collections), dtype=np.int64, count=len(collections))


def _floats(values: Iterable, count: int, query_ids, judged) -> np.ndarray:
    """``values`` as a float64 array; a label that is not a number is reported by query and passage."""
    try:
        return np.fromiter(values, dtype=np.float64, count=count)
    except (TypeError, ValueError):
        _raise_bad_label(query_ids, judged)
        raise


def _check_scores(scores: np.ndarray, lengths: np.ndarray, query_ids) -> None:
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        row = int(np.searchsorted(np.cumsum(lengths), bad[0], side="right"))
        raise ValueError(f"run: query {query_ids[row]!r} has a score that is not finite: {scores[bad[0]]}")


def _raise_bad_label(query_ids, judged) -> None:
    for query_id, labels in zip(query_ids, judged):
        for passage_id, label in labels.items():
            try:
                float(label)
            except (TypeError, ValueError):
                raise ValueError(
                    f"qrels: query {query_id!r}, passage {passage_id!r}: label {label!r} is not a number"
                ) from None


def _check_unique(query_ids, ranked_lists, kept: np.ndarray) -> None:
    distinct = np.fromiter(map(len, map(set, ranked_lists)), dtype=np.int64, count=len(ranked_lists))
    duplicated = np.flatnonzero(distinct != kept)
    if len(duplicated):
        query_id = query_ids[int(duplicated[0])]
        raise ValueError(f"ranking of query {query_id!r} lists a passage id more than once")


def _pad(flat: np.ndarray, lengths: np.ndarray, width: int, fill: float = 0.0) -> np.ndarray:
    """Row ``i`` holds the ``lengths[i]`` values of query ``i`` from ``flat``, then ``fill``.

    When every row is full the result is a view of ``flat``, which callers pass fresh.
    """
    if len(lengths) and width and (lengths == width).all():
        return flat.reshape(len(lengths), width)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    columns = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    matrix = np.full((len(lengths), width), fill)
    matrix[rows, columns] = flat
    return matrix


def _ideal_gains(rows: np.ndarray, gains: np.ndarray, n_queries: int, ideal_depth: int | None) -> np.ndarray:
    """Each query's positive judged gains sorted descending, zero padded (the ideal ranking)."""
    positive = gains > 0
    rows, gains = rows[positive], gains[positive]
    order = np.lexsort((-gains, rows))
    rows, gains = rows[order], gains[order]
    counts = np.bincount(rows, minlength=n_queries)
    kept = counts if ideal_depth is None else np.minimum(counts, ideal_depth)
    position = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    keep = position < kept[rows]
    return _pad(gains[keep], kept, width=int(kept.max(initial=0)))


def required_depths(measures: Sequence[Measure]) -> tuple[int | None, int | None]:
    """The ranking depth and ideal depth that ``measures`` read (None: everything; no measure: everything)."""
    if not measures:
        return None, None
    return _deepest(measure.depth for measure in measures), _deepest(measure.ideal_depth for measure in measures)


def _deepest(depths: Iterable[int | None]) -> int | None:
    deepest = 0
    for depth in depths:
        if depth is None:
            return None
        deepest = max(deepest, depth)
    return deepest


def requires_judgments(measures: Iterable[Measure]) -> bool:
    """Whether any of ``measures`` reads the judgment of every ranked passage (``judged_only``, bpref, infAP,
    Judged, a gain for label 0): the label builders then place every judged retrieved passage, not only the
    positively labelled ones."""
    return any(measure.needs_judgments for measure in measures)


def compute_measure_values(
    measures: Iterable[Measure | str], labels: RankedLabels
) -> dict[Measure, np.ndarray]:
    """Each measure's per-query values, aligned with ``labels.query_ids`` (the kernels alone).

    ``labels`` must be at least as deep as :func:`required_depths` says for these measures, and built with
    judgments if :func:`requires_judgments` says so. Measures sharing label parameters share their view.
    """
    views: dict = {}
    return {measure: measure.compute(labels, views) for measure in map(parse_measure, measures)}


def compute_measures(
    measures: Iterable[Measure | str],
    rankings: Rankings,
    qrels: Qrels,
    *,
    queries: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Per-query values of every measure as a long table with columns ``query_id, measure, value``.

    ``rankings`` maps a query id to its passage ids, best first (see :func:`rank_by_score` for
    scored runs); ``qrels`` maps a query id to ``{passage_id: label}``. Rows cover every query of
    ``queries`` if given, else every query of ``qrels``; a query with an empty or missing ranking gets
    each measure's default (0.0), as does a query with no relevant passage. ``measure`` holds the
    canonical measure string (``"nDCG@10"``). Rows are grouped by measure, in the order given, and
    by query within a measure. Label semantics are in :mod:`rageval.measures.base`.
    """
    parsed = list(dict.fromkeys(map(parse_measure, measures)))
    depth, ideal_depth = required_depths(parsed)
    labels = build_ranked_labels(rankings, qrels, queries=queries, depth=depth, ideal_depth=ideal_depth,
                                 judgments=requires_judgments(parsed))
    return _per_query_frame(parsed, labels)


def compute_measures_from_run(
    measures: Iterable[Measure | str],
    run: ScoredRun,
    qrels: Qrels,
    *,
    queries: Iterable[str] | None = None,
) -> pd.DataFrame:
    """:func:`compute_measures` on ``rank_by_score(run)``, without materialising the rankings.

    ``run`` maps a query id to ``{passage_id: score}``, as pytrec_eval takes it; ties are broken as
    trec_eval does. Faster than ranking first, since only the ranks of positively labelled passages
    are computed (see :func:`build_ranked_labels_from_run`).
    """
    parsed = list(dict.fromkeys(map(parse_measure, measures)))
    depth, ideal_depth = required_depths(parsed)
    labels = build_ranked_labels_from_run(run, qrels, queries=queries, depth=depth, ideal_depth=ideal_depth,
                                          judgments=requires_judgments(parsed))
    return _per_query_frame(parsed, labels)


def _per_query_frame(parsed: list[Measure], labels: RankedLabels) -> pd.DataFrame:
    values = compute_measure_values(parsed, labels)
    n_queries = len(labels.query_ids)
    return pd.DataFrame(
        {
            "query_id": np.tile(np.asarray(labels.query_ids, dtype=object), len(parsed)),
            "measure": np.repeat(np.asarray([str(measure) for measure in parsed], dtype=object), n_queries),
            "value": np.concatenate([values[measure] for measure in parsed]) if parsed else np.empty(0),
        }
    )


def aggregate_measures(per_query: pd.DataFrame) -> pd.DataFrame:
    """Value per measure over queries: columns ``measure, value, n_queries``.

    The mean for most measures (the mean of AP is MAP, of RR is MRR, of Hit is the hit rate); the sum for the
    counts (``NumRet``, ``NumRel``, ``NumRelRet``, and ``NumQ``, which is then the number of queries, as
    ``n_queries`` is), as trec_eval and ir_measures total them. Measures keep their first-seen order; a measure
    string that does not parse is averaged.
    """
    grouped = per_query.groupby("measure", sort=False)["value"]
    summary = pd.DataFrame({"value": grouped.mean(), "n_queries": grouped.size()})
    summed = [name for name in summary.index if _aggregate_of(name) == "sum"]
    if summed:
        summary.loc[summed, "value"] = grouped.sum()[summed]
    return summary.reset_index()


def _aggregate_of(name: str) -> str:
    try:
        return parse_measure(name).definition.aggregate
    except ValueError:
        return "mean"
