"""Which IR measures each label method gets, and how: the measure rules of every run builder.

Any label method (eRAG under any metric, the baselines, uploaded qrels, human labels) is scored by the same IR
measures (:mod:`rageval.measures`: P, R, AP, RR, nDCG, Hit at each cutoff c, and R-precision), with two rules:

- **graded** labels (values in [0, 1], e.g. eRAG under token F1) get only the measures defined for them:
  P@c (mean label), Hit@c (max label) and nDCG@c (graded gains);
- **multi-grade** labels on levels with a relevance threshold (a judge's grades, e.g. 0-3 relevant from grade 2,
  TREC RAG 2024's convention) get every measure: nDCG@c on the grades as gains, the binary measures (P, R, AP,
  RR, Hit, R-precision) on "grade >= threshold";
- **list-bound** methods label only retrieved passages, so at cutoff c they see the labels of the top c only,
  as eRAG defines G_q on R_c (Salemi & Zamani, SIGIR 2024: hence R@c = Hit@c for binary eRAG labels).

Users may add measures of their own (``extra_measures``: any measure string of :mod:`rageval.measures`, e.g.
``P(rel=2)@5``, ``AP(judged_only=True)``, ``nDCG(dcg='exp-log2')@10``); the same two rules apply to them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rageval.labelmethods import GOLD, GOLD_PAGE, method_kind, relevant_grade
from rageval.measures import Measure, compute_measures, parse_measure_list
from rageval.store import Label, MeasureValue, labels_as_qrels
from rageval.types import Ranking

#: Measures that accept graded labels (P@k = mean label, Hit@k = max label, nDCG with graded gains); the others
#: (R, AP, RR, R-precision) are only defined for 0/1 labels and are not computed for graded label methods.
GRADED_MEASURES = ("P", "nDCG", "Hit")
#: The measures every run stores at each cutoff (and R-precision); users may add their own (``extra_measures``).
STORED_MEASURES = ("P", "R", "AP", "RR", "nDCG", "Hit")


def measure_names(cutoffs: Sequence[int], graded: bool = False) -> list[str]:
    """The measures every run stores: P, R, AP, RR, nDCG and Hit at each cutoff, and R-precision; for graded
    labels only the measures of :data:`GRADED_MEASURES`."""
    kinds = GRADED_MEASURES if graded else STORED_MEASURES
    names = [f"{m}@{k}" for k in cutoffs for m in kinds]
    return names if graded else names + ["Rprec"]


def is_graded_method(method: str) -> bool:
    """Whether the method ``method`` names makes labels other than 0/1 by its nature: eRAG under F1, ROUGE-L or
    BERTScore, whichever model re-scored it (``erag:f1@gemma``: True; ``erag:em@gemma``: False).

    A stored run records its graded methods (``RunReader.graded_label_methods``: this rule, plus uploaded methods
    with fractional labels); read that for a run rather than this."""
    return method_kind(method).graded


def is_list_bound_method(method: str) -> bool:
    """Whether ``method`` labels only the retrieved passages (its kind's ``list_bound``: eRAG, contains-answer,
    the LLM judges, and the retrieved part of page-level gold, whichever model made them): at cutoff c its
    measures then see the labels of the top c only, as eRAG defines G_q on R_c (so R@c = Hit@c for binary eRAG
    labels, as in the paper's Table 1).
    Given judgments (``qrels``, ``gold``) and users' own methods are global."""
    return method_kind(method).list_bound


def compute_measure_values(labels: Sequence[Label], rankings: Mapping[str, Ranking],
                           cutoffs: Sequence[int], graded_methods: Collection[str] = (),
                           extra_measures: Sequence[str | Measure] = (),
                           unparsed: Collection[tuple[str, str]] = ()) -> list[MeasureValue]:
    """Per-query values of every stored measure, for every label method, on the same rankings; every query of
    ``rankings`` gets a value (0 when it has no relevant passage). Dataset gold labels are global; list-bound
    labels (:func:`is_list_bound_method`) are cut to the top c at cutoff c (page-level gold keeps the gold
    passages themselves); R-precision uses all of a method's labels. Methods :func:`is_graded_method` names, and
    those in ``graded_methods`` (e.g. an uploaded method with fractional labels), get the graded measures only.

    ``extra_measures`` are computed too, after the stored set (those it already holds are skipped), by the same
    rules: a graded method gets those accepting graded labels; a list-bound method's labels are cut to the top k
    for a measure at rank cutoff k, and kept whole for the others (as for R-precision).

    A method on a scale of grades (:func:`relevant_grade`) gets nDCG on its grades and every other
    measure on "grade >= its threshold" (a label of 1 or 0).

    ``unparsed``: (method, query_id) pairs where the method's judge gave an answer it could not read for one of
    the query's passages (:class:`~rageval.store.records.UnparsedAnswer`): that query has no value for that
    method's measures, rather than a value that counts the unread passage as not relevant."""
    values = _measure_values(labels, rankings, cutoffs, graded_methods, extra_measures)
    if not unparsed:
        return values
    left_out = set(unparsed)
    return [v for v in values if (v.method, v.query_id) not in left_out]


def _measure_values(labels, rankings, cutoffs, graded_methods, extra_measures) -> list[MeasureValue]:
    """:func:`compute_measure_values` before queries with unparsed answers are left out."""
    values: list[MeasureValue] = []
    for method in sorted({x.method for x in labels}):
        threshold = relevant_grade(method)
        if threshold is None:
            values += _method_values(method, labels, rankings, cutoffs, graded_methods, extra_measures)
            continue
        grades = [x for x in labels if x.method == method]
        relevant = [Label(x.method, x.query_id, x.passage_id, float(x.value >= threshold)) for x in grades]
        gold = [x for x in labels if x.method == GOLD]
        on_grades = {name for name in measure_names(cutoffs) if name.startswith("nDCG@")}
        values += [v for v in _method_values(method, relevant + gold, rankings, cutoffs, (), extra_measures)
                   if v.measure not in on_grades]
        values += [v for v in _method_values(method, grades + gold, rankings, cutoffs, {method}, ())
                   if v.measure in on_grades]
    return values


def _method_values(method: str, labels: Sequence[Label], rankings: Mapping[str, Ranking], cutoffs: Sequence[int],
                   graded_methods: Collection[str], extra_measures: Sequence[str | Measure]) -> list[MeasureValue]:
    """The measure values of one label method (the rules of :func:`compute_measure_values`)."""
    run = {query_id: list(r.passage_ids) for query_id, r in rankings.items()}
    query_ids = list(run)
    gold = labels_as_qrels(labels, GOLD)
    values: list[MeasureValue] = []
    qrels = labels_as_qrels(labels, method)
    graded = is_graded_method(method) or method in graded_methods
    if not is_list_bound_method(method):
        frames = [compute_measures(measure_names(cutoffs, graded), run, qrels, queries=query_ids)]
    else:
        frames = []
        page_level = method_kind(method).name == GOLD_PAGE
        for cutoff in cutoffs:
            kept = {q: {p: v for p, v in rels.items()
                        if p in run.get(q, [])[:cutoff] or (page_level and p in gold.get(q, {}))}
                    for q, rels in qrels.items()}
            names = [name for name in measure_names([cutoff], graded) if name != "Rprec"]
            frames.append(compute_measures(names, run, kept, queries=query_ids))
        if not graded:
            frames.append(compute_measures(["Rprec"], run, qrels, queries=query_ids))
    frames += _extra_frames(extra_measures, method, graded, run, qrels, gold, query_ids,
                            set(measure_names(cutoffs, graded)))
    for frame in frames:
        values.extend(MeasureValue(method, r.measure, r.query_id, float(r.value))
                      for r in frame.itertuples(index=False))
    return values


def _extra_frames(extra_measures, method: str, graded: bool, run, qrels, gold, query_ids, stored: set[str]) -> list:
    """The frames of the user's own measures for one method (see :func:`compute_measure_values`)."""
    wanted = [m for m in parse_measure_list(extra_measures)
              if str(m) not in stored and (m.accepts_graded or not graded)]
    if not wanted:
        return []
    if not is_list_bound_method(method):
        return [compute_measures(wanted, run, qrels, queries=query_ids)]
    page_level = method_kind(method).name == GOLD_PAGE
    frames = []
    at_rank = {m.cutoff for m in wanted if m.cutoff is not None and m.definition.cutoff_kind == "rank"}
    for cutoff in sorted(at_rank):
        kept = {q: {p: v for p, v in rels.items()
                    if p in run.get(q, [])[:cutoff] or (page_level and p in gold.get(q, {}))}
                for q, rels in qrels.items()}
        frames.append(compute_measures([m for m in wanted if m.cutoff == cutoff
                                        and m.definition.cutoff_kind == "rank"], run, kept, queries=query_ids))
    whole = [m for m in wanted if m.cutoff is None or m.definition.cutoff_kind != "rank"]
    if whole:
        frames.append(compute_measures(whole, run, qrels, queries=query_ids))
    return frames
