"""Your own (evidence, claim) pairs: scored by any checker, or a checker evaluated on your labelled pairs (issue 17;
``rageval nli-score`` and ``rageval nli-eval``, formats in docs/checkers.md).

A pairs file is JSON Lines, one object a line with a non-empty string ``premise`` (the evidence) and
``hypothesis`` (the claim); every other field is kept as it is. :func:`score_pairs_file` writes each row back, in
order, with ``p_supported`` (the checker's probability), ``supported`` (``p_supported >= threshold``) and
``checker`` (its id, which names its threshold). The output is written to ``OUT.partial`` batch by batch and
renamed to ``OUT`` when every row is scored, so ``OUT`` is never half-written; ``resume=True`` keeps the rows an
interrupted run left in ``OUT.partial`` (each checked against the input row and the checker id) and scores the rest.

A labelled file adds a label field (default ``label``): entailment / supported / true / 1 are *supported*;
neutral / contradiction / not_entailment / refuted / false / 0 are not (any case; JSON true/false and 0/1 too).
:func:`evaluate_pairs_file` scores it and gives :class:`~rageval.attribution.nli_eval.CheckerEvaluation` per
source (an optional field) and overall, at pair level and, with a claim-id field, at claim level (a claim is
supported when any of its rows is; its p is the max over its rows).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rageval.attribution.nli import EntailmentModel, checker_threshold
from rageval.attribution.nli_eval import DEFAULT_RESAMPLES, CheckerEvaluation, evaluate_checker_scores
from rageval.errors import DataError, RagevalError, not_utf8_message

Progress = Callable[[int, int], None]
SUPPORTED_LABELS = ("entailment", "entailed", "entails", "supported", "supports", "true", "yes", "1")
UNSUPPORTED_LABELS = ("neutral", "contradiction", "not_entailment", "non_entailment", "refuted", "refutes",
                      "unsupported", "not_supported", "false", "no", "0")
OUTPUT_FIELDS = ("p_supported", "supported", "checker")
DEFAULT_BATCH = 32
ALL_SOURCES = "all"


@dataclass(frozen=True)
class PairRow:
    """One line of a pairs file: its 1-based ``line``, the whole JSON object, and its premise and hypothesis."""

    line: int
    record: dict
    premise: str
    hypothesis: str


@dataclass(frozen=True)
class LabelledPair:
    """A labelled pair: ``label`` 1 (supported) or 0, its claim id and source ('' when the file has none)."""

    row: PairRow
    label: int
    claim: str
    source: str


def read_json_lines(path: str | Path) -> list[tuple[int, dict]]:
    """The JSON objects of a JSON Lines file with their 1-based line numbers (blank lines skipped); a
    :class:`DataError` names the file and line of anything else."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "no such file" if not path.exists() else "not a file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(path, not_utf8_message(data, error.start),
                        line=data.count(b"\n", 0, error.start) + 1) from None
    records = []
    for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(path, f"not valid JSON ({error.msg} at column {error.colno})", line=number) from None
        if not isinstance(record, dict):
            raise DataError(path, f"expected a JSON object, got {type(record).__name__}", line=number)
        records.append((number, record))
    if not records:
        raise DataError(path, "the file is empty: expected one JSON object a line")
    return records


def _text_field(path: Path, number: int, record: dict, field: str) -> str:
    value = record.get(field)
    if value is None:
        raise DataError(path, "missing: expected a non-empty string", line=number, field=field)
    if not isinstance(value, str):
        raise DataError(path, f"expected a non-empty string, got {type(value).__name__}", line=number, field=field)
    if not value.strip():
        raise DataError(path, "empty: expected a non-empty string", line=number, field=field)
    return value


def read_pairs(path: str | Path) -> list[PairRow]:
    """Every (premise, hypothesis) row of a pairs file, checked (module docstring)."""
    path = Path(path)
    return [PairRow(number, record, _text_field(path, number, record, "premise"),
                    _text_field(path, number, record, "hypothesis")) for number, record in read_json_lines(path)]


