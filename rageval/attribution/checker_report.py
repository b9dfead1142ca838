"""The checker-evaluation report (``data/runs/nli/nli_test_report.json``, ``rageval nli-eval --json``): format,
writer, reader and its text table.

Format (version 2)::

    {"format": "rageval-nli-report", "version": 2,
     "checkers": {ID: {"spec": SPEC, "threshold": T, "description": TEXT}, ...},
     "evaluations": [{"checker": ID, "data": NAME, "split": SPLIT, "protocol": TEXT,
                      **CheckerEvaluation.as_dict()}, ...]}

``ID`` is a checker's ``model_id`` (it names the threshold); every evaluation names one of ``checkers``; the
metric fields are :meth:`rageval.attribution.nli_eval.CheckerEvaluation.as_dict`'s (level, n, positives,
threshold, accuracy, balanced_accuracy, f1, roc_auc, the two intervals, resamples).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rageval.attribution.nli_eval import CheckerEvaluation
from rageval.errors import DataError
from rageval.store.files import write_text_atomically

REPORT_FORMAT = "rageval-nli-report"
REPORT_VERSION = 2


@dataclass(frozen=True)
class ReportEntry:
    """One evaluation: which checker, on what data (``split``, ``protocol``: how the units were formed)."""

    checker: str
    data: str
    split: str | None
    protocol: str
    evaluation: CheckerEvaluation

    def as_dict(self) -> dict:
        return {"checker": self.checker, "data": self.data, "split": self.split, "protocol": self.protocol,
                **self.evaluation.as_dict()}


@dataclass(frozen=True)
class CheckerReport:
    """The checkers (id -> spec, threshold, description) and their evaluations."""

    checkers: dict[str, dict] = field(default_factory=dict)
    evaluations: tuple[ReportEntry, ...] = ()

    def as_dict(self) -> dict:
        return {"format": REPORT_FORMAT, "version": REPORT_VERSION, "checkers": self.checkers,
                "evaluations": [entry.as_dict() for entry in self.evaluations]}


def write_checker_report(path: str | Path, report: CheckerReport) -> Path:
    """Write ``report`` as JSON, atomically (a temporary file renamed over ``path``)."""
    path = Path(path)
    for entry in report.evaluations:
        if entry.checker not in report.checkers:
            raise ValueError(f"evaluation of {entry.checker!r}: not one of the report's checkers")
    return write_text_atomically(path, json.dumps(report.as_dict(), indent=1, ensure_ascii=False) + "\n")


def read_checker_report(path: str | Path) -> CheckerReport:
    """The report at ``path``; a :class:`DataError` naming the file (and the evaluation) when it is not one."""
    path = Path(path)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, "no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(path, f"not a rageval NLI report: not JSON ({error})") from None
    if not isinstance(stored, dict) or stored.get("format") != REPORT_FORMAT:
        raise DataError(path, f"not a rageval NLI report: expected \"format\": \"{REPORT_FORMAT}\" (written by "
                              "rageval nli-eval --json or rageval train-nli)")
    if stored.get("version") != REPORT_VERSION:
        raise DataError(path, f"report version {stored.get('version')!r}: this rageval reads version "
                              f"{REPORT_VERSION}")
    checkers = stored.get("checkers")
    evaluations = stored.get("evaluations")
    if not isinstance(checkers, dict) or not all(isinstance(v, dict) for v in checkers.values()):
        raise DataError(path, "expected \"checkers\": an object of checker id -> {spec, threshold, description}")
    if not isinstance(evaluations, list):
        raise DataError(path, "expected \"evaluations\": a list")
    entries = []
    for number, record in enumerate(evaluations, start=1):
        where = f"evaluation {number}"
        if not isinstance(record, dict):
            raise DataError(path, f"{where}: expected an object")
        if record.get("checker") not in checkers:
            raise DataError(path, f"{where}: checker {record.get('checker')!r} is not one of \"checkers\"")
        try:
            evaluation = CheckerEvaluation.from_dict(record)
        except (KeyError, TypeError, ValueError) as error:
            raise DataError(path, f"{where}: expected the metric fields of CheckerEvaluation ({error!r})") from None
        split = record.get("split")
        entries.append(ReportEntry(str(record["checker"]), str(record.get("data", "")),
                                   None if split is None else str(split), str(record.get("protocol", "")),
                                   evaluation))
    return CheckerReport(dict(checkers), tuple(entries))


def merge_reports(reports: Sequence[CheckerReport]) -> CheckerReport:
    """One report holding every checker and evaluation of ``reports`` (in order)."""
    checkers: dict[str, dict] = {}
    entries: list[ReportEntry] = []
    for report in reports:
        checkers.update(report.checkers)
        entries.extend(report.evaluations)
    return CheckerReport(checkers, tuple(entries))


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _interval(value: float | None, interval) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval is not None else "")


def evaluation_table(entries: Sequence[ReportEntry]) -> list[str]:
    """The text table of ``entries`` (one line each): data, level, n, positives, accuracy, balanced accuracy
    [95% interval], F1, ROC-AUC [95% interval]."""
    header = ("data", "level", "n", "pos", "accuracy", "balanced accuracy [95% CI]", "F1", "ROC-AUC [95% CI]")
    rows = [(e.data, e.evaluation.level, str(e.evaluation.n), str(e.evaluation.positives),
             _number(e.evaluation.accuracy),
             _interval(e.evaluation.balanced_accuracy, e.evaluation.balanced_accuracy_interval),
             _number(e.evaluation.f1), _interval(e.evaluation.roc_auc, e.evaluation.roc_auc_interval))
            for e in entries]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
            .rstrip() for row in (header, *rows)]
