"""Views of the annotation page (``app_pages/9_Annotate.py``): the annotator's name, the blocks a person labels, the
agreement tables and figure, the disagreements and the downloads.

Passage, statement and question text is shown through ``st.text`` / ``st.dataframe`` or escaped Markdown, never as
HTML. Table builders are pure; the ``render_*`` functions draw.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from rageval import annotations as ann
from ui import data, render, theme
from ui.plot_text import plot_text
from ui.render import escape_markdown

ANNOTATOR_STATE = "annotate.annotator"
ANNOTATOR_PARAM = "annotator"
#: What a person labels (``?mode=``) and the annotation kind it stores.
MODES = {"passages": "Passages: useful or not", "statements": "Statements: supported or not"}
KIND_OF_MODE = {"passages": "passage", "statements": "statement"}
#: The two labels' words, per kind.
LABEL_WORDS = {"passage": {1: "useful", 0: "not useful"}, "statement": {1: "supported", 0: "not supported"}}
STATEMENT_METHOD_NAMES = {"nli:autoais": "NLI: a citation supports it (AutoAIS)",
                          "nli:alce": "NLI: citations jointly support it (ALCE)",
                          "hagrid:human": "HAGRID's annotators"}


def method_display_name(method: str) -> str:
    return STATEMENT_METHOD_NAMES.get(method) or render.method_name(method)


def order_methods(methods: Sequence[str]) -> list[str]:
    """Statement methods in :data:`STATEMENT_METHOD_NAMES` order first, then passage methods in display order."""
    known = [m for m in STATEMENT_METHOD_NAMES if m in methods]
    return known + render.order_label_methods([m for m in methods if m not in STATEMENT_METHOD_NAMES])


# --- the annotator's name (session state + ?annotator=) ------------------------------------------------------

def _annotator_widget() -> str:
    return f"{ANNOTATOR_STATE}.widget"


def _commit_annotator(name: str) -> None:
    st.session_state[ANNOTATOR_STATE] = name
    if name and st.query_params.get(ANNOTATOR_PARAM) != name:
        st.query_params[ANNOTATOR_PARAM] = name
    elif not name and ANNOTATOR_PARAM in st.query_params:
        del st.query_params[ANNOTATOR_PARAM]


def _on_annotator() -> None:
    _commit_annotator(ann.normalise_annotator(st.session_state[_annotator_widget()]))


def annotator_input(where: Any) -> str:
    """The annotator's name: from ``?annotator=``, else the session, else empty; written back to both, so it is
    kept across pages and reruns and can be put in a link."""
    from_url = ann.normalise_annotator(st.query_params.get(ANNOTATOR_PARAM, ""))
    name = from_url or st.session_state.get(ANNOTATOR_STATE, "")
    _commit_annotator(name)
    st.session_state[_annotator_widget()] = name  # seeded each run: widget state does not survive a page switch
    where.text_input("Your name (annotator)", key=_annotator_widget(), on_change=_on_annotator,
                     placeholder="e.g. Ada Lovelace", help="Saved with every label you give, with the time (UTC).")
    return name


# --- labelling blocks ------------------------------------------------------------------------------------------

def current_label_caption(current: pd.Series | None, kind: str) -> str:
    """``Your label: useful (2026-01-01 12:00 UTC; changed once)``, or that there is none yet (escaped)."""
    if current is None:
        return "Your label: none yet"
    when = str(current["labelled_at"])[:16].replace("T", " ")
    changes = int(current.get("times_labelled", 1)) - 1
    changed = "" if changes == 0 else f"; changed {'once' if changes == 1 else f'{changes} times'}"
    return escape_markdown(f"Your label: {LABEL_WORDS[kind][int(current['label'])]} ({when} UTC{changed})")


def render_label_buttons(current: pd.Series | None, kind: str, *, key: str, on_label: Callable[..., None],
                         args: tuple) -> None:
    """Two buttons (✓ label 1, ✗ label 0) calling ``on_label(*args, label)``; the current label's button is
    highlighted and named in a caption beside them."""
    words = LABEL_WORDS[kind]
    chosen = None if current is None else int(current["label"])
    yes, no, caption = st.columns([1.2, 1.4, 5], vertical_alignment="center")
    yes.button(f"✓ {words[1].capitalize()}", key=f"{key}.yes", type="primary" if chosen == 1 else "secondary",
               on_click=on_label, args=(*args, 1), width="stretch")
    no.button(f"✗ {words[0].capitalize()}", key=f"{key}.no", type="primary" if chosen == 0 else "secondary",
              on_click=on_label, args=(*args, 0), width="stretch")
    caption.caption(current_label_caption(current, kind))


def render_passage_to_label(row: Any, current: pd.Series | None, *, key: str, on_label: Callable[..., None],
                            args: tuple, run_key: tuple[str, int], page_key: str) -> None:
    """One ranked passage (a row of :func:`ui.data.load_ranking`'s table, read from the run ``run_key``): rank,
    title, id, its text (a page at a time when long: widget ``page_key``), and the label buttons."""
    with st.container(border=True):
        title = escape_markdown(row.title) if row.title else "(untitled passage)"
        st.markdown(f"**{int(row.rank)}\\. {title}** · {escape_markdown(row.passage_id)}")
        render.render_passage_text(row.text, row.text_size, key=page_key,
                                   load_page=functools.partial(data.load_passage_page, *run_key, row.passage_id))
        render_label_buttons(current, "passage", key=key, on_label=on_label, args=args)


def render_statement_to_label(row: Any, current: pd.Series | None, *, key: str, on_label: Callable[..., None],
                              args: tuple) -> None:
    """One statement of an answer (a row of its statements table): number, citations, text, the label buttons."""
    with st.container(border=True):
        cites = " ".join(f"[{int(n)}]" for n in row.citations) or "no citation"
        st.markdown(f"**Statement {int(row.statement) + 1}** · cites {escape_markdown(cites)}")
        st.text(row.text)
        render_label_buttons(current, "statement", key=key, on_label=on_label, args=args)


def render_progress(labelled: int, total: int, annotator: str, what: str) -> None:
    share = labelled / total if total else 0.0
    st.progress(min(share, 1.0), text=escape_markdown(f"{labelled:,} of {total:,} {what} labelled by {annotator} "
                                                      f"({100 * share:.0f}%)"))


# --- agreement -----------------------------------------------------------------------------------------------

def _confusion_columns(first: str, second: str) -> dict[str, str]:
    return {"both_useful": f"{first} ✓ {second} ✓", "person_only": f"{first} ✓ {second} ✗",
            "method_only": f"{first} ✗ {second} ✓", "both_not": f"{first} ✗ {second} ✗"}


def agreement_view(table: pd.DataFrame) -> pd.DataFrame:
    """Kappa per automatic method (display order): Labels, n, Cohen's kappa (empty when undefined), observed and
    chance agreement, the confusion counts (you × method) and why kappa is undefined."""
    table = table.set_index("method").loc[order_methods(list(table["method"]))].reset_index()
    view = pd.DataFrame({"Labels": table["method"].map(method_display_name), "n": table["n"].astype(int),
                         "Cohen's kappa": table["kappa"].astype(float),
                         "Observed agreement": table["observed"].astype(float),
                         "Chance agreement": table["expected"].astype(float)})
    for column, name in _confusion_columns("you", "method").items():
        view[name] = table[column].astype(int)
    view["Why undefined"] = table["reason"]
    return view


def annotators_view(table: pd.DataFrame) -> pd.DataFrame:
    """Kappa per pair of annotators: A, B, n, kappa, observed and chance agreement, confusion counts (A × B)."""
    view = pd.DataFrame({"Annotator A": table["annotator_a"], "Annotator B": table["annotator_b"],
                         "n": table["n"].astype(int), "Cohen's kappa": table["kappa"].astype(float),
                         "Observed agreement": table["observed"].astype(float),
                         "Chance agreement": table["expected"].astype(float)})
    for column, name in _confusion_columns("A", "B").items():
        view[name] = table[column].astype(int)
    view["Why undefined"] = table["reason"]
    return view


def kappa_figure(table: pd.DataFrame, annotator: str):
    """Bars of Cohen's kappa per automatic method (only where it is defined), coloured by method as everywhere."""
    import plotly.graph_objects as go

    defined = table[table["kappa"].notna()]
    methods = order_methods(list(defined["method"]))
    defined = defined.set_index("method").loc[methods]
    colours = theme.method_colours(methods)
    figure = go.Figure(go.Bar(
        x=[plot_text(method_display_name(m)) for m in methods], y=defined["kappa"].tolist(),
        marker_color=[colours[m] for m in methods],
        customdata=list(zip(defined["n"].astype(int), defined["observed"], defined["expected"])),
        hovertemplate="%{x}<br>Cohen's kappa %{y:.3f}<br>n = %{customdata[0]} items<br>"
                      "observed agreement %{customdata[1]:.3f}<br>chance agreement %{customdata[2]:.3f}"
                      "<extra></extra>"))
    figure.update_layout(title={"text": f"Cohen's kappa between {plot_text(annotator)}'s labels and each automatic "
                                        "method"},
                         xaxis_title="automatic label method", yaxis_title="Cohen's kappa",
                         yaxis_range=[min(-0.1, float(defined["kappa"].min()) - 0.05) if len(defined) else -0.1, 1.0])
    return figure


def citations_link(run: str, scenario: str, query_id: str, answer_id: str) -> str:
    """Relative link to the citations page on one answer (the ``?run=&scenario=&query=&answer=`` it reads)."""
    return "Citations?" + urlencode({"run": run, "scenario": scenario, "query": query_id, "answer": answer_id})


def disagreements_view(found: pd.DataFrame, kind: str, run: str, questions: dict[str, str]) -> pd.DataFrame:
    """The items where the person and a method differ: the question, the item, the method, both labels (a graded
    method value shown with two decimals, then what it counts as) and a link that opens the item (query inspector for
    passages, citations page for statements)."""
    words = LABEL_WORDS[kind]
    view = pd.DataFrame({"Question": [questions.get(q, "") or q for q in found["query_id"]]})
    if kind == "passage":
        view["Passage id"] = found["passage_id"].to_list()
    else:
        view["Scenario"] = found["scenario"].to_list()
        view["Answer"] = found["answer_id"].to_list()
        view["Statement"] = (found["statement"].astype(int) + 1).to_list()
    view["Labels"] = found["method"].map(method_display_name).to_list()
    view["You"] = [f"{render.format_label(v)} {words[int(v)]}" for v in found["label"]]
    view["Method"] = [f"{render.format_label(float(v))} → {words[int(m)]}"
                      for v, m in zip(found["value"], found["method_label"])]
    if kind == "passage":
        view["Open"] = [render.inspector_url(run, q) for q in found["query_id"]]
    else:
        view["Open"] = [citations_link(run, s, q, a) for s, q, a in
                        zip(found["scenario"], found["query_id"], found["answer_id"])]
    return view


def render_agreement(table: pd.DataFrame, between: pd.DataFrame, found: pd.DataFrame, *, kind: str, run: str,
                     annotator: str, questions: dict[str, str], provenance: str) -> None:
    """The agreement section: kappa table and figure, kappa between annotators, the disagreements."""
    st.subheader("Agreement with the automatic labels")
    if int(table["n"].max() if len(table) else 0) == 0:
        st.info(escape_markdown(f"{annotator} has no label on an item the automatic methods labelled yet: label "
                                "some items above and Cohen's kappa appears here."))
        return
    ratio = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(agreement_view(table), hide_index=True, column_config={
        "Cohen's kappa": ratio, "Observed agreement": ratio, "Chance agreement": ratio,
        "n": st.column_config.NumberColumn("n", help="items labelled by both you and the method", format="%d")})
    graded = " A graded automatic label counts as ✓ from 0.5." if kind == "passage" else ""
    st.caption("Cohen's kappa (Cohen 1960) = (p_o − p_e) / (1 − p_e): p_o the observed agreement, p_e the agreement "
               "expected by chance from each side's share of ✓; 1 is perfect agreement, 0 chance. Over the items "
               "both you and the method labelled (your latest label of each); undefined when both gave every item "
               f"the same label.{graded} " + provenance)
    if table["kappa"].notna().any():
        st.plotly_chart(kappa_figure(table, annotator), key="annotate.kappa_figure")
    if not between.empty:
        st.markdown("**Agreement between annotators**")
        st.dataframe(annotators_view(between), hide_index=True,
                     column_config={"Cohen's kappa": ratio, "Observed agreement": ratio, "Chance agreement": ratio})
        st.caption("Cohen's kappa of each pair of annotators over the items both labelled (their latest labels). "
                   + provenance)
    st.markdown("**Disagreements**")
    if found.empty:
        st.caption(escape_markdown(f"None: on every item {annotator} labelled, each method agrees."))
        return
    st.dataframe(disagreements_view(found, kind, run, questions), hide_index=True, column_config={
        "Question": st.column_config.TextColumn(width="medium"),
        "Open": st.column_config.LinkColumn("Open", display_text="open ↗",
                                            help="Open this item in the query inspector or the citations page")})
    st.caption(escape_markdown(f"{len(found)} (item, method) pairs where {annotator}'s latest label and the "
                               f"method's differ ({found['method'].nunique()} methods).") + " " + provenance)


def render_downloads(history: pd.DataFrame, latest: pd.DataFrame, *, kind: str, run: str, annotator: str) -> None:
    """CSV of every label of the run (all annotators, with history) and, for passages, TREC qrels."""
    st.subheader("Export")
    if history.empty:
        st.caption("Nothing to export yet: no one has labelled an item of this run.")
        return
    csv_column, scope_column, qrels_column = st.columns([2, 2, 2], vertical_alignment="bottom")
    csv_column.download_button(
        "Download CSV (every label)", ann.labels_csv(history), file_name=f"{run}-{kind}-annotations.csv",
        mime="text/csv", key="annotate.download_csv", on_click="ignore", width="stretch",
        help="All annotators, every label with its time and note; 'current' marks the label that counts.")
    if kind != "passage":
        return
    scope = scope_column.selectbox("qrels from", ["yours", "majority"], key="annotate.qrels_scope",
                                   format_func={"yours": f"{annotator}'s labels",
                                                "majority": "majority of all annotators (a tie is 0)"}.get)
    try:
        qrels = ann.qrels_text(ann.qrels_frame(latest, annotator if scope == "yours" else None))
    except ValueError as error:
        qrels_column.error(str(error))
        return
    qrels_column.download_button(
        "Download TREC qrels", qrels, file_name=f"{run}-{'majority' if scope == 'majority' else 'mine'}.qrels",
        mime="text/plain", key="annotate.download_qrels", on_click="ignore", width="stretch", disabled=not qrels,
        help="query_id 0 passage_id label, the latest label of each passage (trec_eval / pytrec_eval format).")
