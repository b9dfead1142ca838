"""TREC run and qrels files: the one reader (and writer) that measures, upload, the pipeline and export use.

A run line is ``query_id Q0 passage_id rank score tag``; a qrels line is ``query_id iteration passage_id
relevance``. The rules, the same for every line of every file and for every caller:

- Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``; a UTF-8 byte-order mark at the start is ignored; blank lines
  (nothing but spaces and tabs) are skipped but counted in line numbers. The text is UTF-8.
- Fields are separated by runs of spaces and tabs; leading and trailing ones are ignored. Any other character,
  other whitespace included, belongs to a field.
- Exactly 6 (run) or 4 (qrels) fields. With ``extra_fields="ignore"`` a line may carry more (some tools append
  a comment or a second score): they are dropped, on every line alike. Fewer fields are always an error.
- The score and the relevance are finite decimal numbers (``12``, ``-0.5``, ``1e-3``; not ``nan``, ``inf``,
  ``1_000`` or hex); the rank is an integer, read but not used (the ranking follows the scores, as trec_eval's
  does); Q0, iteration and tag are any field.
- Ids are kept as written (``"007"`` stays ``"007"``).
- A passage ranked twice for one query, or judged twice for one query, is an error naming both lines.

Every broken rule raises :class:`~rageval.errors.DataError` naming the file, the line and what was expected.
:func:`parse_trec_line` is the rule for one line; the upload checks lines with it one by one to report each
problem, and :func:`read_trec_run` / :func:`read_trec_qrels` read whole files fast: Arrow's CSV reader with the
file's one delimiter, then checks over the distinct values; a file with irregular spacing is read by Arrow
after its runs of blanks are collapsed; only when that fails too is the file read line by line in Python, which
finds the first broken line (or, with ``extra_fields="ignore"`` and lines of different widths, reads the file).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, NamedTuple

import numpy as np
import pandas as pd

from rageval.errors import DataError, not_utf8_message

ExtraFields = Literal["error", "ignore"]
EXTRA_FIELDS: tuple[str, ...] = ("error", "ignore")
RUN_COLUMNS = ("query_id", "passage_id", "score")
QRELS_COLUMNS = ("query_id", "passage_id", "label")


@dataclass(frozen=True)
class TrecLayout:
    """The fields of one kind of TREC line and which of them the reader keeps."""

    kind: str  # "run" or "qrels"
    fields: tuple[str, ...]  # in line order
    value_field: str  # the number of the line: score or relevance
    column: str  # the name of that number in the table read: score or label
    rank_field: str | None = None  # an integer field that is checked but not kept
    verb: str = "ranks"  # for the duplicate message: "query q ranks passage p twice"

    def expected(self, extra_fields: ExtraFields = "error") -> str:
        at_least = "at least " if extra_fields == "ignore" else ""
        return f"{at_least}{len(self.fields)} whitespace-separated fields '{' '.join(self.fields)}'"

    @property
    def columns(self) -> tuple[str, str, str]:
        return "query_id", "passage_id", self.column


RUN = TrecLayout("run", ("query_id", "Q0", "passage_id", "rank", "score", "tag"), "score", "score", "rank")
QRELS = TrecLayout("qrels", ("query_id", "iteration", "passage_id", "relevance"), "relevance", "label",
                   verb="judges")

_SEPARATORS = re.compile(r"[ \t]+")
#: What Arrow's CSV reader parses as a finite float64 (checked against it on every string of up to 4 characters
#: over the characters that matter); ``float()`` alone would also take ``1_000`` and non-ASCII digits.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_BOM = b"\xef\xbb\xbf"


class TrecLineError(ValueError):
    """A line that breaks the format; the message says what was expected (the caller names the file)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


class TrecLine(NamedTuple):
    """One line's fields (the layout's, extra ones dropped), its number (score or relevance) and its rank."""

    fields: tuple[str, ...]
    value: float
    rank: int | None


