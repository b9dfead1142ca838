"""The good tiny file of each kind that the broken inputs are made from, written at a given path.

The run is ``tests/run_fixtures.build_small_run`` (6 NQ questions, 7 passages, three label methods) with a few
LLM-retEval facts added, so it shows on every page (the Failure-cases page included); the attribution run is
``tests/test_annotations.make_small_attribution_run`` (4 HAGRID queries, no model); the IUM run is
``tests/test_app_attribution_ium.hand_made_ium_result``.
"""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from collections.abc import Callable
from pathlib import Path

from rageval.store import (
    ANNOTATIONS,
    ATTRIBUTION,
    IUM,
    JOBS,
    LLM_CACHE,
    RUN,
    FailureCase,
    Run,
    SemiGoldOutput,
    SqliteKind,
    Verdict,
    write_run,
)
from tests.run_fixtures import K, build_small_run

#: The query the good run's failure case is about (its first question).
FAILING_QUERY = "nq:0"


@functools.cache
def good_run() -> Run:
    """The small fixture run plus LLM-retEval facts for two queries: semi-gold answers, verdicts of the ``em``
    judge against both references at k, and one failure case (category A) of :data:`FAILING_QUERY`."""
    run = build_small_run()
    first, second = (q.query_id for q in run.queries[:2])
    semi_gold = [SemiGoldOutput(q, sample, f"semi-gold answer {sample} of {q}") for q in (first, second)
                 for sample in range(2)]
    verdicts = [Verdict("em", reference, q, K, q == second, f"compared with the {reference} of {q}")
                for q in (first, second) for reference in ("semi_gold", "gold_answers")]
    failures = [FailureCase("em", FAILING_QUERY, K, "A", "the top-k answer differs (a rule of the test fixture)")]
    settings = {**run.settings, "reteval": {"ks": [K], "semi_gold": {"samples": 2, "temperature": 0.7}}}
    return dataclasses.replace(run, settings=settings, semi_gold_outputs=semi_gold, verdicts=verdicts,
                               failure_cases=failures)


def write_good_run(path: Path) -> Path:
    return write_run(good_run(), path)


def write_good_attribution_run(path: Path) -> Path:
    from tests.engine.test_annotations import make_small_attribution_run

    path.parent.mkdir(parents=True, exist_ok=True)
    return make_small_attribution_run(path)


def write_good_ium_run(path: Path) -> Path:
    from rageval.ium.experiment import write_ium_run
    from tests.ui.test_app_attribution_ium import hand_made_ium_result

    return write_ium_run(hand_made_ium_result(), path)


def write_good_annotations(path: Path) -> Path:
    """An annotation file with one label of the good run's first passage."""
    from rageval.annotations import AnnotationStore
    from rageval.store.annotations import PassageItem

    run = good_run()
    ranking = run.rankings[0]
    AnnotationStore(path).save_label("good-run", PassageItem(ranking.query_id, ranking.passage_ids[0]), 1, "Ada")
    return path


def write_good_jobs_database(path: Path) -> Path:
    """A jobs database holding one queued job (on a run that need not exist)."""
    from rageval.jobs.spec import JobSpec, JobStore

    with JobStore(path) as store:
        store.create(JobSpec.from_flat(str(path.parent / "good-run.sqlite"), model="served-model", backend="openai"),
                     "erag:em@served-model", 3)
    return path


def write_good_llm_cache(path: Path) -> Path:
    """An LLM cache holding one call."""
    from rageval.generation.base import DecodingSettings
    from rageval.generation.cache import LLMCache

    cache = LLMCache(path)
    try:
        cache.put_many("served-model", DecodingSettings(), {"0" * 64: "an answer"})
    finally:
        cache.close()
    return path


def copied(write: Callable[[Path], Path]) -> Callable[[Path], Path]:
    """``write``, run once per process into a scratch folder; later calls copy the bytes it wrote."""
    @functools.cache
    def made() -> bytes:
        with tempfile.TemporaryDirectory() as scratch:
            return write(Path(scratch) / "good.sqlite").read_bytes()

    def write_copy(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(made())
        return path
    return write_copy


#: kind name -> (its SQLite kind, the writer of a good file of it)
GOOD: dict[str, tuple[SqliteKind, Callable[[Path], Path]]] = {
    "run": (RUN, copied(write_good_run)),
    "attribution": (ATTRIBUTION, copied(write_good_attribution_run)),
    "ium": (IUM, copied(write_good_ium_run)),
    "annotations": (ANNOTATIONS, copied(write_good_annotations)),
    "jobs": (JOBS, copied(write_good_jobs_database)),
    "llm_cache": (LLM_CACHE, copied(write_good_llm_cache)),
}
