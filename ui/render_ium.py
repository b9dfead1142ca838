"""Views of the agents page (``app_pages/4_Agents_IUM.py``): Iterative Utility Maximization runs (``rageval ium``).

Pure functions from the data layer's tables to display tables and plotly figures. Scores are shown in percent;
model answers only through ``st.dataframe`` (never Markdown or HTML).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from rageval.ium.experiment import MAIN_METHODS
from ui.plot_text import plot_texts
from ui.render import escape_markdown
from ui.theme import share_axis

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
    from rageval.ium.report import format_interval

    return pd.DataFrame({
        "Method": table.index,
        "Macro average % [95% interval]": [format_interval(r.macro, r.low, r.high) for r in table.itertuples()],
        "Minus the first stage, points [95% interval]": [
            format_interval(r.difference, r.difference_low, r.difference_high, signed=True)
            for r in table.itertuples()]})


def summary_figure(summary: pd.DataFrame):
    """Grouped bars: downstream score (percent) per method, one bar per agent and one for the macro average."""
    import plotly.express as px

    long = (100 * summary).rename_axis("agent").reset_index().melt(id_vars="agent", var_name="method",
                                                                   value_name="score")
    long = long.assign(agent=plot_texts(long["agent"]), method=plot_texts(long["method"]))
    figure = px.bar(long, x="method", y="score", color="agent", barmode="group",
                    category_orders={"method": plot_texts(summary.columns), "agent": plot_texts(summary.index)},
                    labels={"method": "method (search engine)", "score": "downstream score (%)", "agent": "agent"},
                    title="Downstream score of each agent's answer from its top k, per method")
    figure.update_traces(hovertemplate="%{fullData.name}<br>%{x}: %{y:.1f}%<extra></extra>")
    return share_axis(figure)


def iteration_figure(curves: pd.DataFrame):
    """Macro-average score (percent) against the offline iteration t, personalised and not (the paper's Fig. 2a)."""
    import plotly.express as px

    long = (100 * curves).rename_axis("t").reset_index().melt(id_vars="t", var_name="engine", value_name="score")
    long = long.assign(engine=plot_texts(long["engine"]))
    figure = px.line(long.dropna(), x="t", y="score", color="engine", markers=True,
                     labels={"t": "offline iteration t (0 = BM25)", "score": "macro-average downstream score (%)",
                             "engine": "engine input"},
                     title="Offline IUM: personalised (task/model ids) vs non-personalised")
    figure.update_traces(hovertemplate="%{fullData.name}<br>t = %{x}: %{y:.1f}%<extra></extra>")
    figure.update_xaxes(tickvals=sorted(curves.index))
    return share_axis(figure)


def batch_figure(curve: pd.Series):
    """Macro-average score (percent) of online IUM against its batch size b (the paper's Fig. 2b)."""
    import plotly.express as px

    frame = pd.DataFrame({"b": curve.index.astype(int), "score": 100 * curve.to_numpy(dtype=float)})
    figure = px.line(frame, x="b", y="score", markers=True,
                     labels={"b": "online batch size b (queries per update)",
                             "score": "macro-average downstream score (%)"},
                     title="Online IUM: downstream score per batch size")
    figure.update_traces(hovertemplate="b = %{x}: %{y:.1f}%<extra></extra>")
    figure.update_xaxes(tickvals=list(frame["b"]))
    return share_axis(figure)


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


def personalisation_figure(summary: pd.DataFrame, statistic: str):
    """Heatmap of the mean ``statistic`` (``kendall_tau`` or ``jaccard``) between two agents' served lists: one
    row per agent pair, one column per engine."""
    import plotly.graph_objects as go

    frame = summary.assign(pair=[pair_name(a, b) for a, b in zip(summary["agent_a"], summary["agent_b"])])
    wide = frame.pivot(index="pair", columns="method", values=statistic)
    wide = wide[method_order(wide.columns)]
    name, low = ("Kendall's tau", -1.0) if statistic == "kendall_tau" else ("Jaccard", 0.0)
    figure = go.Figure(go.Heatmap(
        z=wide.to_numpy(dtype=float).tolist(), x=plot_texts(wide.columns), y=plot_texts(wide.index), zmin=low, zmax=1.0,
        colorscale="RdBu" if low < 0 else "Blues", colorbar={"title": {"text": name}}, texttemplate="%{z:.2f}",
        hovertemplate=f"%{{y}}<br>%{{x}}: mean {name} = %{{z:.3f}}<extra></extra>"))
    figure.update_layout(title={"text": f"{name} between the lists two agents are served for the same query"},
                         xaxis_title="engine", yaxis_title="agent pair (same dataset)", height=260 + 60 * len(wide))
    figure.update_yaxes(automargin=True)
    return figure


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
