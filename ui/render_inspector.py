"""Views of the query inspector (``app_pages/1_Query_inspector.py``): walking a worklist carried in the URL, the
passages as expandable rows with the gold answers and the wrong end-to-end answers marked in their text, the
distractor flag, and the judges' verdicts as a judge x k table.

Passage text is corpus text: :func:`highlight_html` escapes every character that HTML or Markdown could read as
markup (``<``, ``&``, ``*``, ``[`` ... become character references) *before* it adds its own ``<mark>`` tags, so
that the one ``unsafe_allow_html`` of the dashboard (:func:`render_highlighted_text`) renders only tags written
here. The keyboard script (:func:`render_walk_keys`) is the dashboard's one ``st.iframe`` of HTML: our own fixed
script, no data in it.
"""

from __future__ import annotations

import functools
import itertools
import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from rageval.text_metrics import exact_match, normalize_answer
from ui import auth, data, navigation, render, worklist
from ui import format as fmt

PREV_KEY, NEXT_KEY, LEAVE_KEY = "inspect.prev", "inspect.next", "inspect.leave_list"
DEFAULT_LIST_NAME = "worklist"
#: How many passages open expanded (the top ranks, plus every distractor).
OPEN_PASSAGES = 3
#: Marks over the passage text: translucent backgrounds, readable on the light and the dark theme.
MARK_STYLES = {
    "gold": "background-color: rgba(26, 152, 80, 0.35); color: inherit; border-radius: 3px; padding: 0 2px",
    "wrong": "background-color: rgba(215, 48, 39, 0.35); color: inherit; border-radius: 3px; padding: 0 2px",
}
MARK_TITLES = {"gold": "a gold answer", "wrong": "a wrong end-to-end answer"}
_CHUNK = re.compile(r"\S+")
_PUNCTUATION = frozenset(string.punctuation)
#: Every ASCII punctuation character as a decimal character reference: no tag, entity, Markdown or directive
#: syntax survives (``<`` ``&`` ``*`` ``_`` ``[`` ``:`` ``$`` ...); the browser shows the characters themselves.
_REFERENCES = {ord(c): f"&#{ord(c)};" for c in string.punctuation}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


# --- highlighting (pure) -------------------------------------------------------------------------------

def escape_html_text(text: str) -> str:
    """``text`` as inert HTML text: every ASCII punctuation character a character reference, line breaks ``<br>``
    (one line, so Markdown keeps the whole as one HTML block)."""
    return _LINE_BREAK.sub("<br>", text.translate(_REFERENCES))


def answer_spans(text: str, answers: Sequence[str]) -> list[tuple[int, int]]:
    """Character spans of ``text`` where one of ``answers`` occurs, compared as exact match compares answers
    (:func:`rageval.text_metrics.normalize_answer`: case, punctuation and articles ignored) on whole
    whitespace-separated words; a span leaves out the punctuation around its first and last word."""
    chunks = [(m.start(), m.end(), normalize_answer(m.group())) for m in _CHUNK.finditer(text)]
    chunks = [chunk for chunk in chunks if chunk[2]]  # a bare article or punctuation is not a word here
    words = [chunk[2] for chunk in chunks]
    spans = []
    for answer in answers:
        wanted = normalize_answer(answer).split()
        if not wanted:
            continue
        for i in range(len(words) - len(wanted) + 1):
            if words[i] == wanted[0] and words[i:i + len(wanted)] == wanted:
                start, end = chunks[i][0], chunks[i + len(wanted) - 1][1]
                while start < end and text[start] in _PUNCTUATION:
                    start += 1
                while end > start and text[end - 1] in _PUNCTUATION:
                    end -= 1
                spans.append((start, end))
    return spans


def highlight_html(text: str, gold: Sequence[str], wrong: Sequence[str]) -> str:
    """``text`` escaped (:func:`escape_html_text`) with the gold answers in green ``<mark>``s and the wrong
    end-to-end answers in red ones (gold wins where both match), inside one ``<div>`` that keeps spacing."""
    kinds: list[str | None] = [None] * len(text)
    for kind, answers in (("wrong", wrong), ("gold", gold)):
        for start, end in answer_spans(text, answers):
            kinds[start:end] = [kind] * (end - start)
    parts, position = [], 0
    for kind, run in itertools.groupby(kinds):
        length = len(list(run))
        piece = escape_html_text(text[position:position + length])
        position += length
        parts.append(piece if kind is None else
                     f'<mark style="{MARK_STYLES[kind]}" title="{MARK_TITLES[kind]}">{piece}</mark>')
    return f'<div style="white-space: pre-wrap; line-height: 1.6">{"".join(parts)}</div>'


