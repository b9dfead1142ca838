"""Views of how far the automatic labels can be trusted (:mod:`rageval.trust`) on the Annotate page: each method's
PPI and PPI++ intervals beside the human-only one with the number of labels, the intervals narrowing as labels
arrive (a chart over the label count), the calibration table and the next items the plan suggests.

Table and chart builders are pure (data frames and Vega-Lite specs); ``render_*`` draw. Passage and query ids go
into tables as text, never as Markdown.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from rageval.trust.plan import strata_rule
from rageval.trust.ppi import HUMAN_ONLY, PPI, PPI_PLUS_PLUS, Estimate
from rageval.trust.report import CELL_WORDS, LABEL_SHARE, NO_UNBIASED, TrustReport
from ui import format as fmt
from ui import render, theme
from ui.render import escape_markdown

#: The estimators by their display names, in column order.
ESTIMATOR_NAMES = {PPI: "PPI", PPI_PLUS_PLUS: "PPI++", HUMAN_ONLY: "Human labels only"}
ESTIMATOR_COLOURS = {"PPI": "#1f77b4", "PPI++": "#9467bd", "Human labels only": "#7f7f7f"}


def measure_label(measure: str) -> str:
    """``label_share`` -> "share of relevant passages"; a cell key -> its words; P@k, Hit@k as they are."""
    if measure == LABEL_SHARE:
        return "share of relevant passages"
    cell, _, k = measure.partition("@")
    return f"{CELL_WORDS[cell]} (k={k})" if cell in CELL_WORDS else measure


def passage_measures(report: TrustReport) -> list[str]:
    """The measures the Annotate page offers: those estimated from passage labels (any passage sample)."""
    return [LABEL_SHARE, f"P@{report.k}"]


def _interval(e: Estimate) -> str:
    if not math.isfinite(e.estimate):
        return fmt.MISSING
    return fmt.format_estimate(e.estimate, max(e.low, 0.0), min(e.high, 1.0))


def interval_reasons(report: TrustReport, measure: str) -> list[str]:
    """Why an estimate of ``measure`` in the table has no interval, once each (the engine's words)."""
    return list(dict.fromkeys(e.reason for trust in report.methods.values() for e in
                              (trust.estimates[key][measure] for key in ESTIMATOR_NAMES)
                              if e.reason and not (math.isfinite(e.low) and math.isfinite(e.high))))


def estimates_view(report: TrustReport, measure: str, name=fmt.method_name) -> pd.DataFrame:
    """One row per method: kappa, the automatic value over every passage, the PPI, PPI++ and human-only estimates
    with their intervals (clipped to [0, 1]), the human labels used and the automatic values."""
    rows = []
    for method, trust in report.methods.items():
        e = trust.estimates
        rows.append({"Method": name(method), "Cohen's kappa": trust.calibration.kappa,
                     "Automatic": trust.auto.get(measure, math.nan),
                     **{label: _interval(e[key][measure]) for key, label in ESTIMATOR_NAMES.items()},
                     "PPI width": e[PPI][measure].width, "Human-only width": e[HUMAN_ONLY][measure].width,
                     "Human labels": e[PPI][measure].n_human, "Automatic labels": e[PPI][measure].n_auto})
    return pd.DataFrame(rows)


def calibration_view(report: TrustReport, name=fmt.method_name) -> pd.DataFrame:
    """The calibration table: per method the confusion counts, precision / recall of relevant, base rates on
    both sides, kappa, the Rogan–Gladen share and the per-query and per-run agreement."""
    rows = []
    for method, trust in report.methods.items():
        c = trust.calibration
        rows.append({"Method": name(method), "n": c.n, "Both relevant": c.tp, "Method only": c.fp,
                     "People only": c.fn, "Neither": c.tn, "Precision": c.precision, "Recall": c.recall,
                     "People's share of the labelled": c.human_share_labelled,
                     "People's share (weighted)": c.human_base_rate, "Method's share (weighted)": c.method_base_rate,
                     "Kappa": c.kappa,
                     "Rogan–Gladen share": c.rogan_gladen, "Per-query tau": trust.per_query.tau,
                     "Per-run tau": trust.per_run.tau})
    return pd.DataFrame(rows)


def narrowing_chart(frame: pd.DataFrame, method_label: str, measure: str) -> tuple[pd.DataFrame, dict]:
    """The intervals of one method's measure by the number of human labels: a band (low to high) and a line
    (the estimate) per estimator, as ``(data, Vega-Lite spec)``."""
    shown = frame.assign(estimator=frame["estimator"].map(ESTIMATOR_NAMES),
                         low=frame["low"].clip(lower=0.0), high=frame["high"].clip(upper=1.0)).dropna(
        subset=["estimate"])
    names = [n for n in ESTIMATOR_NAMES.values() if n in set(shown["estimator"])]
    colour = {"field": "estimator", "type": "nominal", "title": None,
              "scale": {"domain": names, "range": [ESTIMATOR_COLOURS[n] for n in names]}}
    x = {"field": "n", "type": "quantitative", "title": "human labels so far",
         "axis": {"format": "d", "tickMinStep": 1}}
    spec = {
        "title": f"{method_label}: {measure_label(measure)}, 95% intervals as labels arrive",
        "autosize": theme.FIT_WIDTH, "height": 260,
        "encoding": {"x": x, "color": colour},
        "layer": [
            {"mark": {"type": "area", "opacity": 0.18},
             "encoding": {"y": {"field": "low", "type": "quantitative", "title": measure_label(measure)},
                          "y2": {"field": "high"}}},
            {"mark": {"type": "line", "point": True},
             "encoding": {"y": {"field": "estimate", "type": "quantitative"},
                          "tooltip": [{"field": "estimator"}, {"field": "n", "title": "human labels"},
                                      {"field": "estimate", "format": ".3f"}, {"field": "low", "format": ".3f"},
                                      {"field": "high", "format": ".3f"}]}},
        ],
    }
    return shown, spec


def design_text(report: TrustReport) -> str:
    """What the estimates rest on, in words."""
    d = report.design
    if not report.supports_estimate:
        return (f"The {report.n_labelled:,} labelled passages were not drawn at random (no shared sample): they "
                f"{NO_UNBIASED}. Draw the shared sample above and label it.")
    adjudicated = f", {report.adjudicated:,} of them adjudicated" if report.adjudicated else ""
    return (f"{d.plan.capitalize()} sample ({d.source}): {report.n_human:,} of its passages labelled{adjudicated}, "
            f"of {report.n_items:,} retrieved passages of {report.n_queries:,} queries; k={report.k}.")


def label_rule_text(report: TrustReport) -> str:
    """How an item's people's label is decided (:data:`rageval.trust.inputs.LABEL_RULE`), and the ties left out."""
    ties = len(report.unresolved)
    left = (f" {ties:,} passage{'s are' if ties != 1 else ' is'} unresolved (a tie) and left out until adjudicated."
            if ties else "")
    return f"The people's label of a passage: {report.label_rule[0].lower()}{report.label_rule[1:]}{left}"


def unresolved_view(report: TrustReport) -> pd.DataFrame:
    """The tied passages: query, passage, how many said 1 and 0, where (a queue and its item, or all labels)."""
    return pd.DataFrame([{"Query": u["query_id"], "Passage": u["passage_id"], "Said 1": u["ones"],
                          "Said 0": u["zeros"],
                          "Where": u["where"] + (f", item {u['position']}" if "position" in u else "")}
                         for u in report.unresolved], columns=["Query", "Passage", "Said 1", "Said 0", "Where"])


def render_heading(report: TrustReport | None) -> bool:
    """The section's heading and what its estimates rest on; False (with how to get labels) when the run has no
    human label, so the page draws nothing more."""
    st.subheader("What people would say: PPI estimates")
    if report is None:
        st.info("No human label for this run yet: label the sample above, or import labels with "
                "`rageval annotations import RUN FILE --annotator NAME`.")
        return False
    st.caption(escape_markdown(design_text(report)))
    st.caption(escape_markdown(label_rule_text(report)))
    if report.unresolved:
        render.render_table(unresolved_view(report), hide_index=True)
    return True


def render_trust(report: TrustReport, measure: str, narrowing: pd.DataFrame, plan_items: pd.DataFrame,
                 method: str, provenance: str) -> None:
    """The section below its heading and widgets: intervals per method, the narrowing chart of ``method``, the
    calibration table and the plan's next items. ``provenance`` is Markdown already (:func:`ui.render.provenance`)."""
    ratio = st.column_config.NumberColumn(format="%.3f")
    render.render_table(estimates_view(report, measure), {"Cohen's kappa": ratio, "Automatic": ratio,
                                                          "PPI width": ratio, "Human-only width": ratio},
                        hide_index=True)
    st.caption(escape_markdown(
        f"{measure_label(measure).capitalize()} at k={report.k}: from every passage's automatic label (Automatic), "
        "corrected by the human sample (PPI: Angelopoulos et al. 2023, as ARES; PPI++: power-tuned), and from the "
        "human labels alone, each with its 95% interval; a share below 0 or above 1 is set to the edge, here, "
        "in the chart and in `rageval trust --json` alike. A method whose PPI interval is narrower than the "
        "human-only one saves labels; a poor method's PPI interval is wider, and PPI++ falls back to the human "
        "labels.") + " " + provenance)
    missing = interval_reasons(report, measure)
    if missing:  # an estimate shown without its interval says why (a stratum without variance, too few labels)
        st.caption(escape_markdown("No interval: " + "; ".join(missing) + "."))
    if not narrowing.empty:
        st.vega_lite_chart(*narrowing_chart(narrowing, fmt.method_name(method), measure), key="annotate.trust_chart")
        st.caption(escape_markdown(f"From the first n labels of the sample in the order they were given, n up to "
                                   f"{int(narrowing['n'].max()):,}.") + " " + provenance)
    st.markdown("**Calibration against people**")
    render.render_table(calibration_view(report), dict.fromkeys((
        "Precision", "Recall", "People's share of the labelled", "People's share (weighted)",
        "Method's share (weighted)", "Kappa", "Rogan–Gladen share", "Per-query tau",
        "Per-run tau"), ratio), hide_index=True)
    st.caption(escape_markdown(
        "People are the reference: a method's label counts as relevant from 0.5. The counts are of labelled "
        "passages; the people's share of the labelled is what they give, (both + people only) / n; the weighted "
        "shares and rates weigh each passage by its stratum's population / sampled, so they estimate the whole run "
        "(equal under a uniform sample). Rogan–Gladen: the share of "
        "relevant passages the method's own share implies once its recall and specificity are known. Per-query "
        f"tau: Kendall's tau-b of the per-query share of relevant (queries with 2 or more labelled top-{report.k} "
        f"passages); per-run tau: of the orderings of the {len(report.runs_compared) + 1} annotated runs of the "
        "folder by P@k.") + " " + provenance)
    if not plan_items.empty:
        st.markdown(f"**Label next** (to narrow {escape_markdown(fmt.method_name(method))}'s interval most)")
        render.render_table(plan_items.rename(columns={"query_id": "Query", "passage_id": "Passage", "rank": "Rank",
                                                       "stratum": "Stratum"}), hide_index=True)
        st.caption(f"Neyman allocation over strata of {strata_rule(plan_items['stratum'])}: strata where people "
                   "disagree most with the automatic label get more labels. Labelled with the sample's passages, "
                   "they make a stratified sample (`rageval.trust.plan`).")