def parse_trec_line(text: str, layout: TrecLayout, extra_fields: ExtraFields = "error") -> TrecLine:
    """The fields of one non-blank line, checked; raises :class:`TrecLineError` saying what was expected."""
    fields = _SEPARATORS.split(text.strip(" \t"))
    wanted = len(layout.fields)
    if len(fields) < wanted or (len(fields) > wanted and extra_fields != "ignore"):
        raise TrecLineError(f"expected {layout.expected(extra_fields)}, found {len(fields)}")
    kept = tuple(fields[:wanted])
    rank = None
    if layout.rank_field is not None:
        rank_text = kept[layout.fields.index(layout.rank_field)]
        if not _INTEGER.fullmatch(rank_text):
            raise TrecLineError(f"field {layout.rank_field!r}: expected an integer, found {rank_text!r}")
        rank = int(rank_text)
    value_text = kept[layout.fields.index(layout.value_field)]
    value = float(value_text) if _NUMBER.fullmatch(value_text) else math.nan
    if not math.isfinite(value):
        raise TrecLineError(f"field {layout.value_field!r}: expected a finite number, found {value_text!r}")
    return TrecLine(kept, value, rank)


def trec_lines(data: bytes | BinaryIO) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of every non-blank line (1-based numbers, blank lines counted), decoded from UTF-8.

    Raises :class:`TrecLineError` with the line number at the first line that is not UTF-8.
    """
    handle = io.BytesIO(data) if isinstance(data, bytes) else data
    for number, raw in enumerate(_physical_lines(handle), start=1):
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        if not raw.strip(b" \t"):
            continue
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TrecLineError(not_utf8_message(raw, error.start), line=number) from None


def _physical_lines(handle: BinaryIO) -> Iterator[bytes]:
    """Lines without their ends, ending at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (as ``bytes.splitlines``)."""
    for raw in handle:
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if body.endswith(b"\r"):
            body = body[:-1]
        if b"\r" in body:
            yield from body.split(b"\r")
        else:
            yield body


# ----------------------------------------------------------------------------------------------
# Whole files
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrecTable:
    """A TREC file's kept fields as integer codes: line ``i`` (of the non-blank lines) has query
    ``query_ids[query_codes[i]]``, passage ``passage_ids[passage_codes[i]]`` and number ``values[i]``.

    Codes number the ids in first-seen order. The (query, passage) pairs are distinct.
    """

    layout: TrecLayout
    query_codes: np.ndarray
    query_ids: pd.Index
    passage_codes: np.ndarray
    passage_ids: pd.Index
    values: np.ndarray

    def frame(self) -> pd.DataFrame:
        """The table ``query_id, passage_id, score|label`` in file order, ids as categoricals of strings."""
        return pd.DataFrame({
            "query_id": pd.Categorical.from_codes(self.query_codes, categories=self.query_ids, validate=False),
            "passage_id": pd.Categorical.from_codes(self.passage_codes, categories=self.passage_ids,
                                                    validate=False),
            self.layout.column: self.values,
        })


def read_trec_run(path: str | os.PathLike, *, extra_fields: ExtraFields = "error") -> pd.DataFrame:
    """Read a TREC run file into a table ``query_id, passage_id, score``, in file order.

    Ids are categoricals of strings (a run repeats each id many times); the Q0, rank and tag fields are checked
    and dropped. See the module's rules; a broken one raises :class:`~rageval.errors.DataError` naming the file
    and line.
    """
    return read_trec_table(path, RUN, extra_fields).frame()


def read_trec_qrels(path: str | os.PathLike, *, extra_fields: ExtraFields = "error") -> pd.DataFrame:
    """Read a TREC qrels file into a table ``query_id, passage_id, label``, in file order.

    The iteration field is checked for presence and dropped; labels are floats, so fractional (eRAG) labels
    load too. See :func:`read_trec_run`.
    """
    return read_trec_table(path, QRELS, extra_fields).frame()


def read_trec_table(path: str | os.PathLike, layout: TrecLayout, extra_fields: ExtraFields = "error") -> TrecTable:
    """A TREC file of ``layout`` (:data:`RUN` or :data:`QRELS`) as a :class:`TrecTable`."""
    if extra_fields not in EXTRA_FIELDS:
        raise ValueError(f"extra_fields: expected one of {', '.join(EXTRA_FIELDS)}, got {extra_fields!r}")
    path = Path(path)
    table = _read_delimited(path, layout, extra_fields)
    if table is None:
        data = path.read_bytes()
        table = _read_normalised(data, layout, extra_fields)
        if table is None:
            table = _read_line_by_line(path, data, layout, extra_fields)
            del data
    _check_distinct_pairs(path, table)
    return table


def _read_delimited(source: Path | bytes, layout: TrecLayout, extra_fields: ExtraFields) -> TrecTable | None:
    """The file read by Arrow's CSV reader with its one delimiter, or None where that is not the file's reading.

    The delimiter (a tab if the first line holds tabs and no space, else a space) and, with extra fields
    ignored, the number of columns come from the first non-blank line. Arrow refuses a line with another number
    of columns, a score that is not a number or text that is not UTF-8; the checks here refuse an empty field
    (two delimiters in a row), a field holding the other blank, an infinite score and a rank that is not an
    integer. What is left is exactly what the line rules accept.

    Ids are read as dictionaries (each distinct id stored once). The fields that are only checked (Q0, tag,
    iteration) are first read as booleans that are true for the first line's values only, which costs almost
    nothing when, as usual, every line repeats them; the rank as plain text, checked on its bytes. A file where
    those fields vary is read again with them as dictionaries (hashing them cost a third of the read).
    """
    if importlib.util.find_spec("pyarrow") is None:  # a dependency; without it every file takes the slower paths
        return None
    if isinstance(source, bytes):
        head = source[:1 << 16]
    else:
        with open(source, "rb") as handle:
            head = handle.read(1 << 16)
    first = _first_line(head)
    if first is None:
        return None
    delimiter = b"\t" if b"\t" in first and b" " not in first else b" "
    first_fields = first.split(delimiter)
    wanted = len(layout.fields)
    if len(first_fields) < wanted or (len(first_fields) > wanted and extra_fields != "ignore"):
        return None
    names = list(layout.fields) + [f"extra {i}" for i in range(1, len(first_fields) - wanted + 1)]
    constant = [name for name in layout.fields if name not in ("query_id", "passage_id", layout.value_field,
                                                               layout.rank_field)]
    repeated = {first_fields[names.index(name)] for name in constant}
    if all(value and not _SEPARATORS.search(value.decode("utf-8", "replace")) for value in repeated):
        arrow = _arrow_csv(source, names, delimiter, layout, constant=constant,
                           true_values=[value.decode("utf-8", "replace") for value in repeated])
        if arrow is not None:
            table = _checked_table(arrow, layout, constant=constant)
            if table is not None:
                return table
    arrow = _arrow_csv(source, names, delimiter, layout)
    return None if arrow is None else _checked_table(arrow, layout)


def _arrow_csv(source: Path | bytes, names: list[str], delimiter: bytes, layout: TrecLayout,
               constant: list[str] | None = None, true_values: list[str] | None = None):
    """Arrow's reading of the file with ids as dictionaries; ``constant`` fields as booleans true for
    ``true_values`` only and the rank as text, or else every field but the number as a dictionary. None where
    Arrow refuses the file (a wrong number of fields, a value that is not a number or not one of
    ``true_values``, text that is not UTF-8)."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    strings = pa.dictionary(pa.int32(), pa.string())  # "007" stays a string
    types = dict.fromkeys(names, strings)
    types[layout.value_field] = pa.float64()
    if constant is not None:
        types.update(dict.fromkeys(constant, pa.bool_()))
        if layout.rank_field is not None:
            types[layout.rank_field] = pa.string()
    try:
        return pacsv.read_csv(
            pa.BufferReader(source) if isinstance(source, bytes) else str(source),
            read_options=pacsv.ReadOptions(column_names=names),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter.decode(), quote_char=False, escape_char=False, double_quote=False,
                newlines_in_values=False, ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=types, include_columns=names, null_values=[], strings_can_be_null=False,
                quoted_strings_can_be_null=False, true_values=true_values or ["\n"], false_values=["\n"],
            ),
        )
    except pa.ArrowInvalid:
        return None


