"""Views of the annotation page (``app_pages/9_Annotate.py``): the annotator's name, the guideline, the sample queue
(its form, progress, the item on screen with its label buttons and note, the hotkeys, the reveal of the methods'
labels), the blocks of statements, the agreement tables and chart, the disagreements and the downloads.

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

from rageval import agreement as agree
from rageval import annotations as ann
from rageval.store.annotations import LABELLED, SKIPPED, STATUSES, UNSURE, Sample, normalise_annotator
from rageval.trec import qrels_text
from ui import auth, data, render, theme
from ui import format as fmt
from ui.render import escape_markdown

ANNOTATOR_STATE = "annotate.annotator"
ANNOTATOR_PARAM = "annotator"
#: What a person labels (``?mode=``) and the annotation kind it stores.
MODES = {"passages": "Passages: useful or not", "statements": "Statements: supported or not"}
KIND_OF_MODE = {"passages": "passage", "statements": "statement"}
#: The two labels' words, per kind.
LABEL_WORDS = {"passage": {1: "useful", 0: "not useful"}, "statement": {1: "supported", 0: "not supported"}}
#: The queue's buttons: (decision or move, button text). The text ends with the hotkey in brackets, which is how
#: the hotkey script (:data:`HOTKEYS_SCRIPT`) finds the button; no other button of the page ends that way.
DECISION_BUTTONS = ((1, "Useful [1]", ":material/check:"), (0, "Not useful [0]", ":material/close:"),
                    (UNSURE, "Unsure [u]", ":material/help:"), (SKIPPED, "Skip [s]", ":material/redo:"))
PREVIOUS_BUTTON, NEXT_BUTTON = ("Previous [k]", ":material/arrow_back:"), ("Next [j]", ":material/arrow_forward:")
#: How each decision shows (badge text and colour), and "pending" for none yet.
DECISION_BADGES = {1: ("useful", "green"), 0: ("not useful", "red"), UNSURE: ("unsure", "orange"),
                   SKIPPED: ("skipped", "gray"), "pending": ("not labelled yet", "blue")}
QUEUE_VIEWS = {"pending": "Pending", "done": "Done"}
VIEW_STATE, VIEW_PARAM = "annotate.view", "view"
GUIDELINE = (
    "**Useful** means: this passage alone lets the model answer the question correctly. Read the question, then "
    "only this passage: if it states the answer (one of the gold answers, or an equivalent one) so that someone "
    "who knows nothing else would answer right, it is useful. This is eRAG's definition (Salemi & Zamani 2024), "
    "the one its labels are computed with: the model is given the question and this one passage, and the passage "
    "is useful when the answer it gives is correct.\n\n"
    "- **Not useful**: on topic but without the answer, the answer only implied or needing other passages, or a "
    "different answer.\n"
    "- **Unsure** [u]: you cannot tell (ambiguous question, a gold answer you think is wrong); add a note. Unsure "
    "items are kept apart and left out of kappa.\n"
    "- **Skip** [s]: come back later (also left out of kappa).\n\n"
    "Keys: 1 useful, 0 not useful, u unsure, s skip, j next, k previous (not while typing in a box). After a "
    "label the next pending item opens. Once every sampled passage of a question is labelled, each automatic "
    "method's label is shown beside yours.")
STATEMENT_GUIDELINE = (
    "**Supported** means: the passages the statement cites, read together, state what it says (as an NLI model "
    "would judge entailment). A statement that cites no passage is **not judged**, here and by the NLI methods "
    "(AutoAIS, ALCE), so it has no buttons and no kappa counts it. A statement citing a number that is not one of "
    "the input passages is not supported by its citations.")
#: Listens to keydown on the page around the component's iframe and clicks the button whose text ends with the
#: key's bracketed hint; keys typed into inputs, text areas, selects or editable elements are left alone. Keys are
#: queued in order: while the page is redrawing after the last one its buttons are stale (the previous item's), so
#: the next key waits (up to 5 s) for the new ones. A listener left from an earlier run is replaced (one per page).
#: In AppTest no script runs: it is inert there.
HOTKEYS_SCRIPT = """<script>
(function () {
  var host = window.parent;
  var doc = host.document;
  var hints = {"1": "[1]", "0": "[0]", "u": "[u]", "s": "[s]", "j": "[j]", "k": "[k]"};
  var queue = [];
  var timer = null;
  if (host.__ragevalAnnotateKeys) { doc.removeEventListener("keydown", host.__ragevalAnnotateKeys, true); }
  function alive() { return window.frameElement && window.frameElement.isConnected; }
  function find(hint) {
    var buttons = doc.querySelectorAll("button");
    for (var i = 0; i < buttons.length; i++) {
      var text = (buttons[i].innerText || "").trim();
      if (!buttons[i].disabled && text.endsWith(hint)) {
        // A stale button (the page is being redrawn) is the previous item's: wait for the new one.
        return buttons[i].closest('[data-stale="true"]') ? "wait" : buttons[i];
      }
    }
    return null;
  }
  function pump() {
    timer = null;
    while (queue.length && alive()) {
      if (Date.now() - queue[0].at > 5000) { queue.shift(); continue; }
      var button = find(queue[0].hint);
      if (button === "wait") { timer = setTimeout(pump, 50); return; }
      queue.shift();
      if (button) {
        button.click();
        if (queue.length) { timer = setTimeout(pump, 250); }  // let the redraw start before the next key
        return;
      }
    }
  }
  function onKey(event) {
    if (!alive()) { doc.removeEventListener("keydown", onKey, true); return; }
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
    var target = event.target;
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    if (tag === "input" || tag === "textarea" || tag === "select" || (target && target.isContentEditable)) { return; }
    var hint = hints[(event.key || "").toLowerCase()];
    if (!hint) { return; }
    event.preventDefault();
    queue.push({hint: hint, at: Date.now()});
    if (!timer) { pump(); }
  }
  host.__ragevalAnnotateKeys = onKey;
  doc.addEventListener("keydown", onKey, true);
})();
</script>"""
STATEMENT_METHOD_NAMES = {"nli:autoais": "NLI: a citation supports it (AutoAIS)",
                          "nli:alce": "NLI: citations jointly support it (ALCE)",
                          "hagrid:human": "HAGRID's annotators"}


def method_display_name(method: str) -> str:
    return STATEMENT_METHOD_NAMES.get(method) or fmt.method_name(method)


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
    _commit_annotator(normalise_annotator(st.session_state[_annotator_widget()]))


def current_annotator() -> str:
    """The annotator's name as :func:`annotator_input` will read it (``?annotator=``, else the session), without
    drawing the widget: for what must be decided before it is drawn."""
    return normalise_annotator(st.query_params.get(ANNOTATOR_PARAM, "")) or st.session_state.get(
        ANNOTATOR_STATE, "")


def annotator_input(where: Any) -> str:
    """The annotator's name: from ``?annotator=``, else the session, else empty; written back to both, so it is
    kept across pages and reruns and can be put in a link. Team mode: the signed-in id (:mod:`ui.auth`), shown,
    never typed; ``?annotator=`` and the session's name are ignored."""
    identity = auth.current_identity()
    if identity.team_mode:
        where.caption(escape_markdown(f"Labelling as {identity.user_id} (signed in)"))
        return identity.user_id
    from_url = normalise_annotator(st.query_params.get(ANNOTATOR_PARAM, ""))
    name = from_url or st.session_state.get(ANNOTATOR_STATE, "")
    _commit_annotator(name)
    st.session_state[_annotator_widget()] = name  # seeded each run: widget state does not survive a page switch
    where.text_input("Your name (annotator)", key=_annotator_widget(), on_change=_on_annotator,
                     placeholder="e.g. Ada Lovelace", help="Saved with every label you give, with the time (UTC).")
    return name


