"""Views of the compare-runs page (``app_pages/6_Compare_runs.py``): run A against run B on one per-query score.

Pure functions from :class:`rageval.compare.Comparison` and the runs' settings to display tables and Vega-Lite
charts (``(data, spec)`` for ``st.vega_lite_chart``; outcome colours from :data:`ui.theme.OUTCOME_COLOURS`). Vega-Lite
draws every label and tooltip as text, so question text and names go into the charts unescaped; tables show them
through ``st.dataframe``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from rageval.compare import E2E_METHOD, OUTCOMES, Comparison, e2e_k
from rageval.correlations import measure_family, measure_sort_key
from ui import format as fmt
from ui import render, theme
from ui.render_correlations import (  # noqa: F401 (SCATTER_MAX_POINTS: re-exported for the page)
    DENSITY_BINS,
    SCATTER_MAX_POINTS,
    e2e_metric_name,
    grid_axis,
    is_density,
    jitter,
    tooltip_text,
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
    return "End-to-end answer" if method == E2E_METHOD else fmt.method_name(method)


def score_name(method: str, measure: str, settings: Mapping[str, Any]) -> str:
    """``eRAG EM nDCG@10`` for a label method's measure, ``E2E EM@5`` for the end-to-end score at 5."""
    if method == E2E_METHOD:
        return f"{e2e_metric_name(settings)}@{e2e_k(measure)}"
    return f"{fmt.method_name(method)} {measure}"


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


#: Height of both charts, in pixels, titles and legends included (``st.vega_lite_chart(height=...)``: a height in
#: the spec would be the plot's alone, and Streamlit's fitting would push the title out of view).
CHART_HEIGHT = 460


def _outcome_colour(counts: Mapping[str, int]) -> dict:
    """The colour channel of both charts: the fixed outcome colours (ui.theme), the legend naming each outcome with
    its number of queries (``tie (12)``)."""
    label = "datum.label"
    for outcome in reversed(OUTCOMES):  # a chain of conditionals over the three fixed outcome names
        label = (f"datum.label === {json.dumps(outcome)} ? {json.dumps(f'{outcome} ({counts.get(outcome, 0):,})')}"
                 f" : ({label})")
    return {"field": "outcome", "type": "nominal", "title": "outcome",
            "scale": {"domain": list(OUTCOMES), "range": [theme.OUTCOME_COLOURS[o] for o in OUTCOMES]},
            "legend": {"labelExpr": label, "orient": "bottom"}}


def _outcome_counts(pairs: pd.DataFrame) -> dict[str, int]:
    return {o: int(n) for o, n in pairs["outcome"].value_counts().items()}


