"""``rageval report RUN --html OUT.html``: the Findings page's story as one self-contained HTML file, for people who
will not sign in to the dashboard.

One file, readable offline in any browser, that asks nothing of a network or a server: the styles are one inline
``<style>``, the charts are SVG drawn here, there is no script, no ``src`` and no external ``href`` (a
``Content-Security-Policy`` meta tag refuses any that slipped in). It tells what the Findings page tells
(``app_pages/0_Home.py``), computed by the same engine functions:

- the run's provenance (model, dataset, retriever, k, queries) under the title;
- the 2 x 2 of gold passage retrieved x answer right at the run's k, each cell's share with its Wilson 95% interval
  (:func:`rageval.findings.compute_gold_answer_table`);
- the sentences (:func:`rageval.findings.constant_answer_finding`, :func:`~rageval.findings.correlation_finding`,
  :func:`~rageval.findings.two_by_two_finding`, :func:`~rageval.findings.label_share_finding`,
  :func:`~rageval.findings.failure_finding`) and the warnings on label methods whose correlations mean little
  (:func:`~rageval.findings.label_method_warnings`);
- the correlation chart: each label method's best measure at k against the end-to-end answer, Kendall's tau-b with
  its 95% bootstrap interval (:func:`rageval.correlations.best_measures` of the run's stored table, or of
  :func:`rageval.correlations.correlation_table_at_k` for a run that stores none);
- one bottom line above everything (:func:`bottom_line`): how often the answer is right, and which labels predict it;
- the k sweep: each label method's best measure family, its tau against the answer at every k the run has
  (eRAG's Figure 1, :func:`rageval.correlations.k_sweep`);
- this run's row of the leaderboard; other runs only when asked for by name or with ``--all-runs`` (the report goes
  to people outside the team: it holds the run it is about, nothing else of the runs folder);
- a sample of LLM-retEval failure cases (:mod:`rageval.reteval`), a few per category, with their counts;
- a short glossary of the words it uses (:data:`GLOSSARY`).

Every number says what produced it and, where it is an estimate, its interval. Every text from the run (questions,
passages, reasons, settings) is escaped with :func:`html.escape`: it is shown as text, never as markup.
"""

from __future__ import annotations

import datetime as dt
import html
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rageval.errors import RagevalError
from rageval.html_report_data import (
    CASES_PER_CATEGORY,
    MISSING,
    SMALL_RUN_QUERIES,
    TEXT_CHARS,
    Report,
    compute_report,
    judge_name,
    method_name,
)

if TYPE_CHECKING:
    import pandas as pd

    from rageval.stats.intervals import MeanInterval


# --- HTML (what it shows: rageval/html_report_data.py) --------------------------------------------------------------

def _e(text: Any) -> str:
    """Any value as HTML text: escaped, quotes included (safe in an attribute too)."""
    return html.escape(str(text), quote=True)


def _share(interval: MeanInterval) -> str:
    """``82% [78%, 87%]`` (the findings' own format); ``–`` for an empty share."""
    if math.isnan(interval.mean):
        return MISSING
    return f"{interval.mean:.0%} [{interval.low:.0%}, {interval.high:.0%}]"


def _estimate(value: float, low: float, high: float, digits: int = 3) -> str:
    if math.isnan(value):
        return MISSING
    if math.isnan(low) or math.isnan(high):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.2f}, {high:.2f}]"


def _tau_text(tau: float, low: float, high: float, n: int) -> str:
    """A correlation cell: ``0.412 [0.21, 0.60]``; ``undefined (constant)``; below the interval's minimum sample the
    estimate alone, marked (the dashboard's rule)."""
    from rageval.stats.correlation import MIN_INTERVAL_QUERIES, has_interval

    if math.isnan(tau):
        return "undefined (constant)"
    if not has_interval(n):
        return f"{tau:.3f} (no interval: n < {MIN_INTERVAL_QUERIES})"
    return _estimate(tau, low, high)


