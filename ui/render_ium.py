"""Views of the agents page (``app_pages/4_Agents_IUM.py``): Iterative Utility Maximization runs (``rageval ium``).

Pure functions from the data layer's tables to display tables and Vega-Lite charts (``(data, spec)`` for
``st.vega_lite_chart``: the page loads no plotly.js, 4.7 MB; Vega-Lite draws names as text, so they are not
HTML-escaped). Scores are shown in percent; model answers only through ``st.dataframe`` (never Markdown or HTML).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from rageval.ium.experiment import MAIN_METHODS
from ui import theme
from ui.render import escape_markdown

MACRO = "macro average"


def provenance(settings: Mapping[str, Any], n_queries: int | str | None = None) -> str:
    """Escaped Markdown caption saying what produced a number: the agents' generators, the first stage, the
    engine's training sizes and, when given, the number of test queries behind it (a count, or a phrase such as
    ``2-3 test queries per agent``)."""
    plan = settings.get("plan") or {}
    config = plan.get("config") or {}
    generators = sorted(set((settings.get("generators") or {}).values()))
    from_runs = settings.get("source") == "runs"
    parts = []
    if from_runs:
        runs = settings.get("runs") or []
        parts.append(f"agents from {len(runs)} run {'file' if len(runs) == 1 else 'files'}")
    if generators:
        parts.append("generators " + ", ".join(generators))
    if settings.get("first_stage"):
        parts.append(f"first stage {settings['first_stage']}")
    if plan:
        parts.append(f"{plan.get('num_train', '?')} training / {plan.get('num_test', '?')} test queries per "
                     f"{'agent' if from_runs else 'dataset'}")
    if config:
        parts.append(f"T = {config.get('iterations', '?')}, train k = {config.get('train_k', '?')}")
    if config.get("init"):
        parts.append(f"engine warm-started from {config['init']}")
    if isinstance(n_queries, str):
        parts.append(n_queries)
    elif n_queries is not None:
        parts.append(f"{n_queries} test {'query' if n_queries == 1 else 'queries'}")
    return escape_markdown(" · ".join(parts))


AGENT_COLUMNS = {"name": "Agent", "dataset": "Dataset", "task_id": "Task id", "model_id": "Model id",
                 "k": "k (passages read)", "utility": "Utility", "generator": "Generator", "run": "Run file",
                 "first_stage": "First stage"}


def agents_view(agents: pd.DataFrame) -> pd.DataFrame:
    """The run's agents with readable column names (known columns first, any other after)."""
    known = [c for c in AGENT_COLUMNS if c in agents.columns]
    return agents[known + [c for c in agents.columns if c not in AGENT_COLUMNS]].rename(columns=AGENT_COLUMNS)


def method_order(methods: Iterable[str]) -> list[str]:
    """:data:`MAIN_METHODS` first (in their order), then the rest by name with numbers compared as numbers
    (``offline-IUM@t2`` before ``offline-IUM@t10``)."""
    def key(method: str) -> tuple:
        if method in MAIN_METHODS:
            return 0, MAIN_METHODS.index(method), ()
        return 1, 0, tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", method))
    return sorted(set(methods), key=key)


def summary_view(summary: pd.DataFrame, counts: Mapping[str, int]) -> pd.DataFrame:
    """The summary table in percent, one row per agent then the macro average, with ``n`` (test queries; the
    number of agents on the macro-average row, which is their unweighted mean)."""
    shown = 100 * summary
    shown["n"] = [len(counts) if agent == MACRO else counts.get(agent, 0) for agent in summary.index]
    shown.index.name = "Agent"
    shown.columns.name = None
    return shown