# --- labelling blocks ------------------------------------------------------------------------------------------

def decision_of(current: pd.Series | None) -> int | str:
    """The decision a current-label row holds: 1, 0, "unsure", "skipped", or "pending" when there is no row."""
    if current is None or (isinstance(current, pd.Series) and current.empty):
        return "pending"
    status = current.get("status", LABELLED)
    if status == "pending" or (isinstance(status, float) and pd.isna(status)):
        return "pending"
    return int(current["label"]) if status == LABELLED else str(status)


def decision_word(decision: int | str, kind: str = "passage") -> str:
    if decision in (0, 1):
        return LABEL_WORDS[kind][int(decision)]
    return DECISION_BADGES[decision][0]


def current_label_caption(current: pd.Series | None, kind: str) -> str:
    """``Your label: useful (2026-01-01 12:00 UTC; changed once)``, or that there is none yet (escaped)."""
    if current is None:
        return "Your label: none yet"
    when = str(current["labelled_at"])[:16].replace("T", " ")
    changes = int(current.get("times_labelled", 1)) - 1
    changed = "" if changes == 0 else f"; changed {'once' if changes == 1 else f'{changes} times'}"
    return escape_markdown(f"Your label: {decision_word(decision_of(current), kind)} ({when} UTC{changed})")