def parse_label(value) -> int | None:
    """1 (supported), 0 (not) or None (not a label this reader knows)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str):
        word = value.strip().lower().replace("-", "_").replace(" ", "_")
        if word in SUPPORTED_LABELS:
            return 1
        if word in UNSUPPORTED_LABELS:
            return 0
    return None


def read_labelled_pairs(path: str | Path, label_field: str = "label", claim_field: str | None = None,
                        source_field: str | None = "source") -> list[LabelledPair]:
    """The rows of a labelled pairs file (module docstring). ``claim_field``: the claim id (required on every row
    when given); ``source_field``: optional on each row (rows without it are source '')."""
    path = Path(path)
    rows = []
    for row in read_pairs(path):
        if label_field not in row.record:
            raise DataError(path, "missing: expected a label (entailment/supported/true/1 or neutral/contradiction/"
                                  "not_entailment/refuted/false/0)", line=row.line, field=label_field)
        label = parse_label(row.record[label_field])
        if label is None:
            raise DataError(path, f"{row.record[label_field]!r}: expected entailment/supported/true/1 or neutral/"
                                  "contradiction/not_entailment/refuted/false/0", line=row.line, field=label_field)
        claim = ""
        if claim_field:
            value = row.record.get(claim_field)
            if value is None or isinstance(value, (dict, list)) or str(value).strip() == "":
                raise DataError(path, "expected a claim id (a string or number)", line=row.line, field=claim_field)
            claim = str(value)
        source = row.record.get(source_field) if source_field else None
        if source is not None and not isinstance(source, str):
            raise DataError(path, f"expected a string, got {type(source).__name__}", line=row.line,
                            field=source_field)
        rows.append(LabelledPair(row, label, claim, source or ""))
    return rows


def score_rows(rows: Sequence[PairRow], checker: EntailmentModel, batch_size: int = DEFAULT_BATCH,
               progress: Progress | None = None, done: int = 0, total: int | None = None) -> list[float]:
    """p(supported) of every row, ``batch_size`` rows a checker call; ``progress(done, total)`` after each.

    ``done`` rows were scored before these and ``total`` (default ``done + len(rows)``) is the whole job's count,
    so that several passes (a dev file, then the labelled file) report as one job with one ETA.
    """
    if batch_size < 1:
        raise RagevalError(f"batch size: expected at least 1, got {batch_size}")
    scores: list[float] = []
    total = done + len(rows) if total is None else total
    if progress is not None:
        progress(done, total)  # the checker is loaded: the clock of an ETA starts here
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        scores.extend(_probabilities(checker, [(r.premise, r.hypothesis) for r in batch]))
        if progress is not None:
            progress(done + start + len(batch), total)
    return scores


def _probabilities(checker: EntailmentModel, pairs: list[tuple[str, str]]) -> list[float]:
    import math

    values = [float(p) for p in checker.entailment_probabilities(pairs)]
    if len(values) != len(pairs) or not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in values):
        raise RagevalError(f"checker {checker.model_id}: expected {len(pairs)} probabilities in [0, 1], got "
                           f"{values[:5]}")
    return values


def scored_record(row: PairRow, probability: float, threshold: float, checker_id: str) -> dict:
    """The input row with the three output fields (replacing any of the same names)."""
    record = {k: v for k, v in row.record.items() if k not in OUTPUT_FIELDS}
    record.update(p_supported=probability, supported=probability >= threshold, checker=checker_id)
    return record


@dataclass(frozen=True)
class ScoreSummary:
    """What :func:`score_pairs_file` did: rows written, rows kept from a partial output, supported rows."""

    path: Path
    rows: int
    resumed: int
    supported: int
    checker: str
    threshold: float


def partial_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def _resumable(partial: Path, rows: Sequence[PairRow], checker_id: str) -> list[dict]:
    """The rows of an earlier partial output that match the input's first rows and this checker (a line cut off
    mid-write is dropped); a :class:`RagevalError` when it belongs to another input or checker."""
    kept: list[dict] = []
    with open(partial, encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if not line.endswith("\n"):
                break  # the last line of an interrupted write
            record = json.loads(line)
            if index >= len(rows) or record.get("premise") != rows[index].premise or \
                    record.get("hypothesis") != rows[index].hypothesis:
                raise RagevalError(f"{partial}: row {index + 1} is not row {index + 1} of the input; it belongs to "
                                   "another file (delete it, or run without --resume)")
            if record.get("checker") != checker_id:
                raise RagevalError(f"{partial}: scored by {record.get('checker')!r}, not {checker_id!r} (delete it, "
                                   "or run without --resume)")
            kept.append(record)
    return kept


def score_pairs_file(pairs_path: str | Path, out_path: str | Path,
                     checker: EntailmentModel | Callable[[], EntailmentModel], *, threshold: float | None = None,
                     batch_size: int = DEFAULT_BATCH, resume: bool = False,
                     progress: Progress | None = None) -> ScoreSummary:
    """Score every row of ``pairs_path`` into ``out_path`` (module docstring). ``checker``: a loaded checker or a
    function loading one (called after the input is read and checked). ``threshold``: the decision threshold
    (default: the checker's own)."""
    pairs_path, out_path = Path(pairs_path), Path(out_path)
    if out_path.resolve() == pairs_path.resolve():
        raise RagevalError(f"{out_path}: the output would overwrite the input; choose another --out")
    rows = read_pairs(pairs_path)
    model, cut, name = _resolve(checker, threshold)
    partial = partial_path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    kept = _resumable(partial, rows, name) if resume and partial.is_file() else []
    with open(partial, "w", encoding="utf-8") as handle:
        for record in kept:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()
        rest = rows[len(kept):]
        if progress is not None:
            progress(len(kept), len(rows))
        for start in range(0, len(rest), max(1, batch_size)):
            batch = rest[start:start + batch_size]
            scores = score_rows(batch, model, batch_size)
            handle.writelines(json.dumps(scored_record(row, p, cut, name), ensure_ascii=False) + "\n"
                              for row, p in zip(batch, scores))
            handle.flush()
            if progress is not None:
                progress(len(kept) + start + len(batch), len(rows))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, out_path)
    with open(out_path, encoding="utf-8") as handle:
        supported = sum(bool(json.loads(line)["supported"]) for line in handle)
    return ScoreSummary(out_path, len(rows), len(kept), supported, name, cut)


