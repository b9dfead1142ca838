"""Where a passage that helps the answer was lost, stage by stage: the analysis of a run imported from traces with
a first-stage list and a reranked list (a single-stage run reads as one whose reranker kept the order).

A passage *helps* a query when its label under the *helpful method* is above 0. The helpful method is the run's
eRAG label (``erag:em``, else the first other ``erag:*`` method: the LLM answers correctly from this passage alone,
Salemi & Zamani 2024), else a gold judgment (``qrels``, then ``gold``) when the run has no eRAG labels
(:func:`helpful_method`). For each helping passage of a query, its *fate* is the first of:

``never_retrieved``
    it is in no list of the query (only a global judgment, qrels or gold, can name such a passage: eRAG labels
    only listed passages);
``out_of_top_k``
    the first stage retrieved it, but it is not in the top k of the final list (the reranked list; with one stage,
    the first stage's list): the reranker dropped it or ranked it below k. ``k`` is the number of passages the
    answer was generated from (the query's imported answer's k, else the run's ``k``);
``not_used``
    it is in the top k, and the answer is wrong: its end-to-end score at k is 0 (exact match against the gold
    answers), though this passage alone would have given a right one;
``used``
    it is in the top k and the answer is right (end-to-end score above 0);
``use_unknown``
    it is in the top k and the answer has no score (no gold answers to score it against).

The per-stage table counts, per query and in total, the helping passages and their fates
(:func:`stage_table`); the Query inspector shows one query's and the table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: The fates, in the order a passage meets them.
FATES = ("never_retrieved", "out_of_top_k", "not_used", "used", "use_unknown")
#: Each fate in words (table headers and captions).
FATE_NAMES = {"never_retrieved": "never retrieved", "out_of_top_k": "retrieved, not in the top k",
              "not_used": "in the top k, answer wrong", "used": "in the top k, answer right",
              "use_unknown": "in the top k, answer unscored"}
#: Gold judgments that stand in for eRAG labels, in order of preference.
GOLD_METHODS = ("qrels", "gold")


@dataclass(frozen=True)
class PassageFate:
    """One helping passage of one query and where it ended: ``first_rank`` / ``final_rank`` are its 1-based ranks
    in the first-stage and final lists (None when absent), ``k`` the query's k."""

    query_id: str
    passage_id: str
    fate: str
    first_rank: int | None
    final_rank: int | None
    k: int


def helpful_method(methods: Iterable[str]) -> str | None:
    """The label method that says whether a passage helps (see the module docstring), or None when the run has
    none of them."""
    methods = sorted(set(methods))
    if "erag:em" in methods:
        return "erag:em"
    erag = [m for m in methods if m.startswith("erag:")]
    if erag:
        return erag[0]
    return next((m for m in GOLD_METHODS if m in methods), None)


def passage_fates(first_stage: Mapping[str, Sequence[str]], final: Mapping[str, Sequence[str]],
                  ks: Mapping[str, int], helpful: Mapping[str, Iterable[str]],
                  e2e_scores: Mapping[str, float | None]) -> list[PassageFate]:
    """The fate of every helping passage (``helpful``: query -> passage ids whose label is above 0), per query of
    ``final`` (query -> the final list's passage ids, in rank order): ``first_stage`` (query -> the first stage's
    list; a query absent there has one stage, its final list), ``ks`` (query -> k), ``e2e_scores`` (query -> the
    answer's end-to-end score at k; None or nan: unscored). In query order, then by final, then first rank."""
    fates = []
    for query_id, final_ids in final.items():
        first_ids = first_stage.get(query_id, final_ids)
        k = ks[query_id]
        first_rank = {p: i for i, p in reversed(list(enumerate(first_ids, start=1)))}
        final_rank = {p: i for i, p in reversed(list(enumerate(final_ids, start=1)))}
        score = e2e_scores.get(query_id)
        scored = score is not None and not math.isnan(score)
        rows = []
        for passage_id in dict.fromkeys(helpful.get(query_id, ())):
            at, in_final = first_rank.get(passage_id), final_rank.get(passage_id)
            if at is None and in_final is None:
                fate = "never_retrieved"
            elif in_final is None or in_final > k:
                fate = "out_of_top_k"
            elif not scored:
                fate = "use_unknown"
            else:
                fate = "used" if score > 0 else "not_used"  # type: ignore[operator]
            rows.append(PassageFate(query_id, passage_id, fate, at, in_final, k))
        rows.sort(key=lambda r: (r.final_rank or math.inf, r.first_rank or math.inf, r.passage_id))
        fates += rows
    return fates