def render_label_buttons(current: pd.Series | None, kind: str, *, key: str, on_label: Callable[..., None],
                         args: tuple) -> None:
    """Three buttons (✓ label 1, ✗ label 0, unsure) calling ``on_label(*args, label)``; the current label's button
    is highlighted and named in a caption beside them."""
    words = LABEL_WORDS[kind]
    chosen = decision_of(current)
    yes, no, unsure, caption = st.columns([1.2, 1.4, 1, 4], vertical_alignment="center")
    yes.button(words[1].capitalize(), icon=":material/check:", key=f"{key}.yes",
               type="primary" if chosen == 1 else "secondary", on_click=on_label, args=(*args, 1), width="stretch")
    no.button(words[0].capitalize(), icon=":material/close:", key=f"{key}.no",
              type="primary" if chosen == 0 else "secondary", on_click=on_label, args=(*args, 0), width="stretch")
    unsure.button("Unsure", icon=":material/help:", key=f"{key}.unsure",
                  type="primary" if chosen == UNSURE else "secondary", on_click=on_label,
                  args=(*args, UNSURE), width="stretch")
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
    """One statement of an answer (a row of its statements table): number, citations, text, the label buttons; a
    statement citing nothing is shown as not judged, without buttons (the NLI methods do not judge it either)."""
    with st.container(border=True):
        cites = " ".join(f"[{int(n)}]" for n in row.citations) or "no citation"
        st.markdown(f"**Statement {int(row.statement) + 1}** · cites {escape_markdown(cites)}")
        st.text(row.text)
        if not row.citations:
            st.caption("Not judged: it cites no passage, so there is nothing its citations could support (the NLI "
                       "methods leave it out too).")
            return
        render_label_buttons(current, "statement", key=key, on_label=on_label, args=args)


def render_progress(labelled: int, total: int, annotator: str, what: str) -> None:
    share = labelled / total if total else 0.0
    st.progress(min(share, 1.0), text=escape_markdown(f"{labelled:,} of {total:,} {what} labelled by {annotator} "
                                                      f"({100 * share:.0f}%)"))


# --- the sample queue ------------------------------------------------------------------------------------------

GUIDELINE_TEXT_KEY = "annotate.guideline_text"


def render_guideline(kind: str, guideline: str = "", is_default: bool = True, task: str = "",
                     on_save: Callable[..., None] | None = None, args: tuple = ()) -> None:
    """What counts as useful: the run's ``guideline`` (stored with every label given under it; the default for its
    ``task`` type until someone sets one), an editor for it when ``on_save`` is given, then the keys and the
    meaning of unsure and skip."""
    title = "What counts as useful? (guideline and keys)" if kind == "passage" else "What counts as supported?"
    with st.expander(title, icon=":material/menu_book:", expanded=bool(guideline)):
        if guideline:
            st.markdown("**This run's guideline** (stored with each label you give): " + escape_markdown(guideline))
            st.caption(f"The default for a {task} run: edit it below for this run." if is_default else
                       "Set for this run; the labels keep the guideline they were given under.")
            if on_save is not None:
                with st.form("annotate.guideline_form", border=False):
                    st.text_area("Guideline for this run", value=guideline, key=GUIDELINE_TEXT_KEY, height=100)
                    st.form_submit_button("Save the guideline", on_click=on_save, args=(*args, GUIDELINE_TEXT_KEY))
        st.markdown(GUIDELINE if kind == "passage" else STATEMENT_GUIDELINE)


def render_hotkeys() -> None:
    """The hotkeys (:data:`HOTKEYS_SCRIPT`, our own constant, never data) in a zero-height same-origin iframe
    (``st.iframe``, which replaces ``streamlit.components.v1.html``)."""
    st.iframe(HOTKEYS_SCRIPT, height=1)


SAMPLE_SIZE_KEY, SAMPLE_SEED_KEY = "annotate.sample.size", "annotate.sample.seed"