def macro_intervals_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`rageval.ium.experiment.macro_interval_table` as text: the macro average and the difference from the
    first stage, each with its 95% interval."""
    from rageval.ium.results_section import format_interval

    return pd.DataFrame({
        "Method": table.index,
        "Macro average % [95% interval]": [format_interval(r.macro, r.low, r.high) for r in table.itertuples()],
        "Minus the first stage, points [95% interval]": [
            format_interval(r.difference, r.difference_low, r.difference_high, signed=True)
            for r in table.itertuples()]})


SCORE_TITLE = "downstream score (%)"
MACRO_SCORE_TITLE = "macro-average downstream score (%)"


def summary_chart(summary: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Grouped bars: downstream score (percent) per method, one bar per agent and one for the macro average; one
    data row per bar (``agent``, ``method``, ``score``). The score axis starts at 0."""
    agents, methods = [str(a) for a in summary.index], [str(m) for m in summary.columns]
    long = (100 * summary).rename_axis("agent").reset_index().melt(id_vars="agent", var_name="method",
                                                                   value_name="score")
    long = long.astype({"agent": str, "method": str, "score": float})
    spec = {
        "title": "Downstream score of each agent's answer from its top k, per method",
        "autosize": theme.FIT_WIDTH, "height": 260,
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "method", "type": "nominal", "sort": methods, "title": "method (search engine)",
                  "axis": {"labelAngle": -30, "labelLimit": 200}},
            "xOffset": {"field": "agent", "type": "nominal", "sort": agents},
            "y": {"field": "score", "type": "quantitative", "title": SCORE_TITLE, "scale": theme.share_scale()},
            "color": {"field": "agent", "type": "nominal", "sort": agents, "title": "agent",
                      "legend": {"labelLimit": 300}},
            "tooltip": [{"field": "agent", "title": "agent"}, {"field": "method", "title": "method"},
                        {"field": "score", "type": "quantitative", "format": ".1f", "title": SCORE_TITLE}],
        },
    }
    return long, spec


def _curve_spec(title: str | dict, x: str, x_title: str, ticks: list[int], lines: dict | None = None) -> dict:
    """A line with points of ``score`` (percent, axis from 0) against ``x`` (ticks at ``ticks``); ``lines``, a
    Vega-Lite ``color`` encoding, draws one line per value of its field."""
    by_line = [{"field": lines["field"], "title": lines["title"]}] if lines else []
    return {
        "title": title,
        "autosize": theme.FIT_WIDTH, "height": 220,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": x, "type": "quantitative", "title": x_title, "axis": {"values": ticks, "format": ".0f"}},
            "y": {"field": "score", "type": "quantitative", "title": MACRO_SCORE_TITLE, "scale": theme.share_scale()},
            **({"color": lines} if lines else {}),
            "tooltip": [*by_line, {"field": x, "type": "quantitative", "title": x},
                        {"field": "score", "type": "quantitative", "format": ".1f", "title": MACRO_SCORE_TITLE}],
        },
    }


