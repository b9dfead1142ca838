"""A trust report in words: the lines ``rageval trust RUN`` prints (:func:`format_report`) and the Findings
page's sentence about the headline label method (:func:`trust_finding`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rageval.findings import Finding
from rageval.stats.design import STRATIFIED
from rageval.trust.ppi import (
    BOUNDS_RULE,
    HUMAN_ONLY,
    PPI,
    PPI_PLUS_PLUS,
    Estimate,
)
from rageval.trust.report import NO_UNBIASED, TrustReport


def _number(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "-"


def _interval(e: Estimate) -> str:
    if not math.isfinite(e.estimate):
        return "n/a"
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return f"{e.estimate:.3f} (no interval)"  # its reason is listed under the table
    return f"{e.estimate:.3f} [{max(e.low, 0.0):.3f}, {min(e.high, 1.0):.3f}]"


def format_report(report: TrustReport) -> str:
    """The report as the lines ``rageval trust RUN`` prints: the design, then per method the automatic value and
    the three estimates of each measure (intervals clipped to [0, 1], every measure lives there), then the
    calibration table."""
    d = report.design
    pct = round(100 * report.confidence)
    lines = [f"run {report.run} · k={report.k} · {report.n_items:,} retrieved passages of {report.n_queries:,} "
             "queries",
             f"sampling design: {d.plan}" + (f" ({d.source})" if d.source else "") +
             ("" if report.supports_estimate else f": {NO_UNBIASED}"),
             f"human labels: {report.n_human:,} used in the estimates, {report.n_labelled:,} passages labelled"
             + (f" by {', '.join(report.annotators)}" if report.annotators else "")]
    lines.append(f"label rule: {report.label_rule}"
                 + (f" ({report.adjudicated:,} adjudicated)" if report.adjudicated else ""))
    if report.unresolved:
        lines.append(f"unresolved (a tie, not counted): {len(report.unresolved):,} passages")
        lines += [f"  {u['query_id']}\t{u['passage_id']}\t{u['ones']} said 1, {u['zeros']} said 0 ({u['where']}"
                  + (f", item {u['position']}" if "position" in u else "") + ")" for u in report.unresolved]
    if report.n_labelled == 0:
        lines.append("no human label for this run: label the shared sample on the Annotate page, or bring labels in "
                     "with rageval annotations import RUN FILE --annotator NAME")
    if d.plan == STRATIFIED:
        lines += [f"  stratum {s.name}: {s.sampled:,} of {s.population:,} (weight {_number(s.weight)})"
                  for s in d.strata]
    lines += [f"note: {note}" for note in report.notes]
    if any(e.clipped for t in report.methods.values() for by in t.estimates.values() for e in by.values()):
        lines.append(f"note: {BOUNDS_RULE}")
    header = f"  {'measure':<22}{'automatic':>10}  {'PPI':<24}{'PPI++':<24}{'human only':<24}"
    for method, trust in report.methods.items():
        lines += ["", f"{method}: kappa {_number(trust.calibration.kappa)} over {trust.calibration.n:,} passages "
                      f"(estimates with {pct}% intervals)", header]
        reasons: dict[str, str] = {}
        for measure in report.measures:
            row = [trust.estimates[name][measure] for name in (PPI, PPI_PLUS_PLUS, HUMAN_ONLY)]
            lines.append(f"  {measure:<22}{_number(trust.auto.get(measure, math.nan)):>10}  "
                         + "".join(f"{_interval(e):<24}" for e in row))
            for e in row:  # why an estimate or its interval is missing, once each
                if e.reason:
                    reasons.setdefault(e.reason, measure)
        lines += [f"  n/a or no interval: {reason}" for reason in reasons]
    lines += ["", f"calibration against people (relevant = label >= 0.5; {report.n_human or report.n_labelled:,} "
                  "labelled passages; rogan_gladen = the true share the method's share implies):"]
    columns = ("n", "tp", "fp", "fn", "tn", "precision", "recall", "specificity", "human_share_labelled",
               "human_base_rate", "method_base_rate", "kappa", "method_share_all", "rogan_gladen")
    short = {"human_share_labelled": "people_n", "human_base_rate": "people", "method_base_rate": "method",
             "method_share_all": "share_all", "rogan_gladen": "RG", "specificity": "spec", "precision": "prec"}
    width = max([len(m) for m in report.methods] + [6]) + 2
    lines.append("  " + "method".ljust(width) + "".join(f"{short.get(c, c):>10}" for c in columns)
                 + f"{'tau_q':>10}{'tau_run':>10}")
    for method, trust in report.methods.items():
        values = trust.calibration.as_dict()
        cells = "".join(f"{values[c]:>10}" if isinstance(values[c], int) else
                        f"{_number(math.nan if values[c] is None else values[c]):>10}" for c in columns)
        lines.append("  " + method.ljust(width) + cells + f"{_number(trust.per_query.tau):>10}"
                     f"{_number(trust.per_run.tau):>10}")
    lines.append("  people_n: the people's share of the labelled passages, (tp + fn) / n; people/method: base rates "
                 "weighted by the design (equal under a uniform sample); tau_q: Kendall's tau-b of the per-query "
                 f"share of relevant (queries with >= 2 labelled top-{report.k} passages); tau_run: of the runs' "
                 f"P@{report.k} orderings over {len(report.runs_compared) + 1} annotated runs")
    if report.plan is not None:
        plan = report.plan
        lines += ["", f"label next ({plan['size']} passages, Neyman allocation to narrow {plan['method']}'s interval; "
                      f"strata: {plan['strata']}):"]
        lines += [f"  {a['stratum']}: {a['labelled']:,} of {a['population']:,} labelled, add {a['add']:,}"
                  for a in plan["allocation"]]
        lines += [f"  {i['query_id']}\t{i['passage_id']}\trank {i['rank']}\t{i['stratum']}" for i in plan["items"]]
    return "\n".join(lines)


def trust_finding(report: TrustReport, method: str, measure: str | None = None,
                  name: Callable[[str], str] = str) -> Finding | None:
    """The sentence of the Findings page: ``eRAG EM P@10 0.21 from automatic labels; with 300 human labels 0.25
    [0.20, 0.30] (PPI, uniform sample; human labels alone 0.24 [0.19, 0.29])``; or why the human labels give no
    estimate. None when the run has no human label or no such method."""
    if report.n_labelled == 0 or method not in report.methods:
        return None
    measure = measure or f"P@{report.k}"
    trust = report.methods[method]
    auto = trust.auto.get(measure, math.nan)
    head = f"{name(method)} {measure} {auto:.2f} from automatic labels"
    target = {"method": method, "measure": measure, "k": report.k}
    if not report.supports_estimate:
        return Finding("trust", f"{head}; the {report.n_labelled:,} human labels were not drawn at random, so they "
                                f"{NO_UNBIASED} (draw the shared sample on the Annotate page and label it).", target)
    ppi_estimate = trust.estimates[PPI][measure]
    if not math.isfinite(ppi_estimate.estimate):
        return Finding("trust", f"{head}; {ppi_estimate.n_human:,} human labels of the {report.design.plan} sample "
                                f"so far: no estimate yet ({ppi_estimate.reason}).", target)
    human = trust.estimates[HUMAN_ONLY][measure]

    def shown(e: Estimate) -> str:
        if not (math.isfinite(e.low) and math.isfinite(e.high)):
            return f"{e.estimate:.2f} (no interval yet: {e.reason})"
        return f"{e.estimate:.2f} [{max(e.low, 0.0):.2f}, {min(e.high, 1.0):.2f}]"

    return Finding("trust", f"{head}; with {ppi_estimate.n_human:,} human labels {shown(ppi_estimate)} (PPI, "
                            f"{report.design.plan} sample, {round(100 * report.confidence)}% interval; human labels "
                            f"alone {shown(human)}).", target)
