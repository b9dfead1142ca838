"""What a run says, in a few numbers: the findings on the dashboard's home page.

- :func:`compute_gold_answer_table`, the 2 x 2 of *gold retrieved* (at least one of the query's gold passages in
  the top k) x *answer right* (the stored E2E score at k at or above a threshold), each cell with its queries
  in run order and its share of the queries with a Wilson 95% interval;
- :func:`label_method_warnings`, label methods whose measure hardly varies over queries (labels almost all 1 or
  all 0) or whose labels are the same for every passage of most queries, so that their correlations with the
  answer mean little;
- the sentences ``rageval results`` writes about the shipped runs (:mod:`rageval.results_doc`), for any run:
  :func:`correlation_finding` (the best eRAG measure against gold labels, Kendall's tau with its interval),
  :func:`two_by_two_finding`, :func:`label_share_finding` (the LLM-relevance baseline's share of Yes) and
  :func:`failure_finding` (LLM-retEval's failure cases A-C and D-F);
- :class:`rageval.finding.Finding` and the sentences about an LLM judge's unread answers live in
  :mod:`rageval.finding` (no pandas);
- :func:`constant_answer_finding`: the E2E score is the same for every query at k, so no label method's correlation
  with it is defined there (the answer's side, not the labels'), and the k where both sides vary.

Pure functions of tables (read by :mod:`rageval.store.aggregates`, SQLite aggregates that stay fast at 100,000
queries): no I/O, nothing rounded for display beyond the sentences' own numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rageval.correlations import ConstantSides, best_measures, kendall_taus
from rageval.finding import Finding
from rageval.stats.correlation import has_interval, too_few_for_interval
from rageval.stats.intervals import MeanInterval, share_from_counts

#: An E2E score at or above this counts as a right answer: exact match and accuracy are 0 or 1; for a graded
#: metric (token F1, ROUGE-L) it is a threshold the page states.
RIGHT_THRESHOLD = 0.5
#: A label method is flagged when this share of queries has one and the same measure value, or the same label on
#: every top-k passage.
DEGENERATE_SHARE = 0.95
#: Label methods whose positive labels stand for gold passages, best reference first.
GOLD_METHODS = ("gold", "qrels", "gold_page")


def _is_erag(method: str) -> bool:
    return method.startswith("erag:")


def _erag_rows(table: pd.DataFrame, erag: bool = True) -> pd.DataFrame:
    """The rows of eRAG methods (or, ``erag=False``, of the others); an empty table stays a table with its columns
    (indexing by an empty object Series would select columns)."""
    mask = np.array([_is_erag(m) for m in table["method"]], dtype=bool)
    return table[mask if erag else ~mask]


@dataclass(frozen=True)
class Cell:
    """One cell of the 2 x 2: its queries (run order), their positions in the run's query order (what a worklist
    link carries, :mod:`ui.worklist`) and their share of the table's queries (Wilson 95%)."""

    gold_retrieved: bool
    answer_right: bool
    query_ids: tuple[str, ...]
    share: MeanInterval
    positions: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return len(self.query_ids)

    def name(self, k: int) -> str:
        """``gold retrieved, answer wrong at k=10``: the cell in words (a worklist's name)."""
        return (f"gold {'retrieved' if self.gold_retrieved else 'not retrieved'}, answer "
                f"{'right' if self.answer_right else 'wrong'} at k={k}")


@dataclass(frozen=True)
class GoldAnswerTable:
    """The 2 x 2 of gold retrieved x answer right at ``k`` over the ``n`` queries that have gold passages and a
    finite E2E score at k; ``without_gold`` queries (no gold passage) and ``without_answer`` (gold passages but no
    E2E score at k) are left out of it. ``n_queries``: every query of the run."""

    k: int
    threshold: float
    cells: tuple[Cell, ...]
    n: int
    n_queries: int
    without_gold: int
    without_answer: int
    #: Each query's own list and answer (a run imported from traces: its system answered each question from a list
    #: of its own length), rather than the top ``k`` and the answer at ``k``.
    own_lists: bool = False

    @property
    def where(self) -> str:
        """Where a gold passage counts as retrieved: ``in the top 10``, or ``in its own list``."""
        return "in its own list" if self.own_lists else f"in the top {self.k}"

    @property
    def answer_at(self) -> str:
        """Which answer is scored: ``at k=10``, or each query's own (the one made from its own list)."""
        return "(each query's own answer, from its own list)" if self.own_lists else f"at k={self.k}"

    def cell(self, gold_retrieved: bool, answer_right: bool) -> Cell:
        return next(c for c in self.cells if c.gold_retrieved == gold_retrieved and c.answer_right == answer_right)


