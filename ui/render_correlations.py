"""Views of the correlations page (``app_pages/5_Correlations.py``): how well a label method's per-query measure
predicts the downstream (end-to-end) score, query by query.

Pure functions from the data layer's tables to display tables and Vega-Lite charts (``(data, spec)`` for
``st.vega_lite_chart``). Vega-Lite rather than plotly: its browser code is a sixth of plotly.js's 4.7 MB, which
alone cost ~1.8 s of a cold page. Vega-Lite draws names, questions and tooltips as text, so they need no escaping.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rageval.correlations import ConstantSides, measure_sort_key
from rageval.stats.correlation import MIN_INTERVAL_QUERIES, has_interval, too_few_for_interval
from ui import format as fmt
from ui import render, theme
from ui.render_inspector import inspect_links

#: Downstream metric names (the run's ``label_metric`` setting scores the E2E answers too; ``rageval.erag``).
METRIC_NAMES = {"em": "EM", "f1": "token F1", "accuracy": "accuracy", "rougeL": "ROUGE-L", "bertscore": "BERTScore"}
JITTER_SEED = 0
#: Crosstab rows/columns: a value of its own up to this many distinct values, else equal-width bins.
MAX_COUNT_LEVELS = 12
COUNT_BINS = 5


def e2e_metric_name(settings: Mapping[str, Any]) -> str:
    """The name of the E2E score: ``E2E EM`` for a run whose label metric is ``em``."""
    metric = str(settings.get("label_metric", "score"))
    return f"E2E {METRIC_NAMES.get(metric, metric)}"


def measure_options(measure_table: pd.DataFrame, method: str, k: int) -> list[str]:
    """The measures of ``method`` to plot against the E2E score at ``k``: those at cutoff k (those at every cutoff
    when none is at k) and those without a cutoff (R-precision), in measure order."""
    measures = set(measure_table.loc[measure_table["method"] == method, "measure"])
    with_cutoff = [m for m in measures if "@" in m]
    at_k = [m for m in with_cutoff if m.endswith(f"@{k}")] or with_cutoff
    return sorted([*at_k, *(m for m in measures if "@" not in m)], key=measure_sort_key)


#: Past this many points a per-query scatter is drawn as a density grid (queries per cell, a heatmap): an SVG
#: point with its hover text per query costs the browser seconds at 10,000 and a minute at 100,000.
SCATTER_MAX_POINTS = 5_000
#: Cells per axis of a density grid when a value has more distinct values than this (else one cell per value).
DENSITY_BINS = 20


def is_density(n_points: int) -> bool:
    """Whether a scatter of ``n_points`` is drawn as a density grid (:data:`SCATTER_MAX_POINTS`)."""
    return n_points > SCATTER_MAX_POINTS


def grid_axis(values: Sequence[float], levels: Sequence[float] | None = None) -> tuple[np.ndarray, list[str]]:
    """Cells of one axis of a density grid: each value's cell and the cells' labels. One cell per distinct value
    (of ``levels``, default ``values``) when there are at most :data:`DENSITY_BINS`, labelled by the value;
    else :data:`DENSITY_BINS` equal-width bins, labelled by their range."""
    x = np.asarray(values, dtype=float)
    distinct = np.unique(np.asarray(x if levels is None else levels, dtype=float))
    if len(distinct) <= DENSITY_BINS:
        return np.searchsorted(distinct, x), [f"{v:.3g}" for v in distinct]
    edges = np.linspace(distinct[0], distinct[-1], DENSITY_BINS + 1)
    codes = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, DENSITY_BINS - 1)
    return codes, [f"{a:.2f}–{b:.2f}" for a, b in itertools.pairwise(edges)]


def density_counts(x_codes: np.ndarray, y_codes: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Queries per (y cell, x cell)."""
    counts = np.zeros(shape, dtype=np.int64)
    np.add.at(counts, (y_codes, x_codes), 1)
    return counts


#: The selection parameter of a density grid (a click picks a cell, shift-click adds one): its cells' labels.
CELL_SELECTION = "cell"