def provenance_text(settings: Mapping[str, Any], n_queries: int | None = None, k: int | None = None) -> str:
    """``model … · dataset … · retriever … · k=10 · 300 queries``: what produced a number."""
    parts = [f"{label} {settings[key]}" for key, label in (("model_id", "model"), ("dataset", "dataset"),
                                                           ("retriever", "retriever")) if key in settings]
    if k is not None:
        parts.append(f"k={k}")
    elif "k" in settings:
        parts.append(f"top-{settings['k']}")
    if n_queries is not None:
        parts.append(f"{n_queries:,} {'query' if n_queries == 1 else 'queries'}")
    return " · ".join(parts)


def _two_by_two_html(report: Report) -> str:
    table = report.gold
    if report.main_k is None:
        return ("<p class='note'>This run stores no end-to-end answers, so whether retrieving a gold passage leads to "
                "a right answer cannot be told.</p>")
    if table is None:
        return ("<p class='note'>No query of this run has gold passages (gold_passage_ids, or gold / qrels labels), "
                "so whether the retriever found one cannot be told.</p>")
    cells = []
    for gold in (True, False):
        row = [f"<th scope='row'>gold {'retrieved' if gold else 'not retrieved'} {table.where}</th>"]
        for right in (True, False):
            cell = table.cell(gold, right)
            kind = "warn" if gold and not right else ""  # the cell the findings are about
            row.append(f"<td class='cell {kind}' data-cell='{int(gold)}{int(right)}'><span class='count'>"
                       f"{cell.count:,}</span><br><span class='share'>{_e(_share(cell.share))} of {table.n:,} "
                       "queries</span></td>")
        cells.append("<tr>" + "".join(row) + "</tr>")
    source = ("the query's gold passages (its gold_passage_ids)" if report.gold_source == "gold_passage_ids" else
              f"the passages the {method_name(str(report.gold_source))} labels mark relevant (label above 0)")
    left_out = [f"{n:,} {what}" for n, what in ((table.without_gold, "without gold passages"),
                                               (table.without_answer, f"without an E2E answer {table.answer_at}"))
                if n]
    binary = report.metric in ("EM", "accuracy")
    rule = (f"the stored E2E {report.metric} {'of its answer' if table.own_lists else 'at k'} is at least "
            f"{table.threshold:g}"
            + (f" ({report.metric} is 0 or 1, so: it is 1)" if binary else " (a graded score: the threshold is ours)"))
    caption = (f"Gold retrieved: at least one of {source} is ranked {table.where}. Answer right: {rule}. Shares of "
               f"the {table.n:,} queries with both, with Wilson 95% intervals"
               + (f"; left out: {', '.join(left_out)}" if left_out else "") + ".")
    return (f"<table class='two-by-two' id='two-by-two'><thead><tr><th></th><th scope='col'>answer right</th>"
            f"<th scope='col'>answer wrong</th></tr></thead><tbody>{''.join(cells)}</tbody></table>"
            f"<p class='caption'>{_e(caption)}</p>")


