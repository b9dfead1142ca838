"""Human passage labels made elsewhere (TREC assessors, Label Studio or Argilla exports) into the annotation file.

Two formats:

- **TREC qrels** (``query_id iteration passage_id relevance``, blank-separated; :func:`rageval.trec.read_trec_qrels`
  reads and checks it);
- **CSV** with a header naming ``query_id``, ``passage_id``, ``label`` and optionally ``annotator`` (other columns
  are ignored; a row with an empty label is not labelled yet and is left out, so the CSV of ``rageval annotations
  sample`` comes back as it is filled in).

A label is relevant (1) when it is at least ``relevant_from`` (default 1: TREC's graded 0-3 judgements count 1, 2
and 3 as relevant; pass 2 for "highly relevant" only), not relevant (0) otherwise; it must be an integer. Each
label becomes an ordinary row of :class:`rageval.annotations.AnnotationStore` (kind "passage", status
"labelled", the note "imported from FILE"), under the annotator of its CSV row or, where the file names none,
``annotator``. Every (query, passage) must be one the run retrieved. The file is checked whole before anything is
written, and the rows are written in one transaction: a failed import writes nothing.

Imported labels count for prediction-powered estimates only where they label the items of a random sample (the
run's shared sample, or a queue's stratified plan); otherwise they are a convenience sample
(:mod:`rageval.trust.report`).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from rageval.annotations import AnnotationStore, default_guideline, task_type
from rageval.errors import DataError, RagevalError
from rageval.store.annotations import normalise_annotator

FORMATS = ("qrels", "csv")
CSV_REQUIRED = ("query_id", "passage_id", "label")


@dataclass(frozen=True)
class ImportedLabel:
    """One label read from the file, with its line (1-based, the header is line 1 of a CSV)."""

    line: int
    query_id: str
    passage_id: str
    label: int
    annotator: str


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote: ``labels`` rows for ``run`` into ``store``, by annotator; relevant: how many are 1."""

    run: str
    store: Path
    labels: int
    relevant: int
    annotators: dict[str, int]


def format_of(path: Path, fmt: str | None) -> str:
    """``fmt`` if given, else ``csv`` for a ``.csv`` file and ``qrels`` otherwise."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise RagevalError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
        return fmt
    return "csv" if path.suffix.lower() == ".csv" else "qrels"


def _binary(path: Path, line: int, value: str, relevant_from: int, field: str) -> int:
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        raise DataError(path, f"expected an integer label (relevant from {relevant_from}), got {text!r}",
                        line=line, field=field) from None
    if not number.is_integer():
        raise DataError(path, f"expected an integer label (relevant from {relevant_from}), got {text!r}",
                        line=line, field=field)
    return int(number >= relevant_from)


def read_qrels_labels(path: Path, annotator: str | None, relevant_from: int = 1) -> list[ImportedLabel]:
    """The labels of a TREC qrels file (every line under ``annotator``)."""
    from rageval.trec import read_trec_qrels, trec_lines

    name = normalise_annotator(annotator or "")
    if not name:
        raise RagevalError(f"{path}: a qrels file names no annotator: pass --annotator NAME")
    frame = read_trec_qrels(path)
    with path.open("rb") as handle:
        numbers = [number for number, _ in trec_lines(handle)]  # the file's line of each record
    labels = []
    for line, query_id, passage_id, value in zip(numbers, frame["query_id"].astype(str),
                                                 frame["passage_id"].astype(str), frame["label"]):
        labels.append(ImportedLabel(line, query_id, passage_id,
                                    _binary(path, line, f"{value:g}", relevant_from, "relevance"), name))
    return labels


def read_csv_labels(path: Path, annotator: str | None, relevant_from: int = 1) -> list[ImportedLabel]:
    """The labels of a CSV file with a header (module docstring)."""
    default = normalise_annotator(annotator or "")
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as error:
        raise DataError(path, f"cannot read it ({error.strerror or error})") from error
    with handle:
        try:
            reader = csv.DictReader(handle)
            header = [(name or "").strip() for name in (reader.fieldnames or [])]
            if not header:
                raise DataError(path, "empty file: expected a header line with query_id, passage_id, label"
                                "[, annotator]", line=1)
            reader.fieldnames = header
            missing = [column for column in CSV_REQUIRED if column not in header]
            if missing:
                raise DataError(path, f"the header lacks {', '.join(missing)}; it has {', '.join(header)}", line=1)
            if "annotator" not in header and not default:
                raise DataError(path, "no annotator column and no --annotator NAME: say who labelled", line=1)
            labels = []
            for row in reader:
                line = reader.line_num
                if None in row:
                    raise DataError(path, f"{len(header) + len(row[None])} fields, the header has {len(header)}",
                                    line=line)
                values = {column: (row.get(column) or "").strip() for column in (*CSV_REQUIRED, "annotator")}
                if not values["label"]:
                    continue  # a blank line, or an item not labelled yet (a sample's CSV, rageval annotations sample)
                for column in ("query_id", "passage_id", "label"):
                    if not values[column]:
                        raise DataError(path, "empty", line=line, field=column)
                name = normalise_annotator(values["annotator"]) or default
                if not name:
                    raise DataError(path, "empty, and no --annotator NAME to use instead", line=line,
                                    field="annotator")
                labels.append(ImportedLabel(line, values["query_id"], values["passage_id"],
                                            _binary(path, line, values["label"], relevant_from, "label"), name))
        except UnicodeDecodeError as error:
            raise DataError(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from error
        except csv.Error as error:
            raise DataError(path, f"not valid CSV ({error})", line=reader.line_num) from error
    return labels


def import_labels(run_path: str | os.PathLike, label_file: str | os.PathLike, store: AnnotationStore,
                  annotator: str | None = None, fmt: str | None = None, relevant_from: int = 1) -> ImportResult:
    """Read ``label_file`` (module docstring), check every label names a passage the run retrieved for that
    query, and append them all to ``store`` in one transaction, under the run's name (its file name without
    ``.sqlite``, as the Annotate page saves them)."""
    from rageval.store.runs import RunReader

    path = Path(label_file)
    if not path.is_file():
        raise RagevalError(f"{path}: no such file")
    chosen = format_of(path, fmt)
    labels = (read_csv_labels if chosen == "csv" else read_qrels_labels)(path, annotator, relevant_from)
    if not labels:
        raise DataError(path, "no label in the file")
    with RunReader(run_path) as reader:
        retrieved = {q: set(r.passage_ids) for q, r in reader.rankings().items()}
        task = task_type(reader.settings())
    field = "relevance" if chosen == "qrels" else None
    for label in labels:
        if label.query_id not in retrieved:
            raise DataError(path, f"query {label.query_id!r} is not a query of the run {run_path}", line=label.line,
                            field=field or "query_id")
        if label.passage_id not in retrieved[label.query_id]:
            raise DataError(path, f"passage {label.passage_id!r} is not retrieved for query {label.query_id!r} in "
                                  f"the run {run_path}", line=label.line, field=field or "passage_id")
    run = Path(run_path).stem
    store.save_passage_labels(run, [(x.query_id, x.passage_id, x.label, x.annotator) for x in labels],
                              note=f"imported from {path.name}", guideline=default_guideline("passage", task))
    by_annotator: dict[str, int] = {}
    for label in labels:
        by_annotator[label.annotator] = by_annotator.get(label.annotator, 0) + 1
    return ImportResult(run, store.path, len(labels), sum(x.label for x in labels), by_annotator)
