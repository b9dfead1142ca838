"""Views of the home page (``app_pages/0_Home.py``): the 2 x 2 of gold retrieved x answer right, the finding
sentences with links to the pages that prove them, and the leaderboard of runs. Pure builders (text, link targets,
tables) plus :func:`render_two_by_two`, which lays the four cells out; no data is read here."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from rageval.findings import Finding, GoldAnswerTable
from rageval.stats.correlation import MIN_INTERVAL_QUERIES
from rageval.stats.intervals import MeanInterval, interval_ranks
from ui import auth, navigation
from ui import format as fmt
from ui.render_correlations import METRIC_NAMES, correlation_cell


def share_text(interval: MeanInterval) -> str:
    """``82% [78%, 86%]``; ``–`` for an empty share (:mod:`ui.format`)."""
    if math.isnan(interval.mean):
        return fmt.MISSING
    return f"{interval.mean:.0%} [{interval.low:.0%}, {interval.high:.0%}]"


def metric_name(settings: Mapping[str, Any]) -> str:
    """The E2E score's metric in words (``EM``), from the run's ``e2e_metric`` (else ``label_metric``) setting."""
    metric = str(settings.get("e2e_metric") or settings.get("label_metric") or "em")
    return METRIC_NAMES.get(metric, metric)


def right_rule(settings: Mapping[str, Any], threshold: float, own_lists: bool = False) -> str:
    """How a right answer is decided, in words, for the caption (``own_lists``: each query's own answer)."""
    metric = str(settings.get("e2e_metric") or settings.get("label_metric") or "em")
    binary = metric in ("em", "accuracy")
    return (f"the stored E2E {metric_name(settings)} {'of its answer' if own_lists else 'at k'} is at least "
            f"{threshold:g}"
            + (f" ({metric_name(settings)} is 0 or 1, so: it is 1)" if binary else
               " (a graded score: the threshold is ours)"))


def gold_source_text(source: str | None) -> str:
    if source == "gold_passage_ids":
        return "the query's gold passages (its gold_passage_ids)"
    return f"the passages the {fmt.method_name(str(source))} labels mark relevant (label above 0)"


def render_two_by_two(table: GoldAnswerTable, links: Mapping[tuple[bool, bool], Mapping[str, str]]) -> None:
    """The four cells, gold retrieved (rows) x answer right (columns): count, share with its interval, and a
    same-tab link to the query inspector walking that cell's queries (``links``: (gold, right) -> its query
    parameters, :func:`ui.worklist.cell_params`)."""
    header = st.columns([1.2, 2, 2])
    header[1].markdown("**answer right**")
    header[2].markdown("**answer wrong**")
    for gold in (True, False):
        row = st.columns([1.2, 2, 2])
        row[0].markdown(f"**gold {'retrieved' if gold else 'not retrieved'}** in the top {table.k}")
        for column, right in zip(row[1:], (True, False)):
            cell = table.cell(gold, right)
            box = column.container(border=True)
            box.markdown(f"### {cell.count:,}")
            box.caption(f"{share_text(cell.share)} of {table.n:,} queries")
            if cell.count:
                auth.page_link(box, navigation.INSPECTOR, label=f"Inspect these {cell.count:,}",
                               icon=":material/playlist_play:",
                               query_params=dict(links[gold, right]))
            else:
                box.caption("no query")


#: The longest finding link label the Home page's link column shows uncut (issue 42: "Its measures against the
#: answe..." was cut off).
LINK_LABEL_CHARS = 22


def finding_link(finding: Finding, run: str, links: Mapping[tuple[bool, bool], Mapping[str, str]] | None
                 ) -> tuple[str, str, dict[str, str], str] | None:
    """(page, label, query parameters, icon) of the page that proves ``finding`` (``links``: the 2 x 2 cells'
    inspector links, :func:`ui.worklist.cell_params`). Labels stay within :data:`LINK_LABEL_CHARS`, so that the
    link column beside the sentence shows them whole."""
    target = finding.target
    if finding.kind == "correlation":
        return (navigation.CORRELATIONS, "See the correlations", {
            "run": run, "method": target["method"], "measure": target["measure"], "k": str(target["k"])},
            ":material/scatter_plot:")
    if finding.kind == "two_by_two" and links is not None:
        return (navigation.INSPECTOR, "Inspect these queries", dict(links[target["gold_retrieved"],
                                                                           target["answer_right"]]),
                ":material/playlist_play:")
    if finding.kind == "constant":
        return (navigation.CORRELATIONS, f"Correlations at k={target['k']}",
                {"run": run, "k": str(target["k"])}, ":material/scatter_plot:")
    if finding.kind == "label_share":
        return (navigation.CORRELATIONS, "See its measures", {"run": run, "method": target["method"]},
                ":material/scatter_plot:")
    if finding.kind == "trust":
        return (navigation.ANNOTATE, "See the human labels", {"run": run, "mode": "passages"},
                ":material/fact_check:")
    if finding.kind == "failures":
        return (navigation.RETEVAL, "See the failure cases", {"run": run, "judge": target["judge"]},
                ":material/gavel:")
    return None


LEADERBOARD_COLUMNS = ["Rank", "Run", "E2E score", "Best eRAG measure", "Kendall's tau", "k", "Queries", "Dataset",
                       "Retriever", "Model", "Open"]
LEADERBOARD_HELP = {
    "Rank": "What the E2E score's interval supports: 1 + the runs whose interval lies wholly above this run's; "
            "runs whose intervals overlap share a rank (=)",
    "Run": "The run file's name (without .sqlite)",
    "k": "The run's k: how many passages the LLM was given for its end-to-end answer",
    "Queries": f"Queries in the run; 'small' below {MIN_INTERVAL_QUERIES} answered queries: its interval is wide",
    "E2E score": "Mean end-to-end score at k (its metric named) with its 95% interval: Wilson for 0/1 scores "
                 "(exact match, accuracy), Student-t otherwise",
    "Best eRAG measure": "The eRAG label method and measure at k whose Kendall's tau with the E2E score is highest",
    "Kendall's tau": "Kendall's tau-b of that measure with the E2E score at k, 95% bootstrap interval (none below "
                     f"{MIN_INTERVAL_QUERIES} queries: too few for one)",
    "Open": "Open this run's findings",
}


def _interval_text(value: float, low: float, high: float) -> str:
    if math.isnan(value):
        return fmt.MISSING
    return fmt.format_estimate(value, low, high)


def leaderboard_view(rows: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard as shown: one row per run ranked by what its E2E interval supports
    (:func:`rageval.stats.intervals.interval_ranks`: overlapping intervals share a rank, shown ``=2``; within a
    rank the higher lower bound first; runs without a score last), small runs marked, text cells, and a link to
    the run's home page (``?run=<name>``)."""
    if rows.empty:
        return pd.DataFrame(columns=LEADERBOARD_COLUMNS)
    rows = rows.assign(rank=interval_ranks(rows["e2e_low"], rows["e2e_high"]))
    rows["rank"] = [math.nan if r is None else r for r in rows["rank"]]
    ordered = rows.sort_values(["rank", "e2e_low", "run"], ascending=[True, False, True], na_position="last")
    shared = ordered["rank"].value_counts()
    view = pd.DataFrame({
        "Rank": [fmt.MISSING if math.isnan(r) else ("=" if shared[r] > 1 else "") + str(int(r))
                 for r in ordered["rank"]],
        "Run": ordered["run"],
        "E2E score": [(fmt.MISSING if n == 0 else f"{METRIC_NAMES.get(m, m)} " + _interval_text(v, lo, hi))
                      for m, v, lo, hi, n in zip(ordered["metric"], ordered["e2e"], ordered["e2e_low"],
                                                 ordered["e2e_high"], ordered["e2e_n"])],
        "Best eRAG measure": [f"{fmt.method_name(m)} {x}" if m
                              else (fmt.MISSING if c != "not stored" else "not stored")
                              for m, x, c in zip(ordered["best_method"], ordered["best_measure"],
                                                 ordered["correlations"])],
        "Kendall's tau": [correlation_cell(t, lo, hi, int(n)) if not math.isnan(t) else fmt.MISSING
                          for t, lo, hi, n in zip(ordered["tau"], ordered["tau_low"], ordered["tau_high"],
                                                  ordered["tau_n"])],
        "k": [fmt.MISSING if k is None or (isinstance(k, float) and math.isnan(k)) else str(int(k))
              for k in ordered["k"]],
        "Queries": [f"{int(n):,}" + (" · small" if 0 < answered < MIN_INTERVAL_QUERIES else "")
                    for n, answered in zip(ordered["queries"], ordered["e2e_n"])],
        "Dataset": ordered["dataset"], "Retriever": ordered["retriever"], "Model": ordered["model"],
        "Open": [navigation.page_url(navigation.HOME, run=run) for run in ordered["run"]],
    })
    return view.reset_index(drop=True)


def leaderboard_column_config() -> dict[str, Any]:
    config: dict[str, Any] = {name: st.column_config.TextColumn(name, help=text)
                              for name, text in LEADERBOARD_HELP.items() if name != "Open"}
    for name in ("Retriever", "Model"):  # long descriptions: after the numbers, cut to a readable width
        config[name] = st.column_config.TextColumn(name, width="medium", help=f"The run's {name.lower()} setting")
    config["Open"] = st.column_config.LinkColumn("Open", display_text="findings", help=LEADERBOARD_HELP["Open"])
    return config
