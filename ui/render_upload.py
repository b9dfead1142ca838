"""Pure helpers of the Upload page (``app_pages/10_Upload.py``): the file slots of each upload form, the problems
table, the summary of a converted run and a suggested run name. Nothing here creates widgets; the engine side
is :mod:`rageval.upload`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import pandas as pd

from rageval.upload.problems import MAX_UPLOAD_MIB, Problem, UploadResult
from ui.data_upload import FORMAT_DOC

FORM_NAMES = {"trec": "TREC run + qrels + queries + passages", "jsonl": "One JSONL with queries, passages and answers"}
#: The title of the page's expander that shows :data:`FORMAT_DOC` in full (the dashboard serves no repository files,
#: so the document opens on the page itself).
FORMAT_DOC_TITLE = f"The upload format ({FORMAT_DOC})"
PROBLEM_COLUMNS = ["Severity", "File", "Line", "Message"]
PROBLEM_HELP = {"Line": "The line of the file, from 1; – : a problem of the whole file",
                "Message": "What is wrong and what was expected; long messages wrap"}
#: Row height of the problems table, in pixels: above 4 rem (64 px) Streamlit 1.67 wraps a cell's text, so a long
#: message is read whole (three lines of the wide "Message" column) instead of cut off.
PROBLEM_ROW_HEIGHT = 72
#: The size limit in the words of Streamlit's upload boxes, which say "100MB per file" with MB = 2**20 bytes
#: (``server.maxUploadSize``): the page says "MB" too, and once that they are MiB.
LIMIT_TEXT = f"{MAX_UPLOAD_MIB} MB per file (the upload boxes' MB: 2^20 bytes, i.e. {MAX_UPLOAD_MIB} MiB)"


@dataclass(frozen=True)
class FileSlot:
    """One file of an upload form: its key in :data:`rageval.upload.convert.FORMS`, its label and help."""

    key: str
    label: str
    help: str
    required: bool = True


SLOTS: Mapping[str, tuple[FileSlot, ...]] = {
    "trec": (
        FileSlot("run", "TREC run file", "One line per ranked passage: query_id Q0 passage_id rank score tag. "
                                         "The ranking follows the scores, as trec_eval ranks."),
        FileSlot("qrels", "TREC qrels (optional)", "One line per judgment: query_id 0 passage_id relevance. Stored "
                                                   "as the label method 'qrels' and scored with every measure.",
                 required=False),
        FileSlot("queries", "Queries JSONL", 'One object per line: {"query_id": ..., "text": ..., "answers": [...], '
                                             '"gold_passage_ids": [...]}. Without a qrels file, the gold passages '
                                             "are the run's labels (method 'gold')."),
        FileSlot("passages", "Passages JSONL", 'One object per line: {"passage_id": ..., "title": ..., "text": ...}'),
    ),
    "jsonl": (
        FileSlot("jsonl", "Run JSONL", "One query per line with its text, gold answers, ranked passages (with "
                                       "labels and single-passage answers) and end-to-end answers; see "
                                       f"{FORMAT_DOC}."),
    ),
}


def missing_files(form: str, chosen: Mapping[str, Any]) -> list[str]:
    """Labels of the required files of ``form`` not chosen yet."""
    return [slot.label for slot in SLOTS[form] if slot.required and chosen.get(slot.key) is None]


def chosen_names(form: str, chosen: Mapping[str, Any]) -> str:
    """The names of the chosen files in slot order (``run.trec, gold.qrels``), or ``nothing yet``."""
    return ", ".join(chosen[slot.key].name for slot in SLOTS[form] if chosen.get(slot.key) is not None) or "nothing yet"


def upload_key(form: str, chosen: Mapping[str, Any], options: Sequence[str]) -> tuple:
    """What a validation is valid for: the form, each chosen file (name and upload id) and the run options.
    ``chosen`` maps a slot key to a Streamlit ``UploadedFile`` or None."""
    files = tuple((key, f.name, f.file_id) if f is not None else (key, None, None) for key, f in sorted(chosen.items()))
    return form, files, tuple(options)


def file_contents(chosen: Mapping[str, Any]) -> tuple[tuple[str, str, bytes], ...]:
    """The chosen files as ``(slot key, file name, bytes)``, the hashable input of ``data.load_upload``."""
    return tuple((key, f.name, f.getvalue()) for key, f in sorted(chosen.items()) if f is not None)


def problems_frame(problems: Sequence[Problem]) -> pd.DataFrame:
    """Problems as a table (errors first, then warnings, each in file order): Severity, File, Line, Message.
    ``Line`` is missing (shown "–" by ``render.render_table``) for a problem of a whole file. Shown with
    ``st.dataframe``, so the text is never HTML."""
    ordered = sorted(problems, key=lambda p: p.severity != "error")
    frame = pd.DataFrame([(p.severity, p.file, p.line, p.message) for p in ordered], columns=PROBLEM_COLUMNS)
    return frame.astype({"Line": "Int64"})


def result_summary(result: UploadResult) -> str:
    """One sentence on what the converted run holds (plain text, our own words and counts)."""
    if result.run is None:
        return f"{len(result.errors)} error(s), {len(result.warnings)} warning(s): nothing can be saved yet."
    run, settings = result.run, result.run.settings
    parts = [f"{len(run.queries):,} queries", f"{len(run.passages):,} passages",
             f"{sum(len(r.passages) for r in run.rankings):,} ranking rows"]
    methods = settings.get("label_methods") or []
    parts.append(f"labels: {', '.join(methods)}" if methods else "no labels")
    if run.e2e_outputs:
        parts.append(f"{len(run.e2e_outputs):,} end-to-end answers (k = {', '.join(map(str, settings['e2e_ks']))})")
    if run.doc_outputs:
        parts.append(f"{len(run.doc_outputs):,} single-passage answers")
    cutoffs = settings.get("cutoffs") or []
    if methods:
        parts.append(f"measures at k = {', '.join(map(str, cutoffs))}")
    return "Valid: " + "; ".join(parts) + f" ({len(result.warnings)} warning(s))."


def suggest_run_name(file_name: str | None) -> str:
    """A run name from an uploaded file's name (``my run.trec`` -> ``my_run``), valid for
    :func:`rageval.upload.save.check_run_name`; ``uploaded`` when nothing is left."""
    stem = PurePath(file_name or "").name.split(".")[0]
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]+", "_", stem).strip("._-")[:100]
    return cleaned or "uploaded"
