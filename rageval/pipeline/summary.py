"""What a run file holds, as one JSON-able object: ``rageval info RUN --json`` and the dashboard's "what this run
lacks" read the same :func:`run_summary`.

Top-level keys (a missing piece is an empty object, never an absent key): ``queries`` (count); ``labels`` (label
method -> labelled (query, passage) pairs); ``e2e`` (k -> answer metric -> mean); ``reteval`` (k -> judge ->
{"yes": n, "no": n}, against the semi-gold answers); ``failures`` (k -> category A-F -> count, over judges);
for a run imported from traces, ``system_answers`` (answers, scored, the metric's mean over each query's own
answer, where they came from);
``attribution`` (statements, pairs, answers, metric means) for an attributed-answer run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rageval.labelmethods import CONTAINS_ANSWER, DEFAULT_JUDGES, LLM_RELEVANCE, display_name, judges
from rageval.store import RunReader
from rageval.store.files import ATTRIBUTION, RUN, kind_of, reading, remembered_summary
from rageval.store.provenance import answers_are_brought, brought

#: The pieces a complete eRAG run holds, in the order the dashboard lists them.
PIECES = ("erag", "e2e", "baselines", "reteval")
BASELINE_METHODS = (CONTAINS_ANSWER, LLM_RELEVANCE)


def _empty() -> dict[str, Any]:
    return {"queries": 0, "labels": {}, "e2e": {}, "reteval": {}, "failures": {}, "attribution": {}}


def run_summary(path: str | os.PathLike) -> dict[str, Any]:
    """See the module docstring. Raises :class:`~rageval.errors.StoreError` for a file that is no rageval run.
    A run's summary is remembered per version of the file (:func:`rageval.store.files.remembered_summary`)."""
    path = Path(path)
    if path.is_file() and kind_of(path) is ATTRIBUTION:
        from rageval.store.attribution import attribution_summary

        summary = _empty()
        summary["attribution"] = attribution_summary(path)
        summary["queries"] = summary["attribution"].get("queries", summary["attribution"].get("answers", 0))
        return summary
    return remembered_summary(path, "run_summary:2", lambda: _run_summary(path))


def _run_summary(path: Path) -> dict[str, Any]:
    summary = _empty()
    with RunReader(path) as reader, reading(path, RUN):
        summary["queries"] = reader.query_count()
        summary["labels"] = reader.label_counts()
        settings = reader.settings()
        metric = settings.get("e2e_metric") or settings.get("label_metric") or "em"
        for k, mean, n in reader.e2e_means():
            summary["e2e"][str(k)] = {metric: mean, "n": n}
        if reader.answers_are_imported():  # each query's own answer, at the length of its own list
            mean, scored, answers = reader.own_answer_mean()
            summary["system_answers"] = {"answers": answers, "scored": scored, metric: mean,
                                         "source": brought(settings).by}
        for k, judge, yes, total in reader.semi_gold_verdict_counts():
            summary["reteval"].setdefault(str(k), {})[judge] = {"yes": int(yes), "no": int(total - yes)}
        for k, category, count in reader.failure_case_counts():
            summary["failures"].setdefault(str(k), {})[category] = count
    return summary


def is_imported(settings: dict[str, Any]) -> bool:
    """Whether a run was imported from traces (:mod:`rageval.traces.importer`): its end-to-end answers are the
    team's system's, at the k it used, and are never generated again."""
    return settings.get("e2e_answers") == "imported"


def wanted_judges(settings: dict[str, Any]) -> tuple[str, ...]:
    """The LLM judges beyond the default ones (:data:`rageval.labelmethods.DEFAULT_JUDGES`) the run's configuration
    asks for (``<judge> = true``, e.g. the graded 0-3 one), so a run without their labels lacks them."""
    config = settings.get("config")
    if not isinstance(config, dict):
        return ()
    return tuple(kind.name for kind in judges() if kind.name not in DEFAULT_JUDGES and config.get(kind.name) is True)


def missing_pieces(summary: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, str]:
    """Piece -> what is missing, in words ("missing", "k=5 only"), for the pieces of :data:`PIECES` a run lacks.
    A piece that is complete is absent from the result.

    A run imported from traces (:func:`is_imported`) never lacks ``e2e`` (its answers are the system's); when
    none of its questions has gold answers it can lack only what needs none (``baselines``: the LLM's relevance
    labels; when some have, :func:`rageval.pipeline.run.complete_run_file` labels the others with those only),
    and it lacks ``reteval`` only when it has qrels (LLM-retEval needs gold passages)."""
    settings = settings or {}
    labels = summary["labels"]
    if is_imported(settings):
        imported = settings.get("imported") or {}
        lacking: dict[str, str] = {} if any(m in labels for m in BASELINE_METHODS) else {"baselines": "missing"}
        if not imported.get("gold_answers", 0):
            return lacking
        if not any(m.startswith("erag:") for m in labels):
            lacking = {"erag": "missing", **lacking}
        if imported.get("qrels_labels") and not summary["reteval"]:
            lacking["reteval"] = "missing"
        return lacking
    lacking = {}
    if not any(m.startswith("erag:") for m in labels):
        lacking["erag"] = "missing"
    wanted_ks = sorted({int(k) for k in settings.get("cutoffs", [])} | {1, 5, 10})
    depth = settings.get("k") or max(wanted_ks)
    wanted_ks = [k for k in wanted_ks if k <= depth] or [depth]
    have_ks = sorted(int(k) for k in summary["e2e"])
    if answers_are_brought(settings):
        pass  # the user's answers are the run's: E2E never lacks (none is generated)
    elif not have_ks:
        lacking["e2e"] = "missing"
    elif set(wanted_ks) - set(have_ks):
        lacking["e2e"] = f"k={', '.join(map(str, have_ks))} only"
    if not any(m in labels for m in BASELINE_METHODS):
        lacking["baselines"] = "missing"
    elif missing := [name for name in wanted_judges(settings) if name not in labels]:
        lacking["baselines"] = f"{display_name(missing[0])} labels missing"
    if not summary["reteval"]:
        lacking["reteval"] = "missing"
    return lacking