def correlation_chart_svg(best: pd.DataFrame, k: int, metric: str, provenance: str = "", width: int = 900) -> str:
    """A dot-and-whisker chart as inline SVG: one row per label method (``best``: its best measure at ``k``, rows
    method, measure, n, tau, tau_low, tau_high, best first), Kendall's tau-b with the E2E score on a fixed -1..1
    axis, the 95% interval as a whisker (none below the interval's minimum sample, and an undefined tau has no
    dot). ``provenance``: what produced the numbers, a subtitle the chart keeps when it is copied alone. Every
    label is escaped text."""
    from rageval.stats.correlation import has_interval

    row_h, left, right, top = 30, 230, 220, 58
    height = top + row_h * len(best) + 40
    plot = width - left - right

    def x(value: float) -> float:
        return left + (max(-1.0, min(1.0, value)) + 1) / 2 * plot

    parts = [f"<svg class='chart' id='correlation-chart' role='img' "
             f"viewBox='0 0 {width} {height}' width='{width}' height='{height}' aria-labelledby='chart-title'>",
             f"<title id='chart-title'>{_e(f'Kendall tau-b with the E2E {metric} at k={k}, per label method')}</title>"]
    for tick in (-1.0, -0.5, 0.0, 0.5, 1.0):
        parts.append(f"<line class='{'axis zero' if tick == 0 else 'grid'}' x1='{x(tick):.1f}' x2='{x(tick):.1f}' "
                     f"y1='{top - 8}' y2='{height - 32}'/>")
        parts.append(f"<text class='tick' x='{x(tick):.1f}' y='{height - 16}' text-anchor='middle'>{tick:g}</text>")
    parts.append(f"<text class='tick' x='{left + plot / 2:.1f}' y='{height - 2}' text-anchor='middle'>"
                 f"{_e(f'Kendall tau-b with the E2E {metric} at k={k}')}</text>")
    if provenance:
        parts.append(f"<text class='head' x='0' y='14'>{_e(_cut(provenance, 115))}</text>")
    parts.append(f"<text class='head' x='{left - 10}' y='{top - 14}' text-anchor='end'>label method · measure</text>")
    parts.append(f"<text class='head' x='{width - right + 10}' y='{top - 14}'>tau [95% interval], n</text>")
    for index, row in enumerate(best.itertuples(index=False)):
        y = top + row_h * index + row_h / 2
        erag = str(row.method).startswith("erag:")
        label = f"{method_name(str(row.method))} · {row.measure}"
        parts.append(f"<g class='row{' erag' if erag else ''}' data-method='{_e(row.method)}'>")
        parts.append(f"<text class='label' x='{left - 10}' y='{y + 4:.1f}' text-anchor='end'>{_e(label)}</text>")
        tau, low, high, n = float(row.tau), float(row.tau_low), float(row.tau_high), int(row.n)
        if not math.isnan(tau):
            if has_interval(n) and not (math.isnan(low) or math.isnan(high)):
                parts.append(f"<line class='whisker' x1='{x(low):.1f}' x2='{x(high):.1f}' y1='{y:.1f}' y2='{y:.1f}'/>")
                parts.extend(f"<line class='whisker' x1='{x(end):.1f}' x2='{x(end):.1f}' y1='{y - 5:.1f}' "
                             f"y2='{y + 5:.1f}'/>" for end in (low, high))
            parts.append(f"<circle class='dot' cx='{x(tau):.1f}' cy='{y:.1f}' r='5'/>")
        parts.append(f"<text class='value' x='{width - right + 10}' y='{y + 4:.1f}'>"
                     f"{_e(_tau_text(tau, low, high, n))}, n={n:,}</text></g>")
    parts.append("</svg>")
    return "".join(parts)


def _correlation_html(report: Report) -> str:
    best = report.best_measures()
    k = report.main_k
    if k is None:
        return "<p class='note'>No end-to-end answers: nothing to correlate the labels with.</p>"
    if best is None or best.empty:
        return (f"<p class='note'>No label method has a defined correlation with the answer at k={k} (correlations: "
                f"{_e(report.correlations_source)}).</p>")
    how = ("as stored in the run by rageval evaluate" if report.correlations_source == "stored" else
           "computed for this report (the run stores none)")
    n_resamples = (int(report.correlations["n_resamples"].iloc[0]) if report.correlations is not None
                   and "n_resamples" in report.correlations.columns else None)
    from rageval.stats.correlation import DEFAULT_RESAMPLES, MIN_INTERVAL_QUERIES

    caption = (f"Each label method's measure at k={k} whose Kendall's tau-b with the end-to-end {report.metric} "
               f"across queries is highest; 95% percentile bootstrap intervals over queries "
               f"({n_resamples or DEFAULT_RESAMPLES} resamples; none below {MIN_INTERVAL_QUERIES} queries), {how}. "
               "A method whose labels predict the answer well sits to the right; eRAG's methods are drawn in the "
               "accent colour.")
    provenance = provenance_text(report.settings, int(best["n"].max()), k)
    return correlation_chart_svg(best, k, report.metric, provenance) + f"<p class='caption'>{_e(caption)}</p>"


