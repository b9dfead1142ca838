"""Re-score a HAGRID attributed-answer run with any checker, without generating again (issue 17).

A run of :mod:`rageval.attribution.experiment` keeps everything scoring needs except HAGRID's references and gold
citations: the answers and their statements (text, raw sentence, citations, human labels), the passages each
(scenario, query) was given, by the numbers the answers cite. :func:`rescore_attribution_run` rebuilds every
:class:`~rageval.attribution.scoring.AnswerRecord` from the file (references and gold citations from the HAGRID
records, by :func:`~rageval.attribution.experiment.answer_targets`, the build's own rule), scores them with
:func:`~rageval.attribution.scoring.score_answers` and :func:`~rageval.attribution.scoring.human_agreement` as the
build does, and writes a new run: the entailment matrix, the per-statement verdicts, every answer metric and the
agreement table are the new checker's; the metrics that do not depend on the checker (statement and citation
counts, overlap, BLEU, ROUGE-L, BERTScore) must come out as stored, else nothing is written (a changed corpus or
HAGRID file would otherwise change them silently). Current scoring rules apply, e.g. ALCE precision's denominator
(a statement citing a number that names no input passage adds nothing to it).

Kept as built: the answers, statements and citations (GTR's citations were found by the build's reranker), the
input passages, queries, retrieval rankings, retrieval measures (Table 3, the reranker's included) and
sub-queries, and the settings except ``nli`` / ``nli_threshold`` (``command`` stays the build's command; ``plan``
the build's plan); ``rescored`` records the previous checker, the rescoring command, its seconds and date.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rageval.attribution.experiment import (
    CITING_SCENARIOS,
    GENERATED_SCENARIOS,
    GOLD_SCENARIO,
    answer_targets,
    citation_usability,
    hagrid_query_id,
)
from rageval.attribution.metrics import InputPassage
from rageval.attribution.scoring import AnswerRecord, ScoredAnswer, StatementRecord, human_agreement, score_answers
from rageval.errors import RagevalError, StoreError
from rageval.paths import DATA_DIR, REPO_ROOT

Log = Callable[[str], None]
#: What a rescoring keeps from the run it reads (settings ``rescored.kept``).
KEPT = ("answers, statements and their citations (GTR's citations were found by the build's reranker), input "
        "passages, queries, retrieval rankings, retrieval measures (Table 3, the reranker's systems included) and "
        "sub-queries are the build's; only the entailment matrix, the statement verdicts, the answer metrics and "
        "the human agreement are recomputed")
#: Per-answer metrics that do not depend on the checker: a rescoring must reproduce them (tolerance
#: :data:`UNCHANGED_TOLERANCE`, BERTScore's batched float32 encoder).
UNCHANGED_METRICS = ("statements", "invalid_citations", "uncited_statements", "overlap_p", "overlap_r", "bleu",
                     "rougeL_p", "rougeL_r", "rougeL_f", "bertscore_p", "bertscore_r", "bertscore_f")
UNCHANGED_TOLERANCE = 1e-5


def rescore_target(path: str | os.PathLike, out_path: str | os.PathLike | None) -> Path:
    """Where a rescoring of ``path`` writes: ``out_path`` when given (the shipped ``data/runs/`` file may be named
    there, to rebuild it), else ``path`` itself, unless it is a shipped run (the checkout's ``data/`` folder is
    read-only by default: :class:`RagevalError` asking for ``--out``)."""
    if out_path is not None:
        return Path(out_path)
    if Path(path).expanduser().resolve().is_relative_to(REPO_ROOT / "data"):
        raise RagevalError(f"{path}: a shipped run (data/ is read-only): name the file to write with --out (the same "
                           "path to rebuild the shipped run)")
    return Path(path)


def rescore_attribution_run(path: str | os.PathLike, checker, out_path: str | os.PathLike | None = None, *,
                            hagrid: Sequence | None = None, corpus=None, bert_scorer=None, data_dir: Path = DATA_DIR,
                            command: str = "", log: Log = print) -> Path:
    """Re-score the attribution run ``path`` with ``checker`` into ``out_path`` (default: :func:`rescore_target`),
    atomically; returns the path written (module docstring).

    ``checker``: an entailment model, or a function loading one (called once the run is read and checked).
    ``hagrid`` / ``corpus``: the HAGRID dev records and the rageval corpus the run was built from (default: read
    from ``data_dir``); ``bert_scorer``: the run's BERTScore model (default: :class:`rageval.bertscore.BertScorer`,
    refused when its id is not the one the run's settings name). A file that is not a HAGRID attribution run, or
    whose answers or metrics cannot be rebuilt, is one :class:`RagevalError` naming it.
    """
    from rageval.attribution.nli import checker_threshold
    from rageval.store.attribution import AttributionReader, AttributionRun, write_attribution_run

    started = time.perf_counter()
    path = Path(path)
    target = rescore_target(path, out_path)
    with AttributionReader(path) as reader:
        settings = reader.settings()
        _check_hagrid_run(path, settings)
        if hagrid is None:
            from rageval.data import HAGRID_FILE, read_hagrid

            hagrid = read_hagrid(Path(data_dir) / HAGRID_FILE)
        if corpus is None:
            from rageval.corpus import build_corpus

            corpus = build_corpus(Path(data_dir))
        tables = _read_tables(reader)
    records = {hagrid_query_id(r): r for r in hagrid}

    def canonical(passage_id: str) -> str:  # as AttributionResources.canonical
        return corpus.resolve(passage_id) if passage_id in corpus else passage_id

    answers = answer_records(path, tables, records, canonical)
    _check_usability(path, settings, answers)
    scorer = _bert_scorer(path, settings, bert_scorer)
    model = checker if hasattr(checker, "entailment_probabilities") else checker()
    generated = [a for a in answers if a.scenario != GOLD_SCENARIO]
    gold = [a for a in answers if a.scenario == GOLD_SCENARIO]
    log(f"re-scoring {len(generated)} generated and {len(gold)} gold answers of {path} with {model.model_id} "
        f"(was {settings.get('nli')})")
    # Two calls, as the build makes them: the generated answers with BERTScore, the gold answers without.
    by_key = {_key(s.answer): s for s in [*score_answers(generated, model, scorer), *score_answers(gold, model)]}
    scored = [by_key[_key(a)] for a in answers]  # the file's answer order
    _check_unchanged(path, tables["answer_metrics"], scored)
    log(f"scored ({time.perf_counter() - started:.0f} s)")

    rescored: dict[str, Any] = {
        "previous_nli": settings.get("nli"), "previous_nli_threshold": settings.get("nli_threshold"),
        "command": command, "seconds": round(time.perf_counter() - started, 1),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "kept": KEPT,
    }
    if "rescored" in settings:
        rescored["before"] = settings["rescored"]
    run = AttributionRun(
        settings={**settings, "nli": model.model_id, "nli_threshold": checker_threshold(model),
                  "rescored": rescored},
        queries=tables["queries"], scored=scored, retrieval_rankings=tables["retrieval_rankings"],
        retrieval_measures=tables["retrieval_measures"], subqueries=tables["subqueries"],
        agreement=human_agreement([s for s in scored if s.answer.scenario == GOLD_SCENARIO]))
    return write_attribution_run(run, target)


def _key(answer: AnswerRecord) -> tuple[str, str, str]:
    return answer.scenario, answer.query_id, answer.answer_id


def _check_hagrid_run(path: Path, settings: Mapping[str, Any]) -> None:
    if settings.get("kind") != "attribution" or settings.get("dataset") != "hagrid-dev":
        source = settings.get("source") or settings.get("dataset") or "unknown"
        raise RagevalError(f"{path}: not a HAGRID run of `rageval attribution` (source {source!r}): only those can "
                           "be re-scored (a run of your own answers: `rageval evaluate-citations` again with "
                           "--checker)")


def _read_tables(reader) -> dict[str, Any]:
    """The tables a rescoring reads, as plain values in the file's row order (rankings by rank)."""
    path = reader.path
    try:
        frames = {table: reader.frame(table) for table in (
            "queries", "input_passages", "answers", "statements", "answer_metrics", "retrieval_rankings",
            "retrieval_measures", "subqueries")}
        queries = [(row.query_id, row.text, tuple(json.loads(row.relevant_ids)))
                   for row in frames["queries"].itertuples(index=False)]
        statements: dict[tuple[str, str, str], list[tuple[int, StatementRecord]]] = {}
        for row in frames["statements"].itertuples(index=False):
            statements.setdefault((row.scenario, row.query_id, row.answer_id), []).append(
                (int(row.statement), StatementRecord(row.text, tuple(int(n) for n in json.loads(row.citations)),
                                                     row.raw, _label(row.human_attributable))))
        passages: dict[tuple[str, str], dict[int, InputPassage]] = {}
        for row in frames["input_passages"].sort_values("number", kind="stable").itertuples(index=False):
            passages.setdefault((row.scenario, row.query_id), {})[int(row.number)] = InputPassage(
                int(row.number), row.passage_id, row.title, row.text)
        ranked: dict[str, dict[str, list[tuple[int, str, float]]]] = {}
        for row in frames["retrieval_rankings"].itertuples(index=False):
            ranked.setdefault(row.system, {}).setdefault(row.query_id, []).append(
                (int(row.rank), row.passage_id, float(row.score)))
        positions: dict[str, list[tuple[int, str]]] = {}
        for row in frames["subqueries"].itertuples(index=False):
            positions.setdefault(row.query_id, []).append((int(row.position), row.text))
    except (TypeError, ValueError, AttributeError) as error:
        raise StoreError(f"{path}: not a complete attribution run file ({error})") from error
    rankings = {system: {qid: _in_order(path, f"ranking {system}/{qid}", rows, 1) for qid, rows in per_query.items()}
                for system, per_query in ranked.items()}
    subqueries = {qid: _in_order(path, f"sub-queries of {qid}", rows, 0) for qid, rows in positions.items()}
    return {"queries": queries, "answers": frames["answers"], "statements": statements, "passages": passages,
            "answer_metrics": frames["answer_metrics"], "retrieval_rankings": rankings,
            "retrieval_measures": frames["retrieval_measures"], "subqueries": subqueries}