@dataclass(frozen=True)
class PairsEvaluation:
    """One evaluation of :func:`evaluate_pairs_file`: ``source`` (or :data:`ALL_SOURCES`) and its metrics."""

    source: str
    evaluation: CheckerEvaluation


@dataclass(frozen=True)
class PairsEvaluationResult:
    """Every evaluation of a labelled file by one checker at one threshold."""

    path: Path
    checker: str
    threshold: float
    evaluations: tuple[PairsEvaluation, ...]
    claim_field: str | None
    calibrated_on: Path | None = None  # the dev file the threshold was calibrated on, if any
    description: str = ""  # what the checker is (its class' first docstring line)


def evaluate_labelled(rows: Sequence[LabelledPair], probabilities: Sequence[float], threshold: float,
                      claims: bool, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> list[PairsEvaluation]:
    """Per source (when there are several) and overall, pair level then claim level (when ``claims``)."""
    sources = sorted({r.source for r in rows})
    groups = [(source, [i for i, r in enumerate(rows) if r.source == source]) for source in sources] \
        if len(sources) > 1 else []
    groups.append((ALL_SOURCES, list(range(len(rows)))))
    results = []
    for source, indices in groups:
        gold = [rows[i].label for i in indices]
        scores = [probabilities[i] for i in indices]
        results.append(PairsEvaluation(source or "(none)", evaluate_checker_scores(gold, scores, threshold,
                                                                                  resamples=resamples, seed=seed)))
        if claims:
            # A claim id is read within its source (the same id in two sources is two claims).
            ids = [f"{rows[i].source}\x1f{rows[i].claim}" for i in indices]
            results.append(PairsEvaluation(source or "(none)", evaluate_checker_scores(
                gold, scores, threshold, groups=ids, resamples=resamples, seed=seed)))
    return results


def evaluate_pairs_file(path: str | Path, checker: EntailmentModel | Callable[[], EntailmentModel], *,
                        label_field: str = "label", claim_field: str | None = None,
                        source_field: str | None = "source", threshold: float | None = None,
                        calibrate: str | Path | None = None, batch_size: int = DEFAULT_BATCH,
                        resamples: int = DEFAULT_RESAMPLES, progress: Progress | None = None) -> PairsEvaluationResult:
    """Score a labelled pairs file with ``checker`` and evaluate it (module docstring); the files are read and
    checked before a checker given as a loading function is loaded.

    ``calibrate``: a labelled dev file (same fields) scored first; the threshold is then the one maximising balanced
    accuracy on it (:func:`rageval.attribution.nli_eval.best_threshold`, at claim level when ``claim_field`` is
    given), instead of ``threshold`` or the checker's own.
    """
    from rageval.attribution.nli_eval import aggregate_claims, best_threshold

    if calibrate is not None and threshold is not None:
        raise RagevalError("give a threshold or a dev file to calibrate one on, not both")
    path = Path(path)
    rows = read_labelled_pairs(path, label_field, claim_field, source_field)
    dev = read_labelled_pairs(calibrate, label_field, claim_field, source_field) if calibrate is not None else []
    if calibrate is not None:
        model, _, _ = _resolve(checker, None)
        dev_scores = score_rows([r.row for r in dev], model, batch_size, progress, total=len(dev) + len(rows))
        gold = [r.label for r in dev]
        if claim_field:
            _, claim_gold, claim_scores = aggregate_claims(gold, dev_scores, [f"{r.source}\x1f{r.claim}" for r in dev])
            threshold = best_threshold(claim_gold, claim_scores)
        else:
            threshold = best_threshold(gold, dev_scores)
        checker = model
    model, cut, name = _resolve(checker, threshold)
    probabilities = score_rows([r.row for r in rows], model, batch_size, progress, done=len(dev))
    evaluations = evaluate_labelled(rows, probabilities, cut, claims=bool(claim_field), resamples=resamples)
    from rageval.attribution.checkers import checker_description

    return PairsEvaluationResult(path, name, cut, tuple(evaluations), claim_field,
                                 None if calibrate is None else Path(calibrate), checker_description(model))


def _resolve(checker, threshold: float | None) -> tuple[EntailmentModel, float, str]:  # checker: a model or a loader
    """(the checker, loaded if given as a loading function; the threshold used; the id naming it)."""
    from rageval.attribution.nli import checker_id

    model = checker if hasattr(checker, "entailment_probabilities") else checker()
    if threshold is None or float(threshold) == checker_threshold(model):
        return model, checker_threshold(model), model.model_id
    name = getattr(model, "name", model.model_id.rpartition("@")[0])
    return model, float(threshold), checker_id(name, float(threshold))


def pairs_report(result: PairsEvaluationResult, spec: str, description: str | None = None):
    """``result`` as a checker report (:mod:`rageval.attribution.checker_report`): one entry per evaluation,
    ``data`` the file name (and the source), ``protocol`` how the units were formed."""
    from rageval.attribution.checker_report import CheckerReport, ReportEntry

    description = result.description if description is None else description
    entries = []
    for item in result.evaluations:
        data = result.path.name if item.source == ALL_SOURCES else f"{result.path.name} [{item.source}]"
        protocol = ("pair: each row" if item.evaluation.level == "pair" else
                    f"claim: the max over the rows of each {result.claim_field} (supported if any row is)")
        entries.append(ReportEntry(result.checker, data, None, protocol, item.evaluation))
    if result.calibrated_on is not None:
        description = (description.rstrip(".") + "; " if description else "") + (
            f"threshold calibrated on {result.calibrated_on.name} (maximum balanced accuracy)")
    checkers = {result.checker: {"spec": spec, "threshold": result.threshold, "description": description}}
    return CheckerReport(checkers, tuple(entries))
