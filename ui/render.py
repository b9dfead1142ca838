"""Small render helpers shared by the pages: formatting, escaping, URL-synced selectors and the blocks
every page shows (run selector, empty state, provenance captions).

Text that comes from data (questions, answers, titles, passages, model outputs, settings) is never
rendered as HTML: it goes through ``st.text`` / ``st.dataframe``, or through :func:`escape_markdown`
before any Markdown element.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rageval.errors import StoreError
from rageval.store import E2EOutput
from rageval.types import Query
from ui import data

METHOD_NAMES = {"erag:em": "eRAG EM", "erag:f1": "eRAG F1", "contains_answer": "contains-answer", "gold": "gold"}
RANKING_BASE_COLUMNS = ("rank", "passage_id", "score", "title", "text", "output")
SETTING_NAMES = {
    "dataset": "Dataset", "retriever": "Retriever", "model_id": "Model", "prompt": "Prompt",
    "k": "k (passages per query)", "label_metric": "Label metric", "num_queries": "Queries",
    "corpus": "Corpus", "created_at": "Created", "rageval_version": "rageval version",
    "command": "Command", "duration_s": "Duration",
}
RUN_STATE = "app.run"  # shared by every page, so it carries the page name "app"
_MARKDOWN_SPECIALS = frozenset(string.punctuation)
EMPTY_STATE_COMMAND = "rageval erag --help"


# --- formatting (pure) ---------------------------------------------------------------------------------

def escape_markdown(text: Any) -> str:
    """``text`` as Markdown that displays literally: every ASCII punctuation character is backslash-escaped
    (CommonMark allows it for all of them), which also disarms HTML tags, links, ``:emoji:`` codes and
    ``$math$``; line breaks become spaces so the text stays one paragraph."""
    return "".join(f"\\{ch}" if ch in _MARKDOWN_SPECIALS else ch for ch in " ".join(str(text).split()))


def method_name(method: str) -> str:
    """Display name of a label method (``erag:em`` -> ``eRAG EM``); unknown methods are shown as stored."""
    return METHOD_NAMES.get(method, method)


def order_label_methods(methods: Sequence[str]) -> list[str]:
    """eRAG methods first, then contains-answer, gold, then any other method alphabetically."""
    def key(method: str) -> tuple[int, str]:
        if method.startswith("erag:"):
            return 0, method
        return {"contains_answer": 1, "gold": 2}.get(method, 3), method
    return sorted(methods, key=key)


def format_label(value: Any) -> str:
    """A label cell: ✓ for 1, ✗ for 0, two decimals for a graded value, – when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if value == 1:
        return "✓"
    if value == 0:
        return "✗"
    return f"{float(value):.2f}"


def format_setting(key: str, value: Any) -> str:
    """One setting as a short string: prompts as ``name (hash)``, corpora as ``name (N passages)``."""
    if isinstance(value, Mapping):
        if "name" in value and "hash" in value:
            return f"{value['name']} ({str(value['hash'])[:12]})"
        if "name" in value and "size" in value:
            size = value["size"]
            return f"{value['name']} ({size:,} passages)" if isinstance(size, int) else f"{value['name']} ({size})"
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if key == "duration_s" and isinstance(value, (int, float)):
        return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"
    return str(value)


def settings_frame(settings: Mapping[str, Any]) -> pd.DataFrame:
    """The run's settings as a two-column table, known keys first in a fixed order; ``notes`` is left out
    (pages show it on its own)."""
    known = [k for k in SETTING_NAMES if k in settings]
    rest = sorted(k for k in settings if k not in SETTING_NAMES and k != "notes")
    rows = [(SETTING_NAMES.get(k, k), format_setting(k, settings[k])) for k in known + rest]
    return pd.DataFrame(rows, columns=["Setting", "Value"])


def provenance(settings: Mapping[str, Any], n_queries: int | None = None) -> str:
    """Escaped Markdown caption saying what produced a table: model, dataset, retriever, k and, when
    given, the number of queries behind it."""
    parts = [f"{label} {format_setting(key, settings[key])}"
             for key, label in (("model_id", "model"), ("dataset", "dataset"), ("retriever", "retriever"))
             if key in settings]
    if "k" in settings:
        parts.append(f"top-{settings['k']}")
    if n_queries is not None:
        parts.append(f"{n_queries} {'query' if n_queries == 1 else 'queries'}")
    return escape_markdown(" · ".join(parts))


def ranking_view(ranking: pd.DataFrame) -> pd.DataFrame:
    """The ranked passages as displayed: rank, title, score, one ✓/✗ column per label method, the
    single-passage answer and the passage text."""
    methods = order_label_methods([c for c in ranking.columns if c not in RANKING_BASE_COLUMNS])
    view = pd.DataFrame({"Rank": ranking["rank"], "Title": ranking["title"], "Score": ranking["score"]})
    for method in methods:
        view[method_name(method)] = ranking[method].map(format_label)
    view["Single-passage answer"] = ranking["output"].fillna("")
    view["Passage"] = ranking["text"]
    return view


# --- URL-synced selection ----------------------------------------------------------------------------

def _widget_key(state_key: str) -> str:
    return f"{state_key}.widget"