def paired_scatter_chart(pairs: pd.DataFrame, texts: Mapping[str, str], run_a: str, run_b: str, score: str
                         ) -> tuple[pd.DataFrame, dict]:
    """A against B, one point per shared query (jittered: scores are often discrete), coloured by outcome, with
    the dashed diagonal of ties; the tooltip shows the query, its (shortened) question and the exact values. As
    ``(data, Vega-Lite spec)`` for ``st.vega_lite_chart`` (Vega-Lite rather than plotly: a sixth of plotly.js's
    browser code). Both axes include 0 (``zero``). Past :data:`~ui.render_correlations.SCATTER_MAX_POINTS`
    queries, :func:`paired_density_chart` instead. Names go in as they are: Vega-Lite draws text as text."""
    if is_density(len(pairs)):
        return paired_density_chart(pairs, run_a, run_b, score)
    data = pd.DataFrame({
        "query_id": pairs["query_id"].astype(str).to_numpy(),
        "question": [tooltip_text(texts.get(q, "")) for q in pairs["query_id"]],
        "a": pairs["a"].to_numpy(float), "b": pairs["b"].to_numpy(float),
        "difference": pairs["difference"].to_numpy(float), "outcome": pairs["outcome"].to_numpy(),
        "x": jitter(pairs["a"], 0), "y": jitter(pairs["b"], 1)})
    values = np.concatenate([data["a"].to_numpy(), data["b"].to_numpy()])
    low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    axis_x = {"field": "x", "type": "quantitative", "title": f"A: {run_a} (jittered)", "scale": {"zero": True}}
    axis_y = {"field": "y", "type": "quantitative", "title": f"B: {run_b} (jittered)", "scale": {"zero": True}}
    spec = {
        "title": f"{score} per query: run A against run B",
        "layer": [
            {"data": {"values": [{"x": low, "y": low}, {"x": high, "y": high}]},  # the diagonal A = B
             "mark": {"type": "line", "strokeDash": [6, 4], "color": theme.OUTCOME_COLOURS["tie"]},
             "encoding": {"x": axis_x, "y": axis_y}},
            {"mark": {"type": "circle", "size": 60, "opacity": 0.7},
             "encoding": {
                 "x": axis_x, "y": axis_y, "color": _outcome_colour(_outcome_counts(pairs)),
                 "tooltip": [{"field": "query_id", "title": "query"}, {"field": "question"},
                             {"field": "a", "type": "quantitative", "title": "A", "format": ".3f"},
                             {"field": "b", "type": "quantitative", "title": "B", "format": ".3f"},
                             {"field": "difference", "type": "quantitative", "title": "A - B", "format": "+.3f"},
                             {"field": "outcome"}]}},
        ],
    }
    return data, spec


def paired_density_chart(pairs: pd.DataFrame, run_a: str, run_b: str, score: str) -> tuple[pd.DataFrame, dict]:
    """:func:`paired_scatter_chart` for more than :data:`~ui.render_correlations.SCATTER_MAX_POINTS` shared
    queries: a grid of how many queries have each (A, B) pair of values (the cells counted here: only the non-empty
    cells reach the browser, no per-query mark or tooltip), both axes on the same cells
    (:func:`~ui.render_correlations.grid_axis`), so the diagonal (outlined) holds the ties, the cells above it B
    better, below it A better. As ``(data, Vega-Lite spec)``."""
    a, b = pairs["a"].to_numpy(float), pairs["b"].to_numpy(float)
    levels = cast("Sequence[float]", np.concatenate([a, b]))  # grid_axis takes any array-like
    a_codes, labels = grid_axis(a, levels)
    b_codes, _ = grid_axis(b, levels)
    counts = np.zeros((len(labels), len(labels)), dtype=np.int64)
    np.add.at(counts, (a_codes, b_codes), 1)
    a_cells, b_cells = np.nonzero(counts)
    data = pd.DataFrame({"a_cell": [labels[i] for i in a_cells], "b_cell": [labels[j] for j in b_cells],
                         "queries": counts[a_cells, b_cells], "tie_cell": a_cells == b_cells})
    x = {"field": "a_cell", "type": "ordinal", "sort": labels, "title": f"A: {run_a}", "scale": {"domain": labels}}
    y = {"field": "b_cell", "type": "ordinal", "sort": labels[::-1], "title": f"B: {run_b}",
         "scale": {"domain": labels[::-1]}}  # B grows upwards, as on a scatter
    half = int(data["queries"].max()) / 2 if len(data) else 0
    spec = {
        "title": f"{score}: queries per (A, B) pair; diagonal A = B",
        "encoding": {"x": x, "y": y},
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {"color": {"field": "queries", "type": "quantitative", "title": "queries",
                                    "scale": {"scheme": "blues"}},
                          "tooltip": [{"field": "a_cell", "title": "A"}, {"field": "b_cell", "title": "B"},
                                      {"field": "queries", "type": "quantitative", "format": ","}]}},
            {"transform": [{"filter": "datum.tie_cell"}],
             "mark": {"type": "rect", "fillOpacity": 0, "stroke": theme.OUTCOME_COLOURS["tie"], "strokeWidth": 2}},
            {"mark": {"type": "text", "fontSize": 10},
             "encoding": {"text": {"field": "queries", "type": "quantitative", "format": ","},
                          # dark digits on the light cells, white ones on the dark cells: readable on both themes
                          "color": {"condition": {"test": f"datum.queries > {half}", "value": "#ffffff"},
                                    "value": "#000000"}}},
        ],
    }
    return data, spec