def density_cells(x: Sequence[float], y: Sequence[float], *, shared_levels: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Each point's (x cell, y cell) and the cells' labels of both axes (:func:`grid_axis`); ``shared_levels``:
    both axes get the cells of x and y together (so the diagonal holds the equal pairs)."""
    levels = np.concatenate([np.asarray(x, float), np.asarray(y, float)]) if shared_levels else None
    x_codes, x_labels = grid_axis(x, levels)
    y_codes, y_labels = grid_axis(y, levels)
    return x_codes, y_codes, x_labels, y_labels


def density_chart(x: Sequence[float], y: Sequence[float], x_name: str, y_name: str, title: str, *,
                  shared_levels: bool = False) -> tuple[pd.DataFrame, dict]:
    """A grid of how many queries fall in each (x cell, y cell) (:func:`density_cells`), as ``(cells, Vega-Lite
    spec)`` for ``st.vega_lite_chart``: one row per non-empty cell (x_cell, y_cell, queries), so the browser gets at
    most :data:`DENSITY_BINS` squared rows whatever the number of queries. A click selects a cell
    (:data:`CELL_SELECTION`, read back by :func:`selected_cells`). Vega-Lite draws names as text: no escaping."""
    x_codes, y_codes, x_labels, y_labels = density_cells(x, y, shared_levels=shared_levels)
    counts = density_counts(x_codes, y_codes, (len(y_labels), len(x_labels)))
    rows, columns = np.nonzero(counts)
    cells = pd.DataFrame({"x_cell": [x_labels[c] for c in columns], "y_cell": [y_labels[r] for r in rows],
                          "queries": counts[rows, columns]})
    x_axis = {"field": "x_cell", "type": "ordinal", "sort": x_labels, "title": x_name, "scale": {"domain": x_labels}}
    y_axis = {"field": "y_cell", "type": "ordinal", "sort": y_labels[::-1], "title": y_name,
              "scale": {"domain": y_labels[::-1]}}  # the lowest value at the bottom, as on a scatter
    tooltip = [{"field": "x_cell", "title": x_name}, {"field": "y_cell", "title": y_name},
               {"field": "queries", "title": "queries", "format": ","}]
    spec = {
        "title": title, "height": 460,
        "encoding": {"x": x_axis, "y": y_axis},
        "layer": [
            {"params": [{"name": CELL_SELECTION, "select": {"type": "point", "fields": ["x_cell", "y_cell"]}}],
             "mark": {"type": "rect", "tooltip": True},
             "encoding": {"color": {"field": "queries", "type": "quantitative", "title": "queries",
                                    "scale": {"scheme": "blues"}},
                          "opacity": {"condition": {"param": CELL_SELECTION, "value": 1}, "value": 0.35},
                          "tooltip": tooltip}},
            {"mark": {"type": "text", "baseline": "middle"},
             "encoding": {"text": {"field": "queries", "type": "quantitative", "format": ","},
                          "color": {"condition": {"test": f"datum.queries > {float(counts.max()) / 2}",
                                                  "value": "#ffffff"}, "value": "#1f1f1f"},
                          "tooltip": tooltip}},
        ],
    }
    return cells, spec


def selected_cells(selection: Any) -> set[tuple[str, str]]:
    """The (x cell, y cell) labels a user picked on a :func:`density_chart` (``st.vega_lite_chart``'s event)."""
    picked = _selection_part(selection, CELL_SELECTION) or []
    return {(str(p["x_cell"]), str(p["y_cell"])) for p in picked if "x_cell" in p and "y_cell" in p}


def _selection_part(selection: Any, name: str) -> Any:
    """One selection parameter's value of a Vega-Lite chart's event (``{"selection": {name: ...}}``), or None."""
    try:
        return selection["selection"][name]
    except (KeyError, TypeError):
        return None


def jitter(values: Sequence[float], seed: int = JITTER_SEED) -> np.ndarray:
    """``values`` plus uniform noise in [-a, a], a = a quarter of the smallest gap between distinct values (at most
    a tenth of their range, or 0.1 when there is one value): points on the same discrete value spread out but never
    reach the next value. Deterministic for a given seed."""
    x = np.asarray(values, dtype=float)
    levels = np.unique(x[np.isfinite(x)])
    if len(levels) > 1:
        amplitude = min(np.diff(levels).min() / 4, (levels[-1] - levels[0]) / 10)
    else:
        amplitude = 0.1
    return x + np.random.default_rng(seed).uniform(-amplitude, amplitude, size=len(x))


#: The scatter's selection parameters: a box drawn by dragging (its x and y ranges), points clicked (their rows).
SCATTER_BOX, SCATTER_PICK = "box", "pick"
SCATTER_SUBTITLE = "one point per query"


def scatter_chart(points: pd.DataFrame, method: str, measure: str, k: int, metric: str) -> tuple[pd.DataFrame, dict]:
    """Per-query scatter: ``method``'s ``measure`` (x) against the E2E score at ``k`` (y), both jittered, in the
    method's colour, as ``(data, Vega-Lite spec)`` for ``st.vega_lite_chart``; the tooltip shows the query id, its
    question (cut to :data:`HOVER_CHARS`) and the exact values. Dragging selects a box (:data:`SCATTER_BOX`),
    clicking selects points (:data:`SCATTER_PICK`; :func:`selected_rows`). ``points``: query_id, question, value,
    e2e (:func:`ui.data_correlations.load_scatter_points`). Past :data:`SCATTER_MAX_POINTS` queries, a
    :func:`density_chart` instead."""
    name = f"{fmt.method_name(method)} {measure}"
    if is_density(len(points)):
        return density_chart(points["value"], points["e2e"], name, f"{metric}@{k}",
                             {"text": [f"Queries per value pair ({len(points):,} queries)",
                                       "click a cell to list its queries"]})
    data = pd.DataFrame({"row": np.arange(len(points)), "query": points["query_id"].astype(str).to_numpy(),
                         "question": [tooltip_text(q) for q in points["question"]],
                         "value": points["value"].astype(float).to_numpy(),
                         "e2e": points["e2e"].astype(float).to_numpy(),
                         "x": jitter(points["value"], JITTER_SEED), "y": jitter(points["e2e"], JITTER_SEED + 1)})
    spec = {
        # Two short lines: one long line is cut in a narrow column (800 px wide windows).
        # (A title of two lines, not a subtitle: Streamlit's dark theme does not colour a Vega-Lite subtitle.)
        "title": {"text": [f"{name} vs {metric}@{k}", SCATTER_SUBTITLE]},
        "height": 460,
        "params": [{"name": SCATTER_BOX, "select": {"type": "interval", "encodings": ["x", "y"]}},
                   {"name": SCATTER_PICK, "select": {"type": "point", "fields": ["row"]}}],
        "mark": {"type": "circle", "size": 64, "color": theme.method_colours([method])[method], "tooltip": True},
        "encoding": {
            # 12 px of room beyond the jittered extremes, so that no point sits on the frame (where a box dragged
            # from inside the frame would miss it).
            "x": {"field": "x", "type": "quantitative", "title": f"{name} (jittered)", "scale": {"padding": 12}},
            "y": {"field": "y", "type": "quantitative", "title": f"{metric}@{k} (jittered)",
                  "scale": {"padding": 12}},
            "opacity": {"condition": {"param": SCATTER_PICK, "value": 0.75}, "value": 0.15},
            "tooltip": [{"field": "query", "title": "query"}, {"field": "question", "title": "question"},
                        {"field": "value", "title": name, "format": ".3f"},
                        {"field": "e2e", "title": f"{metric}@{k}", "format": ".3f"}],
        },
    }
    return data, spec


#: Characters of a question in a tooltip at most.
HOVER_CHARS = 120


def tooltip_text(text: Any, limit: int = HOVER_CHARS) -> str:
    """Data text (a question) for a Vega-Lite tooltip: whitespace collapsed, cut to ``limit`` characters. Not
    escaped: Vega-Lite's tooltip shows text as text (checked in tests/browser/test_browser_pages.py)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def correlation_estimate(value: float) -> str:
    """The metric of a correlation: ``0.412``, or ``undefined (constant)`` (:func:`ui.format.format_correlation`)."""
    return fmt.format_correlation(value, math.nan, math.nan)


def correlation_interval(low: float, high: float, n: int) -> str:
    """The line under a correlation's metric: ``95% interval [0.21, 0.60]``; that it has none (undefined); or, over
    fewer than :data:`~rageval.stats.correlation.MIN_INTERVAL_QUERIES` queries, "too few queries for an interval
    (n = 5 < 20)"."""
    interval = fmt.format_interval(low, high)
    if interval == fmt.MISSING:
        return "no interval (undefined)"
    return f"95% interval {interval}" if has_interval(n) else too_few_for_interval(n)


def correlation_cell(value: float, low: float, high: float, n: int) -> str:
    """A table cell: ``0.412 [0.21, 0.60]``; ``undefined (constant)``; over fewer than
    :data:`~rageval.stats.correlation.MIN_INTERVAL_QUERIES` queries the estimate alone, marked
    ``0.250 (no interval: n < 20)``."""
    if fmt.is_missing(value) or has_interval(n):
        return fmt.format_correlation(value, low, high)
    return f"{fmt.format_correlation(value, math.nan, math.nan)} (no interval: n < {MIN_INTERVAL_QUERIES})"


def correlation_view(table: pd.DataFrame, statistic: str) -> pd.DataFrame:
    """One statistic (``tau`` or ``rho``) per cell (:func:`correlation_cell`): one row per measure, one column per
    method; ``–`` where a method has no such measure (graded labels have only P, nDCG and Hit)."""
    cells = [correlation_cell(v, lo, hi, int(n)) for v, lo, hi, n in
             zip(table[statistic], table[f"{statistic}_low"], table[f"{statistic}_high"], table["n"])]
    wide = table.assign(cell=cells).pivot(index="measure", columns="method", values="cell").fillna(fmt.MISSING)
    wide = wide[render.order_label_methods(list(wide.columns))].rename(columns=fmt.method_name)
    wide = wide.loc[sorted(wide.index, key=measure_sort_key)]
    wide.index.name = "Measure"
    wide.columns.name = None
    return wide


def best_measures_view(best: pd.DataFrame) -> pd.DataFrame:
    """One row per label method: its best measure (by Kendall's tau) with tau and rho (:func:`correlation_cell`)."""
    if best.empty:
        return pd.DataFrame(columns=["Labels", "Best measure", "Kendall's tau-b", "Spearman's rho", "n"])
    best = best.set_index("method").loc[render.order_label_methods(list(best["method"]))]
    return pd.DataFrame({
        "Labels": [fmt.method_name(m) for m in best.index],
        "Best measure": best["measure"].to_list(),
        "Kendall's tau-b": [correlation_cell(r.tau, r.tau_low, r.tau_high, int(r.n)) for r in best.itertuples()],
        "Spearman's rho": [correlation_cell(r.rho, r.rho_low, r.rho_high, int(r.n)) for r in best.itertuples()],
        "n": best["n"].astype(int).to_list(),
    })


def constant_e2e_text(sides: ConstantSides, metric: str) -> str:
    """Why every coefficient at k is undefined when the E2E score is constant there, and where to look instead:
    "The E2E EM at k=10 is 0 for every query (5): nothing to correlate with. Try k=1, where it varies." Empty
    when the E2E score varies at k."""
    if not sides.e2e_constant:
        return ""
    text = (f"The {metric} at k={sides.k} is {sides.e2e_value:g} for every query ({sides.n}): nothing to correlate "
            f"with, so every coefficient at k={sides.k} is undefined.")
    other = sides.nearest_varying_k()
    if other is None:
        return text + " No k of this run has an E2E score and a measure that both vary."
    return text + f" Try k={other}, where it varies."


def constant_measure_text(sides: ConstantSides, method: str, measure: str, metric: str) -> str:
    """Why the chosen pair's coefficients are undefined when its measure is constant (and the E2E score is not):
    "Gold P@10 is 0.2 for every query with an E2E EM at k=10 (5): its coefficients are undefined." Empty
    otherwise."""
    value = sides.constant_value(method, measure)
    if sides.e2e_constant or value is None:
        return ""
    return (f"{fmt.method_name(method)} {measure} is {value:g} for every query with an {metric} at k={sides.k} "
            f"({sides.n}), while the {metric} varies: its coefficients are undefined.")


def constant_measures_text(sides: ConstantSides) -> str:
    """The measures at k that are the same for every query (so undefined in the table), when the E2E score varies:
    "Undefined because the measure is the same for every query: Gold P@10 = 0.2, ..."; empty without any."""
    if sides.e2e_constant or not sides.constant_measures:
        return ""
    return ("Undefined because the measure is the same for every query: "
            + ", ".join(f"{fmt.method_name(m)} {x} = {v:g}" for m, x, v in sides.constant_measures) + ".")


def _levels(values: pd.Series) -> pd.Series:
    """Values as crosstab levels: themselves (3 decimals) when few, else :data:`COUNT_BINS` equal-width bins."""
    rounded = values.astype(float).round(3)
    if rounded.nunique() <= MAX_COUNT_LEVELS:
        return rounded
    bins = pd.cut(values.astype(float), COUNT_BINS, include_lowest=True)
    return bins.map(lambda b: f"{b.left:.2f}–{b.right:.2f}").astype(str)


def count_table(points: pd.DataFrame, measure: str, e2e_name: str) -> pd.DataFrame:
    """How many queries have each (measure value, E2E score): the exact counts behind the jittered scatter, one
    row per measure value (or bin), one column per E2E value (or bin), with totals."""
    # pd.crosstab(..., margins=True) in array operations (its margins cost 0.3 s on any size).
    row_codes, rows = pd.factorize(_levels(points["value"]), sort=True)
    column_codes, columns = pd.factorize(_levels(points["e2e"]), sort=True)
    counts = np.zeros((len(rows), len(columns)), dtype=np.int64)
    np.add.at(counts, (row_codes, column_codes), 1)
    counts = np.vstack([np.hstack([counts, counts.sum(axis=1, keepdims=True)]),
                        np.append(counts.sum(axis=0), counts.sum())[None, :]])
    return pd.DataFrame(counts, index=pd.Index([*map(str, rows), "all"], name=measure),
                        columns=[*(f"{e2e_name} = {c}" for c in map(str, columns)), "all"])


#: Rows of the queries table at most (the most surprising first): a table of 100,000 questions with their links
#: is megabytes sent to the browser for rows nobody scrolls to.
TABLE_ROWS = 1_000


def points_view(points: pd.DataFrame, run: str, measure: str, e2e_name: str,
                run_order: Sequence[str] | None = None, list_name: str = "", limit: int | None = None,
                questions: Callable[[list[str]], Mapping[str, str]] | None = None) -> pd.DataFrame:
    """The scatter's queries as a table, surprising ones first (lowest E2E score, then highest measure): query id,
    question, measure value, E2E score and a link to the query inspector, which walks the table's queries in this
    order when the run's query order ``run_order`` is given (:func:`ui.render_inspector.inspect_links`); the first
    ``limit`` rows when given. ``questions`` (ids -> question by id) gives the questions of the rows shown when
    ``points`` has none (a big run's points are read without them)."""
    ordered = points.assign(_order=range(len(points))).sort_values(["e2e", "value", "_order"],
                                                                   ascending=[True, False, True])
    if limit is not None:
        ordered = ordered.head(limit)
    ids = ordered["query_id"].tolist()
    if run_order is None:
        links = [render.inspector_url(run, q) for q in ids]
    else:
        links = inspect_links(run, ids, run_order, list_name)
    texts = questions(ids) if questions is not None else None
    return pd.DataFrame({"Query": ids,
                         "Question": [texts.get(q, "") for q in ids] if texts is not None else ordered["question"],
                         measure: ordered["value"].astype(float), e2e_name: ordered["e2e"].astype(float),
                         "Inspect": links})


def selected_rows(selection: Any, points: pd.DataFrame) -> list[int]:
    """Rows of ``points`` a user selected on :func:`scatter_chart`'s chart (``st.vega_lite_chart``'s event): those
    inside the box dragged (on the drawn, jittered, positions) or clicked; on a density grid, those in the cells
    clicked. [] when nothing is selected."""
    if is_density(len(points)):
        cells = selected_cells(selection)
        if not cells:
            return []
        x_codes, y_codes, x_labels, y_labels = density_cells(points["value"], points["e2e"])
        wanted = np.zeros((len(y_labels), len(x_labels)), dtype=bool)
        for x_cell, y_cell in cells:
            if x_cell in x_labels and y_cell in y_labels:
                wanted[y_labels.index(y_cell), x_labels.index(x_cell)] = True
        return np.flatnonzero(wanted[y_codes, x_codes]).tolist()
    chosen: set[int] = set()
    box = _selection_part(selection, SCATTER_BOX)
    if isinstance(box, Mapping) and {"x", "y"} <= set(box):
        x, y = jitter(points["value"], JITTER_SEED), jitter(points["e2e"], JITTER_SEED + 1)
        (x_low, x_high), (y_low, y_high) = sorted(box["x"]), sorted(box["y"])
        chosen.update(np.flatnonzero((x >= x_low) & (x <= x_high) & (y >= y_low) & (y <= y_high)).tolist())
    for point in _selection_part(selection, SCATTER_PICK) or []:
        if isinstance(point, Mapping) and isinstance(point.get("row"), int) and 0 <= point["row"] < len(points):
            chosen.add(point["row"])
    return sorted(chosen)


def k_sweep_chart(sweep: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, dict]:
    """Kendall's tau against k, one line per label method (its best measure family) in the method's colour from
    :mod:`ui.theme`, as ``(data, Vega-Lite spec)``; line names are ``<method name> (<family>)``, the tooltip gives
    k, tau, the measure and n."""
    methods = render.order_label_methods(list(sweep["method"].unique()))
    colours = theme.method_colours(methods)
    order = {m: i for i, m in enumerate(methods)}
    rows = sweep.assign(_order=sweep["method"].map(order)).sort_values(["_order", "family", "k"], kind="stable")
    data = pd.DataFrame({"line": [f"{fmt.method_name(m)} ({f})" for m, f in zip(rows["method"], rows["family"])],
                         "k": rows["k"].astype(int).to_numpy(), "tau": rows["tau"].astype(float).to_numpy(),
                         "measure": rows["measure"].astype(str).to_numpy(), "n": rows["n"].astype(int).to_numpy()})
    lines = list(dict.fromkeys(data["line"]))
    line_colours = dict(zip(data["line"], (colours[m] for m in rows["method"])))
    spec = {
        "title": f"Kendall's tau-b with the {metric} at each k (best measure family per label method)",
        "height": 380,
        "mark": {"type": "line", "point": True, "tooltip": True},
        "encoding": {
            "x": {"field": "k", "type": "quantitative", "title": "k (passages given to the LLM)",
                  "axis": {"values": sorted(data["k"].unique().tolist()), "format": "d"}},
            "y": {"field": "tau", "type": "quantitative", "title": f"Kendall's tau-b with {metric}@k"},
            "color": {"field": "line", "type": "nominal", "title": "Labels",
                      "scale": {"domain": lines, "range": [line_colours[line] for line in lines]}},
            "tooltip": [{"field": "line", "title": "labels"}, {"field": "k"},
                        {"field": "tau", "title": "tau", "format": ".3f"}, {"field": "measure"}, {"field": "n"}],
        },
    }
    return data, spec


def interval_words(loaded) -> str:
    """How a :class:`ui.data.Correlations` table's intervals were made and where the table came from, in words:
    "95% percentile bootstrap intervals (300 resamples over queries), stored with the run"."""
    source = ("stored with the run when it was evaluated" if loaded.stored else
              "computed now (this run stores no correlations for these measures)")
    return (f"{loaded.confidence:.0%} percentile bootstrap intervals ({loaded.n_resamples:,} resamples over "
            f"queries), {source}")


def dropped_values_note(label: str, n_measure: int, metric_at_k: str, n_e2e: int,
                        others: Sequence[tuple[str, str, int]] = ()) -> str:
    """Escaped Markdown warning about per-query values left out because they are missing (NULL) or not finite
    numbers: ``n_measure`` of ``label`` and ``n_e2e`` of ``metric_at_k`` (the chosen pair), and ``others``
    ((method, measure, n) of the table's other pairs); empty when nothing was left out."""
    parts = []
    if n_measure:
        parts.append(f"{n_measure} value(s) of {label}")
    if n_e2e:
        parts.append(f"{n_e2e} value(s) of {metric_at_k}")
    if others:
        by_method: dict[str, int] = {}
        for method, _, n in others:
            by_method[method] = by_method.get(method, 0) + n
        parts.append(f"{sum(by_method.values())} value(s) of {len(others)} other measure(s) in the table ("
                     + ", ".join(f"{fmt.method_name(m)}: {n}" for m, n in by_method.items()) + ")")
    if not parts:
        return ""
    return render.escape_markdown(
        "Left out: " + "; ".join(parts) + ", missing or not a finite number in the run file. Each pair of scores "
        "is compared over the queries where both are finite.")