#: A word, a digit or a punctuation mark: the pieces :func:`estimated_tokens` counts.
_TOKEN_PIECE = re.compile(r"[^\W\d_]+|\d|[^\w\s]")
#: An answer estimated within this many tokens of the decoding's ``max_new_tokens`` is taken as cut off there.
CUT_OFF_MARGIN = 2


def estimated_tokens(text: str) -> int:
    """The tokens of ``text`` estimated without the model's tokenizer (a run stores no token counts and no finish
    reason): one per word, per digit and per punctuation mark. Gemma's tokenizer gives at least this many for 1,158
    of the 1,160 distinct end-to-end answers of the shipped runs (digits are single tokens there, as in Llama's)."""
    return len(_TOKEN_PIECE.findall(text))


def cut_off(output: str, max_new_tokens: int | None) -> bool:
    """Whether an end-to-end answer was probably cut off by the token limit: its :func:`estimated_tokens` reach
    ``max_new_tokens - CUT_OFF_MARGIN``. On the 1,160 distinct answers of the shipped runs (Gemma-3-270M, limit 16)
    this flags 189, 162 of them 16 Gemma tokens or more (precision 0.86), and finds 162 of the 181 that long
    (recall 0.90)."""
    return bool(max_new_tokens) and estimated_tokens(output) >= int(max_new_tokens or 0) - CUT_OFF_MARGIN


def with_cut_off(view: pd.DataFrame, outputs: pd.DataFrame, max_new_tokens: int | None) -> pd.DataFrame:
    """The E2E answers' table (:func:`ui.render_evidence.e2e_outputs_view`) with a ``Cut off`` column: for an answer
    that probably hit the token limit (:func:`cut_off`), its estimated tokens of the limit, so a cut answer ("...
    (September 8, 1835 – April") reads as cut off rather than as a wrong answer; empty otherwise."""
    return view.assign(**{"Cut off": [
        f"probably: about {estimated_tokens(o)} of the {max_new_tokens}-token limit"
        if isinstance(o, str) and cut_off(o, max_new_tokens) else "" for o in outputs["output"]]})


def wrong_answers(e2e_outputs: pd.DataFrame, gold: Sequence[str]) -> dict[int, str]:
    """k -> the end-to-end answer at k, for every k whose answer is not an exact match of a gold answer (and not
    empty)."""
    return {int(k): str(output) for k, output in zip(e2e_outputs["k"], e2e_outputs["output"])
            if isinstance(output, str) and normalize_answer(output) and not exact_match(output, gold)}


def distractor_ks(ranking: pd.DataFrame, wrong: Mapping[int, str]) -> dict[str, list[int]]:
    """passage id -> the ks at which the passage is a distractor: it is among the top k, the answer the model
    gave from it alone equals (as exact match compares) the wrong end-to-end answer at k, and that answer depends
    on the passage: another passage of the top k gave another answer. A model that gives the same answer from every
    passage (gold ones included) was not misled by any one of them, so none is flagged."""
    answered = [(int(rank), output) for rank, output in zip(ranking["rank"], ranking["output"])
                if isinstance(output, str) and normalize_answer(output)]
    depends = {k: any(rank <= k and not exact_match(output, [answer]) for rank, output in answered)
               for k, answer in wrong.items()}
    flags: dict[str, list[int]] = {}
    for passage_id, rank, output in zip(ranking["passage_id"], ranking["rank"], ranking["output"]):
        if not isinstance(output, str) or not normalize_answer(output):
            continue
        ks = [k for k, answer in sorted(wrong.items())
              if int(rank) <= k and depends[k] and exact_match(output, [answer])]
        if ks:
            flags[passage_id] = ks
    return flags


