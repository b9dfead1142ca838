"""An annotation queue's work out to the tools annotators use, and their labels back in: CSV, Label Studio and
Argilla (``rageval queue export N`` / ``queue import N FILE`` / ``queue adjudicate N --from FILE``).

Every format carries one unit per **assignment** (a queue item and the annotator it is assigned to), so whoever
labels a unit, the label is that annotator's, with the queue id and the item's position to find it again, and the
question and passage text an annotator reads (passage queues; statement queues carry their item ids).

- **csv**: a header ``queue, position, annotator, query_id, passage_id, question, title, passage, label, note``;
  ``label`` is filled in with ``1`` (useful), ``0`` (not useful), ``unsure`` or ``skipped``; an empty label is not
  decided yet and is left out.
- **label-studio**: the task list Label Studio imports (``[{"data": {...}}]``; the labelling config is
  :data:`LABEL_STUDIO_CONFIG`: a ``Choices`` control named ``label`` over the passage) and, back, the JSON export
  of its project (Label Studio's documented task format, https://labelstud.io/guide/task_format): each task's
  ``data`` as exported, its ``annotations`` each with ``result`` regions; the region of ``from_name`` ``label`` and
  ``type`` ``choices`` holds ``value.choices`` (``useful``, ``not useful``, ``unsure``). A cancelled (skipped)
  annotation is ``skipped``; of several annotations of a task, the last one counts (Label Studio lists them in the
  order they were made).
- **argilla**: records in the shape Argilla's ``dataset.records.to_json(path)`` writes (``Record.to_dict()`` in
  argilla's ``records/_resource.py``: ``id``, ``fields``, ``metadata``, ``suggestions``, ``responses``,
  ``vectors``, ``status`` (argilla 2.8), ``_server_id``), fields ``question`` and ``passage``, the queue, position
  and annotator in ``metadata``, for a dataset with a ``LabelQuestion`` named ``label`` (labels
  :data:`CHOICES`); back, the same shape: ``responses["label"]`` is a list of ``{"value": ..., "user_id": ...}``;
  a record with none is pending, and a record answered by more than one user is an error (each record is one
  annotator's).

Reading checks the whole file first and names the file and line of the first problem (the line where a JSON record
starts); a failed import writes nothing (:meth:`rageval.queues.QueueStore.save_labels`: one transaction).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import DataError, RagevalError

CSV, LABEL_STUDIO, ARGILLA = "csv", "label-studio", "argilla"
FORMATS = (CSV, LABEL_STUDIO, ARGILLA)
#: A decision's words in Label Studio and Argilla, and what they mean.
CHOICES: dict[str, int | str] = {"useful": 1, "not useful": 0, "unsure": "unsure"}
CSV_COLUMNS = ("queue", "position", "annotator", "query_id", "passage_id", "question", "title", "passage", "label",
               "note")
#: The labelling config of a Label Studio project for an exported queue (Settings -> Labeling Interface -> Code).
LABEL_STUDIO_CONFIG = """<View>
  <Header value="$question"/>
  <Text name="passage" value="$passage"/>
  <Choices name="label" toName="passage" choice="single" showInline="true" required="true">
    <Choice value="useful"/>
    <Choice value="not useful"/>
    <Choice value="unsure"/>
  </Choices>
  <TextArea name="note" toName="passage" placeholder="optional note" maxSubmissions="1"/>