def _in_order(path: Path, what: str, rows: list, first: int) -> list:
    """``rows`` (position, value...) by position, which must run ``first``, ``first + 1``, ... (the writer numbers
    them so: a gap would renumber them)."""
    rows = sorted(rows)
    if [row[0] for row in rows] != list(range(first, first + len(rows))):
        raise StoreError(f"{path}: {what}: positions {[row[0] for row in rows]} are not {first}, {first + 1}, ...")
    return [row[1:] if len(row) > 2 else row[1] for row in rows]


def _label(value) -> int | None:
    return None if value is None or value != value else int(value)  # NULL (read as None or NaN) -> None


def answer_records(path: Path, tables: Mapping[str, Any], records: Mapping[str, Any],
                   canonical: Callable[[str], str]) -> list[AnswerRecord]:
    """Every answer of the run as the build scored it: statements and passages from the file, gold citations and
    references from its HAGRID record (:func:`~rageval.attribution.experiment.answer_targets`)."""
    answers = []
    for row in tables["answers"].itertuples(index=False):
        key = (row.scenario, row.query_id, row.answer_id)
        if row.scenario not in GENERATED_SCENARIOS and row.scenario != GOLD_SCENARIO:
            raise RagevalError(f"{path}: answer {key}: unknown scenario {row.scenario!r} (expected one of "
                               f"{', '.join((*GENERATED_SCENARIOS, GOLD_SCENARIO))})")
        record = records.get(row.query_id)
        if record is None:
            raise RagevalError(f"{path}: answer {key}: query {row.query_id!r} is not in the HAGRID dev file")
        numbered = sorted(tables["statements"].get(key, []))
        if [index for index, _ in numbered] != list(range(len(numbered))):
            raise RagevalError(f"{path}: answer {key}: statements numbered {[i for i, _ in numbered]}, expected "
                               f"0..{len(numbered) - 1}")
        gold_citations, references = answer_targets(row.scenario, record, canonical)
        answers.append(AnswerRecord(row.scenario, row.query_id, row.answer_id, row.text,
                                    tuple(s for _, s in numbered), tables["passages"].get(key[:2], {}),
                                    gold_citations, references, _label(row.human_attributable),
                                    _label(row.human_informative), score_citations=row.scenario in CITING_SCENARIOS))
    return answers


