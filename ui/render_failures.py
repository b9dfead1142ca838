"""Pure table and figure builders of the cross-run failure-case browser (app_pages/7_Failure_cases.py): counts of the
LLM-retEval failure categories A-F per run and k, and the example list with links to the query inspector."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rageval.reteval import CATEGORY_NAMES
from ui.render import inspector_url
from ui.render_evidence import failure_cases_view
from ui.render_inspector import inspect_links as run_links
from ui.theme import CATEGORY_COLOURS


def filter_cases(cases: pd.DataFrame, *, judge: str, categories: Sequence[str], ks: Sequence[int],
                 datasets: Sequence[str], retrievers: Sequence[str], runs: Sequence[str] | None = None
                 ) -> pd.DataFrame:
    """The rows of :func:`ui.data_failures.load_failure_overview` that pass every filter (``runs``: every run
    when None)."""
    keep = ((cases["judge"] == judge) & cases["category"].isin(categories) & cases["k"].isin(ks)
            & cases["dataset"].isin(datasets) & cases["retriever"].isin(retrievers))
    if runs is not None:
        keep &= cases["run"].isin(runs)
    return cases[keep].reset_index(drop=True)


def count_table(cases: pd.DataFrame) -> pd.DataFrame:
    """Number of queries in each category (columns A-F, all six even when zero) per run and k (rows)."""
    counts = cases.groupby(["run", "k", "category"]).query_id.nunique().unstack("category", fill_value=0)
    counts = counts.reindex(columns=list(CATEGORY_NAMES), fill_value=0)
    counts.columns.name = None
    return counts.reset_index().rename(columns={"run": "Run"})


#: Why the panels of :func:`count_chart` do not share a y scale, and why they show counts rather than shares (said
#: under the chart).
COUNT_SCALE_NOTE = ("Each run's panel has its own y scale, so that a small run's bars show beside runs of hundreds "
                    "of queries: compare runs by the table's numbers, not by bar heights. The bars are counts, not "
                    "shares, because a query can fall in several categories (shares would not add up to 100%).")


def count_chart(cases: pd.DataFrame, judge_label: str) -> tuple[pd.DataFrame, dict]:
    """Stacked bars: queries per category at each k, one panel per run (two panels a row), category colours from
    ui.theme, as ``(data, Vega-Lite spec)`` for ``st.vega_lite_chart``. Each panel has its own y scale
    (:data:`COUNT_SCALE_NOTE`): on one shared scale a 5-query run's bars vanish next to a 300-query run's.
    Vega-Lite rather than plotly: its browser code is a sixth of plotly.js's 4.7 MB, which alone cost ~1.8 s of a
    cold page on the 2-core machine. Vega-Lite draws labels and tooltips as text, so names are not HTML-escaped."""
    counts = cases.groupby(["run", "k", "category"]).query_id.nunique().rename("queries").reset_index()
    counts["k"] = counts["k"].astype(int).astype(str)
    counts["meaning"] = counts["category"].map(CATEGORY_NAMES)
    ks = [str(k) for k in sorted(cases["k"].astype(int).unique())]
    bars = {
        "mark": {"type": "bar", "tooltip": True},
        "width": 320,
        "encoding": {
            "x": {"field": "k", "type": "ordinal", "sort": ks, "title": "k (passages the reader saw)",
                  "axis": {"labelAngle": 0}},
            "y": {"field": "queries", "type": "quantitative", "stack": "zero",
                  "title": "queries (this run's own scale)", "axis": {"tickMinStep": 1}},
            "color": {"field": "category", "type": "nominal", "title": "category",
                      "scale": {"domain": list(CATEGORY_NAMES),
                                "range": [CATEGORY_COLOURS[c] for c in CATEGORY_NAMES]}},
            "order": {"field": "category", "sort": "ascending"},
            "tooltip": [{"field": "category"}, {"field": "k"}, {"field": "queries"}, {"field": "meaning"},
                        {"field": "run"}],
        },
    }
    spec = {"title": f"LLM-retEval failure cases per k (judge: {judge_label})",
            "facet": {"field": "run", "type": "nominal", "title": None, "sort": list(dict.fromkeys(counts["run"]))},
            "columns": 2, "spec": bars, "resolve": {"scale": {"y": "independent"}}}
    return counts, spec


def example_view(cases: pd.DataFrame, links: Sequence[str] | None = None) -> pd.DataFrame:
    """The failure cases as a table: run, dataset, retriever, then the per-case columns of
    :func:`ui.render_evidence.failure_cases_view`, and a link that opens the case in the query inspector
    (``links``, one per case, e.g. :func:`inspect_links`; plain links to the query when not given)."""
    view = failure_cases_view(cases, with_judge=False)
    view.insert(0, "Run", cases["run"].to_numpy())
    view.insert(1, "Dataset", cases["dataset"].to_numpy())
    view.insert(2, "Retriever", cases["retriever"].to_numpy())
    view["Inspect"] = (list(links) if links is not None else
                       [inspector_url(run, qid) for run, qid in zip(cases["run"], cases["query_id"])])
    return view


def case_keys(cases: pd.DataFrame) -> list[str]:
    """Each case's id in the URL (``?case=``): ``run query_id k category``."""
    return (cases["run"].astype(str) + " " + cases["query_id"].astype(str) + " " + cases["k"].astype(int).astype(str)
            + " " + cases["category"].astype(str)).tolist()


def run_worklists(cases: pd.DataFrame) -> dict[str, list[str]]:
    """Run -> the query ids of its cases, each once, in the order the cases are listed (a worklist per run: the
    inspector walks one run at a time)."""
    first = cases.drop_duplicates(["run", "query_id"])  # keeps each query's first case, in order
    return {run: group["query_id"].tolist() for run, group in first.groupby("run", sort=False)}


def inspect_links(cases: pd.DataFrame, run_orders: Mapping[str, Sequence[str]], name: str) -> list[str]:
    """One inspector link per case that opens its query and walks the cases' queries of its run
    (:func:`ui.render_inspector.inspect_links`), in the order of ``cases``."""
    links = pd.Series("", index=cases.index, dtype=object)
    for run, group in cases.groupby("run", sort=False):
        links[group.index] = run_links(run, group["query_id"].tolist(), run_orders[run], f"{name} · {run}")
    return links.tolist()
