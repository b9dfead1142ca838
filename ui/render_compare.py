"""Views of the compare-runs page (``app_pages/6_Compare_runs.py``): run A against run B on one per-query score.

Pure functions from :class:`rageval.compare.Comparison` and the runs' settings to display tables and plotly
figures; outcome colours from :data:`ui.theme.OUTCOME_COLOURS`. Question text and names reach plotly only through
:mod:`ui.plot_text` (escaped) and tables only through ``st.dataframe``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rageval.compare import E2E_METHOD, OUTCOMES, Comparison, e2e_k
from rageval.report import measure_family, measure_sort_key
from ui import render, theme
from ui.plot_text import plot_text, plotly_text
from ui.render_correlations import (  # noqa: F401 (SCATTER_MAX_POINTS: re-exported for the page)
    DENSITY_BINS,
    SCATTER_MAX_POINTS,
    density_trace,
    e2e_metric_name,
    is_density,
    jitter,
)
from ui.render_inspector import inspect_links

NOT_SET = "–"


def retriever_id(settings: Mapping[str, Any]) -> str:
    """The short name of a run's retriever (``bm25``, ``dense``, ...), as far as its settings say."""
    return str(settings.get("retriever_name") or settings.get("system") or settings.get("retriever") or "")


def default_partner(run_a: str, runs: Sequence[str], settings: Mapping[str, Mapping[str, Any]],
                    shared: Mapping[str, int] | None = None) -> str:
    """Run B to show against ``run_a`` when the URL names none: the other run that shares the most queries with A
    (``shared``: run -> number of query ids in common with A); among equals, one on the same dataset with another
    retriever and, if possible, end-to-end answers exactly when A has them; then ``runs`` order. ``run_a`` itself
    when there is no other run."""
    others = [r for r in runs if r != run_a]
    if not others:
        return run_a
    mine = settings[run_a]
    counts = shared or {}

    def fit(run: str) -> tuple[int, bool, bool, bool]:
        theirs = settings[run]
        return (counts.get(run, 0), theirs.get("dataset") == mine.get("dataset"),
                retriever_id(theirs) != retriever_id(mine), bool(theirs.get("e2e_ks")) == bool(mine.get("e2e_ks")))
    return max(others, key=fit)  # max keeps the first of equals: runs order breaks ties


def partner_label(run: str, run_a: str, shared: Mapping[str, int]) -> str:
    """A run in the Run B selector with the number of queries it shares with A (``nq-dense · 300 shared``)."""
    return run if run == run_a else f"{run} · {shared.get(run, 0):,} shared"


def sharing_runs(run_a: str, shared: Mapping[str, int], limit: int = 5) -> list[str]:
    """The runs other than A that share queries with it, most shared first, as ``name (n)``, at most ``limit``."""
    ranked = sorted((r for r, n in shared.items() if n and r != run_a), key=lambda r: -shared[r])
    return [f"{r} ({shared[r]:,})" for r in ranked[:limit]]


def common_options(options_a: Mapping[str, Sequence[str]], options_b: Mapping[str, Sequence[str]]
                   ) -> dict[str, list[str]]:
    """The scores both runs have: label methods in display order (then ``e2e``), each with the measures both runs
    have (measure order; ``E2E@k`` by k). Methods with no shared measure are left out."""
    shared = {}
    for method in [*render.order_label_methods([m for m in options_a if m != E2E_METHOD]), E2E_METHOD]:
        measures = set(options_a.get(method, ())) & set(options_b.get(method, ()))
        if measures:
            key = e2e_k if method == E2E_METHOD else measure_sort_key
            shared[method] = sorted(measures, key=key)
    return shared


def default_measure(measures: Sequence[str], k: Any) -> str:
    """The measure a page opens on: nDCG (or the E2E score) at the run's k when there is one, else the one with
    the deepest cutoff, else the first measure."""
    for family in ("nDCG", "E2E"):
        if f"{family}@{k}" in measures:
            return f"{family}@{k}"
        deepest = sorted((m for m in measures if measure_family(m) == family), key=measure_sort_key)
        if deepest:
            return deepest[-1]
    return measures[0]


def method_label(method: str) -> str:
    return "End-to-end answer" if method == E2E_METHOD else render.method_name(method)


def score_name(method: str, measure: str, settings: Mapping[str, Any]) -> str:
    """``eRAG EM nDCG@10`` for a label method's measure, ``E2E EM@5`` for the end-to-end score at 5."""
    if method == E2E_METHOD:
        return f"{e2e_metric_name(settings)}@{e2e_k(measure)}"
    return f"{render.method_name(method)} {measure}"