def _check_usability(path: Path, settings: Mapping[str, Any], answers: Sequence[AnswerRecord]) -> None:
    """The rebuilt answers must count as the build counted them (statements, citations, valid citations)."""
    for scenario, stored in (settings.get("usability") or {}).items():
        rebuilt = citation_usability([a for a in answers if a.scenario == scenario])
        if rebuilt != stored:
            raise RagevalError(f"{path}: the answers of {scenario} rebuilt from the file count {rebuilt}, the build "
                               f"counted {stored}: the file does not hold the run it describes")


def _bert_scorer(path: Path, settings: Mapping[str, Any], given):
    """The run's BERTScore model (none when the run has none); the correctness metrics must not change."""
    wanted = settings.get("bertscore") or ""
    if not wanted:
        return None
    if given is None:
        from rageval.bertscore import BertScorer

        given = BertScorer()
    if given.model_id != wanted:
        raise RagevalError(f"{path}: built with BERTScore {wanted!r}, re-scoring would use {given.model_id!r}")
    return given


def _check_unchanged(path: Path, stored, scored: Sequence[ScoredAnswer]) -> None:
    """Every stored checker-independent metric (:data:`UNCHANGED_METRICS`) comes out again, else nothing is
    written: gold citations or references that differ from the build's would change them silently."""
    old = {(r.scenario, r.query_id, r.answer_id, r.metric): float(r.value)
           for r in stored[stored.metric.isin(UNCHANGED_METRICS)].itertuples(index=False)}
    for s in scored:
        key = _key(s.answer)
        for metric in UNCHANGED_METRICS:
            before, after = old.get((*key, metric)), s.metrics.get(metric)
            if before is None and after is None:
                continue
            if before is None or after is None or not math.isclose(before, after, rel_tol=UNCHANGED_TOLERANCE,
                                                                    abs_tol=UNCHANGED_TOLERANCE):
                raise RagevalError(f"{path}: answer {key}: {metric} was {before}, re-scoring gives {after} (it does "
                                   "not depend on the checker: the HAGRID file or corpus differ from the build's)")