</View>
"""


@dataclass(frozen=True)
class Decision:
    """One decision read from a file: the line it starts on, the queue item, the annotator, 1 / 0 / "unsure" /
    "skipped", and a note."""

    line: int
    position: int
    annotator: str
    label: int | str
    note: str = ""


@dataclass(frozen=True)
class QueueImport:
    """What an import wrote: ``decisions`` of queue ``queue_id`` into ``store``, per annotator."""

    queue_id: int
    store: Path
    decisions: int
    annotators: dict[str, int]


# --- export ---------------------------------------------------------------------------------------------------

def find_run_file(run: str, near: Path) -> Path | None:
    """The file of the run named ``run``: beside the annotation file ``near``, in the user's runs folder, or among
    the shipped runs (sub-folders included); None when none is found."""
    from rageval.paths import shipped_runs_dir, user_runs_dir

    for folder in (near.parent, user_runs_dir(), shipped_runs_dir()):
        if folder is None or not folder.is_dir():
            continue
        direct = folder / f"{run}.sqlite"
        if direct.is_file():
            return direct
        found = sorted(folder.rglob(f"{run}.sqlite"))
        if found:
            return found[0]
    return None


def assignment_rows(store_path: str | os.PathLike, queue_id: int, run_path: str | os.PathLike | None = None
                    ) -> list[dict[str, Any]]:
    """One row per assignment of queue ``queue_id`` (queue order, then annotator): queue, position, annotator,
    the item's columns, and for passage queues the question, the passage's title and text (from ``run_path``, else
    the run file :func:`find_run_file` finds; empty when none)."""
    from rageval.queues import QueueStore
    from rageval.store.annotations import ITEM_COLUMNS
    from rageval.store.runs import RunReader

    queues = QueueStore(store_path)
    queue = queues.queue(queue_id)
    items = queues.items(queue_id)
    assigned = queues.assignments(queue_id).merge(items, on="position", how="left")
    questions: dict[str, str] = {}
    passages: dict[str, Any] = {}
    path = Path(run_path) if run_path is not None else find_run_file(queue.run, Path(queues.path))
    if path is not None and queue.kind == "passage":
        with RunReader(path) as reader:
            questions = reader.question_texts(sorted(set(items["query_id"].astype(str))))
            passages = reader.passages(items["passage_id"].astype(str))
    rows = []
    for row in assigned.itertuples(index=False):
        entry: dict[str, Any] = {"queue": queue.id, "position": int(row.position), "annotator": str(row.annotator)}
        for column in ITEM_COLUMNS[queue.kind]:
            value = getattr(row, column)
            entry[column] = int(value) if column == "statement" else str(value)
        if queue.kind == "passage":
            passage = passages.get(str(row.passage_id))
            entry.update(question=questions.get(str(row.query_id), ""), title=passage.title if passage else "",
                         passage=passage.text if passage else "")
        rows.append(entry)
    return rows


def export_queue(store_path: str | os.PathLike, queue_id: int, fmt: str,
                 run_path: str | os.PathLike | None = None) -> str:
    """Queue ``queue_id``'s assignments in ``fmt`` (module docstring), as the text of one file."""
    from rageval.queues import QueueStore

    if fmt not in FORMATS:
        raise RagevalError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    rows = assignment_rows(store_path, queue_id, run_path)
    guidelines = QueueStore(store_path).queue(queue_id).guidelines
    if fmt == CSV:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(CSV_COLUMNS), extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({**dict.fromkeys(CSV_COLUMNS, ""), **row, "label": "", "note": ""})
        return out.getvalue()
    if fmt == LABEL_STUDIO:
        tasks = [{"data": {**row, "guidelines": guidelines}} for row in rows]
        return json.dumps(tasks, indent=1, ensure_ascii=False) + "\n"
    records = []
    for row in rows:
        fields = {"question": row.get("question", ""), "passage": (f"{row['title']}\n\n" if row.get("title") else "")
                  + str(row.get("passage", ""))}
        metadata = {k: v for k, v in row.items() if k not in ("question", "title", "passage")}
        records.append({"id": f"queue{row['queue']}-{row['position']}-{row['annotator']}", "fields": fields,
                        "metadata": metadata, "suggestions": {}, "responses": {}, "vectors": {}, "status": "pending",
                        "_server_id": None})
    return json.dumps(records, indent=1, ensure_ascii=False) + "\n"


# --- import ---------------------------------------------------------------------------------------------------