def commit_choice(state_key: str, param: str, value: str) -> None:
    """Make ``value`` the current choice: in session state (kept across pages), in the selectbox and in
    the URL (``?param=value``) so the view can be shared. Safe inside widget callbacks."""
    st.session_state[state_key] = value
    if st.session_state.get(_widget_key(state_key)) != value:
        st.session_state[_widget_key(state_key)] = value
    if st.query_params.get(param) != value:
        st.query_params[param] = value


def _on_select(state_key: str, param: str) -> None:
    commit_choice(state_key, param, st.session_state[_widget_key(state_key)])


def select_synced(where: Any, label: str, options: Sequence[str], *, state_key: str, param: str,
                  format_func: Callable[[Any], str] = str, **selectbox_args: Any) -> str:
    """A selectbox whose choice comes from ``?param=`` (if valid), else the session, else the first
    option, and is written back to both."""
    from_url = st.query_params.get(param)
    if from_url in options:
        chosen = from_url
    elif st.session_state.get(state_key) in options:
        chosen = st.session_state[state_key]
    else:
        chosen = options[0]
    commit_choice(state_key, param, chosen)
    return where.selectbox(label, options, key=_widget_key(state_key), format_func=format_func,
                           on_change=_on_select, args=(state_key, param), **selectbox_args)


# --- blocks ------------------------------------------------------------------------------------------

def select_run() -> Path:
    """The sidebar run selector (``?run=<file stem>``, default the newest run). Stops the page with the empty
    state when the runs folder holds no run, and with an error when the chosen file is not a readable run."""
    folder = data.runs_dir()
    runs = {path.stem: path for path in data.find_runs(folder)}
    if not runs:
        render_empty_state()
        st.stop()
    stem = select_synced(st.sidebar, "Run", list(runs), state_key=RUN_STATE, param="run",
                         help="Run files (*.sqlite), newest first")
    st.sidebar.caption(escape_markdown(f"from {folder}"))
    try:
        data.load_settings(*data.run_key(runs[stem]))
    except (StoreError, OSError) as error:
        st.error(str(error))  # our own message (file name and reason), not corpus text
        st.stop()
    return runs[stem]


def render_empty_state() -> None:
    """What to do when there is no run to show."""
    st.title("rageval")
    st.info(escape_markdown(f"No run files (*.sqlite) in {data.runs_dir()}.") +
            " Make one with the eRAG command (see its options), or point the dashboard at another folder "
            f"with the `{data.RUNS_DIR_ENV}` environment variable:")
    st.code(EMPTY_STATE_COMMAND, language="bash")


def render_measure_summary(summary: pd.DataFrame) -> None:
    """Mean measure values, one row per label method."""
    shown = summary.loc[order_label_methods(list(summary.index))].rename(index=method_name)
    shown.index.name = "Labels"
    config = {c: st.column_config.NumberColumn(c, format="%.3f") for c in shown.columns if c != "n"}
    config["n"] = st.column_config.NumberColumn("n", help="queries averaged over", format="%d")
    st.dataframe(shown, column_config=config)


def correlation_view(table: pd.DataFrame, statistic: str) -> pd.DataFrame:
    """``value [low, high]`` of one statistic (``tau`` or ``rho``): one row per measure, one column per method."""
    def cell(row) -> str:
        if math.isnan(row[statistic]):
            return "undefined (constant)"
        return f"{row[statistic]:.3f} [{row[statistic + '_low']:.2f}, {row[statistic + '_high']:.2f}]"

    shown = table.assign(cell=table.apply(cell, axis=1))
    wide = shown.pivot(index="measure", columns="method", values="cell")
    wide = wide[order_label_methods(list(wide.columns))].rename(columns=method_name)
    wide.index.name = "Measure"
    wide.columns.name = None
    return wide


def render_question(query: Query, e2e: E2EOutput | None) -> None:
    """The question, its gold answers and the end-to-end answer with its exact match."""
    st.subheader(escape_markdown(query.text))
    left, right = st.columns([4, 1])
    answers = " · ".join(escape_markdown(a) for a in query.answers) or "none"
    left.markdown(f"**Gold answers:** {answers}")
    if e2e is None:
        left.markdown("**End-to-end answer:** not stored in this run")
        return
    left.markdown(f"**End-to-end answer** (top-{e2e.k} passages): {escape_markdown(e2e.output)}")
    right.metric("E2E exact match", f"{format_label(e2e.score)} {e2e.score:g}")


def render_passages(ranking: pd.DataFrame) -> None:
    """One bordered block per ranked passage: header, labels, single-passage answer, then the text."""
    view = ranking_view(ranking)
    label_columns = [c for c in view.columns if c not in ("Rank", "Title", "Score", "Single-passage answer",
                                                          "Passage")]
    for passage_id, row in zip(ranking["passage_id"], view.to_dict("records")):
        with st.container(border=True):
            title = escape_markdown(row["Title"]) if row["Title"] else "(untitled passage)"
            st.markdown(f"**{row['Rank']}\\. {title}** · score {row['Score']:.2f} · {escape_markdown(passage_id)}")
            labels = " · ".join(f"{escape_markdown(c)} {row[c]}" for c in label_columns)
            st.caption(f"{labels} · single-passage answer: {escape_markdown(row['Single-passage answer'])}")
            st.text(row["Passage"])
