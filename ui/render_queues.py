"""Views of the annotation queues (``app_pages/12_Queues.py`` and the Annotate page's "My queue"): the create form,
a queue's plan, strata, progress, agreement, the adjudication view, the export, and the annotator's item.

Question, passage and statement text, notes and names are shown through ``st.text`` / ``st.dataframe`` or escaped
Markdown, never as HTML. Table builders are pure; the ``render_*`` functions draw.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from rageval import queue_plans as plans
from rageval import queues as q
from rageval.store.annotations import LABELLED, SKIPPED, UNSURE
from ui import render
from ui import render_annotate as annotate_view
from ui.render import escape_markdown

PLAN_NAMES = {plans.UNIFORM_PLAN: "Uniform random sample",
              plans.STRATIFIED_PLAN: "Stratified by an automatic label",
              plans.DISAGREEMENT_PLAN: "Where the label methods disagree (oversampled, stratified)"}
ALLOCATION_NAMES = {plans.PROPORTIONAL: "proportional to each stratum's size", plans.EQUAL: "equal per stratum"}
KIND_NAMES = {"passage": "Passages (useful or not)", "statement": "Statements (supported or not)"}
#: The create form's widget keys, by field.
FORM_KEYS = {field: f"queues.create.{field}" for field in (
    "name", "plan", "stratify_by", "allocation", "oversample", "size", "overlap", "seed", "annotators", "guidelines")}
DEFAULT_GUIDELINES = {
    "passage": "Useful means: this passage alone lets someone answer the question correctly (eRAG's definition). "
               "Mark unsure when you cannot tell, and say why in the note.",
    "statement": "Supported means: the passages the statement cites, read together, state what it says."}


def plan_text(queue: q.Queue) -> str:
    """``12 of 400 retrieved passages of nq-run, stratified by erag:em (proportional), seed 3; each to 2 of 3
    annotators; created by Ada on 2026-01-01 12:00 UTC``."""
    what = "retrieved passages" if queue.kind == "passage" else "cited statements"
    return (f"{queue.size:,} of {queue.population:,} {what} of {queue.run}, {queue.plan.describe()}; each item to "
            f"{queue.overlap} of {len(queue.annotators)} annotators; created by {queue.created_by} on "
            f"{queue.created_at[:16].replace('T', ' ')} UTC")


def queues_view(queues: list[q.Queue], totals: dict[int, dict[str, int]]) -> pd.DataFrame:
    """One row per queue, newest first: id, name, run, items, plan, overlap, annotators, labels done of assigned,
    items complete."""
    rows = [{"Queue": queue.id, "Name": queue.name, "Run": queue.run, "Items": queue.size,
             "Plan": queue.plan.describe(), "Overlap": queue.overlap, "Annotators": len(queue.annotators),
             "Labels done": totals[queue.id]["done"], "Labels assigned": totals[queue.id]["assignments"],
             "Items complete": totals[queue.id]["complete"],
             "Progress": totals[queue.id]["done"] / totals[queue.id]["assignments"]
             if totals[queue.id]["assignments"] else 0.0} for queue in reversed(queues)]
    return pd.DataFrame(rows)


def render_queue_list(queues: list[q.Queue], totals: dict[int, dict[str, int]]) -> None:
    st.subheader("Queues")
    render.render_table(queues_view(queues, totals), {"Progress": st.column_config.ProgressColumn(
        "Progress", min_value=0.0, max_value=1.0, format="percent")}, hide_index=True, key="queues.list_table")


def strata_view(strata: pd.DataFrame) -> pd.DataFrame:
    """Stratum, items in the run, items drawn, sampling rate and inclusion weight (what each label stands for)."""
    return pd.DataFrame({"Stratum": strata["stratum"], "Items in the run": strata["population"].astype(int),
                         "Drawn": strata["sampled"].astype(int),
                         "Sampling rate": strata["sampled"] / strata["population"],
                         "Inclusion weight": strata["weight"].astype(float)})


def progress_view(progress: pd.DataFrame) -> pd.DataFrame:
    """One row per annotator: assigned items, done (labelled or unsure), labelled, unsure, skipped, pending."""
    return pd.DataFrame({"Annotator": progress["annotator"], "Assigned": progress["assigned"].astype(int),
                         "Done": progress["done"].astype(int), "Labelled 0/1": progress[LABELLED].astype(int),
                         "Unsure": progress[UNSURE].astype(int), "Skipped": progress[SKIPPED].astype(int),
                         "Pending": progress[q.PENDING].astype(int),
                         "Progress": progress["done"] / progress["assigned"].where(progress["assigned"] > 0)})


def disagreement_items(found: pd.DataFrame) -> list[pd.DataFrame]:
    """The disagreements grouped by item (position order): one frame of every annotator's decision per item."""
    return [rows.reset_index(drop=True) for _, rows in found.groupby("position", sort=True)]