def render_sample_form(population: int, *, on_draw: Callable[..., None], args: tuple, again: bool) -> None:
    """A form drawing the run's sample: how many passages (default :data:`rageval.annotations.DEFAULT_SAMPLE_SIZE`,
    at most the ``population`` of retrieved passages) and the seed; ``on_draw(*args, size_key, seed_key)``."""
    with st.form("annotate.sample_form", border=not again):
        size, seed, submit = st.columns([2, 2, 2], vertical_alignment="bottom")
        size.number_input("Passages to label", min_value=1, max_value=max(population, 1),
                          value=min(ann.DEFAULT_SAMPLE_SIZE, max(population, 1)), step=10, key=SAMPLE_SIZE_KEY,
                          help=f"A random sample of the run's {population:,} retrieved passages, grouped by question.")
        seed.number_input("Random seed", min_value=0, value=0, step=1, key=SAMPLE_SEED_KEY,
                          help="The same seed and size give the same sample; a larger size keeps the smaller one.")
        submit.form_submit_button("Draw a new sample" if again else "Start: draw the sample", type="primary",
                                  on_click=on_draw, args=(*args, SAMPLE_SIZE_KEY, SAMPLE_SEED_KEY), width="stretch")


def queue_counts(status: pd.DataFrame) -> dict[str, int]:
    """How many sample items are pending, labelled, unsure, skipped, and done (all but pending)."""
    counts = {name: int((status["status"] == name).sum()) for name in ("pending", *STATUSES)}
    return {**counts, "done": len(status) - counts["pending"]}


def queue_progress_text(status: pd.DataFrame, annotator: str) -> str:
    """``12 of 50 sampled passages done by Ada (10 labelled, 1 unsure, 1 skipped)``."""
    counts = queue_counts(status)
    return (f"{counts['done']:,} of {len(status):,} sampled passages done by {annotator} ({counts['labelled']:,} "
            f"labelled, {counts['unsure']:,} unsure, {counts['skipped']:,} skipped)")


def render_queue_progress(status: pd.DataFrame, annotator: str) -> None:
    share = queue_counts(status)["done"] / len(status) if len(status) else 0.0
    st.progress(min(share, 1.0), text=escape_markdown(queue_progress_text(status, annotator)))


def sample_caption(sample: Sample) -> str:
    return escape_markdown(
        f"Sample #{sample.id}: {sample.size:,} of the run's {sample.population:,} retrieved passages, drawn at random "
        f"(seed {sample.seed}) by {sample.created_by} on {sample.created_at[:16].replace('T', ' ')} UTC; every "
        f"annotator of this run labels the same sample.")


def _on_view(widget_key: str) -> None:
    chosen = st.session_state[widget_key]
    st.session_state[VIEW_STATE] = chosen
    st.query_params[VIEW_PARAM] = chosen


def select_view(counts: dict[str, int]) -> str:
    """Pending or Done (``?view=``, else the session, else pending), a horizontal radio with the counts."""
    from_url = st.query_params.get(VIEW_PARAM)
    chosen = from_url if from_url in QUEUE_VIEWS else st.session_state.get(VIEW_STATE, "pending")
    st.session_state[VIEW_STATE] = chosen
    widget = f"{VIEW_STATE}.widget"
    st.session_state[widget] = chosen
    return st.radio("Show", list(QUEUE_VIEWS), key=widget, horizontal=True, on_change=_on_view, args=(widget,),
                    format_func=lambda view: f"{QUEUE_VIEWS[view]} ({counts[view]:,})", label_visibility="collapsed")


def render_decision_badge(decision: int | str) -> None:
    word, colour = DECISION_BADGES[decision]
    st.badge(f"Your label: {word}", color=colour)  # type: ignore[arg-type]


def render_queue_buttons(decision: int | str, *, on_decide: Callable[..., None], decide_args: tuple,
                         on_move: Callable[[int], None], previous: int | None, following: int | None) -> None:
    """The item's decision buttons (the chosen one primary) calling ``on_decide(*decide_args, label)``, then
    Previous / Next calling ``on_move(position)`` (disabled at either end). Each text ends with its hotkey."""
    columns = st.columns([1.1, 1.3, 1.1, 1, 0.3, 1.2, 1.1], vertical_alignment="center")
    for column, (label, text, icon) in zip(columns, DECISION_BUTTONS):
        column.button(text, icon=icon, key=f"annotate.queue.{label}", on_click=on_decide, args=(*decide_args, label),
                      type="primary" if decision == label else "secondary", width="stretch")
    columns[5].button(PREVIOUS_BUTTON[0], icon=PREVIOUS_BUTTON[1], key="annotate.queue.previous", width="stretch",
                      on_click=on_move, args=(previous if previous is not None else 0,), disabled=previous is None)
    columns[6].button(NEXT_BUTTON[0], icon=NEXT_BUTTON[1], key="annotate.queue.next", width="stretch",
                      on_click=on_move, args=(following if following is not None else 0,), disabled=following is None)