def distractor_note(output: str, ks: Sequence[int]) -> str:
    """Escaped Markdown: why a passage is flagged as a distractor."""
    return render.escape_markdown(
        f"Distractor at k={', '.join(map(str, ks))}: the answer from this passage alone, \"{output}\", is the wrong "
        "end-to-end answer there.")


# --- verdicts (pure) -------------------------------------------------------------------------------------

def verdict_pivot(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One query's verdicts as a judge x k table: one row per judge and reference (``exact match vs semi-gold
    answers``), one column per k (``k=5``), cells Yes / No (– where a judge gave none at that k)."""
    judge_order = {judge: i for i, judge in enumerate(fmt.JUDGE_NAMES)}
    reference_order = {reference: i for i, reference in enumerate(render.REFERENCE_NAMES)}
    table = verdicts.assign(
        row=[f"{fmt.judge_name(j)} vs {render.REFERENCE_NAMES.get(r, r)}"
             for j, r in zip(verdicts["judge"], verdicts["reference"])],
        order=[(judge_order.get(j, len(judge_order)), j, reference_order.get(r, len(reference_order)))
               for j, r in zip(verdicts["judge"], verdicts["reference"])],
        cell=["Yes" if v else "No" for v in verdicts["verdict"]])
    rows = list(dict.fromkeys(table.sort_values("order", kind="stable")["row"]))
    ks = sorted(int(k) for k in table["k"].unique())
    pivot = table.pivot_table(index="row", columns="k", values="cell", aggfunc="first")
    pivot = pivot.reindex(index=rows, columns=ks).fillna("–")
    pivot.columns = [f"k={k}" for k in ks]
    pivot.index.name = "Judge vs reference"
    return pivot


# --- worklist walking --------------------------------------------------------------------------------------

def _leave_list() -> None:
    for param in (worklist.LIST_PARAM, worklist.NAME_PARAM):
        if param in st.query_params:
            del st.query_params[param]


def read_worklist(run_order: Sequence[str]) -> tuple[list[str], str] | None:
    """The worklist of the URL (``?list=TOKEN&list_name=NAME``) read against the run's query order, with its
    name; None when the URL has none, or, with a visible warning naming it, when it cannot be read here."""
    token = st.query_params.get(worklist.LIST_PARAM)
    if token is None:
        return None
    name = st.query_params.get(worklist.NAME_PARAM) or DEFAULT_LIST_NAME
    try:
        ids = list(dict.fromkeys(worklist.decode_worklist(token, run_order)))
        problem = "" if ids else "it names no query"
    except worklist.WorklistError as error:
        ids, problem = [], str(error)
    if problem:
        st.warning(render.escape_markdown(
            f"The link's list of queries {name!r} cannot be walked here ({problem}); Prev and Next go through all "
            f"{len(run_order):,} queries of this run instead."))
        st.button("Leave the list", icon=":material/close:", key=LEAVE_KEY, on_click=_leave_list, type="tertiary",
                  help="Drop the list from the link")
        return None
    return ids, name


#: Past this many queries the question selector offers a window of them around the current one, and a search
#: over all of them: a selectbox of 100,000 questions is megabytes sent to the browser and seconds to draw.
SELECT_WINDOW = 1_000
#: The most matches a search lists.
SEARCH_RESULTS = 200
SEARCH_KEY = "inspect-search"


def current_query(ids: Sequence[str], state_key: str) -> str:
    """The query :func:`ui.render.select_synced` will choose among ``ids``: the URL's, else the session's, else
    the first."""
    for candidate in (st.query_params.get("query"), st.session_state.get(state_key)):
        if candidate is not None and candidate in ids:
            return candidate
    return ids[0]


def search_queries(questions: Mapping[str, str], ids: Sequence[str], text: str, limit: int = SEARCH_RESULTS
                   ) -> list[str]:
    """The first ``limit`` of ``ids`` (in their order) whose question contains ``text`` (ignoring case) or whose
    id is ``text``."""
    needle = text.strip().casefold()
    found: list[str] = []
    for qid in ids:
        if qid == text.strip() or needle in questions[qid].casefold():
            found.append(qid)
            if len(found) == limit:
                break
    return found


def _options_shown(questions: Mapping[str, str], ids: Sequence[str], current: str, where: str
                   ) -> tuple[list[str], str]:
    """For a long list (over :data:`SELECT_WINDOW`): a search box over all ``ids``, and the selector's options
    and label: the search's matches (with the current query), else the window of :data:`SELECT_WINDOW` queries
    around the current one."""
    text = st.text_input(f"Search the {len(ids):,} questions {where}", key=SEARCH_KEY,
                         placeholder="Words of the question, or a query id",
                         help="Lists the matching questions in the selector below (Prev / Next still walk "
                              "them all in order)")
    if text.strip():
        found = search_queries(questions, ids, text)
        position = {qid: i for i, qid in enumerate(ids)}
        options = sorted({*found, current}, key=position.__getitem__)
        more = f"the first {len(found):,}" if len(found) == SEARCH_RESULTS else f"{len(found):,}"
        return options, f"Question ({more} matching {text.strip()!r}, and the current one)"
    position = ids.index(current)
    start = max(0, min(position - SELECT_WINDOW // 2, len(ids) - SELECT_WINDOW))
    options = list(ids[start:start + SELECT_WINDOW])
    return options, (f"Question (numbers {start + 1:,}-{start + len(options):,} of the {len(ids):,} {where}, "
                     "around this one; type to search them, or search all above)")


def select_query(questions: Mapping[str, str], *, run: str, state_key: str) -> str:
    """The question selector of the inspector between Prev and Next buttons, over the URL's worklist when it has
    one (``case 3 of 130 · NAME``, a button to leave the list) and over every query of the run otherwise;
    ``questions`` maps query id to question in run order. The chosen query is ``?query=`` (the list stays in the
    URL); j / k and the arrow keys press Next / Prev. Returns the chosen query id."""
    run_order = list(questions)
    listed = read_worklist(run_order)
    ids, name = listed if listed else (run_order, None)
    from_url = st.query_params.get("query")
    where = f"in the list {name!r}" if name else "in this run"
    options, label = ids, f"Question ({len(ids):,} {where}; type to search)"
    if len(ids) > SELECT_WINDOW:
        options, label = _options_shown(questions, ids, current_query(ids, state_key), where)
    previous_column, select_column, next_column = st.columns([1.2, 7.6, 1.2], vertical_alignment="bottom")
    query_id = render.select_synced(
        select_column, label, options, state_key=state_key, param="query",
        format_func=lambda qid: f"{questions[qid]}  [{qid}]", filter_mode="contains")
    position = ids.index(query_id)
    previous_column.button("Prev", icon=":material/arrow_back:", key=PREV_KEY, disabled=position == 0,
                           on_click=render.commit_choice, args=(state_key, "query", ids[max(position - 1, 0)]),
                           width="stretch", help="Previous question (k or ←)")
    next_column.button("Next", icon=":material/arrow_forward:", key=NEXT_KEY, disabled=position == len(ids) - 1,
                       on_click=render.commit_choice, args=(state_key, "query", ids[min(position + 1, len(ids) - 1)]),
                       width="stretch", help="Next question (j or →)")
    if name:
        counter, leave = st.columns([7, 2], vertical_alignment="center")
        counter.markdown(render.escape_markdown(f"Case {position + 1:,} of {len(ids):,} · {name}"))
        leave.button("Leave the list", icon=":material/close:", key=LEAVE_KEY, on_click=_leave_list,
                     type="tertiary", help="Walk all queries of the run from this one")
        if from_url is not None and from_url in questions and from_url not in ids:
            st.info(render.escape_markdown(f"Query {from_url} is a query of this run but not in the list {name!r}."))
            auth.page_link(st, navigation.INSPECTOR, label="Open it outside the list", icon=":material/open_in_new:",
                           query_params={"run": run, "query": from_url})
    else:
        st.caption(render.escape_markdown(f"Query {position + 1:,} of {len(ids):,}") + " · keys: j or → next, k or ← "
                   "previous")
    render_walk_keys()
    return query_id


#: Presses the Prev / Next buttons (found by their keys' CSS classes) on j / k and the arrow keys, unless the key
#: is typed into a field. Installed once per browser tab (the listener is on the app's document, which outlives
#: this iframe); inert where there is no browser (AppTest).
_WALK_KEYS_SCRIPT = """<script>
const doc = window.parent.document;
if (!doc.__ragevalInspectorKeys) {
  doc.__ragevalInspectorKeys = true;
  doc.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))) return;
    const key = {j: "next", ArrowRight: "next", k: "prev", ArrowLeft: "prev"}[event.key];
    if (!key) return;
    const button = doc.querySelector(".st-key-inspect-" + key + " button");
    if (button && !button.disabled) { event.preventDefault(); button.click(); }
  });
}
</script>"""


def render_walk_keys() -> None:
    """The keyboard script (:data:`_WALK_KEYS_SCRIPT`, a fixed string) in a 1-pixel iframe (0 is refused)."""
    st.iframe(_WALK_KEYS_SCRIPT, height=1)


# --- passages --------------------------------------------------------------------------------------------

def render_highlighted_text(text: str, gold: Sequence[str], wrong: Sequence[str]) -> None:
    """A passage's text with its marks (:func:`highlight_html`, which escapes the text itself first)."""
    st.markdown(highlight_html(text, gold, wrong), unsafe_allow_html=True)