def settings_comparison(settings_a: Mapping[str, Any], settings_b: Mapping[str, Any]) -> pd.DataFrame:
    """The two runs' settings side by side (:func:`ui.render.settings_frame` order, A's first), with whether
    they are equal; ``–`` where a run lacks a setting."""
    a = render.settings_frame(settings_a).set_index("Setting")["Value"]
    b = render.settings_frame(settings_b).set_index("Setting")["Value"]
    names = list(dict.fromkeys([*a.index, *b.index]))
    rows = [{"Setting": n, "Run A": a.get(n, NOT_SET), "Run B": b.get(n, NOT_SET),
             "Same": "✓" if n in a.index and n in b.index and a[n] == b[n] else "✗"} for n in names]
    return pd.DataFrame(rows, columns=["Setting", "Run A", "Run B", "Same"])


#: Settings that record how a run was made rather than what it evaluates: left out of the differences.
BOOKKEEPING_SETTINGS = frozenset({"created_at", "command", "name", "llm_calls", "timing_s", "duration_s"})


def setting_differences(settings_a: Mapping[str, Any], settings_b: Mapping[str, Any]) -> pd.DataFrame:
    """The rows of :func:`settings_comparison` that differ, bookkeeping (:data:`BOOKKEEPING_SETTINGS`) left out."""
    def evaluated(settings: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in settings.items() if k not in BOOKKEEPING_SETTINGS}

    table = settings_comparison(evaluated(settings_a), evaluated(settings_b))
    return table[table["Same"] == "✗"].drop(columns="Same").reset_index(drop=True)


def tests_view(comparison: Comparison) -> pd.DataFrame:
    """The paired tests on the shared queries: test, what it counts, and its two-sided p-value."""
    permutation, sign, mcnemar = comparison.permutation, comparison.sign, comparison.mcnemar
    if permutation.n_permutations == 0:
        how = "every query tied: nothing to permute"
    elif permutation.exact:
        how = f"exact: all {permutation.n_permutations:,} sign assignments of the non-tied differences"
    else:
        how = f"{permutation.n_permutations:,} random sign assignments, seed {permutation.seed}"
    rows = [
        ("Paired randomization test (mean difference)",
         f"mean A - B = {comparison.mean_difference:+.4f}; {how}", permutation.p_value),
        ("Sign test (exact binomial)",
         f"A better on {sign.a_better}, B better on {sign.b_better}, {sign.ties} ties left out", sign.p_value),
    ]
    if mcnemar is not None:
        rows.append(("McNemar's test (exact, binary scores)",
                     f"{mcnemar.only_a} queries right only in A, {mcnemar.only_b} only in B", mcnemar.p_value))
    return pd.DataFrame(rows, columns=["Test", "Counts", "p-value (two-sided)"])


def _hover(pairs: pd.DataFrame, texts: Mapping[str, str]) -> list[list]:
    return [[plot_text(q), plotly_text(texts.get(q, "")), float(a), float(b), float(d)]
            for q, a, b, d in zip(pairs["query_id"], pairs["a"], pairs["b"], pairs["difference"])]


_HOVER = ("query %{customdata[0]}<br>%{customdata[1]}<br>A = %{customdata[2]:.3f} · B = %{customdata[3]:.3f}"
          " · A - B = %{customdata[4]:+.3f}<extra>%{fullData.name}</extra>")


def paired_scatter_figure(pairs: pd.DataFrame, texts: Mapping[str, str], run_a: str, run_b: str, score: str):
    """A against B, one point per shared query (jittered: scores are often discrete), coloured by outcome, with
    the diagonal of ties; hover shows the query, its question and the exact values."""
    import plotly.graph_objects as go

    if is_density(len(pairs)):
        return paired_density_figure(pairs, run_a, run_b, score)
    run_a, run_b, score = plot_text(run_a), plot_text(run_b), plot_text(score)
    figure = go.Figure()
    x, y = jitter(pairs["a"], 0), jitter(pairs["b"], 1)
    values = pd.concat([pairs["a"], pairs["b"]])
    low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    figure.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", name="A = B",
                                line={"color": theme.OUTCOME_COLOURS["tie"], "dash": "dash"}, hoverinfo="skip"))
    for outcome in OUTCOMES:
        chosen = (pairs["outcome"] == outcome).to_numpy()
        figure.add_trace(go.Scatter(
            x=x[chosen].tolist(), y=y[chosen].tolist(), mode="markers", name=f"{outcome} ({int(chosen.sum())})",
            marker={"color": theme.OUTCOME_COLOURS[outcome], "size": 8, "opacity": 0.7},
            customdata=_hover(pairs[chosen], texts), hovertemplate=_HOVER))
    figure.update_layout(title={"text": f"{score} per query: run A against run B"},
                         xaxis_title=f"A: {run_a} (jittered)", yaxis_title=f"B: {run_b} (jittered)", height=460,
                         legend={"title": {"text": "outcome"}})
    return figure