def compute_gold_answer_table(retrieval: pd.DataFrame, k: int, threshold: float = RIGHT_THRESHOLD,
                              own_lists: bool = False) -> GoldAnswerTable:
    """The 2 x 2 at ``k`` from ``retrieval`` (:func:`rageval.store.aggregates.read_gold_retrieval`: one row per
    query in run order with query_id, n_gold, gold_retrieved, e2e_score; a cell's ``positions`` are row numbers of
    ``retrieval``). A query is in the table when it has at least one gold passage and a finite E2E score; its answer
    is right when that score is >= ``threshold``. ``own_lists``: ``retrieval`` is of each query's own list and answer
    (:func:`rageval.store.aggregates.read_gold_retrieval` of an imported run)."""
    has_gold = retrieval["n_gold"].to_numpy() > 0
    scores = retrieval["e2e_score"].to_numpy(dtype=float)
    scored = has_gold & ~pd.isna(scores)
    table = retrieval[scored]
    n = len(table)
    retrieved = table["gold_retrieved"].to_numpy(dtype=bool)
    right = table["e2e_score"].to_numpy(dtype=float) >= threshold
    ids = table["query_id"].to_numpy()
    rows = np.flatnonzero(scored)
    cells = []
    for gold in (True, False):
        for answer in (True, False):
            mask = (retrieved == gold) & (right == answer)
            chosen = ids[mask]
            cells.append(Cell(gold, answer, tuple(str(q) for q in chosen), share_from_counts(len(chosen), n),
                              tuple(int(i) for i in rows[mask])))
    return GoldAnswerTable(int(k), float(threshold), tuple(cells), n, len(retrieval),
                           int((~has_gold).sum()), int((has_gold & pd.isna(scores)).sum()), own_lists)


@dataclass(frozen=True)
class LabelWarning:
    """A label method whose correlations with the answer mean little, and why (``text``, plain words)."""

    method: str
    reason: str  # "constant", "one_value" or "same_within_query"
    text: str


def label_method_warnings(spread: pd.DataFrame, measure: str, name: Callable[[str], str] = str,
                          share: float = DEGENERATE_SHARE, answer_constant: bool = False) -> list[LabelWarning]:
    """The label methods of ``spread`` (:func:`rageval.store.aggregates.read_measure_spread` of ``measure``,
    ``P@k``) whose labels say little: ``measure`` is the same for every query (its correlations are undefined),
    or one value (its ``mode``, for ``n_mode`` queries) for at least ``share`` of the queries,
    e.g. (almost) all labels 1 or all 0 on the top k; or, failing that, for at least ``share`` of the queries
    every top-k passage gets the same label (``measure`` is 0 or 1), so the labels do not tell a query's
    passages apart. One warning per method, the strongest reason. ``answer_constant``: the E2E score is the same for
    every query at that k (:func:`constant_answer_finding` says so), so a constant measure is not the reason its
    correlation is undefined, only one more."""
    warnings = []
    for row in spread.itertuples(index=False):
        n, label = int(row.n), name(row.method)
        if n == 0:
            continue
        mode, mode_count = float(row.mode), int(row.n_mode)
        if row.min == row.max:
            warnings.append(LabelWarning(row.method, "constant", (
                f"{label}: {measure} is {row.min:g} for all {n} queries"
                + (" (as is the answer's score, above), so it tells no query from another." if answer_constant else
                   ", so its correlation with the answer is undefined."))))
        elif mode_count >= share * n:
            warnings.append(LabelWarning(row.method, "one_value", (
                f"{label}: {measure} is {mode:g} for {mode_count} of {n} queries ({mode_count / n:.0%}; mean "
                f"{row.mean:.3f}), so its correlations with the answer rest on the other {n - mode_count}.")))
        elif row.n_zero + row.n_one >= share * n:
            same = int(row.n_zero + row.n_one)
            warnings.append(LabelWarning(row.method, "same_within_query", (
                f"{label}: for {same} of {n} queries ({same / n:.0%}) every passage of the top "
                f"{measure.partition('@')[2] or 'k'} gets the same label ({measure} is 0 or 1), so the labels hardly "
                "tell a query's passages apart and rank-based measures (RR, AP, nDCG) say little more than P.")))
    return warnings


def _tau(row: Any) -> str:
    """``0.41 [0.21, 0.60]``; the estimate alone without an interval, or over too few queries for one
    (:func:`rageval.stats.correlation.has_interval`: the sentence then says so)."""
    if math.isnan(row["tau_low"]) or not has_interval(int(row["n"])):
        return f"{row['tau']:.2f}"
    return f"{row['tau']:.2f} [{row['tau_low']:.2f}, {row['tau_high']:.2f}]"