def render_passage_text(text: str, size: Any, *, gold: Sequence[str], wrong: Sequence[str], key: str,
                        load_page: Callable[[int], str]) -> None:
    """:func:`ui.render.render_passage_text` with the marks: a long passage is read a part at a time (widget
    ``key``), and each part is marked on its own (an answer cut by a part's end is not marked)."""
    pages = render.passage_pages(size)
    if pages == 1:
        render_highlighted_text(text, gold, wrong)
        return
    page = int(st.number_input(f"Part (of {pages:,})", min_value=1, max_value=pages, value=1, step=1, key=key,
                               help="This passage is too long to show at once: choose which part to read"))
    st.caption(render.escape_markdown(
        f"Part {page:,} of {pages:,}: the passage is too long to show at once, so it is shown about "
        f"{data.PASSAGE_PAGE_SIZE:,} characters at a time."))
    render_highlighted_text(text if page == 1 else load_page(page - 1), gold, wrong)


def passage_label(row: Mapping[str, Any], label_columns: Sequence[str], flagged: Sequence[int]) -> str:
    """An expander's label: rank, title, score, each label method's mark and, when flagged, the distractor ks."""
    title = render.escape_markdown(row["Title"]) if row["Title"] else "(untitled passage)"
    labels = " · ".join(f"{render.escape_markdown(c)} {row[c]}" for c in label_columns)
    flag = f" · distractor at k={', '.join(map(str, flagged))}" if flagged else ""
    return f"**{row['Rank']}\\. {title}** · score {row['Score']:.2f}" + (f" · {labels}" if labels else "") + flag