def _checked_table(arrow, layout: TrecLayout, constant: list[str] | None = None) -> TrecTable | None:
    """The :class:`TrecTable` of an Arrow reading, or None if a field breaks a rule Arrow does not check."""
    import pyarrow as pa
    from pyarrow import compute as pc

    arrow = arrow.unify_dictionaries()
    values = _numpy(arrow.column(layout.value_field), np.float64)
    if not np.isfinite(values).all():
        return None
    rank_as_text = constant is not None and layout.rank_field is not None
    if rank_as_text and not _all_integers(arrow.column(layout.rank_field)):
        return None
    skipped = {layout.value_field, *(constant or ()), *([layout.rank_field] if rank_as_text else [])}
    checked = [name for name in layout.fields if name not in skipped]
    arrow = arrow.select(checked)  # the checked fields' memory goes back now
    distinct = {name: _dictionary(arrow.column(name), pa) for name in checked}
    for name, dictionary in distinct.items():
        if len(dictionary) and pc.any(pc.match_substring_regex(dictionary, "^$|[ \t]")).as_py():
            return None
        if name == layout.rank_field and not pc.all(pc.match_substring_regex(dictionary, r"^[+-]?[0-9]+$")).as_py():
            return None
    arrow = arrow.select(["query_id", "passage_id"])
    query_codes = _numpy(arrow.column("query_id"), np.int32, indices=True)
    arrow = arrow.select(["passage_id"])
    passage_codes = _numpy(arrow.column("passage_id"), np.int32, indices=True)
    del arrow
    return TrecTable(layout, query_codes, _index(distinct["query_id"]), passage_codes,
                     _index(distinct["passage_id"]), values)