def paired_density_figure(pairs: pd.DataFrame, run_a: str, run_b: str, score: str):
    """:func:`paired_scatter_figure` for more than :data:`~ui.render_correlations.SCATTER_MAX_POINTS` shared
    queries: a heatmap of how many queries have each (A, B) pair of values, both axes on the same cells, so the
    diagonal holds the ties, cells above it B better, below it A better."""
    import plotly.graph_objects as go

    figure = go.Figure(density_trace(pairs["a"], pairs["b"], f"A: {run_a}", f"B: {run_b}", shared_levels=True))
    figure.update_layout(title={"text": f"{plot_text(score)}: queries per (A, B) pair; diagonal A = B"},
                         xaxis_title=f"A: {plot_text(run_a)}", yaxis_title=f"B: {plot_text(run_b)}", height=460,
                         xaxis={"type": "category"}, yaxis={"type": "category"})
    return figure


def difference_figure(pairs: pd.DataFrame, score: str):
    """Histogram of the per-query differences A - B, stacked by outcome (past
    :data:`~ui.render_correlations.SCATTER_MAX_POINTS` queries, binned here and drawn as bars: the same histogram
    without sending every difference to the browser)."""
    import plotly.graph_objects as go

    score = plot_text(score)
    figure = go.Figure()
    if is_density(len(pairs)):
        differences = pairs["difference"].to_numpy(float)
        distinct = np.unique(differences)
        edges = (np.concatenate([distinct - 1e-9, [distinct[-1] + 1e-9]]) if len(distinct) <= 2 * DENSITY_BINS
                 else np.linspace(distinct[0], distinct[-1], 2 * DENSITY_BINS + 1))
        centres = distinct if len(distinct) <= 2 * DENSITY_BINS else (edges[:-1] + edges[1:]) / 2
        for outcome in OUTCOMES:
            chosen = (pairs["outcome"] == outcome).to_numpy()
            counts, _ = np.histogram(differences[chosen], bins=edges)
            figure.add_trace(go.Bar(x=centres.round(4).tolist(), y=counts.tolist(),
                                    name=f"{outcome} ({int(chosen.sum())})",
                                    marker={"color": theme.OUTCOME_COLOURS[outcome]},
                                    hovertemplate="A - B near %{x}: %{y} queries<extra>%{fullData.name}</extra>"))
        figure.update_layout(title={"text": f"Per-query difference of {score}, A - B"}, barmode="stack",
                             xaxis_title=f"{score}: A - B", yaxis_title="queries", height=460,
                             legend={"title": {"text": "outcome"}})
        return figure
    for outcome in OUTCOMES:
        chosen = pairs[pairs["outcome"] == outcome]
        figure.add_trace(go.Histogram(x=chosen["difference"].tolist(), name=f"{outcome} ({len(chosen)})",
                                      marker={"color": theme.OUTCOME_COLOURS[outcome]},
                                      hovertemplate="A - B in %{x}: %{y} queries<extra>%{fullData.name}</extra>"))
    figure.update_layout(title={"text": f"Per-query difference of {score}, A - B"}, barmode="stack",
                         xaxis_title=f"{score}: A - B", yaxis_title="queries", height=460,
                         legend={"title": {"text": "outcome"}})
    return figure


def changed_view(changed: pd.DataFrame, texts: Mapping[str, str], run_a: str, run_b: str,
                 run_orders: tuple[Sequence[str], Sequence[str]] | None = None, list_name: str = "") -> pd.DataFrame:
    """The queries that changed most: id, question, both values, the difference, the outcome and a link to the
    query inspector in each run, which walks these queries in this order when the runs' query orders
    ``run_orders`` (A, B) are given (:func:`ui.render_inspector.inspect_links`)."""
    ids = changed["query_id"].tolist()
    if run_orders is None:
        links_a = [render.inspector_url(run_a, q) for q in ids]
        links_b = [render.inspector_url(run_b, q) for q in ids]
    else:
        links_a = inspect_links(run_a, ids, run_orders[0], list_name)
        links_b = inspect_links(run_b, ids, run_orders[1], list_name)
    return pd.DataFrame({
        "Query": ids, "Question": [texts.get(q, "") for q in ids],
        "A": changed["a"].astype(float), "B": changed["b"].astype(float),
        "A - B": changed["difference"].astype(float), "Outcome": changed["outcome"],
        "Inspect in A": links_a, "Inspect in B": links_b,
    })


def dropped_scores_note(dropped: Mapping[str, int], score: str) -> str:
    """Escaped Markdown warning: per run (``{"A": n, "B": m}``), how many per-query values of ``score`` were left
    out as missing or not finite numbers."""
    counts = ", ".join(f"{n} in run {run}" for run, n in dropped.items() if n)
    return render.escape_markdown(f"Left out: per-query values of {score} that are missing or not a finite number in "
                                  f"the run file ({counts}); those queries count as only in the other run.")