def stage_table(fates: Sequence[PassageFate], query_ids: Sequence[str]) -> pd.DataFrame:
    """Per query of ``query_ids`` (in that order) and a last row ``all``: the helping passages and how many met
    each fate (:data:`FATES`). Columns query_id, helpful, then one per fate."""
    import pandas as pd

    counts: dict[str, dict[str, int]] = {q: dict.fromkeys(FATES, 0) for q in query_ids}
    for fate in fates:
        counts.setdefault(fate.query_id, dict.fromkeys(FATES, 0))[fate.fate] += 1
    rows: list[dict[str, Any]] = [{"query_id": q, "helpful": sum(c.values()), **c} for q, c in counts.items()]
    total = {"query_id": "all", "helpful": sum(int(r["helpful"]) for r in rows),
             **{f: sum(int(r[f]) for r in rows) for f in FATES}}
    return pd.DataFrame([*rows, total], columns=["query_id", "helpful", *FATES])


@dataclass(frozen=True)
class StageAnalysis:
    """A run's stage analysis: the helpful method, the stages the run keeps, every helping passage's fate and the
    table (:func:`stage_table`)."""

    method: str | None
    stages: tuple[str, ...]
    fates: tuple[PassageFate, ...]
    table: Any  # pandas.DataFrame


def analyse_run(reader: Any, method: str | None = None) -> StageAnalysis:
    """The stage analysis of an open run (a :class:`~rageval.store.RunReader`): the first stage's lists from its
    imported ``trace_rankings`` (``retrieved``), the final lists its main ranking, k per query its imported
    answer's k (else the run's ``k``), the helping passages those labelled above 0 by ``method`` (default:
    :func:`helpful_method`)."""
    from rageval.traces.records import RETRIEVED

    query_ids = reader.query_ids()
    method = method or helpful_method(reader.label_methods())
    stages = tuple(reader.trace_stages())
    if method is None:
        return StageAnalysis(None, stages, (), stage_table([], query_ids))
    rankings = reader.rankings()
    final = {q: list(rankings[q].passage_ids) if q in rankings else [] for q in query_ids}
    traced = reader.trace_rankings()
    first = traced[traced["stage"] == RETRIEVED]
    first_stage: dict[str, list[str]] = {}
    for query_id, passage_id in zip(first["query_id"], first["passage_id"]):  # (read by stage, query, rank)
        first_stage.setdefault(query_id, []).append(passage_id)
    e2e = reader.e2e_table()
    settings_k = int(reader.settings().get("k") or max((len(v) for v in final.values()), default=0))
    ks = dict.fromkeys(query_ids, settings_k)
    scores: dict[str, float | None] = {}
    main_k = reader.main_k()
    for row in e2e.itertuples(index=False):
        if row.query_id in ks and (row.k == main_k or row.query_id not in scores):
            ks[row.query_id] = int(row.k)
            scores[row.query_id] = None if row.score is None else float(row.score)
    labels = reader.labels(method)
    helpful: dict[str, list[str]] = {}
    for row in labels[labels["value"] > 0].itertuples(index=False):
        helpful.setdefault(row.query_id, []).append(row.passage_id)
    fates = passage_fates(first_stage, final, ks, helpful, scores)
    return StageAnalysis(method, stages, tuple(fates), stage_table(fates, query_ids))