def _all_integers(column) -> bool:
    """Whether every value of an Arrow string column is ``[+-]?[0-9]+``, checked on its bytes at numpy speed."""
    for chunk in column.chunks:
        if not len(chunk):
            continue
        _, offsets_buffer, data_buffer = chunk.buffers()
        offsets = np.frombuffer(offsets_buffer, np.int32, count=len(chunk) + 1, offset=4 * chunk.offset)
        lengths = np.diff(offsets)
        if data_buffer is None or (lengths == 0).any():
            return False
        data = np.frombuffer(data_buffer, np.uint8)[offsets[0]:offsets[-1]]
        first = data[offsets[:-1] - offsets[0]]
        signed = (first == ord("+")) | (first == ord("-"))
        # Every byte that is not a digit must be a sign opening its value (and a sign alone is no number).
        if np.count_nonzero((data - ord("0")) > 9) != np.count_nonzero(signed) or (lengths[signed] < 2).any():
            return False
    return True


def _first_line(head: bytes) -> bytes | None:
    """The first non-blank line in the file's first bytes (it may be cut short: then Arrow refuses the file)."""
    for line in head.removeprefix(_BOM).splitlines():
        if line.strip(b" \t"):
            return line
    return None


def _numpy(column, dtype, indices: bool = False) -> np.ndarray:
    """A chunked Arrow column (or its dictionary indices) as one numpy array."""
    chunks = [(chunk.indices if indices else chunk).to_numpy(zero_copy_only=False) for chunk in column.chunks]
    return np.concatenate(chunks).astype(dtype, copy=False) if chunks else np.empty(0, dtype)


def _dictionary(column, pa):
    """The distinct values of a dictionary column whose chunks share one dictionary (after unifying)."""
    return column.chunk(0).dictionary if column.num_chunks else pa.array([], pa.string())


def _index(dictionary) -> pd.Index:
    return pd.Index(dictionary.to_pandas(), dtype="str", copy=False)


def _read_normalised(data: bytes, layout: TrecLayout, extra_fields: ExtraFields) -> TrecTable | None:
    """The file with its blanks made regular (tabs and runs of blanks as one space, none at line ends) read as
    in :func:`_read_delimited`: the same records, since only separators change. None where that fails too."""
    regular = data.removeprefix(_BOM).replace(b"\t", b" ")
    while b"  " in regular:
        regular = regular.replace(b"  ", b" ")
    for end in (b"\n", b"\r"):
        regular = regular.replace(b" " + end, end).replace(end + b" ", end)
    return _read_delimited(regular.removeprefix(b" ").removesuffix(b" "), layout, extra_fields)