def json_records(path: Path) -> Iterator[tuple[int, Any]]:
    """The elements of the JSON array in ``path``, each with the line (1-based) where it starts."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise DataError(path, f"cannot read it ({error.strerror or error})") from error
    except UnicodeDecodeError as error:
        raise DataError(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from error
    decoder = json.JSONDecoder()
    index = _skip(text, 0)
    if index >= len(text) or text[index] != "[":
        raise DataError(path, "expected a JSON array of records ([...])", line=text.count("\n", 0, index) + 1)
    index = _skip(text, index + 1)
    if index < len(text) and text[index] == "]":
        return
    while True:
        line = text.count("\n", 0, index) + 1
        try:
            value, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError as error:
            raise DataError(path, f"not valid JSON ({error.msg})", line=error.lineno) from None
        yield line, value
        index = _skip(text, index)
        if index < len(text) and text[index] == ",":
            index = _skip(text, index + 1)
            continue
        if index < len(text) and text[index] == "]":
            return
        raise DataError(path, "expected ',' or ']' after a record", line=text.count("\n", 0, index) + 1)


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _decision_word(path: Path, line: int, value: Any, field: str) -> int | str:
    word = str(value).strip().lower()
    if word in CHOICES:
        return CHOICES[word]
    raise DataError(path, f"expected one of {', '.join(repr(c) for c in CHOICES)}, got {value!r}", line=line,
                    field=field)


def _where(path: Path, line: int, data: Any, keys: tuple[str, ...], field: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise DataError(path, f"expected an object, got {type(data).__name__}", line=line, field=field)
    missing = [k for k in keys if k not in data]
    if missing:
        raise DataError(path, f"lacks {', '.join(missing)}: not a unit exported by rageval queue export", line=line,
                        field=field)
    return data


def _position(path: Path, line: int, value: Any, field: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise DataError(path, f"expected the item's position (an integer), got {value!r}", line=line,
                        field=field) from None
    return number


def read_csv_decisions(path: Path) -> tuple[int | None, list[Decision]]:
    """The decisions of a filled-in CSV export (module docstring), and the queue it names (None: none)."""
    from rageval.store.annotations import SKIPPED, UNSURE

    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as error:
        raise DataError(path, f"cannot read it ({error.strerror or error})") from error
    decisions: list[Decision] = []
    queues: set[int] = set()
    with handle:
        reader = csv.DictReader(handle)
        try:
            header = [(name or "").strip() for name in (reader.fieldnames or [])]
            missing = [c for c in ("position", "annotator", "label") if c not in header]
            if missing:
                raise DataError(path, f"the header lacks {', '.join(missing)}; it has {', '.join(header) or 'nothing'}",
                                line=1)
            reader.fieldnames = header
            for row in reader:
                line = reader.line_num
                if None in row:
                    raise DataError(path, f"{len(header) + len(row[None])} fields, the header has {len(header)}",
                                    line=line)
                label = (row.get("label") or "").strip().lower()
                if not label:
                    continue  # not decided yet
                if label in ("1", "0"):
                    value: int | str = int(label)
                elif label in (UNSURE, SKIPPED):
                    value = label
                else:
                    raise DataError(path, f"expected 1, 0, {UNSURE} or {SKIPPED} (or empty: not decided), got "
                                          f"{row.get('label')!r}", line=line, field="label")
                if (row.get("queue") or "").strip():
                    queues.add(_position(path, line, row["queue"], "queue"))
                decisions.append(Decision(line, _position(path, line, row.get("position"), "position"),
                                          (row.get("annotator") or "").strip(), value,
                                          (row.get("note") or "").strip()))
        except UnicodeDecodeError as error:
            raise DataError(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from error
        except csv.Error as error:
            raise DataError(path, f"not valid CSV ({error})", line=reader.line_num) from error
    return _one_queue(path, queues), decisions


def read_label_studio_decisions(path: Path) -> tuple[int | None, list[Decision]]:
    """The decisions of a Label Studio JSON export of an exported queue (module docstring)."""
    from rageval.store.annotations import SKIPPED

    decisions: list[Decision] = []
    queues: set[int] = set()
    for line, task in json_records(path):
        if not isinstance(task, dict):
            raise DataError(path, f"expected a task object, got {type(task).__name__}", line=line)
        data = _where(path, line, task.get("data"), ("queue", "position", "annotator"), "data")
        queues.add(_position(path, line, data["queue"], "data.queue"))
        annotations = task.get("annotations") or []
        if not isinstance(annotations, list):
            raise DataError(path, "expected a list of annotations", line=line, field="annotations")
        chosen = None
        for annotation in annotations:
            if not isinstance(annotation, dict):
                raise DataError(path, "expected an annotation object", line=line, field="annotations")
            chosen = annotation  # the last one counts
        if chosen is None:
            continue  # not labelled yet
        if chosen.get("was_cancelled"):
            value: int | str = SKIPPED
            note = ""
        else:
            regions = chosen.get("result") or []
            choice = [r for r in regions if isinstance(r, dict) and r.get("from_name") == "label"
                      and r.get("type") == "choices"]
            if not choice:
                raise DataError(path, "the annotation has no 'label' choice (from_name 'label', type 'choices')",
                                line=line, field="annotations.result")
            picked = (choice[-1].get("value") or {}).get("choices") or []
            if len(picked) != 1:
                raise DataError(path, f"expected one choice, got {picked!r}", line=line,
                                field="annotations.result.value.choices")
            value = _decision_word(path, line, picked[0], "annotations.result.value.choices")
            notes = [r for r in regions if isinstance(r, dict) and r.get("from_name") == "note"]
            texts = (notes[-1].get("value") or {}).get("text") if notes else None
            note = " ".join(str(t) for t in texts) if isinstance(texts, list) else str(texts or "")
        decisions.append(Decision(line, _position(path, line, data["position"], "data.position"),
                                  str(data["annotator"]), value, note))
    return _one_queue(path, queues), decisions


def read_argilla_decisions(path: Path) -> tuple[int | None, list[Decision]]:
    """The decisions of an Argilla record export of an exported queue (module docstring)."""
    from rageval.store.annotations import SKIPPED

    decisions: list[Decision] = []
    queues: set[int] = set()
    for line, record in json_records(path):
        if not isinstance(record, dict):
            raise DataError(path, f"expected a record object, got {type(record).__name__}", line=line)
        metadata = _where(path, line, record.get("metadata"), ("queue", "position", "annotator"), "metadata")
        queues.add(_position(path, line, metadata["queue"], "metadata.queue"))
        responses = record.get("responses") or {}
        if not isinstance(responses, dict):
            raise DataError(path, "expected an object of responses by question", line=line, field="responses")
        answers = responses.get("label") or []
        if not isinstance(answers, list):
            raise DataError(path, "expected a list of responses", line=line, field="responses.label")
        answers = [a for a in answers if not (isinstance(a, dict) and a.get("status") == "draft")]
        if not answers:
            continue
        if len(answers) > 1:
            users = ", ".join(str(a.get("user_id")) for a in answers if isinstance(a, dict))
            raise DataError(path, f"{len(answers)} responses (users {users}): each record is one annotator's "
                                  f"({metadata['annotator']}), so one response is expected", line=line,
                            field="responses.label")
        answer = answers[0]
        if not isinstance(answer, dict) or "value" not in answer:
            raise DataError(path, "expected {\"value\": ..., \"user_id\": ...}", line=line, field="responses.label")
        value = SKIPPED if answer.get("status") == "discarded" else _decision_word(
            path, line, answer["value"], "responses.label.value")
        decisions.append(Decision(line, _position(path, line, metadata["position"], "metadata.position"),
                                  str(metadata["annotator"]), value))
    return _one_queue(path, queues), decisions


def _one_queue(path: Path, queues: set[int]) -> int | None:
    if len(queues) > 1:
        raise DataError(path, f"units of several queues ({', '.join(map(str, sorted(queues)))}): import one queue's "
                              "file at a time")
    return next(iter(queues), None)


READERS = {CSV: read_csv_decisions, LABEL_STUDIO: read_label_studio_decisions, ARGILLA: read_argilla_decisions}


def import_queue(store_path: str | os.PathLike, queue_id: int, label_file: str | os.PathLike, fmt: str) -> QueueImport:
    """Read ``label_file`` in ``fmt``, check every decision is of an item of queue ``queue_id`` assigned to its
    annotator (the file's line named otherwise), and save them all in one transaction."""
    from rageval.queues import QueueStore
    from rageval.store.annotations import normalise_annotator

    if fmt not in FORMATS:
        raise RagevalError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    path = Path(label_file)
    if not path.is_file():
        raise RagevalError(f"{path}: no such file")
    named, decisions = READERS[fmt](path)
    queues = QueueStore(store_path)
    queues.queue(queue_id)  # a ValueError naming the file when there is no such queue
    if named is not None and named != int(queue_id):
        raise DataError(path, f"the file is queue {named}'s, not queue {queue_id}'s")
    if not decisions:
        raise DataError(path, "no decision in the file (every unit is still to label)")
    assigned = set(zip(queues.assignments(queue_id)["position"].astype(int), queues.assignments(queue_id)["annotator"]))
    positions = set(queues.items(queue_id)["position"].astype(int))
    for d in decisions:
        if d.position not in positions:
            raise DataError(path, f"queue {queue_id} has no item {d.position}", line=d.line, field="position")
        if (d.position, normalise_annotator(d.annotator)) not in assigned:
            raise DataError(path, f"item {d.position} of queue {queue_id} is not assigned to {d.annotator!r}",
                            line=d.line, field="annotator")
    try:
        queues.save_labels(queue_id, [(d.position, d.annotator, d.label, d.note or f"imported from {path.name}")
                                      for d in decisions])
    except ValueError as error:
        raise RagevalError(f"{path}: {error}") from error
    counts: dict[str, int] = {}
    for d in decisions:
        name = normalise_annotator(d.annotator)
        counts[name] = counts.get(name, 0) + 1
    return QueueImport(int(queue_id), Path(queues.path), len(decisions), counts)


def read_adjudications(path: Path) -> list[tuple[int, int, int, str]]:
    """A CSV of adjudications: header ``position, label`` (1 or 0), optional ``note``; (line, position, label,
    note) per row."""
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as error:
        raise DataError(path, f"cannot read it ({error.strerror or error})") from error
    rows = []
    with handle:
        reader = csv.DictReader(handle)
        try:
            header = [(name or "").strip() for name in (reader.fieldnames or [])]
            missing = [c for c in ("position", "label") if c not in header]
            if missing:
                raise DataError(path, f"the header lacks {', '.join(missing)}; it has {', '.join(header) or 'nothing'}",
                                line=1)
            reader.fieldnames = header
            for row in reader:
                line = reader.line_num
                label = (row.get("label") or "").strip()
                if label not in ("1", "0"):
                    raise DataError(path, f"an adjudicated label is 1 or 0, got {row.get('label')!r}", line=line,
                                    field="label")
                rows.append((line, _position(path, line, row.get("position"), "position"), int(label),
                             (row.get("note") or "").strip()))
        except UnicodeDecodeError as error:
            raise DataError(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from error
        except csv.Error as error:
            raise DataError(path, f"not valid CSV ({error})", line=reader.line_num) from error
    return rows


def adjudicate_from_file(store_path: str | os.PathLike, queue_id: int, label_file: str | os.PathLike,
                         adjudicator: str) -> int:
    """Store the adjudications of a CSV (:func:`read_adjudications`) for queue ``queue_id`` in one transaction;
    a position the queue lacks is named with its line, and nothing is written."""
    from rageval.queues import QueueStore

    path = Path(label_file)
    if not path.is_file():
        raise RagevalError(f"{path}: no such file")
    rows = read_adjudications(path)
    if not rows:
        raise DataError(path, "no adjudication in the file")
    queues = QueueStore(store_path)
    positions = set(queues.items(queue_id)["position"].astype(int))
    for line, position, _, _ in rows:
        if position not in positions:
            raise DataError(path, f"queue {queue_id} has no item {position}", line=line, field="position")
    try:
        return queues.adjudicate_many(queue_id, [(p, v, n) for _, p, v, n in rows], adjudicator)
    except ValueError as error:
        raise RagevalError(f"{path}: {error}") from error


# --- drawing from the command line -----------------------------------------------------------------------------

def run_population(run_path: str | os.PathLike):
    """A run's retrieved passages (query_id, passage_id, rank) and its automatic labels (long format)."""
    from rageval.store.runs import RunReader
    from rageval.trust.report import ranked_items

    with RunReader(run_path) as reader:
        return ranked_items(reader.rankings()), reader.labels()


def create_run_queue(store_path: str | os.PathLike, run_path: str | os.PathLike, name: str, plan, overlap: int,
                     annotators: list[str], created_by: str, guidelines: str = "") -> int:
    """A passage queue over the run at ``run_path`` (:meth:`rageval.queues.QueueStore.create_queue`); its id."""
    from rageval.queues import QueueStore

    population, labels = run_population(run_path)
    try:
        return QueueStore(store_path).create_queue(name, Path(run_path).stem, "passage", population, labels, plan,
                                                   overlap, annotators, guidelines, created_by)
    except ValueError as error:
        raise RagevalError(str(error)) from error


@dataclass(frozen=True)
class DrawnSample:
    """A design drawn from the command line: ``what`` it is (``shared sample 2`` or ``queue 3``), how to bring
    its labels back (``import_hint``), and the CSV an annotator fills in."""

    what: str
    items: int
    csv_text: str
    import_hint: str


def draw_sample(store_path: str | os.PathLike, run_path: str | os.PathLike, size: int, plan: str = "uniform",
                by: str = "", seed: int = 0, created_by: str = "cli", annotator: str = "") -> DrawnSample:
    """``rageval annotations sample``: a design rageval stores. ``uniform``: the run's new shared sample (the one
    the Annotate page shows; its labels come back with ``rageval annotations import``); ``stratified`` by the
    label method ``by``: a queue of overlap 1 assigned to ``annotator`` (its labels come back with ``rageval queue
    import``). The CSV lists each item with what an annotator reads (question, title, passage) and an empty
    ``label`` column."""
    from rageval.annotations import AnnotationStore
    from rageval.queue_plans import STRATIFIED_PLAN, UNIFORM_PLAN, QueuePlan
    from rageval.store.annotations import normalise_annotator

    run = Path(run_path).stem
    if plan == UNIFORM_PLAN:
        population, _ = run_population(run_path)
        store = AnnotationStore(store_path)
        try:
            sample_id = store.create_sample(run, population, size, seed, created_by)
        except ValueError as error:
            raise RagevalError(str(error)) from error
        sample = store.latest_sample(run)
        assert sample is not None and sample.id == sample_id
        from rageval.store.runs import RunReader

        items = sample.items
        with RunReader(run_path) as reader:
            questions = reader.question_texts(sorted(set(items["query_id"].astype(str))))
            passages = reader.passages(items["passage_id"].astype(str))
        out = io.StringIO()
        columns = ["position", "query_id", "passage_id", "question", "title", "passage", "label", "note"]
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for position, q, p in zip(items["position"], items["query_id"].astype(str), items["passage_id"].astype(str)):
            passage = passages.get(p)
            writer.writerow({"position": int(position), "query_id": q, "passage_id": p,
                             "question": questions.get(q, ""), "title": passage.title if passage else "",
                             "passage": passage.text if passage else "", "label": "", "note": ""})
        return DrawnSample(f"shared sample {sample_id} of run {run} (uniform, seed {seed}, {len(items):,} passages)",
                           len(items), out.getvalue(),
                           f"rageval annotations import {run_path} FILLED.csv --annotator NAME")
    if plan != STRATIFIED_PLAN:
        raise RagevalError(f"--plan {plan}: expected uniform or stratified")
    name = normalise_annotator(annotator)
    if not name:
        raise RagevalError("a stratified sample is stored as a queue of one annotator: pass --annotator NAME")
    try:
        design = QueuePlan(STRATIFIED_PLAN, size, seed=seed, stratify_by=by)
    except ValueError as error:
        raise RagevalError(str(error)) from error
    queue_id = create_run_queue(store_path, run_path, f"sample by {by}", design, 1, [name], created_by)
    text = export_queue(store_path, queue_id, CSV, run_path)
    return DrawnSample(f"queue {queue_id} of run {run} ({design.describe()}, {size:,} passages, to {name})",
                       size, text, f"rageval queue import {queue_id} FILLED.csv --format csv")


def queue_status(store_path: str | os.PathLike, queue_id: int) -> dict[str, Any]:
    """A queue as plain data (``rageval queue status N``): its plan, size, overlap, annotators, progress per
    annotator, agreement, and how its items' labels stand under :data:`rageval.queues.QUEUE_LABEL_RULE`."""
    import math

    from rageval.queues import ADJUDICATED, MAJORITY, QUEUE_LABEL_RULE, TIE, QueueStore

    queues = QueueStore(store_path)
    try:
        queue = queues.queue(queue_id)
    except ValueError as error:
        raise RagevalError(str(error)) from error
    progress = queues.progress(queue_id)
    agreement = queues.agreement(queue_id)
    labels = queues.item_labels(queue_id)

    def clean(value: float) -> float | None:
        return None if not math.isfinite(value) else round(float(value), 4)

    return {"queue": queue.id, "name": queue.name, "run": queue.run, "kind": queue.kind,
            "plan": queue.plan.describe(), "items": queue.size, "population": queue.population,
            "overlap": queue.overlap, "annotators": list(queue.annotators),
            "progress": [{k: (int(v) if k != "annotator" else str(v)) for k, v in row.items()}
                         for row in progress.to_dict("records")],
            "totals": queues.queue_progress(queue_id),
            "agreement": {"fleiss_kappa": clean(agreement.fleiss), "fleiss_items": agreement.fleiss_items,
                          "krippendorff_alpha": clean(agreement.alpha), "alpha_items": agreement.alpha_items},
            "labels": {"rule": QUEUE_LABEL_RULE, "adjudicated": int((labels["basis"] == ADJUDICATED).sum()),
                       "majority": int((labels["basis"] == MAJORITY).sum()),
                       "unresolved": [int(p) for p in labels.loc[labels["basis"] == TIE, "position"]]}}