def bottom_line(report: Report) -> str:
    """One sentence for the top of the report: how often the end-to-end answer is right at the run's k (with its
    interval), and which label method best predicts it (Kendall's tau-b); what is missing is said so."""
    k = report.main_k
    if k is None or report.e2e is None or math.isnan(report.e2e.mean):
        return ("Bottom line: this run stores no scored end-to-end answers, so how often the RAG system answers "
                "right cannot be told from it.")
    e2e = report.e2e
    shown = (_share(e2e) if report.e2e_interval == "Wilson" else _estimate(e2e.mean, e2e.low, e2e.high))
    right = (f"the RAG system's answers score {shown} {report.metric} on {e2e.n:,} questions with the top {k} "
             "passages")
    best = report.best_measures()
    if best is None or best.empty:
        return f"Bottom line: {right}; no label method's correlation with the answer is defined here."
    top = best.iloc[0]
    tau = _tau_text(float(top["tau"]), float(top["tau_low"]), float(top["tau_high"]), int(top["n"]))
    return (f"Bottom line: {right}; of the label methods, {method_name(str(top['method']))} ({top['measure']}) "
            f"predicts that score best, Kendall's tau {tau}.")


#: The sweep's colours, one per method in order (readable on light and dark), eRAG methods first.
SWEEP_CLASSES = ("s0", "s1", "s2", "s3", "s4", "s5")


def k_sweep_svg(sweep: pd.DataFrame, metric: str, width: int = 900, height: int = 320) -> str:
    """A line chart as inline SVG: x the k, y Kendall's tau-b (fixed -1..1) of each label method's best measure
    family against the E2E ``metric`` at that k; one line per method, labelled at its right end (escaped text). An
    undefined tau breaks its line."""
    left, right, top, bottom = 60, 190, 20, 40
    ks = sorted(int(k) for k in sweep["k"].unique())
    span = max(ks[-1] - ks[0], 1)

    def x(k: int) -> float:
        return left + (k - ks[0]) / span * (width - left - right)

    def y(tau: float) -> float:
        return top + (1 - tau) / 2 * (height - top - bottom)

    height = max(height, top + bottom + 15 * sweep["method"].nunique() + 20)  # room for every label
    parts = [f"<svg class='chart sweep' id='k-sweep' viewBox='0 0 {width} "
             f"{height}' role='img' aria-label='{_e(f'Kendall tau of each label method with the E2E {metric} by k')}'>"]
    parts += [f"<line class='grid' x1='{left}' x2='{width - right}' y1='{y(tick):.1f}' y2='{y(tick):.1f}'/>"
              f"<text class='tick' x='{left - 8}' y='{y(tick) + 4:.1f}' text-anchor='end'>{tick:+.1f}</text>"
              for tick in (-1.0, -0.5, 0.0, 0.5, 1.0)]
    parts += [f"<text class='tick' x='{x(k):.1f}' y='{height - bottom + 18}' text-anchor='middle'>{k}</text>"
              for k in ks]
    parts.append(f"<text class='head' x='{(left + width - right) / 2:.0f}' y='{height - 4}' text-anchor='middle'>"
                 "k: passages given to the generator</text>")
    methods = list(dict.fromkeys(sorted(sweep["method"], key=lambda m: (not str(m).startswith("erag:"), str(m)))))
    labels: list[tuple[float, str, str]] = []
    for index, method in enumerate(methods):
        rows = sweep[sweep["method"] == method].sort_values("k")
        css = SWEEP_CLASSES[index % len(SWEEP_CLASSES)]
        segments: list[list[tuple[float, float]]] = [[]]
        for k, tau in zip(rows["k"], rows["tau"]):
            if math.isnan(float(tau)):
                segments.append([])
            else:
                segments[-1].append((x(int(k)), y(float(tau))))
        parts.append(f"<g class='{css}'>")
        for segment in segments:
            if len(segment) > 1:
                points = " ".join(f"{a:.1f},{b:.1f}" for a, b in segment)
                parts.append(f"<polyline class='line' fill='none' points='{points}'/>")
            parts += [f"<circle class='dot' cx='{a:.1f}' cy='{b:.1f}' r='3'/>" for a, b in segment]
        last = [point for segment in segments for point in segment]
        if last:
            family = str(rows["family"].iloc[0])
            labels.append((last[-1][1], css, f"{method_name(str(method))} ({family})"))
        parts.append("</g>")
    # Labels at the lines' right ends, moved apart where lines end close together (one text line each).
    placed: list[float] = []
    for end, css, text in sorted(labels):
        at = max(end, placed[-1] + 15) if placed else end
        placed.append(at)
        parts.append(f"<g class='{css}'><text class='label' x='{width - right + 8}' y='{at + 4:.1f}'>{_e(text)}</text>"
                     "</g>")
    parts.append("</svg>")
    return "".join(parts)


