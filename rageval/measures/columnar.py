"""Measures from columnar runs and qrels (DataFrames, TREC files), without Python dicts in between.

A run is a table ``query_id, passage_id, score``; qrels are a table ``query_id, passage_id, label``.
:func:`compute_measures_from_frames` factorises the ids into integer codes, lays each query's scores
and passage codes out as dense ``[n_queries x width]`` matrices, finds the rank of every positively
labelled retrieved passage under trec_eval's order (score descending, then passage id descending) and
fills the same :class:`~rageval.measures.base.RankedLabels` that the dict path fills, so every
measure runs through its one kernel. The TREC readers parse with Arrow's CSV reader, falling back to
pandas' C parser for irregular whitespace, and never build a Python object per line.

>>> import pandas as pd
>>> run = pd.DataFrame({"query_id": ["q1", "q1"], "passage_id": ["d1", "d2"], "score": [0.5, 0.9]})
>>> qrels = pd.DataFrame({"query_id": ["q1"], "passage_id": ["d1"], "label": [1]})
>>> compute_measures_from_frames(["P@1", "RR"], run, qrels)["value"].tolist()
[0.0, 0.5]
"""

from __future__ import annotations

import csv
import math
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rageval.errors import DataError
from rageval.measures.base import Measure, RankedLabels
from rageval.measures.compute import (
    _count_better,
    _pad,
    _per_query_frame,
    _ranked_labels,
    required_depths,
    requires_judgments,
)
from rageval.measures.registry import parse_measure

RUN_COLUMNS = ("query_id", "passage_id", "score")
QRELS_COLUMNS = ("query_id", "passage_id", "label")


# ----------------------------------------------------------------------------------------------
# TREC files
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TrecLayout:
    """The whitespace-separated fields of one line of a TREC file and which of them are kept."""

    kind: str  # "run" or "qrels", for messages
    fields: tuple[str, ...]  # every field, in file order
    value_field: str  # the numeric field: score or label
    finite: bool  # whether the value must be finite (scores) or only a number (labels: not NaN)
    integer_fields: tuple[str, ...] = ()  # ignored fields that the fast reader may parse as integers

    @property
    def kept(self) -> list[str]:
        return ["query_id", "passage_id", self.value_field]

    @property
    def expected(self) -> str:
        return f"{len(self.fields)} whitespace-separated fields '{' '.join(self.fields)}'"


_RUN = _TrecLayout("run", ("query_id", "Q0", "passage_id", "rank", "score", "tag"), "score", finite=True,
                   integer_fields=("rank",))
_QRELS = _TrecLayout("qrels", ("query_id", "iteration", "passage_id", "label"), "label", finite=False)
_SEPARATOR = re.compile(r"[ \t]+")  # what the C parser's whitespace mode splits on


def read_trec_run(path: str | os.PathLike) -> pd.DataFrame:
    """Read a TREC run file into a table ``query_id, passage_id, score``, in file order.

    Each line is ``query_id Q0 passage_id rank score tag`` (trec_eval's format), fields separated
    by spaces or tabs; blank lines are skipped. Ids are kept as strings exactly as written (``"007"``
    stays ``"007"``), held as pandas categoricals since a run repeats each id many times; the ``Q0``,
    ``rank`` and ``tag`` fields are checked for presence and dropped, since trec_eval ranks by score,
    not by the rank field. Raises :class:`~rageval.errors.DataError` naming the first malformed
    line: a wrong number of fields, or a score that is not a finite number.
    """
    return _read_trec(Path(path), _RUN)


def read_trec_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """Read a TREC qrels file into a table ``query_id, passage_id, label``, in file order.

    Each line is ``query_id iteration passage_id label`` (the iteration field, usually ``0``, is
    ignored as trec_eval does). Labels are read as floats so fractional eRAG labels load too; ids
    stay strings (categoricals, as in :func:`read_trec_run`). Raises
    :class:`~rageval.errors.DataError` naming the first malformed line.
    """
    return _read_trec(Path(path), _QRELS)