def method_cell(value: float) -> str:
    """A method's label in the reveal: ✓ / ✗ for 0/1, a graded value with what it counts as (from 0.5)."""
    if value in (0, 1):
        return render.format_label(value)
    return f"{float(value):.2f} ({'✓' if value >= ann.USEFUL_THRESHOLD else '✗'})"


def reveal_view(items: pd.DataFrame, methods: pd.DataFrame) -> pd.DataFrame:
    """One row per sampled passage of a query: rank, passage, the annotator's decision and note, then one column
    per automatic method (display order) with its label (:func:`method_cell`; – where it gave none)."""
    view = pd.DataFrame({"Rank": items["rank"].astype(int).to_list(),
                         "Passage": [f"{t} · {p}" if t else p for t, p in zip(items["title"], items["passage_id"])],
                         "You": [decision_word(decision_of(row)) for _, row in items.iterrows()],
                         "Your note": items["note"].to_list()})
    for method in render.order_label_methods(list(dict.fromkeys(methods["method"]))):
        of_method = methods[methods["method"] == method].set_index(["query_id", "passage_id"])["value"]
        view[method_display_name(method)] = [
            method_cell(float(of_method[key])) if key in of_method.index else "–"
            for key in zip(items["query_id"], items["passage_id"])]
    return view


def render_reveal(items: pd.DataFrame, methods: pd.DataFrame, question: str, *, on_relabel: Callable[..., None],
                  relabel_args: Callable[[Any], tuple], provenance: str) -> None:
    """The methods' labels beside the annotator's on every sampled passage of a finished query, and a one-click
    relabel (useful / not useful) per passage, calling ``on_relabel(*relabel_args(row), label)``."""
    st.markdown(f"**Revealed: the automatic labels on** {escape_markdown(question)}")
    st.dataframe(reveal_view(items, methods), hide_index=True, key="annotate.reveal_table",
                 column_config={"Passage": st.column_config.TextColumn(width="medium")})
    st.caption("You labelled every sampled passage of this question, so each method's label is shown beside yours "
               "(✓ useful, ✗ not; a graded eRAG value counts as ✓ from 0.5; a passage a method did not label in a "
               "question it labelled counts as ✗). Relabel with one click below; the latest label counts. "
               + provenance)
    for _, row in items.iterrows():
        decision = decision_of(row)
        name, yes, no = st.columns([5, 1.2, 1.4], vertical_alignment="center")
        name.markdown(escape_markdown(f"{int(row['rank'])}. {row['title'] or row['passage_id']}"))
        yes.button("Useful", icon=":material/check:", key=f"annotate.reveal.{int(row['position'])}.yes",
                   type="primary" if decision == 1 else "secondary", on_click=on_relabel,
                   args=(*relabel_args(row), 1), width="stretch")
        no.button("Not useful", icon=":material/close:", key=f"annotate.reveal.{int(row['position'])}.no",
                  type="primary" if decision == 0 else "secondary", on_click=on_relabel,
                  args=(*relabel_args(row), 0), width="stretch")


def render_multi_rater(result: agree.MultiRater, provenance: str) -> None:
    """Fleiss' kappa and Krippendorff's alpha when more than one person labelled this run."""
    if result.annotators < 2:
        return
    def ratio(value: float) -> str:
        return "undefined" if pd.isna(value) else f"{value:.3f}"

    first, second = st.columns(2)
    first.metric(f"Fleiss' kappa ({result.annotators} annotators)", ratio(result.fleiss),
                 help="Fleiss (1971): agreement of several raters beyond chance, over the items every annotator "
                      "labelled useful or not.")
    second.metric("Krippendorff's alpha (nominal)", ratio(result.alpha),
                  help="Krippendorff (2011): like Fleiss' kappa but over every item at least two annotators labelled "
                       "(missing labels allowed), corrected for small samples.")
    st.caption(escape_markdown(
        f"Fleiss' kappa over the {result.fleiss_items:,} items all {result.annotators} annotators labelled 0/1; "
        f"Krippendorff's alpha over the {result.alpha_items:,} items at least two of them labelled "
        f"({result.alpha_values:,} labels). Unsure and skipped items are left out; undefined when every label is "
        "the same.") + " " + provenance)


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