def decisions_view(rows: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Each annotator's decision on one item: annotator, label (in words), note, when."""
    words = annotate_view.LABEL_WORDS[kind]
    return pd.DataFrame({"Annotator": rows["annotator"],
                         "Label": [words[int(d)] if d in ("0", "1") else d for d in rows["decision"]],
                         "Note": rows["note"], "When (UTC)": rows["labelled_at"].str[:16].str.replace("T", " ")})


def item_title(row: Any, kind: str) -> str:
    """``query q1 · passage p7`` or ``scenario s · query q1 · answer a · statement 3`` (plain text)."""
    if kind == "passage":
        return f"query {row['query_id']} · passage {row['passage_id']}"
    return (f"scenario {row['scenario']} · query {row['query_id']} · answer {row['answer_id']} · statement "
            f"{int(row['statement']) + 1}")


# --- drawing --------------------------------------------------------------------------------------------------

def render_create_form(kind: str, methods: list[str], population: int, *, on_create: Callable[..., None],
                       args: tuple) -> None:
    """The form that creates a queue over the chosen run; ``on_create(*args, FORM_KEYS)``."""
    with st.form("queues.create_form"):
        name, plan = st.columns([2, 3])
        name.text_input("Queue name", key=FORM_KEYS["name"], placeholder="e.g. nq-check-1")
        plan.selectbox("Sampling plan", list(plans.PLANS), key=FORM_KEYS["plan"], format_func=PLAN_NAMES.get,
                       help="Uniform: a seeded random sample. Stratified: split the run's items by one method's "
                            "label and draw within each part. Disagreement: oversample the items where the run's "
                            "label methods disagree, every part keeping a positive sampling rate, so estimates "
                            "weighted by 1 / inclusion probability stay unbiased.")
        method, allocation, oversample = st.columns(3)
        method.selectbox("Stratify by (stratified plan)", methods, key=FORM_KEYS["stratify_by"],
                         help="The automatic label method whose label (1 / 0 / not labelled) splits the items.")
        allocation.radio("Allocation (stratified plan)", list(plans.ALLOCATIONS), key=FORM_KEYS["allocation"],
                         format_func=ALLOCATION_NAMES.get, horizontal=True)
        oversample.number_input("Oversampling (disagreement plan)", min_value=1.0, max_value=20.0,
                                value=plans.DEFAULT_OVERSAMPLE, step=0.5, key=FORM_KEYS["oversample"],
                                help="An item where one method dissents is this many times as likely to be drawn "
                                     "as one where all agree (two dissenting: 1 + 2 x (this - 1)).")
        size, overlap, seed = st.columns(3)
        size.number_input("Items", min_value=1, max_value=max(population, 1), value=min(50, max(population, 1)),
                          step=10, key=FORM_KEYS["size"],
                          help=f"How many of the run's {population:,} items to draw (before overlap).")
        overlap.number_input("Overlap (annotators per item)", min_value=1, max_value=20, value=2, step=1,
                             key=FORM_KEYS["overlap"],
                             help="Each item goes to this many distinct annotators; 2 or more gives agreement.")
        seed.number_input("Random seed", min_value=0, value=0, step=1, key=FORM_KEYS["seed"])
        st.text_area("Annotators (one id per line)", key=FORM_KEYS["annotators"], height=100,
                     help="The ids they label under: the name typed on the Annotate page, or in team mode the "
                          "signed-in id (their email).")
        st.text_area("Guidelines (shown to each annotator with their queue)", key=FORM_KEYS["guidelines"],
                     value=DEFAULT_GUIDELINES[kind], height=90)
        st.form_submit_button("Create the queue", type="primary", on_click=on_create, args=(*args, FORM_KEYS))


def render_queue_summary(queue: q.Queue, view: dict) -> None:
    """The plan, the strata and the progress of one queue."""
    st.caption(escape_markdown(plan_text(queue)))
    if queue.guidelines:
        with st.expander("Guidelines", icon=":material/menu_book:"):
            st.text(queue.guidelines)
    totals = view["totals"]
    st.progress(min(totals["done"] / totals["assignments"], 1.0) if totals["assignments"] else 0.0,
                text=escape_markdown(f"{totals['done']:,} of {totals['assignments']:,} assigned labels done · "
                                     f"{totals['complete']:,} of {totals['items']:,} items complete (every one of "
                                     "their annotators done)"))
    ratio = st.column_config.NumberColumn(format="%.3f")
    st.markdown("**Progress per annotator**")
    render.render_table(progress_view(view["progress"]), {"Progress": st.column_config.ProgressColumn(
        "Progress", min_value=0.0, max_value=1.0, format="percent")}, hide_index=True, key="queues.progress_table")
    st.markdown("**Sampling design**")
    render.render_table(strata_view(view["strata"]), {"Sampling rate": ratio, "Inclusion weight": ratio},
                        hide_index=True, key="queues.strata_table")
    st.caption("Each stratum's items are drawn uniformly at random (seeded); an item drawn stands for "
               "items in the run / drawn of its stratum (the inclusion weight), however many annotators label it. "
               "The CSV export keeps each label's stratum and weight.")


def render_queue_agreement(agreement: q.QueueAgreement, queue: q.Queue) -> None:
    """Fleiss' kappa and Krippendorff's alpha, then Cohen's kappa per pair, on the overlapped items."""
    st.subheader("Agreement on the overlapped items")
    if queue.overlap < 2:
        st.info("This queue gives each item to one annotator: there is no overlap to measure agreement on.")
        return

    def ratio(value: float) -> str:
        return "undefined" if pd.isna(value) else f"{value:.3f}"

    first, second = st.columns(2)
    first.metric(f"Fleiss' kappa ({agreement.fleiss_items:,} items)", ratio(agreement.fleiss),
                 help=f"Fleiss (1971), over the items all {queue.overlap} of their annotators labelled 0/1 (the "
                      "raters may differ from item to item).")
    second.metric(f"Krippendorff's alpha ({agreement.alpha_items:,} items)", ratio(agreement.alpha),
                  help="Krippendorff (2011), nominal, over every item at least two annotators labelled 0/1.")
    if not agreement.pairs.empty:
        render.render_table(annotate_view.annotators_view(agreement.pairs), {
            "Cohen's kappa": st.column_config.NumberColumn(format="%.3f"),
            "Observed agreement": st.column_config.NumberColumn(format="%.3f"),
            "Chance agreement": st.column_config.NumberColumn(format="%.3f")}, hide_index=True,
            key="queues.pairs_table")
    st.caption(escape_markdown(
        f"Queue {queue.id} '{queue.name}' on {queue.run}: {agreement.annotators} annotators; Fleiss' kappa over "
        f"{agreement.fleiss_items:,} items, Krippendorff's alpha over {agreement.alpha_items:,} items "
        f"({agreement.alpha_values:,} labels), Cohen's kappa per pair over the items both labelled. Unsure and "
        "skipped are left out; undefined when every label is the same."))


def render_adjudication(found: pd.DataFrame, queue: q.Queue, texts: dict[int, tuple[str, str]], *,
                        on_adjudicate: Callable[..., None], args: tuple, allowed: bool) -> None:
    """The disagreements, each with every annotator's label and note, its current adjudication and the buttons
    that adjudicate it (``on_adjudicate(*args, position, note_key, label)``); ``texts``: position -> (question,
    passage or statement text)."""
    st.subheader("Adjudication")
    items = disagreement_items(found)
    if not items:
        st.caption("No disagreement yet: on every item labelled by more than one annotator, they agree.")
        return
    words = annotate_view.LABEL_WORDS[queue.kind]
    open_items = sum(pd.isna(rows["adjudicated_label"].iloc[0]) for rows in items)
    st.caption(escape_markdown(f"{len(items):,} items where the annotators decided differently, {open_items:,} not "
                               "adjudicated yet. The adjudicated label is stored apart: no annotator's label "
                               "changes."))
    for rows in items:
        first = rows.iloc[0]
        position = int(first["position"])
        question, text = texts.get(position, ("", ""))
        with st.container(border=True):
            st.caption(escape_markdown(f"Item {position + 1} · {item_title(first, queue.kind)} · stratum "
                                       f"{first['stratum']}"))
            if question:
                st.markdown(f"**{escape_markdown(question)}**")
            if text:
                st.text(text)
            render.render_table(decisions_view(rows, queue.kind), hide_index=True,
                                key=f"queues.decisions.{position}")
            if not pd.isna(first["adjudicated_label"]):
                st.badge(f"Adjudicated: {words[int(first['adjudicated_label'])]} by {first['adjudicated_by']}",
                         color="violet")
                if first["adjudication_note"]:
                    st.text(f"Note: {first['adjudication_note']}")
            if not allowed:
                continue
            note_key = f"queues.adjudication_note.{queue.id}.{position}"
            note, yes, no = st.columns([4, 1.4, 1.6], vertical_alignment="bottom")
            note.text_input("Adjudication note", key=note_key, placeholder="optional: why")
            yes.button(f"Adjudicate: {words[1]}", key=f"queues.adjudicate.{position}.1", on_click=on_adjudicate,
                       args=(*args, position, note_key, 1), width="stretch")
            no.button(f"Adjudicate: {words[0]}", key=f"queues.adjudicate.{position}.0", on_click=on_adjudicate,
                      args=(*args, position, note_key, 0), width="stretch")


def render_export(csv_text: str, queue: q.Queue) -> None:
    st.subheader("Export")
    st.download_button("Download the queue's labels (CSV)", csv_text, file_name=f"queue-{queue.id}-{queue.run}.csv",
                       mime="text/csv", key="queues.download_csv", on_click="ignore",
                       help="One row per (item, annotator): the queue, its plan and seed, the item's stratum and "
                            "inclusion weight, the annotator's id, label and note, and the adjudicated label.")


def my_queue_progress_text(status: pd.DataFrame, annotator: str, queue: q.Queue) -> str:
    done = int(status["status"].isin([LABELLED, UNSURE]).sum())
    skipped = int((status["status"] == SKIPPED).sum())
    return (f"{done:,} of {len(status):,} items of queue '{queue.name}' done by {annotator}"
            + (f" ({skipped:,} skipped, to come back to)" if skipped else ""))


# --- "My queue" on the Annotate page ------------------------------------------------------------------------------

def render_my_queue(store_path: str, key: tuple[str, int, int], queue: q.Queue, annotator: str) -> None:
    """The annotator's queue: its guidelines, their progress, and their next assigned item with the labelling
    blocks of the Annotate page (decision buttons and keys 1 / 0 / u / s, j / k to move, a note)."""
    from ui import data, data_attribution, data_queues, render_citations
    from ui import data_annotate as annotate_data

    st.caption(escape_markdown(plan_text(queue)))
    with st.expander("Guidelines of this queue", icon=":material/menu_book:", expanded=True):
        st.text(queue.guidelines or "(none given)")
    status = data_queues.load_my_status(*key, queue.id, annotator)
    done = status["status"].isin([LABELLED, UNSURE])
    st.progress(float(done.mean()) if len(status) else 0.0,
                text=escape_markdown(my_queue_progress_text(status, annotator, queue)))
    if annotate_data.SAVE_ERROR_STATE in st.session_state:
        st.error(st.session_state[annotate_data.SAVE_ERROR_STATE])  # our own message: the file and the reason
    positions = [int(p) for p in status["position"]]
    position = st.session_state.get(data_queues.QUEUE_POSITION_STATE)
    if position not in positions:
        position = data_queues.load_next_item(store_path, queue.id, annotator)
    if position is None:
        st.success(escape_markdown(f"Every item of queue '{queue.name}' assigned to {annotator} is done. Thank you! "
                                   "Use Previous to revise a label."))
        if positions:
            st.button(annotate_view.PREVIOUS_BUTTON[0], icon=annotate_view.PREVIOUS_BUTTON[1],
                      key="annotate.queue.previous", on_click=data_queues.show_queue_item, args=(positions[-1],))
        return
    st.session_state[data_queues.QUEUE_POSITION_STATE] = position
    item = status.set_index("position").loc[position]
    index = positions.index(position)
    previous = positions[index - 1] if index > 0 else None
    following = positions[index + 1] if index + 1 < len(positions) else None
    run_path = data_queues.run_file(queue.run, queue.kind)
    with st.container(border=True):
        st.caption(escape_markdown(f"Your item {index + 1:,} of {len(positions):,} · queue item {position + 1:,} · "
                                   f"{item_title(item, queue.kind)}"))
        if run_path is None:
            st.warning(escape_markdown(f"The run {queue.run} is not in the runs folder any more: only the item's "
                                       "ids can be shown."))
        elif queue.kind == "passage":
            run_key = data.run_key(run_path)
            query = data.load_query(*run_key, item["query_id"])
            st.subheader(escape_markdown(query.text))
            st.markdown("**Gold answers:** " + (" · ".join(escape_markdown(a) for a in query.answers) or "none"))
            ranking = data.load_ranking(*run_key, item["query_id"]).table
            ranked = ranking[ranking["passage_id"] == item["passage_id"]]
            if ranked.empty:
                st.warning(escape_markdown(f"Passage {item['passage_id']} is no longer in the run's ranking of "
                                           f"query {item['query_id']}: skip it."))
            else:
                passage = ranked.iloc[0]
                title = escape_markdown(passage["title"]) if passage["title"] else "(untitled passage)"
                st.markdown(f"**{int(passage['rank'])}\\. {title}** · {escape_markdown(item['passage_id'])}")
                render.render_passage_text(passage["text"], passage["text_size"], key=f"annotate.queue_page.{position}",
                                           load_page=lambda page: data.load_passage_page(*run_key, item["passage_id"],
                                                                                         page))
        else:
            run_key = data.run_key(run_path)
            statements = data_attribution.load_attribution_statements(*run_key, item["scenario"], item["query_id"],
                                                          item["answer_id"])
            statement = statements[statements["statement"] == int(item["statement"])]
            answers = data_attribution.load_attribution_answers(*run_key)
            question = answers.loc[answers["query_id"] == item["query_id"], "question"]
            if len(question) and question.iloc[0]:
                st.subheader(escape_markdown(question.iloc[0]))
            st.markdown(f"**Statement {int(item['statement']) + 1}:**")
            st.text(statement["text"].iloc[0] if len(statement) else "(this statement is no longer in the run)")
            cited = set(statement["citations"].iloc[0]) if len(statement) else set()
            inputs = data_attribution.load_attribution_inputs(*run_key, item["scenario"], item["query_id"])
            render_citations.render_input_passages(inputs[inputs["number"].isin(cited)], run_key=run_key,
                                                   scenario=item["scenario"], query_id=item["query_id"],
                                                   key=f"annotate.queue_inputs.{position}")
        decision = annotate_view.decision_of(item)
        annotate_view.render_decision_badge(decision)
        note_key = f"annotate.queue_note.{queue.id}.{position}"
        if note_key not in st.session_state:
            st.session_state[note_key] = item["note"]
        st.text_input("Note (saved with your next label of this item)", key=note_key,
                      placeholder="optional: why, or what is unclear")
        annotate_view.render_queue_buttons(
            decision, on_decide=data_queues.label_queue_item,
            decide_args=(store_path, queue.id, annotator, position, note_key),
            on_move=data_queues.show_queue_item, previous=previous, following=following)
    annotate_view.render_hotkeys()
    words = annotate_view.LABEL_WORDS[queue.kind]
    st.caption(escape_markdown(f"Keys: 1 {words[1]} · 0 {words[0]} · u unsure · s skip · j next · k previous. After "
                               "a label your next item opens; skipped items come back at the end."))
