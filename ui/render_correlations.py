"""Views of the correlations page (``app_pages/5_Correlations.py``): how well a label method's per-query measure
predicts the downstream (end-to-end) score, query by query.

Pure functions from the data layer's tables to display tables and plotly figures; names and questions go into a
figure through :mod:`ui.plot_text` (HTML-escaped, so plotly shows them literally).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rageval.report import measure_sort_key
from ui import format as fmt
from ui import render, theme
from ui.plot_text import HOVER_CHARS, plot_text, plotly_text  # noqa: F401 (HOVER_CHARS, plotly_text: re-exported)
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


def density_counts(x_codes: np.ndarray, y_codes: np.ndarray, shape: tuple[int, int]) -> list[list[int | None]]:
    """Queries per (y cell, x cell), None for an empty cell (drawn blank)."""
    counts = np.zeros(shape, dtype=np.int64)
    np.add.at(counts, (y_codes, x_codes), 1)
    return [[int(c) if c else None for c in row] for row in counts]


def density_trace(x: Sequence[float], y: Sequence[float], x_name: str, y_name: str, *, shared_levels: bool = False):
    """A heatmap of queries per (x cell, y cell) (:func:`grid_axis`); ``shared_levels``: both axes get the cells
    of x and y together (so the diagonal holds the equal pairs). Names are escaped here."""
    import plotly.graph_objects as go

    levels = np.concatenate([np.asarray(x, float), np.asarray(y, float)]) if shared_levels else None
    x_codes, x_labels = grid_axis(x, levels)
    y_codes, y_labels = grid_axis(y, levels)
    counts = density_counts(x_codes, y_codes, (len(y_labels), len(x_labels)))
    return go.Heatmap(x=x_labels, y=y_labels, z=counts, colorscale="Blues", texttemplate="%{z:,d}",
                      colorbar={"title": {"text": "queries"}},
                      hovertemplate=plot_text(x_name) + " %{x}<br>" + plot_text(y_name) + " %{y}<br>%{z} queries"
                      "<extra></extra>")


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


def scatter_figure(points: pd.DataFrame, method: str, measure: str, k: int, metric: str):
    """Per-query scatter: ``method``'s ``measure`` (x) against the E2E score at ``k`` (y), both jittered, in the
    method's colour; hover shows the query id, its question and the exact values. ``points``: query_id,
    question, value, e2e (:func:`ui.data_correlations.load_scatter_points`)."""
    import plotly.graph_objects as go

    if is_density(len(points)):
        return density_figure(points, method, measure, k, metric)
    colour = theme.method_colours([method])[method]
    label, measure, metric = plot_text(render.method_name(method)), plot_text(measure), plot_text(metric)
    figure = go.Figure(go.Scatter(
        x=jitter(points["value"], JITTER_SEED).tolist(), y=jitter(points["e2e"], JITTER_SEED + 1).tolist(),
        mode="markers", name=label, marker={"color": colour, "size": 8, "opacity": 0.6},
        customdata=[[plot_text(q), plotly_text(text), float(v), float(e)] for q, text, v, e in
                    zip(points["query_id"], points["question"], points["value"], points["e2e"])],
        hovertemplate=("query %{customdata[0]}<br>%{customdata[1]}<br>" + f"{label} {measure}"
                       + " = %{customdata[2]:.3f}<br>" + f"{metric}@{k}" + " = %{customdata[3]:.3f}<extra></extra>")))
    # Two short lines: one long line is cut in a narrow column (800 px wide windows).
    figure.update_layout(title={"text": f"{label} {measure} vs {metric}@{k}<br>one point per query"},
                         xaxis_title=f"{label} {measure} (jittered)", yaxis_title=f"{metric}@{k} (jittered)",
                         showlegend=False, height=460, dragmode="select")
    return figure


def correlation_estimate(value: float) -> str:
    """The metric of a correlation: ``0.412``, or ``undefined (constant)`` (:func:`ui.format.format_correlation`)."""
    return fmt.format_correlation(value, math.nan, math.nan)


def correlation_interval(low: float, high: float) -> str:
    """The line under a correlation's metric: ``95% interval [0.21, 0.60]``, or that it has none."""
    interval = fmt.format_interval(low, high)
    return "no interval (undefined)" if interval == fmt.MISSING else f"95% interval {interval}"


def density_figure(points: pd.DataFrame, method: str, measure: str, k: int, metric: str):
    """:func:`scatter_figure` for more than :data:`SCATTER_MAX_POINTS` queries: a heatmap of how many queries
    have each (measure value, E2E score), one cell per value (or bin), no per-query point."""
    import plotly.graph_objects as go

    name = f"{render.method_name(method)} {measure}"
    figure = go.Figure(density_trace(points["value"], points["e2e"], name, f"{metric}@{k}"))
    figure.update_layout(title={"text": f"Queries per value pair ({len(points):,} queries)"},
                         xaxis_title=plot_text(name), yaxis_title=f"{plot_text(metric)}@{k}", height=460,
                         xaxis={"type": "category"}, yaxis={"type": "category"})
    return figure


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


def selected_rows(selection: Any) -> list[int]:
    """Point indices of a plotly selection (``st.plotly_chart(on_select="rerun")``'s event), [] when none."""
    try:
        points = selection["selection"]["points"]
    except (KeyError, TypeError):
        return []
    # A density grid's cells carry no query (their point_index is a cell, not an int): nothing is selected.
    return sorted({int(p["point_index"]) for p in points if isinstance(p.get("point_index"), int)})


def k_sweep_figure(sweep: pd.DataFrame, metric: str):
    """Line chart of Kendall's tau against k, one line per label method (its best measure family), in the method's
    colour from :mod:`ui.theme`; line names are ``<method name> (<family>)``, hover gives the measure and n
    (:func:`ui.render.k_sweep_figure`'s chart, drawn with graph objects: plotly.express costs 0.3-0.5 s to import)."""
    import plotly.graph_objects as go

    methods = render.order_label_methods(list(sweep["method"].unique()))
    colours = theme.method_colours(methods)
    metric = plot_text(metric)
    figure = go.Figure()
    for method in methods:
        rows = sweep[sweep["method"] == method].sort_values("k", kind="stable")
        for family, line in rows.groupby("family", sort=False):
            figure.add_trace(go.Scatter(
                x=line["k"].astype(int).tolist(), y=line["tau"].astype(float).tolist(), mode="lines+markers",
                name=plot_text(f"{render.method_name(method)} ({family})"),
                line={"color": colours[method]}, marker={"color": colours[method]},
                customdata=[[plot_text(m), int(n)] for m, n in zip(line["measure"], line["n"])],
                hovertemplate="k=%{x}<br>tau=%{y:.3f}<br>measure=%{customdata[0]}<br>n=%{customdata[1]}"
                              "<extra>%{fullData.name}</extra>"))
    figure.update_xaxes(tickvals=sorted(sweep["k"].unique()), title="k (passages given to the LLM)")
    figure.update_layout(title={"text": f"Kendall's tau-b with the {metric} at each k (best measure family per "
                                        "label method)"},
                         yaxis_title=f"Kendall's tau-b with {metric}@k", legend={"title": {"text": "Labels"}})
    return figure


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
                     + ", ".join(f"{render.method_name(m)}: {n}" for m, n in by_method.items()) + ")")
    if not parts:
        return ""
    return render.escape_markdown(
        "Left out: " + "; ".join(parts) + ", missing or not a finite number in the run file. Each pair of scores "
        "is compared over the queries where both are finite.")