def render_passages(ranking: pd.DataFrame, rescored: Mapping[str, Mapping[str, str]] | None, *,
                    gold: Sequence[str], wrong: Mapping[int, str], run_key: tuple[str, int], key: str) -> None:
    """One expander per ranked passage (the top :data:`OPEN_PASSAGES` and every distractor open): its label says
    rank, title, score, labels and the distractor flag; inside, the passage id, the single-passage answers, why it
    is a distractor, then the text with the gold answers and the wrong end-to-end answers marked, a part at a time
    when it is long (widget keys ``<key>.<rank>``, read from the run ``run_key``)."""
    view = render.ranking_view(ranking, rescored)
    answer_columns = [render.rescored_answer_column(m) for m in (rescored or {})]
    label_columns = [c for c in view.columns if c not in ("Rank", "Title", "Score", "Single-passage answer",
                                                          "Passage", *answer_columns)]
    flags = distractor_ks(ranking, wrong)
    wrong_texts = list(dict.fromkeys(wrong.values()))
    for passage_id, row, ranking_row in zip(ranking["passage_id"], view.to_dict("records"),
                                            ranking.to_dict("records")):
        flagged = flags.get(passage_id, [])
        expanded = int(row["Rank"]) <= OPEN_PASSAGES or bool(flagged)
        with st.expander(passage_label(row, label_columns, flagged), expanded=expanded,
                         icon=":material/warning:" if flagged else None):
            others = "".join(f" · {render.escape_markdown(c)}: {render.escape_markdown(row[c])}"
                             for c in answer_columns if row[c])
            st.caption(render.escape_markdown(f"{passage_id} · single-passage answer: {row['Single-passage answer']}")
                       + others)
            if flagged:
                st.markdown(":material/warning: " + distractor_note(row["Single-passage answer"], flagged))
            render_passage_text(ranking_row["text"], ranking_row["text_size"], gold=gold, wrong=wrong_texts,
                                key=f"{key}.{int(row['Rank'])}",
                                load_page=functools.partial(data.load_passage_page, *run_key, passage_id))


