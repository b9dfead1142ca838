"""Views of the Citations page's "Checker quality" section: one table per checker of its evaluations (pure; the
reports come from :mod:`ui.data_checkers`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rageval.attribution.checker_report import CheckerReport, ReportEntry
from ui import format as fmt

COLUMNS = ("Data", "Split", "Protocol", "Level", "n", "Positives", "Balanced accuracy", "ROC-AUC", "F1", "Threshold")
COLUMN_HELP = {
    "Balanced accuracy": "mean of the true-positive and true-negative rates at the threshold, with its 95% "
                         "percentile bootstrap interval over the units (pairs or claims)",
    "ROC-AUC": "probability that a supported unit scores above an unsupported one (ties count half), with its 95% "
               "bootstrap interval; – with one class only",
    "Level": "pair: each (evidence, claim) row; claim: a claim's rows as one unit (p = max, supported if any row is)",
    "Threshold": "p(supported) at or above which the checker decides supported",
}


def checker_name(checker_id: str) -> str:
    """A checker id without its threshold and the ``ours:`` prefix: what identifies the model (``ours:nli-x@0.5``
    and an older run's ``nli-x`` are the same checker)."""
    name = checker_id.rpartition("@")[0] if "@" in checker_id else checker_id
    return name.removeprefix("ours:")


def same_checker(a: str, b: str) -> bool:
    return bool(a) and bool(b) and (a == b or checker_name(a) == checker_name(b))


def evaluations_frame(entries: Sequence[ReportEntry]) -> pd.DataFrame:
    """One row per evaluation: data, split, protocol, level, n, positives, balanced accuracy [interval], ROC-AUC
    [interval], F1, threshold."""
    rows = []
    for entry in entries:
        e = entry.evaluation
        bacc_low, bacc_high = e.balanced_accuracy_interval or (None, None)
        auc_low, auc_high = e.roc_auc_interval or (None, None)
        rows.append({
            "Data": entry.data, "Split": entry.split or fmt.MISSING, "Protocol": entry.protocol or fmt.MISSING,
            "Level": e.level, "n": e.n, "Positives": e.positives,
            "Balanced accuracy": fmt.format_estimate(e.balanced_accuracy, bacc_low, bacc_high),
            "ROC-AUC": fmt.format_estimate(e.roc_auc, auc_low, auc_high), "F1": fmt.format_number(e.f1),
            "Threshold": f"{e.threshold:g}"})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def checker_sections(reports: Sequence[tuple[str, CheckerReport]]) -> list[dict[str, Any]]:
    """One section per checker (in the order first met): its id, spec, description, the files naming it and its
    evaluations' table."""
    sections: dict[str, dict[str, Any]] = {}
    for source, report in reports:
        for checker_id, about in report.checkers.items():
            section = sections.setdefault(checker_id, {"checker": checker_id, "spec": "", "description": "",
                                                       "files": [], "entries": []})
            section["spec"] = section["spec"] or str(about.get("spec") or "")
            section["description"] = section["description"] or str(about.get("description") or "")
            if source not in section["files"]:
                section["files"].append(source)
        for entry in report.evaluations:
            sections[entry.checker]["entries"].append(entry)
    return [{**s, "table": evaluations_frame(s["entries"])} for s in sections.values() if s["entries"]]


def run_checker_note(settings: Mapping[str, Any], sections: Sequence[Mapping[str, Any]]) -> str:
    """A sentence naming the checker that scored the selected run and whether a table above evaluates it."""
    run_checker = str(settings.get("nli") or "")
    if not run_checker:
        return "The selected run does not name the checker that scored it."
    threshold = settings.get("nli_threshold")
    at = f" (supported at p ≥ {float(threshold):g})" if isinstance(threshold, int | float) else ""
    matching = [s["checker"] for s in sections if same_checker(s["checker"], run_checker)]
    if matching:
        return (f"The selected run was scored by {run_checker}{at}: evaluated above as "
                f"{', '.join(matching)}.")
    return (f"The selected run was scored by {run_checker}{at}, which none of these reports evaluates "
            "(rageval nli-eval --checker ... --json <runs folder>/nli/NAME.json adds one).")