def _sweep_html(report: Report) -> str:
    if report.sweep is None or report.sweep.empty:
        return ("<p class='note'>The run has end-to-end answers at one k only (or no correlations), so there is no "
                "sweep over k.</p>")
    caption = (f"For each label method, the measure family that best predicts the answer at k={report.main_k} (the "
               f"chart above), and its Kendall's tau-b with the end-to-end {report.metric} at every k the run has "
               "answers for (point estimates: stored in the run, else computed for this report). eRAG's claim is "
               "that its labels keep predicting the answer as k changes.")
    return k_sweep_svg(report.sweep, report.metric) + f"<p class='caption'>{_e(caption)}</p>"


#: The words the report uses, each in one line (the dashboard's Glossary page says more).
GLOSSARY = (
    ("End-to-end (E2E) score", "How right the RAG system's answer is, generated from the top k passages and "
     "scored against the question's gold answers (EM: exact match, 0 or 1)."),
    ("k", "How many of the retriever's top passages the generator is given."),
    ("Gold passage", "A passage the dataset marks as holding the answer."),
    ("Label method", "A way of marking each retrieved passage relevant or not: eRAG (does the LLM answer right "
     "from this passage alone?), an LLM's relevance judgement, contains-answer, or the gold labels."),
    ("eRAG", "Salemi and Zamani (SIGIR 2024): a passage is relevant when the generator answers right from it "
     "alone; its labels are scored with ordinary IR measures (P@k, nDCG@k, ...)."),
    ("Kendall's tau-b", "Rank correlation across questions between a label method's measure and the E2E score: "
     "1 when they order the questions alike, 0 when unrelated."),
    ("95% interval", "The range the number would fall in 95 times out of 100 on other questions like these "
     "(Wilson for shares; bootstrap over questions for tau)."),
    ("LLM-retEval", "Whether the answer from the retrieved passages matches the answer from the gold passages; "
     "its failure cases A-F say where retrieval or the evaluation went wrong."),
)


def _glossary_html() -> str:
    return ("<dl class='glossary' id='glossary'>" + "".join(f"<dt>{_e(term)}</dt><dd>{_e(text)}</dd>"
                                                           for term, text in GLOSSARY) + "</dl>")