def _read_line_by_line(path: Path, data: bytes, layout: TrecLayout, extra_fields: ExtraFields) -> TrecTable:
    """Every line checked with :func:`parse_trec_line`: the first broken one raises :class:`DataError`."""
    query_ids: list[str] = []
    passage_ids: list[str] = []
    values: list[float] = []
    query_index = layout.fields.index("query_id")
    passage_index = layout.fields.index("passage_id")
    try:
        for number, text in trec_lines(data):
            try:
                line = parse_trec_line(text, layout, extra_fields)
            except TrecLineError as error:
                raise DataError(path, error.message, line=number) from None
            query_ids.append(line.fields[query_index])
            passage_ids.append(line.fields[passage_index])
            values.append(line.value)
    except TrecLineError as error:
        raise DataError(path, error.message, line=error.line) from None
    query_codes, query_uniques = pd.factorize(pd.Series(query_ids, dtype="str"))
    passage_codes, passage_uniques = pd.factorize(pd.Series(passage_ids, dtype="str"))
    return TrecTable(layout, query_codes.astype(np.int32), pd.Index(query_uniques, dtype="str"),
                     passage_codes.astype(np.int32), pd.Index(passage_uniques, dtype="str"),
                     np.asarray(values, dtype=np.float64))


def _check_distinct_pairs(path: Path, table: TrecTable) -> None:
    """Raise :class:`DataError` at the first line that repeats an earlier line's (query, passage) pair."""
    repeat = first_repeated_pair(table.query_codes, table.passage_codes, len(table.passage_ids))
    if repeat is None:
        return
    first, second = _line_numbers(path, repeat)
    query = table.query_ids[table.query_codes[repeat[0]]]
    passage = table.passage_ids[table.passage_codes[repeat[0]]]
    raise DataError(path, repeated_pair_message(table.layout, query, passage, first), line=second)


def repeated_pair_message(layout: TrecLayout, query_id: str, passage_id: str, first_line: int) -> str:
    """What is said at the line that repeats an earlier (query, passage) pair."""
    return f"query {query_id!r} {layout.verb} passage {passage_id!r} twice (first on line {first_line})"


def first_repeated_pair(query_codes: np.ndarray, passage_codes: np.ndarray, n_passages: int
                        ) -> tuple[int, int] | None:
    """Positions ``(earlier, later)`` of the first repeated (query, passage) pair, by the later one; or None.

    The pairs are checked query by query as rows of a matrix sorted along each row (cheap when the lines come
    grouped by query, as they do in run files); only rows holding a repeat are searched for the first one.
    """
    if len(query_codes) < 2:
        return None
    grouped = bool((query_codes[1:] >= query_codes[:-1]).all())
    order = None if grouped else np.argsort(query_codes, kind="stable")
    rows = query_codes if order is None else query_codes[order]
    passages = passage_codes if order is None else passage_codes[order]
    lengths = np.bincount(rows)
    width = int(lengths.max())
    if len(lengths) * width <= 4 * len(rows) + 1024:
        matrix = np.sort(pad_rows(passages, lengths, width, fill=-1), axis=1)
        same = matrix[:, 1:] == matrix[:, :-1]
        if not same.any():
            return None
        if not (lengths == width).all():
            same &= matrix[:, 1:] >= 0  # padding cells equal each other
        suspect = np.flatnonzero(same.any(axis=1))
        if not len(suspect):
            return None
        candidates = np.flatnonzero(np.isin(query_codes, suspect))
    else:  # a few very long rows: no matrix, one hash of all pairs
        candidates = np.arange(len(query_codes))
    keys = pd.Series(query_codes[candidates].astype(np.int64) * max(n_passages, 1) + passage_codes[candidates])
    later = keys.duplicated(keep="first").to_numpy()
    if not later.any():
        return None
    position = int(np.flatnonzero(later)[0])
    earlier = int(np.flatnonzero((keys == keys.iloc[position]).to_numpy())[0])
    return int(candidates[earlier]), int(candidates[position])