def write_trec_run(frame: pd.DataFrame, path: str | os.PathLike, tag: str = "rageval") -> Path:
    """Write a run table (``query_id, passage_id, score``) as a TREC run file and return its path.

    Queries keep their first-seen order; within a query lines go in trec_eval's order (score
    descending, then passage id descending) and the rank field counts from 1 in that order, so the
    file ranks exactly as the table does. Scores are written with ``repr`` precision and read back
    bit for bit. Ids and ``tag`` must be non-empty and free of whitespace, and scores finite.
    """
    _require_columns(frame, RUN_COLUMNS, "run")
    _check_no_missing_ids(frame, "run")
    if not tag or _SEPARATOR.search(tag) or any(c in tag for c in "\r\n"):
        raise ValueError(f"run tag {tag!r} must be non-empty and contain no whitespace")
    query_codes, query_ids = pd.factorize(_ids(frame["query_id"]))
    passage_codes, passage_ids = _codes(frame["passage_id"])
    _check_writable_ids(query_ids, "query_id")
    _check_writable_ids(passage_ids, "passage_id")
    # Python's str order is strcmp's order on UTF-8 bytes, the order trec_eval breaks ties in.
    passage_order = np.argsort(np.argsort(np.asarray(passage_ids, dtype=object), kind="stable"))[passage_codes]
    scores = frame["score"].to_numpy(dtype=np.float64)
    if not np.isfinite(scores).all():
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"run: query {frame['query_id'].iloc[row]!r} has a score that is not finite: {scores[row]}")
    order = np.lexsort((-passage_order, -scores, query_codes))
    counts = np.bincount(query_codes, minlength=len(query_ids))
    ranks = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts) + 1
    lines = pd.DataFrame({
        "query_id": _ids(frame["query_id"]).array.take(order),
        "Q0": "Q0",
        "passage_id": _ids(frame["passage_id"]).array.take(order),
        "rank": ranks,
        "score": scores[order],
        "tag": tag,
    })
    return _write_lines(lines, path)