def _leaderboard_html(report: Report) -> str:
    from rageval.stats.correlation import MIN_INTERVAL_QUERIES

    header = ["Run", "E2E score [95%]", "Best eRAG measure", "Kendall's tau [95%]", "k", "Queries", "Dataset",
              "Retriever", "Model"]
    rows = []
    for row in report.leaderboard:
        e2e = (MISSING if row.e2e is None else
               f"{row.metric} " + (_share(row.e2e) if row.interval == "Wilson" else
                                   _estimate(row.e2e.mean, row.e2e.low, row.e2e.high)) + f" ({row.interval})")
        best = (f"{method_name(row.best_method)} {row.best_measure}" if row.best_method else
                ("not stored" if row.correlations == "not stored" else MISSING))
        tau = MISSING if not row.best_method else _tau_text(row.tau, row.tau_low, row.tau_high, row.tau_n)
        cells = [row.run + (" (this report)" if row.this_run else ""), e2e, best, tau,
                 MISSING if row.k is None else str(row.k), f"{row.queries:,}", row.dataset, row.retriever, row.model]
        rows.append(f"<tr{' class=this-run' if row.this_run else ''}>" + "".join(f"<td>{_e(c)}</td>" for c in cells)
                    + "</tr>")
    problems = "" if not report.unreadable else (
        f"<p class='note'>{len(report.unreadable)} run file(s) could not be read and are left out: "
        f"{_e('; '.join(report.unreadable))}</p>")
    caption = (("One row per run asked for, best E2E score first: " if len(report.leaderboard) > 1 else
                "This run only (other runs are added by name, or all with --all-runs): ")
               + "the E2E score at each run's own k (95% interval: Wilson for 0/1 scores, else Student-t) and the "
               "eRAG measure that best predicts it (Kendall's tau, 95% bootstrap interval, none below "
               f"{MIN_INTERVAL_QUERIES} queries; as stored in the run, else computed for runs of at most "
               f"{SMALL_RUN_QUERIES:,} queries).")
    return ("<div class='scroll'><table class='data' id='leaderboard'><thead><tr>"
            + "".join(f"<th scope='col'>{_e(h)}</th>" for h in header)
            + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{problems}"
            f"<p class='caption'>{_e(caption)}</p>")