def difference_bins(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Bars of the difference histogram: (starts, ends, labels, each difference's bar). With n =
    2 x :data:`~ui.render_correlations.DENSITY_BINS`: one bar per distinct difference when there are at most n and
    no two are closer than 1/n of their range (discrete scores; each bar centred on its value, 0.8 of the least gap
    wide, labelled by it), else n equal-width bins over their range, each holding its start and the last one its
    end too (as ``np.histogram``), labelled by their range."""
    distinct = np.unique(differences)
    if len(distinct) == 0:
        return np.array([]), np.array([]), [], np.array([], dtype=np.int64)
    gap = float(np.diff(distinct).min()) if len(distinct) > 1 else 0.0
    if len(distinct) == 1 or (len(distinct) <= 2 * DENSITY_BINS
                              and gap * 2 * DENSITY_BINS >= distinct[-1] - distinct[0] - 1e-12):
        half = 0.4 * gap if len(distinct) > 1 else 0.05
        return (distinct - half, distinct + half, [f"{v:+.3g}" for v in distinct],
                np.searchsorted(distinct, differences))
    edges = np.linspace(distinct[0], distinct[-1], 2 * DENSITY_BINS + 1)
    cells = np.clip(np.searchsorted(edges, differences, side="right") - 1, 0, 2 * DENSITY_BINS - 1)
    return edges[:-1], edges[1:], [f"{s:+.3f} to {e:+.3f}" for s, e in itertools.pairwise(edges)], cells


def difference_chart(pairs: pd.DataFrame, score: str) -> tuple[pd.DataFrame, dict]:
    """Histogram of the per-query differences A - B, stacked by outcome, with a dashed line at 0 (no difference).
    The bars are counted here (:func:`difference_bins`): at most 3 x 40 rows reach the browser whatever the number
    of queries. As ``(data, Vega-Lite spec)``; the count axis starts at 0."""
    starts, ends, labels, cells = difference_bins(pairs["difference"].to_numpy(float))
    rows = []
    for outcome in OUTCOMES:
        counts = np.bincount(cells[(pairs["outcome"] == outcome).to_numpy()], minlength=len(labels))
        rows += [(outcome, float(starts[i]), float(ends[i]), labels[i], int(counts[i])) for i in np.nonzero(counts)[0]]
    data = pd.DataFrame(rows, columns=["outcome", "start", "end", "difference", "queries"])
    # pre-counted bars ("binned": start and end given), so the bars stand on the x axis
    axis_x = {"field": "start", "type": "quantitative", "bin": "binned", "title": f"{score}: A - B"}
    spec = {
        "title": f"Per-query difference of {score}, A - B",
        "layer": [
            {"mark": {"type": "bar"},
             "encoding": {"x": axis_x, "x2": {"field": "end"},
                          "y": {"field": "queries", "type": "quantitative", "stack": "zero", "title": "queries",
                                "scale": {"zero": True}, "axis": {"tickMinStep": 1}},
                          "color": _outcome_colour(_outcome_counts(pairs)),
                          "order": {"field": "outcome", "sort": "ascending"},
                          "tooltip": [{"field": "difference", "title": "A - B"}, {"field": "outcome"},
                                      {"field": "queries", "type": "quantitative", "format": ","}]}},
            {"mark": {"type": "rule", "strokeDash": [6, 4], "color": theme.OUTCOME_COLOURS["tie"]},
             "encoding": {"x": {"datum": 0, "type": "quantitative"}}},  # no difference
        ],
    }
    return data, spec


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
