"""Pure table and figure builders of the cross-run failure-case browser (app_pages/7_Failure_cases.py): counts of the
LLM-retEval failure categories A-F per run and k, and the example list with links to the query inspector."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rageval.reteval import CATEGORY_NAMES
from ui.plot_text import plot_text, plot_texts
from ui.render import failure_cases_view, inspector_url
from ui.render_inspector import inspect_links as run_links
from ui.theme import CATEGORY_COLOURS


def filter_cases(cases: pd.DataFrame, *, judge: str, categories: Sequence[str], ks: Sequence[int],
                 datasets: Sequence[str], retrievers: Sequence[str]) -> pd.DataFrame:
    """The rows of :func:`ui.data.load_failure_overview` that pass every filter."""
    keep = ((cases["judge"] == judge) & cases["category"].isin(categories) & cases["k"].isin(ks)
            & cases["dataset"].isin(datasets) & cases["retriever"].isin(retrievers))
    return cases[keep].reset_index(drop=True)


def count_table(cases: pd.DataFrame) -> pd.DataFrame:
    """Number of queries in each category (columns A-F, all six even when zero) per run and k (rows)."""
    counts = cases.groupby(["run", "k", "category"]).query_id.nunique().unstack("category", fill_value=0)
    counts = counts.reindex(columns=list(CATEGORY_NAMES), fill_value=0)
    counts.columns.name = None
    return counts.reset_index().rename(columns={"run": "Run"})


def count_figure(cases: pd.DataFrame, judge_label: str):
    """Stacked bars: queries per category at each k, one panel per run (two panels a row); category colours from
    ui.theme. Drawn with graph objects (plotly.express costs ~0.3 s to import and ~0.3 s to build this figure, a
    third of the cold page)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    counts = cases.groupby(["run", "k", "category"]).query_id.nunique().rename("queries").reset_index()
    runs = list(dict.fromkeys(counts["run"]))
    columns = min(2, len(runs)) or 1
    rows = -(-len(runs) // columns) or 1
    figure = make_subplots(rows=rows, cols=columns, shared_yaxes=True, subplot_titles=plot_texts(runs),
                           horizontal_spacing=0.05, vertical_spacing=0.3 / rows)
    ks = [str(k) for k in sorted(counts["k"].astype(int).unique())]
    for category, meaning in CATEGORY_NAMES.items():
        of_category = counts[counts["category"] == category]
        for i, run in enumerate(runs):
            bars = of_category[of_category["run"] == run]
            if bars.empty:
                continue
            figure.add_trace(go.Bar(
                x=bars["k"].astype(int).astype(str).tolist(), y=bars["queries"].tolist(), name=category,
                legendgroup=category, showlegend=not any(t.name == category for t in figure.data),
                marker_color=CATEGORY_COLOURS[category],
                customdata=[[meaning, plot_text(run)]] * len(bars),
                hovertemplate="category=" + category + "<br>k=%{x}<br>queries=%{y}<br>meaning=%{customdata[0]}"
                              "<br>run=%{customdata[1]}<extra></extra>"),
                row=i // columns + 1, col=i % columns + 1)
    figure.update_layout(barmode="stack", legend_title_text="category", bargap=0.25,
                         legend_traceorder="normal",
                         title=f"LLM-retEval failure cases per k (judge: {plot_text(judge_label)})")
    figure.update_xaxes(type="category", categoryorder="array", categoryarray=ks)  # k values are labels
    figure.update_xaxes(title_text="k (passages the reader saw)", row=rows)
    figure.update_yaxes(title_text="queries", col=1)
    return figure


def example_view(cases: pd.DataFrame, links: Sequence[str] | None = None) -> pd.DataFrame:
    """The failure cases as a table: run, dataset, retriever, then the per-case columns of
    :func:`ui.render.failure_cases_view`, and a link that opens the case in the query inspector (``links``, one per
    case, e.g. :func:`inspect_links`; plain links to the query when not given)."""
    view = failure_cases_view(cases, with_judge=False)
    view.insert(0, "Run", cases["run"].to_numpy())
    view.insert(1, "Dataset", cases["dataset"].to_numpy())
    view.insert(2, "Retriever", cases["retriever"].to_numpy())
    view["Inspect"] = (list(links) if links is not None else
                       [inspector_url(run, qid) for run, qid in zip(cases["run"], cases["query_id"])])
    return view


def run_worklists(cases: pd.DataFrame) -> dict[str, list[str]]:
    """Run -> the query ids of its cases, each once, in the order the cases are listed (a worklist per run: the
    inspector walks one run at a time)."""
    return {run: list(dict.fromkeys(group["query_id"])) for run, group in cases.groupby("run", sort=False)}


def inspect_links(cases: pd.DataFrame, run_orders: Mapping[str, Sequence[str]], name: str) -> list[str]:
    """One inspector link per case that opens its query and walks the cases' queries of its run
    (:func:`ui.render_inspector.inspect_links`), in the order of ``cases``."""
    links = pd.Series("", index=cases.index, dtype=object)
    for run, group in cases.groupby("run", sort=False):
        links[group.index] = run_links(run, group["query_id"].tolist(), run_orders[run], f"{name} · {run}")
    return links.tolist()