def write_trec_qrels(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a qrels table (``query_id, passage_id, label``) as a TREC qrels file; return its path.

    Lines keep the table's order with iteration ``0``. Integral labels are written as integers (as
    trec_eval requires), fractional labels with ``repr`` precision.
    """
    _require_columns(frame, QRELS_COLUMNS, "qrels")
    _check_no_missing_ids(frame, "qrels")
    for column in ("query_id", "passage_id"):
        _check_writable_ids(pd.unique(frame[column]), column)
    labels = frame["label"].to_numpy(dtype=np.float64)
    if np.isnan(labels).any():
        row = int(np.flatnonzero(np.isnan(labels))[0])
        raise ValueError(f"qrels: query {frame['query_id'].iloc[row]!r}, passage "
                         f"{frame['passage_id'].iloc[row]!r}: label is not a number")
    integral = np.isfinite(labels).all() and (labels == np.round(labels)).all()
    lines = pd.DataFrame({
        "query_id": frame["query_id"].to_numpy(),
        "iteration": 0,
        "passage_id": frame["passage_id"].to_numpy(),
        "label": labels.astype(np.int64) if integral else labels,
    })
    return _write_lines(lines, path)


def _write_lines(lines: pd.DataFrame, path: str | os.PathLike) -> Path:
    path = Path(path)
    lines.to_csv(path, sep=" ", header=False, index=False, quoting=csv.QUOTE_NONE, lineterminator="\n")
    return path


def _check_writable_ids(ids, column: str) -> None:
    """Refuse ids that could not be read back as one TREC field."""
    ids = pd.Series(np.asarray(ids, dtype=object))
    bad = ids.isna() | (ids.astype(str).str.len() == 0) | ids.astype(str).str.contains(r"\s", regex=True)
    if bad.any():
        raise ValueError(f"cannot write {column} {ids[bad].iloc[0]!r} to a TREC file: "
                         "ids must be non-empty and contain no whitespace")


def _read_trec(path: Path, layout: _TrecLayout) -> pd.DataFrame:
    """Parse with a fast strict reader; on any doubt, find and report the first malformed line.

    The fast path is Arrow's CSV reader (``pyarrow``, which pandas' string columns already use)
    with the file's single delimiter, a space or a tab: it dictionary-encodes the ids while parsing,
    so no Python string is made per line, and it refuses a line with a wrong number of fields.
    Anything else -- runs of blanks, mixed tabs and spaces -- is read again by pandas' C parser in
    whitespace mode. Ids come back as categoricals of strings (each distinct id stored once).
    """
    frame = _parse_arrow(path, layout)
    if frame is None:
        try:
            frame = _parse_c(path, layout)
        except ValueError:  # ParserError, EmptyDataError, UnicodeDecodeError and bad numbers all are
            frame = None
    if frame is not None and _is_complete(frame, layout):
        return frame[layout.kept].reset_index(drop=True)
    problem = _first_bad_line(path, layout)
    if problem is None:
        if _has_no_records(path):
            return _empty_frame(layout)
        raise DataError(path, f"could not be parsed as a TREC {layout.kind} file: expected {layout.expected}")
    line, message = problem
    raise DataError(path, message, line=line)


def _parse_arrow(path: Path, layout: _TrecLayout) -> pd.DataFrame | None:
    """The file read by Arrow's CSV reader, or None if it is not strictly delimited (or no pyarrow)."""
    try:
        import pyarrow as pa
        from pyarrow import compute as arrow_compute
        from pyarrow import csv as arrow_csv
    except ImportError:
        return None
    strings = pa.dictionary(pa.int32(), pa.string())  # explicit: no guessing "007" is the number 7
    types = dict.fromkeys(layout.fields, strings)
    types[layout.value_field] = pa.float64()
    # An integer parse is the cheapest check that the (ignored) rank field is there; a file with
    # non-integer ranks is still read, by the fallback.
    types.update({field: pa.int64() for field in layout.integer_fields})
    try:
        table = arrow_csv.read_csv(
            path,
            read_options=arrow_csv.ReadOptions(column_names=list(layout.fields)),
            parse_options=arrow_csv.ParseOptions(
                delimiter=_delimiter(path), quote_char=False, escape_char=False, double_quote=False,
                newlines_in_values=False, ignore_empty_lines=True,
            ),
            convert_options=arrow_csv.ConvertOptions(
                column_types=types, null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid:  # wrong field count, a value that is not a number, bad UTF-8, empty file
        return None
    ignored = [field for field in layout.fields if field not in layout.kept]
    for field in set(ignored) - set(layout.integer_fields):  # an empty field means a missing one
        if any(arrow_compute.index(chunk.dictionary, "").as_py() >= 0 for chunk in table.column(field).chunks):
            return None
    return table.drop_columns(ignored).to_pandas()


def _delimiter(path: Path) -> str:
    """A tab if the first line is tab-separated (MS MARCO style), else a space."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 16).lstrip(b" \t\r\n").split(b"\n", 1)[0]
    return "\t" if b"\t" in head and b" " not in head.strip() else " "


def _parse_c(path: Path, layout: _TrecLayout) -> pd.DataFrame:
    """The file read by pandas' C parser in whitespace mode (any run of spaces and tabs)."""
    # Ids as str, never "category": the C parser would guess numeric categories ("007" -> 7).
    dtypes: dict[str, str | type] = dict.fromkeys(layout.fields, "category")
    dtypes.update(query_id=str, passage_id=str)
    dtypes[layout.value_field] = np.float64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.ParserWarning)
        frame = pd.read_csv(
            path, sep=r"\s+", header=None, names=list(layout.fields), dtype=dtypes, index_col=False,
            na_filter=False, quoting=csv.QUOTE_NONE, engine="c", low_memory=False, encoding="utf-8",
        )
    return frame.astype({"query_id": "category", "passage_id": "category"})


def _is_complete(frame: pd.DataFrame, layout: _TrecLayout) -> bool:
    """No field is empty (a missing field), and every value is a number (finite for scores)."""
    values = frame[layout.value_field].to_numpy(dtype=np.float64)
    if not (np.isfinite(values).all() if layout.finite else not np.isnan(values).any()):
        return False
    categoricals = [column for column in frame.columns if isinstance(frame[column].dtype, pd.CategoricalDtype)]
    return all("" not in frame[column].cat.categories for column in categoricals)


def _first_bad_line(path: Path, layout: _TrecLayout) -> tuple[int, str] | None:
    """The 1-based number and the problem of the first malformed line, read line by line."""
    value_index = layout.fields.index(layout.value_field)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                return number, "expected UTF-8 text"
            stripped = line.strip(" \t\r\n")
            if not stripped:
                continue
            fields = _SEPARATOR.split(stripped)
            if len(fields) != len(layout.fields):
                return number, f"expected {layout.expected}, found {len(fields)} fields"
            text = fields[value_index]
            try:
                value = float(text)
            except ValueError:
                value = None
            if value is None or math.isnan(value) or (layout.finite and not math.isfinite(value)):
                kind = "a finite number" if layout.finite else "a number"
                return number, f"field {layout.value_field!r}: expected {kind}, found {text!r}"
    return None


def _has_no_records(path: Path) -> bool:
    with open(path, "rb") as handle:
        return all(not raw.strip() for raw in handle)


def _empty_frame(layout: _TrecLayout) -> pd.DataFrame:
    return pd.DataFrame({
        "query_id": pd.Series([], dtype=str).astype("category"),
        "passage_id": pd.Series([], dtype=str).astype("category"),
        layout.value_field: pd.Series([], dtype=np.float64),
    })


# ----------------------------------------------------------------------------------------------
# Measures from frames
# ----------------------------------------------------------------------------------------------


def compute_measures_from_frames(
    measures: Iterable[Measure | str],
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    queries: Iterable[str] | None = None,
) -> pd.DataFrame:
    """:func:`~rageval.measures.compute_measures_from_run` for a run and qrels given as tables.

    ``run`` has columns ``query_id, passage_id, score`` (one row per retrieved passage, e.g. from
    :func:`read_trec_run`); ``qrels`` has ``query_id, passage_id, label``. Passages are ranked as
    trec_eval ranks them: score descending, then passage id descending (``strcmp``). The result is
    the long table ``query_id, measure, value`` with the conventions of
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
    same queries, depths, ``judgments`` and label semantics. The run is laid out as a ``[n_queries x width]``
    score matrix (width: the longest ranking), so memory grows with the longest ranking.
    """
    _require_columns(run, RUN_COLUMNS, "run")
    _require_columns(qrels, QRELS_COLUMNS, "qrels")
    query_ids, judged_rows = _judged_queries(qrels, queries)
    judged_labels = _labels(qrels)
    keep = judged_rows >= 0
    judged_rows, judged_labels = judged_rows[keep], judged_labels[keep]
    judged_passages = _ids(qrels["passage_id"])[keep]
    judged_codes, judged_ids = pd.factorize(judged_passages)
    _check_unique_judgments(query_ids, judged_rows, judged_codes, judged_ids)

    rows, passage_codes, passage_ids, scores = _run_codes(run, query_ids)
    lengths = np.bincount(rows, minlength=len(query_ids)).astype(np.int64)
    width = int(lengths.max(initial=0))
    score_matrix = _pad(scores, lengths, width, fill=-np.inf)  # -inf never ranks above a real score
    code_matrix = _pad(passage_codes, lengths, width, fill=-1)
    _check_unique_passages(query_ids, code_matrix)
    # Each judged passage's code in the run (-1: never retrieved), through the distinct ids only.
    judged_codes = passage_ids.get_indexer(np.asarray(judged_ids, dtype=object))[judged_codes] \
        if len(judged_codes) else judged_codes.astype(np.int64)

    kept = lengths if depth is None else np.minimum(lengths, depth)
    labels = np.full((len(query_ids), int(kept.max(initial=0))), np.nan if judgments else 0.0)
    # Only positively labelled retrieved passages add gain: find their ranks (all judged ones for the judgments).
    entries = np.flatnonzero(((judged_labels > 0) | judgments) & (judged_codes >= 0))
    entries, columns = _locate(code_matrix, judged_rows[entries], judged_codes[entries], entries)
    entry_rows = judged_rows[entries]
    rank, tie_entries, tie_columns = _count_better(score_matrix, entry_rows, score_matrix[entry_rows, columns])
    if len(tie_entries):
        # trec_eval puts the greater id first among equal scores; compare the few tied ids as strings.
        others = code_matrix[entry_rows[tie_entries], tie_columns]
        own = judged_codes[entries[tie_entries]]
        greater = _strings(passage_ids, others) > _strings(passage_ids, own)
        rank += np.bincount(tie_entries, weights=greater, minlength=len(rank)).astype(np.int64)
    inside = rank < kept[entry_rows]
    labels[entry_rows[inside], rank[inside]] = judged_labels[entries[inside]]
    return _ranked_labels(query_ids, judged_rows, judged_labels, labels, lengths, ideal_depth, judgments)


def _require_columns(frame: pd.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{name} table lacks column(s) {missing}: expected columns {list(columns)}, "
                         f"got {list(frame.columns)}")


def _ids(column: pd.Series) -> pd.Series:
    """Ids compared as strings, so a numeric id column matches the same ids read from a file."""
    return column.astype(str) if pd.api.types.is_numeric_dtype(column.dtype) else column


def _codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and the distinct ids they index; a categorical column's own codes are reused."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = column.cat.categories
        return column.cat.codes.to_numpy(), categories.astype(str) if categories.dtype.kind in "iufb" else categories
    codes, uniques = pd.factorize(_ids(column))
    return codes, pd.Index(uniques)


def _check_no_missing_ids(frame: pd.DataFrame, name: str) -> None:
    for column in ("query_id", "passage_id"):
        missing = np.flatnonzero(frame[column].isna().to_numpy())
        if len(missing):
            raise ValueError(f"{name} table, row {int(missing[0])}: {column} is missing")


def _judged_queries(qrels: pd.DataFrame, queries) -> tuple[tuple, np.ndarray]:
    """The evaluated query ids and each judgment's row among them (-1: query not evaluated)."""
    _check_no_missing_ids(qrels, "qrels")
    codes, uniques = pd.factorize(_ids(qrels["query_id"]))
    codes = codes.astype(np.int64)
    if queries is None:
        return tuple(np.asarray(uniques, dtype=object).tolist()), codes
    query_ids = tuple(queries)
    index = pd.Index(query_ids, dtype=object)
    if index.has_duplicates:
        raise ValueError(f"queries lists {index[index.duplicated()][0]!r} more than once")
    row_of_query = index.get_indexer(np.asarray(uniques, dtype=object))
    return query_ids, row_of_query[codes] if len(codes) else codes


def _labels(qrels: pd.DataFrame) -> np.ndarray:
    column = qrels["label"]
    numbers = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(np.isnan(numbers))
    if len(bad):
        row = int(bad[0])
        raise ValueError(f"qrels: query {qrels['query_id'].iloc[row]!r}, passage "
                         f"{qrels['passage_id'].iloc[row]!r}: label {column.iloc[row]!r} is not a number")
    return numbers


def _check_unique_judgments(query_ids, rows: np.ndarray, passage_codes: np.ndarray, passage_ids) -> None:
    keys = rows * max(len(passage_ids), 1) + passage_codes
    duplicated = pd.Series(keys).duplicated().to_numpy()
    if duplicated.any():
        entry = int(np.flatnonzero(duplicated)[0])
        raise ValueError(f"qrels of query {query_ids[rows[entry]]!r} judge passage "
                         f"{passage_ids[passage_codes[entry]]!r} more than once")


def _run_codes(run: pd.DataFrame, query_ids: tuple) -> tuple[np.ndarray, np.ndarray, pd.Index, np.ndarray]:
    """The run's rows of evaluated queries grouped by query row: (row, passage code, passage ids, score).

    Passage codes index the passage ids in first-seen order, not sorted: ties are rare and are
    resolved on the id strings themselves.
    """
    _check_no_missing_ids(run, "run")
    query_codes, run_queries = _codes(run["query_id"])
    passage_codes, passage_ids = _codes(run["passage_id"])
    scores = run["score"].to_numpy(dtype=np.float64)
    row_of_query = pd.Index(query_ids, dtype=object).get_indexer(np.asarray(run_queries, dtype=object))
    rows = row_of_query[query_codes] if len(query_codes) else np.empty(0, dtype=np.int64)
    evaluated = rows >= 0
    if not evaluated.all():
        rows, passage_codes, scores = rows[evaluated], passage_codes[evaluated], scores[evaluated]
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        raise ValueError(f"run: query {query_ids[rows[bad[0]]]!r} has a score that is not finite: {scores[bad[0]]}")
    if len(rows) and (rows[1:] < rows[:-1]).any():
        order = np.argsort(rows, kind="stable")  # fast on runs already grouped by query
        rows, passage_codes, scores = rows[order], passage_codes[order], scores[order]
    return rows, passage_codes, passage_ids, scores


def _check_unique_passages(query_ids, code_matrix: np.ndarray) -> None:
    ordered = np.sort(code_matrix, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    rows = np.flatnonzero(repeated.any(axis=1))
    if len(rows):
        raise ValueError(f"ranking of query {query_ids[int(rows[0])]!r} lists a passage id more than once")


def _locate(code_matrix: np.ndarray, rows: np.ndarray, codes: np.ndarray, entries: np.ndarray):
    """The entries whose passage is in their query's ranking, and the column it sits in."""
    found = np.zeros(len(rows), dtype=bool)
    columns = np.zeros(len(rows), dtype=np.int64)
    chunk = max(1, 2**22 // max(code_matrix.shape[1], 1))
    for start in range(0, len(rows), chunk):
        equal = code_matrix[rows[start:start + chunk]] == codes[start:start + chunk, None]
        found[start:start + chunk] = equal.any(axis=1)
        columns[start:start + chunk] = equal.argmax(axis=1)
    return entries[found], columns[found]


def _strings(ids: pd.Index, codes: np.ndarray) -> np.ndarray:
    """The ids at ``codes`` as Python strings: their ``<`` is code point order, i.e. strcmp on UTF-8."""
    return np.asarray(ids.take(codes), dtype=object)