def correlation_finding(correlations: pd.DataFrame, k: int, name: Callable[[str], str] = str) -> Finding | None:
    """The best eRAG measure at ``k`` against the best gold-label measure (the first of :data:`GOLD_METHODS`
    present, else the best other method): which predicts the E2E answer better, by Kendall's tau and its interval
    (``correlations``: method, measure, n, tau, tau_low, tau_high, as the Correlations page and
    :func:`rageval.correlations.correlation_table_at_k` give them). Better or worse only when the intervals do not
    overlap; over fewer queries than an interval needs (:func:`rageval.stats.correlation.has_interval`), neither,
    and the sentence says there are too few. None without an eRAG method whose tau is defined."""
    best = best_measures(correlations, k)
    erag = _erag_rows(best)
    if erag.empty:
        return None
    top = erag.iloc[0]
    gold = _reference(best)
    n = int(top["n"])
    target = {"method": top["method"], "measure": top["measure"], "k": int(k)}
    few = "" if has_interval(n) else f"; {too_few_for_interval(n)}"
    if gold is None:
        return Finding("correlation", (
            f"{name(top['method'])} labels predict the answer best: Kendall's tau {_tau(top)} ({top['measure']})"
            f"{few}; {n} queries, k={k}."), target)
    if few or not has_interval(int(gold["n"])):
        return Finding("correlation", (
            f"{name(top['method'])} labels: Kendall's tau {_tau(top)} ({top['measure']}); {name(gold['method'])} "
            f"labels: {_tau(gold)} ({gold['measure']}); {too_few_for_interval(min(n, int(gold['n'])))}, so which "
            f"predicts the answer better cannot be told; {n} queries, k={k}."), target)
    if top["tau_low"] > gold["tau_high"]:
        verb = "better than"
    elif gold["tau_low"] > top["tau_high"]:
        verb = "worse than"
    else:
        verb = "about as well as"
    text = (f"{name(top['method'])} labels predict the answer {verb} {name(gold['method'])} labels: Kendall's tau "
            f"{_tau(top)} ({top['measure']}) vs {_tau(gold)} ({gold['measure']})")
    if verb == "about as well as":
        text += ", the intervals overlap"
    return Finding("correlation", text + f"; {n} queries, k={k}.", target)


def constant_answer_finding(sides: ConstantSides, metric: str) -> Finding | None:
    """"The E2E EM at k=10 is 0 for all 5 queries: nothing to correlate with, so no label method's correlation with
    the answer is defined at k=10; at k=1 it varies." (``sides``: :func:`rageval.correlations.constant_sides` at
    the run's k; ``metric``: the E2E score's name.) The target is the k where both sides vary (the nearest), else
    k itself. None when the E2E score varies at k."""
    if not sides.e2e_constant:
        return None
    other = sides.nearest_varying_k()
    text = (f"The E2E {metric} at k={sides.k} is {sides.e2e_value:g} for all {sides.n} queries: nothing to correlate "
            f"with, so no label method's correlation with the answer is defined at k={sides.k}")
    text += (f"; at k={other} it varies." if other is not None else
             "; no k of this run has an answer score and a measure that both vary.")
    return Finding("constant", text, {"k": sides.k if other is None else other})


def _percent(interval: MeanInterval) -> str:
    return f"{interval.mean:.0%} [{interval.low:.0%}, {interval.high:.0%}]"


def two_by_two_finding(table: GoldAnswerTable) -> Finding | None:
    """"247 of 300 queries (82% [78%, 87%]) retrieve a gold passage in the top 10 yet answer wrongly", the
    cell where retrieval looks fine and the answer is not; None for an empty table."""
    if table.n == 0:
        return None
    cell = table.cell(True, False)
    return Finding("two_by_two", (
        f"{cell.count} of {table.n} queries ({_percent(cell.share)}) retrieve a gold passage {table.where} "
        "yet answer wrongly."), {"gold_retrieved": True, "answer_right": False, "k": table.k})


def label_share_finding(method: str, n: int, positive: int, name: Callable[[str], str] = str) -> Finding | None:
    """"The LLM relevance baseline says Yes to 90% [89%, 91%] of the 3000 passages it labelled"; None without
    labels."""
    if n == 0:
        return None
    share = share_from_counts(positive, n)
    return Finding("label_share", (
        f"The {name(method)} baseline says Yes (relevant) to {_percent(share)} of the {n:,} passages it labelled."),
        {"method": method})