def kappa_chart(table: pd.DataFrame, annotator: str) -> tuple[pd.DataFrame, dict]:
    """Bars of Cohen's kappa per automatic method (only where it is defined), coloured by method as everywhere
    (:func:`ui.theme.method_colours`), as ``(data, Vega-Lite spec)`` for ``st.vega_lite_chart``: one data row per
    method (``method``, its display name, ``kappa``, ``n``, ``observed``, ``expected``). The axis runs from below 0
    (kappa is negative when the two disagree more than chance; at most -0.1) to 1. Vega-Lite draws names as text,
    so the annotator's name and the methods' go in as they are."""
    defined = table[table["kappa"].notna()]
    methods = order_methods(list(defined["method"]))
    defined = defined.set_index("method").loc[methods]
    colours = theme.method_colours(methods)
    names = [method_display_name(m) for m in methods]
    bars = pd.DataFrame({"method": names, "kappa": defined["kappa"].astype(float).to_numpy(),
                         "n": defined["n"].astype(int).to_numpy(),
                         "observed": defined["observed"].astype(float).to_numpy(),
                         "expected": defined["expected"].astype(float).to_numpy()})
    low = min(-0.1, float(bars["kappa"].min()) - 0.05) if len(bars) else -0.1
    spec = {
        "title": f"Cohen's kappa between {annotator}'s labels and each automatic method",
        "autosize": theme.FIT_WIDTH, "height": 260,
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "method", "type": "nominal", "sort": names, "title": "automatic label method",
                  "axis": {"labelAngle": -30, "labelLimit": 240}},
            "y": {"field": "kappa", "type": "quantitative", "title": "Cohen's kappa",
                  "scale": {"domain": [low, 1.0]}},
            "color": {"field": "method", "type": "nominal", "legend": None,
                      "scale": {"domain": names, "range": [colours[m] for m in methods]}},
            "tooltip": [{"field": "method", "title": "method"},
                        {"field": "kappa", "type": "quantitative", "format": ".3f", "title": "Cohen's kappa"},
                        {"field": "n", "type": "quantitative", "title": "n (items)"},
                        {"field": "observed", "type": "quantitative", "format": ".3f",
                         "title": "observed agreement"},
                        {"field": "expected", "type": "quantitative", "format": ".3f",
                         "title": "chance agreement"}],
        },
    }
    return bars, spec


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
                     annotator: str, questions: dict[str, str], provenance: str, left_out: int = 0) -> None:
    """The agreement section: kappa table and chart, kappa between annotators, the disagreements."""
    st.subheader("Agreement with the automatic labels")
    if int(table["n"].max() if len(table) else 0) == 0:
        st.info(escape_markdown(f"{annotator} has no label on an item the automatic methods labelled yet: label "
                                "some items above and Cohen's kappa appears here."))
        return
    ratio = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(agreement_view(table), hide_index=True, column_config={
        "Cohen's kappa": ratio, "Observed agreement": ratio, "Chance agreement": ratio,
        "n": st.column_config.NumberColumn("n", help="items labelled by both you and the method", format="%d")})
    graded = " A graded automatic label counts as ✓ from 0.5." if kind == "passage" else \
        " Statements citing nothing are not judged and not counted."
    apart = (f" Only items you labelled useful or not: {left_out:,} marked unsure or skipped are left out."
             if left_out else " Only items you labelled useful or not (unsure and skipped are left out).")
    st.caption("Cohen's kappa (Cohen 1960) = (p_o − p_e) / (1 − p_e): p_o the observed agreement, p_e the agreement "
               "expected by chance from each side's share of ✓; 1 is perfect agreement, 0 chance. Over the items "
               "both you and the method labelled (your latest label of each); undefined when both gave every item "
               f"the same label.{apart}{graded} " + provenance)
    if table["kappa"].notna().any():
        st.vega_lite_chart(*kappa_chart(table, annotator), key="annotate.kappa_chart")
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
        qrels = qrels_text(ann.qrels_frame(latest, annotator if scope == "yours" else None))
    except ValueError as error:
        qrels_column.error(str(error))
        return
    qrels_column.download_button(
        "Download TREC qrels", qrels, file_name=f"{run}-{'majority' if scope == 'majority' else 'mine'}.qrels",
        mime="text/plain", key="annotate.download_qrels", on_click="ignore", width="stretch", disabled=not qrels,
        help="query_id 0 passage_id label, the latest label of each passage (trec_eval / pytrec_eval format).")