# --- links from the pages that list queries ----------------------------------------------------------------

def worklist_query_params(run: str, query_ids: Sequence[str], run_order: Sequence[str], name: str) -> dict[str, str]:
    """The inspector's query parameters that walk ``query_ids`` (at most :data:`ui.worklist.MAX_QUERIES`, the
    name then says so) from the first."""
    ids, name = worklist.capped(query_ids, name)
    return worklist.worklist_params(run, ids, run_order, name)


def render_walk_link(run: str, query_ids: Sequence[str], run_order: Sequence[str], name: str, *,
                     where: Any = st, label: str | None = None) -> None:
    """A same-tab link (``st.page_link``) that opens the first of ``query_ids`` in the inspector and walks them all
    with Prev / Next; nothing when there is no query."""
    ids = list(dict.fromkeys(query_ids))
    if not ids:
        return
    auth.page_link(where, navigation.INSPECTOR, icon=":material/playlist_play:",
                   label=label or f"Walk these {len(ids):,} queries in the query inspector",
                   query_params=worklist_query_params(run, ids, run_order, name))


def inspect_links(run: str, query_ids: Sequence[str], run_order: Sequence[str], name: str) -> list[str]:
    """One link per row (``query_ids``, repeats allowed) for a link column: that query in the inspector, walking
    the list of all of them (:func:`ui.worklist.worklist_links`)."""
    path = navigation.BY_FILE[navigation.INSPECTOR].url_path
    return worklist.worklist_links(path, run, query_ids, run_order, name)


def stage_fates_view(fates: pd.DataFrame) -> pd.DataFrame:
    """One query's helping passages and where each was lost, for the page: passage, first-stage rank, final rank,
    fate in words (:data:`rageval.traces.stages.FATE_NAMES`)."""
    from rageval.traces.stages import FATE_NAMES

    return pd.DataFrame({"Passage": fates["passage_id"], "First-stage rank": fates["first_rank"].astype("Int64"),
                         "Reranked rank": fates["final_rank"].astype("Int64"),
                         "Fate": [FATE_NAMES[f] for f in fates["fate"]]})


def stage_table_view(table: pd.DataFrame) -> pd.DataFrame:
    """The per-stage table with its fates in words as headers."""
    from rageval.traces.stages import FATE_NAMES

    return table.rename(columns={"query_id": "Query", "helpful": "Helping passages", **FATE_NAMES})


def render_stage_section(analysis: Mapping[str, Any], query_id: str, k: int | None) -> None:
    """The Query inspector's section on a run with two stages (first-stage and reranked lists): where this query's
    helping passages were lost, and the per-stage table of every query (:mod:`rageval.traces.stages`)."""
    st.subheader("Where the helping passages were lost")
    method = analysis["method"]
    if method is None:
        st.info("No label says which passages help the answer yet (no eRAG, qrels or gold labels): compute the "
                "missing pieces on the Re-score page, then come back.")
        return
    fates = analysis["fates"]
    mine = fates[fates["query_id"] == query_id]
    if mine.empty:
        st.caption(render.escape_markdown(f"No passage of this query helps the answer under {method}."))
    else:
        render.render_table(stage_fates_view(mine), hide_index=True)
    st.caption(render.escape_markdown(
        f"A passage helps when its {method} label is above 0. Never retrieved: in no list; retrieved, not in the "
        f"top k: the reranker dropped it or ranked it below k (k = the passages the answer came from"
        f"{f', {k} here' if k is not None else ''}); in the top k: the end-to-end answer is right, wrong, or "
        f"unscored (no gold answers) · query {query_id}"))
    table = analysis["table"]
    with st.expander("Per-stage table (every query)"):
        render.render_table(stage_table_view(table), hide_index=True)
        st.caption(render.escape_markdown(
            f"Helping passages ({method} label above 0) by fate, per query and in total ('all') · "
            f"{len(table) - 1} queries."))