def iteration_chart(curves: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Macro-average score (percent) against the offline iteration t, personalised and not (the paper's Fig. 2a):
    one data row per point (``engine``, ``t``, ``score``; iterations without a score left out)."""
    engines = [str(e) for e in curves.columns]
    long = (100 * curves).rename_axis("t").reset_index().melt(id_vars="t", var_name="engine", value_name="score")
    long = long.dropna().astype({"t": int, "engine": str, "score": float}).reset_index(drop=True)
    lines = {"field": "engine", "type": "nominal", "sort": engines, "title": "engine input",
             "legend": {"orient": "bottom"}}
    title = {"text": "Offline IUM: personalised vs non-personalised",
             "subtitle": "personalised: the engine also reads the agent's task and model ids"}
    spec = _curve_spec(title, "t",
                       "offline iteration t (0 = BM25)", sorted(int(t) for t in curves.index), lines)
    return long[["engine", "t", "score"]], spec


def batch_chart(curve: pd.Series) -> tuple[pd.DataFrame, dict]:
    """Macro-average score (percent) of online IUM against its batch size b (the paper's Fig. 2b): one data row
    per batch size (``b``, ``score``)."""
    frame = pd.DataFrame({"b": curve.index.astype(int), "score": 100 * curve.to_numpy(dtype=float)})
    spec = _curve_spec("Online IUM: downstream score per batch size", "b",
                       "online batch size b (queries per update)", [int(b) for b in frame["b"]])
    return frame, spec


def significance_view(significance: pd.DataFrame) -> pd.DataFrame:
    """McNemar rows: agent (or the pool), the two methods, test queries, discordant counts and the p-value."""
    return pd.DataFrame({
        "Agent": significance["agent"], "Method A": significance["method_a"], "Method B": significance["method_b"],
        "n": significance["n"].astype(int), "Only A right": significance["only_a"].astype(int),
        "Only B right": significance["only_b"].astype(int), "p-value": significance["p_value"].astype(float),
    })


def pair_name(agent_a: str, agent_b: str) -> str:
    return f"{agent_a} ↔ {agent_b}"


def personalisation_view(summary: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "Engine": summary["method"], "Agent pair": [pair_name(a, b) for a, b in zip(summary["agent_a"],
                                                                                       summary["agent_b"])],
        "Kendall's tau": summary["kendall_tau"].astype(float), "Jaccard": summary["jaccard"].astype(float),
        "n": summary["n"].astype(int),
    })


STATISTIC_NAMES = {"kendall_tau": "Kendall's tau", "jaccard": "Jaccard"}


def personalisation_chart(summary: pd.DataFrame, statistic: str) -> tuple[pd.DataFrame, dict]:
    """Heatmap of the mean ``statistic`` (``kendall_tau``, -1..1, :data:`ui.theme.SIGNED_SCHEME`, or ``jaccard``,
    0..1, :data:`ui.theme.SCORE_SCHEME`) between two agents' served lists, the value written in each cell: one row
    per agent pair, one column per engine; one data row per cell (``pair``, ``engine``, ``value``). A pair whose
    statistic is undefined (NaN) on an engine leaves its cell empty."""
    frame = summary.assign(pair=[pair_name(a, b) for a, b in zip(summary["agent_a"], summary["agent_b"])])
    wide = frame.pivot(index="pair", columns="method", values=statistic)
    engines, pairs = method_order(wide.columns), [str(p) for p in wide.index]
    cells = (wide[engines].rename_axis(index="pair", columns="engine").stack().rename("value")
             .reset_index().astype({"pair": str, "engine": str, "value": float}))
    cells = cells[cells["value"].notna()].reset_index(drop=True)
    name = STATISTIC_NAMES[statistic]
    signed = statistic == "kendall_tau"
    scale = ({"scheme": theme.SIGNED_SCHEME, "domain": [-1.0, 1.0]} if signed else
             {"scheme": theme.SCORE_SCHEME, "domain": [0.0, 1.0]})
    spec = {
        "title": f"{name} between the lists two agents are served for the same query",
        "autosize": theme.FIT_WIDTH, "height": {"step": 48},
        "encoding": {
            "x": {"field": "engine", "type": "nominal", "sort": engines, "title": "engine",
                  "axis": {"labelAngle": -30, "labelLimit": 200}},
            "y": {"field": "pair", "type": "nominal", "sort": pairs, "title": "agent pair (same dataset)",
                  "axis": {"labelLimit": 320, "maxExtent": 340}},  # the pairs' names beside, not under, the title
            "tooltip": [{"field": "pair", "title": "agent pair"}, {"field": "engine", "title": "engine"},
                        {"field": "value", "type": "quantitative", "format": ".3f", "title": f"mean {name}"}],
        },
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {"color": {"field": "value", "type": "quantitative", "title": name, "scale": scale}}},
            {"mark": {"type": "text", "fontSize": 12},
             "encoding": {"text": {"field": "value", "type": "quantitative", "format": ".2f"},
                          "color": theme.heatmap_text_colour("value", signed=signed)}},
        ],
    }
    return cells, spec


def served_view(served: pd.DataFrame, outcomes: pd.DataFrame) -> pd.DataFrame:
    """One agent's test query under every method: the passage ids served (rank order), the agent's answer from
    them and its downstream score (percent); ``served`` and ``outcomes`` are already restricted to them."""
    lists = {m: " · ".join(group.sort_values("rank")["passage_id"]) for m, group in served.groupby("method")}
    answers = outcomes.set_index("method")
    rows = [{"Method": m, "Served passages (rank order)": lists.get(m, ""),
             "Answer": answers.at[m, "output"] if m in answers.index else "",
             "Score %": 100 * float(answers.at[m, "score"]) if m in answers.index else float("nan")}
            for m in method_order([*lists, *answers.index])]
    return pd.DataFrame(rows, columns=["Method", "Served passages (rank order)", "Answer", "Score %"])