def _cut(text: Any, limit: int = TEXT_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _passage_html(top: tuple[str, Any, Any] | None) -> str:
    """A passage as escaped text: its title in bold, then the start of its text (cut to :data:`TEXT_CHARS`)."""
    if top is None:
        return MISSING
    passage_id, title, text = top
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return f"{_e(passage_id)} (not in the run's passages)"
    head = "" if title is None or (isinstance(title, float) and math.isnan(title)) or not str(title) else (
        f"<b>{_e(_cut(title, 120))}</b> ")
    return f"{head}{_e(_cut(text, TEXT_CHARS // 2))} <span class='muted'>({_e(passage_id)})</span>"


def _failures_html(report: Report) -> str:
    from rageval.reteval import CATEGORY_NAMES

    if report.failure_judge is None or report.failure_sample is None:
        return ("<p class='note'>This run has no LLM-retEval verdicts, so it has no failure cases (rageval evaluate "
                "--methods all computes them).</p>")
    judge, k, n = judge_name(report.failure_judge), report.failure_k, report.failure_judged
    counts = "".join(f"<tr><th scope='row'>{_e(c)}</th><td>{_e(name)}</td><td>{report.failure_counts.get(c, 0):,}"
                     "</td></tr>" for c, name in CATEGORY_NAMES.items())
    sample = "".join(
        f"<tr><td>{_e(row.category)}</td><td>{_e(row.query_id)}</td><td>{_e(_cut(row.text))}</td>"
        f"<td>{_e(MISSING if row.answer is None else _cut(row.answer))}</td><td class='passage'>"
        f"{_passage_html(row.top_passage)}</td><td>{_e(_cut(row.reason))}</td></tr>"
        for row in report.failure_sample.itertuples(index=False))
    shown = len(report.failure_sample)
    counts_note = (f"Queries per LLM-retEval failure category at k={k} under judge {judge}, of the {n:,} queries "
                   "judged there (a query can fall in several; A-C: the retriever missed what the answer needs, D-F: "
                   "the evaluation itself erred). Each category is decided by an explicit rule over the stored facts "
                   "(rageval.reteval.classify_failures).")
    sample_note = (f"{shown} of the cases: the first {CASES_PER_CATEGORY} of each category in the run's query order "
                   f"(judge {judge}, k={k}); the answer is the end-to-end answer from the top {k} passages.")
    return (f"<table class='data' id='failure-counts'><thead><tr><th scope='col'>Category</th><th scope='col'>What "
            f"failed</th><th scope='col'>Queries at k={k}</th></tr></thead><tbody>{counts}</tbody></table>"
            f"<p class='caption'>{_e(counts_note)}</p><div class='scroll'><table class='data' id='failure-cases'>"
            f"<thead><tr><th scope='col'>Category</th><th scope='col'>Query</th><th scope='col'>Question</th>"
            f"<th scope='col'>Answer at k={k}</th><th scope='col'>Passage ranked first</th><th scope='col'>Why</th>"
            f"</tr></thead><tbody>{sample}</tbody></table></div><p class='caption'>{_e(sample_note)}</p>")


def _numbers_html(report: Report) -> str:
    counts = report.counts
    e2e = MISSING
    if report.e2e is not None:
        shown = (_share(report.e2e) if report.e2e_interval == "Wilson" else
                 _estimate(report.e2e.mean, report.e2e.low, report.e2e.high))
        e2e = (f"{shown} ({report.e2e_interval} 95% interval) over {report.e2e.n:,} queries, from the top "
               f"{report.main_k} passages")
    items = [("Queries", f"{counts.get('queries', 0):,}"), ("Passages", f"{counts.get('passages', 0):,}"),
             ("Ranking rows", f"{counts.get('rankings', 0):,}"),
             ("LLM outputs", f"{counts.get('doc_outputs', 0) + counts.get('e2e_outputs', 0):,}"),
             (f"E2E {report.metric} (mean)", e2e)]
    return "<dl class='numbers'>" + "".join(f"<div><dt>{_e(a)}</dt><dd>{_e(b)}</dd></div>" for a, b in items) + "</dl>"


#: Light and dark (the reader's setting), readable in print; colours as the dashboard's theme uses them.
STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --line: #d1d9e0; --panel: #f6f8fa;
  --accent: #1f6feb; --other: #8250df; --warn: #bc4c00; --good: #1a7f37; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --line: #3d444d;
  --panel: #151b23; --accent: #4493f8; --other: #ab7df8; --warn: #f0883e; --good: #3fb950; } }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 1100px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem;
  border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
.provenance, .caption, .note { color: var(--muted); font-size: .9rem; }
.note { border-left: 3px solid var(--warn); padding-left: .6rem; }
table { border-collapse: collapse; } th, td { text-align: left; vertical-align: top; padding: .35rem .6rem; }
table.data { width: 100%; font-size: .9rem; } table.data th, table.data td { border-bottom: 1px solid var(--line); }
table.data thead th { background: var(--panel); } tr.this-run td { font-weight: 600; }
.scroll { overflow-x: auto; }
.two-by-two td.cell { border: 1px solid var(--line); min-width: 14rem; text-align: center; padding: .8rem; }
.two-by-two td.warn { border: 2px solid var(--warn); }
.count { font-size: 1.8rem; font-weight: 650; } .share { color: var(--muted); }
ul.findings li { margin: .4rem 0; } ul.warnings li { margin: .3rem 0; }
dl.numbers { display: flex; flex-wrap: wrap; gap: 1.5rem; } dl.numbers dt { color: var(--muted); font-size: .85rem; }
dl.numbers dd { margin: 0; font-size: 1.1rem; font-weight: 600; }
svg.chart { max-width: 100%; height: auto; font-size: 13px; }
svg .label, svg .value, svg .tick, svg .head { fill: var(--fg); } svg .head, svg .tick { fill: var(--muted); }
svg .grid { stroke: var(--line); } svg .axis { stroke: var(--muted); }
svg .whisker { stroke: var(--other); stroke-width: 2; } svg .dot { fill: var(--other); }
svg .erag .whisker { stroke: var(--accent); } svg .erag .dot { fill: var(--accent); }
td.passage { max-width: 22rem; } .muted { color: var(--muted); }
.bottom-line { font-size: 1.1rem; font-weight: 600; border-left: 4px solid var(--accent); padding-left: .7rem; }
svg .line { stroke-width: 2; } svg .s0 .line, svg .s0 .dot { stroke: var(--accent); fill: var(--accent); }
svg .s1 .line, svg .s1 .dot { stroke: var(--other); fill: var(--other); }
svg .s2 .line, svg .s2 .dot { stroke: var(--warn); fill: var(--warn); }
svg .s3 .line, svg .s3 .dot { stroke: var(--good); fill: var(--good); }
svg .s4 .line, svg .s4 .dot, svg .s5 .line, svg .s5 .dot { stroke: var(--muted); fill: var(--muted); }
svg .line { fill: none !important; } svg .s0 .label { fill: var(--accent); } svg .s1 .label { fill: var(--other); }
svg .s2 .label { fill: var(--warn); } svg .s3 .label { fill: var(--good); }
dl.glossary dt { font-weight: 600; margin-top: .5rem; }
dl.glossary dd { margin-left: 0; color: var(--muted); }
footer { margin-top: 3rem; color: var(--muted); font-size: .8rem; }
"""

#: No fetch of any kind: no script, no frame, no remote image, font or style; inline styles and data: images only.
CONTENT_SECURITY_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src 'none'; "
                           "script-src 'none'; connect-src 'none'; frame-src 'none'; form-action 'none'; "
                           "base-uri 'none'")


def render_html(report: Report, now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> str:
    """The report as one self-contained HTML document (see the module docstring)."""
    from rageval.findings import no_finding_text
    from rageval.version import __version__

    settings = report.settings
    k = report.main_k
    title = f"rageval report: {report.name}"
    findings_html = ("".join(f"<li>{_e(f.text)}</li>" for f in report.findings) if report.findings else
                     f"<li>{_e(no_finding_text(report.held))}</li>")
    warnings_html = "" if not report.warnings else (
        "<h3>Label methods whose correlations mean little</h3><ul class='warnings'>"
        + "".join(f"<li>{_e(w.text)}</li>" for w in report.warnings) + "</ul>")
    created = settings.get("created_at")
    heading = "Gold passage retrieved × answer right" + (
        f" {report.gold.answer_at}" if report.gold is not None else f" at k={k}" if k is not None else "")
    footer = (f"Written by rageval {__version__} (rageval report) on {now():%Y-%m-%d %H:%M} UTC from "
              f"{report.path.name}. A self-contained file: no script, nothing loaded from a network.")
    made = f"Run file {report.path.name}" + (f", created {created}" if created else "")
    sections = [
        f"<h1>{_e(title)}</h1>",
        f"<p class='provenance' id='provenance'>{_e(provenance_text(settings, report.counts.get('queries'), k))}</p>",
        f"<p class='bottom-line' id='bottom-line'>{_e(bottom_line(report))}</p>",
        f"<p class='provenance'>{_e(made)}. Every number below says how many queries it rests on; estimates carry "
        "95% intervals.</p>",
        f"<h2 id='findings'>{_e(heading)}</h2>",
        _two_by_two_html(report),
        "<h2>What this run says</h2>",
        f"<ul class='findings' id='sentences'>{findings_html}</ul>",
        warnings_html,
        "<h2>Which labels predict the end-to-end answer?</h2>",
        _correlation_html(report),
        "<h2>Across k</h2>",
        _sweep_html(report),
        "<h2>" + ("Runs compared" if len(report.leaderboard) > 1 else "This run's scores") + "</h2>",
        _leaderboard_html(report),
        "<h2>Failure cases</h2>",
        _failures_html(report),
        "<h2>This run in numbers</h2>",
        _numbers_html(report),
        "<h2>Glossary</h2>",
        _glossary_html(),
        f"<footer>{_e(footer)}</footer>",
    ]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CONTENT_SECURITY_POLICY}\">"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
            + "\n".join(s for s in sections if s) + "</body></html>\n")


def write_html_report(run: str | os.PathLike, out: str | os.PathLike, *, others: Sequence[str | os.PathLike] = (),
                      all_runs: bool = False) -> Path:
    """Write the report of ``run`` (a path or a run's name) to ``out``, atomically (a temporary file in the same
    folder, renamed): an interrupted write leaves no half file. Returns the path written."""
    from rageval.paths import not_writable_file

    out = Path(out).expanduser()
    reason = not_writable_file(out)
    if reason:
        raise RagevalError(f"--html {out}: {reason}; expected an .html file name")
    document = render_html(compute_report(run, others=others, all_runs=all_runs))
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    partial.write_text(document, encoding="utf-8")
    os.replace(partial, out)
    return out