def failure_finding(counts: pd.DataFrame, k: int | None, judge_name: Callable[[str], str] = str) -> Finding | None:
    """LLM-retEval's failure cases at ``k`` (else its largest k) under judge ``em`` (else the first): how many of
    the judged queries are recall failures (A-C) and LLM-retEval failures (D-F), with Wilson intervals; None
    without verdicts. ``counts``: :func:`rageval.store.aggregates.read_failure_counts`."""
    if counts.empty:
        return None
    judges = sorted(counts["judge"].unique(), key=lambda j: (j != "em", j))
    rows = counts[counts["judge"] == judges[0]]
    at = k if k in set(rows["k"]) else int(rows["k"].max())
    row = rows[rows["k"] == at].iloc[0]
    n = int(row["n"])
    if n == 0:
        return None
    recall = share_from_counts(int(row["recall_failures"]), n)
    reteval = share_from_counts(int(row["reteval_failures"]), n)
    judge = judge_name(judges[0])
    text = (f"At k={at} (judge {judge}), {int(row['recall_failures'])} of {n} judged queries ({_percent(recall)}) "
            f"are recall failures (A-C: the retriever missed what the answer needs) and "
            f"{int(row['reteval_failures'])} ({_percent(reteval)}) are LLM-retEval failures (D-F)")
    parts = [f"{count} {what}" for count, what in (
        (int(row.get("d", 0)), "D (no answer the LLM gave from the gold passages passes the gold-answer check "
                               "against the dataset's gold answers: the LLM, or the gold answers, are wrong)"),
        (int(row.get("e", 0)), f"E (judge {judge} said No to a top-k answer that passes the gold-answer check "
                               "while the semi-gold answers pass it for another gold answer)"),
        (int(row.get("f", 0)), f"F (judge {judge}'s verdict against the semi-gold answers disagrees with the "
                               "gold-answer check against the gold answers)")) if count]
    if parts:
        text += ": " + "; ".join(parts) + (". The gold-answer check: equal after normalisation or the gold answer "
                                           "contained as words (Glossary: gold-answer check)")
    return Finding("failures", text + ".", {"judge": judges[0], "k": at})



def _reference(best: pd.DataFrame) -> pd.Series | None:
    """The row a best eRAG measure is compared with: the best measure of the first of :data:`GOLD_METHODS` present,
    else the best non-eRAG method's (``best``: :func:`rageval.correlations.best_measures`, best first)."""
    others = _erag_rows(best, erag=False)
    for method in GOLD_METHODS:
        if (others["method"] == method).any():
            return others[others["method"] == method].iloc[0]
    return others.iloc[0] if len(others) else None


def key_correlations(measures: pd.DataFrame, e2e: pd.Series, k: int, n_resamples: int | None = None,
                     confidence: float | None = None, seed: int | None = None) -> pd.DataFrame:
    """The rows of a run's correlation table the findings use, computed alone: the best eRAG measure at ``k`` (the
    highest Kendall's tau-b with the E2E score) and the measure it is compared with (:func:`correlation_finding`:
    gold labels' best, else the best other method's), each with its percentile-bootstrap interval. The same numbers
    as those rows of :func:`rageval.stats.correlation.compute_correlation_table` on the same values (same point
    estimates, tie rule, resamples and seed), but only two pairs are bootstrapped instead of every method x measure.

    ``measures``: method, measure, query_id, value (values at cutoff ``k``, in stored order); ``e2e``: query id ->
    E2E score at ``k``. Returns method, measure, n, tau, tau_low, tau_high (0-2 rows, the eRAG one first)."""
    from rageval.stats import correlation

    columns = ["method", "measure", "n", "tau", "tau_low", "tau_high"]
    at_k = measures[measures["measure"].str.endswith(f"@{k}") & measures["query_id"].isin(e2e.index)]
    best = best_measures(kendall_taus(at_k, e2e), k)
    erag = _erag_rows(best)
    chosen = [row for row in (erag.iloc[0] if len(erag) else None, _reference(best)) if row is not None]
    rows = []
    for row in chosen:
        group = at_k[(at_k["method"] == row["method"]) & (at_k["measure"] == row["measure"])]
        tau, _rho = correlation.bootstrap_rank_correlations(
            group["value"].to_numpy(float), e2e.loc[group["query_id"]].to_numpy(float),
            correlation.DEFAULT_RESAMPLES if n_resamples is None else n_resamples,
            correlation.DEFAULT_CONFIDENCE if confidence is None else confidence,
            correlation.DEFAULT_SEED if seed is None else seed)
        rows.append({"method": row["method"], "measure": row["measure"], "n": int(row["n"]), "tau": tau.value,
                     "tau_low": tau.low, "tau_high": tau.high})
    return pd.DataFrame(rows, columns=columns)


def no_finding_text(held: Mapping[str, bool]) -> str:
    """The sentence of a run without a finding, true to what it holds: ``held`` maps each piece a finding is made
    from (``correlations``, ``gold passages``, ``LLM-relevance labels``, ``LLM-retEval``) to whether the run has it.
    "No finding: the run has no correlations nor LLM-retEval; it has gold passages, but nothing they show stands
    out yet." """
    lacking = [piece for piece, has in held.items() if not has]
    having = [piece for piece, has in held.items() if has]
    text = "No finding: the run has " + (f"no {' nor '.join(lacking)}" if lacking else "every piece")
    if having and lacking:
        text += f"; it has {', '.join(having)}, but nothing they show makes a finding"
    return text + "."