def pad_rows(flat: np.ndarray, lengths: np.ndarray, width: int, fill: float = 0.0) -> np.ndarray:
    """Row ``i`` holds the ``lengths[i]`` values of row ``i`` from ``flat`` (grouped by row), then ``fill``, in a
    dtype that holds both (a query's values per row: the layout the measure kernels read).

    When every row is full the result is a view of ``flat``, which callers pass fresh.
    """
    if len(lengths) and width and (lengths == width).all():
        return flat.reshape(len(lengths), width)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    columns = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    matrix = np.full((len(lengths), width), fill, dtype=np.result_type(flat.dtype, np.min_scalar_type(fill)))
    matrix[rows, columns] = flat
    return matrix


def _line_numbers(path: Path, positions: Iterable[int]) -> list[int]:
    """The line numbers of the records at ``positions`` (0-based among the non-blank lines)."""
    wanted = sorted(set(positions))
    found: dict[int, int] = {}
    with open(path, "rb") as handle:
        for position, (number, _) in enumerate(trec_lines(handle)):
            if position in wanted:
                found[position] = number
                if len(found) == len(wanted):
                    break
    return [found[position] for position in positions]


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------


def write_trec_run(frame: pd.DataFrame, path: str | os.PathLike, tag: str = "rageval") -> Path:
    """Write a run table (``query_id, passage_id, score``) as a TREC run file and return its path.

    Queries keep their first-seen order; within a query lines go in trec_eval's order (score
    descending, then passage id descending) and the rank field counts from 1 in that order, so the
    file ranks exactly as the table does. Scores are written with ``repr`` precision and read back
    bit for bit. Ids and ``tag`` must be non-empty and free of whitespace, and scores finite.
    """
    require_columns(frame, RUN_COLUMNS, "run")
    check_no_missing_ids(frame, "run")
    if not tag or _SEPARATORS.search(tag) or any(c in tag for c in "\r\n"):
        raise ValueError(f"run tag {tag!r} must be non-empty and contain no whitespace")
    query_codes, query_ids = pd.factorize(string_ids(frame["query_id"]))
    passage_codes, passage_ids = id_codes(frame["passage_id"])
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
        "query_id": string_ids(frame["query_id"]).array.take(order),
        "Q0": "Q0",
        "passage_id": string_ids(frame["passage_id"]).array.take(order),
        "rank": ranks,
        "score": scores[order],
        "tag": tag,
    })
    return _write_lines(lines, path)


def write_trec_qrels(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a qrels table (``query_id, passage_id, label``) as a TREC qrels file (:func:`qrels_text`); return its
    path."""
    path = Path(path)
    path.write_text(qrels_text(frame), encoding="utf-8")
    return path


def qrels_text(frame: pd.DataFrame) -> str:
    """A qrels table (``query_id, passage_id, label``) as TREC qrels lines ``query_id 0 passage_id label`` (what
    trec_eval and pytrec_eval read), in the table's order. Integral labels are written as integers (as trec_eval
    requires), fractional labels with ``repr`` precision. Ids that could not be read back (empty, with whitespace)
    and labels that are not numbers are refused (``ValueError``).
    """
    require_columns(frame, QRELS_COLUMNS, "qrels")
    check_no_missing_ids(frame, "qrels")
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
    return lines.to_csv(None, sep=" ", header=False, index=False, quoting=csv.QUOTE_NONE, lineterminator="\n")


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


# ----------------------------------------------------------------------------------------------
# Tables of ids (shared with the columnar measures)
# ----------------------------------------------------------------------------------------------


def require_columns(frame: pd.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{name} table lacks column(s) {missing}: expected columns {list(columns)}, "
                         f"got {list(frame.columns)}")


def check_no_missing_ids(frame: pd.DataFrame, name: str) -> None:
    for column in ("query_id", "passage_id"):
        missing = np.flatnonzero(frame[column].isna().to_numpy())
        if len(missing):
            raise ValueError(f"{name} table, row {int(missing[0])}: {column} is missing")


def string_ids(column: pd.Series) -> pd.Series:
    """Ids compared as strings, so a numeric id column matches the same ids read from a file."""
    return column.astype(str) if pd.api.types.is_numeric_dtype(column.dtype) else column


def id_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and the distinct ids they index; a categorical column's own codes are reused."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = column.cat.categories
        return column.cat.codes.to_numpy(), categories.astype(str) if categories.dtype.kind in "iufb" else categories
    codes, uniques = pd.factorize(string_ids(column))
    return codes, pd.Index(uniques)
