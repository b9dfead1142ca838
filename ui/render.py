"""Small render helpers shared by the pages: formatting, escaping, URL-synced selectors and the blocks
every page shows (run selector, empty state, provenance captions).

Text that comes from data (questions, answers, titles, passages, model outputs, settings) is never
rendered as HTML: it goes through ``st.text`` / ``st.dataframe``, or through :func:`escape_markdown`
before any Markdown element.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rageval.correlations import measure_sort_key
from rageval.errors import StoreError
from rageval.findings import GOLD_METHODS
from rageval.labelmethods import order_label_methods
from rageval.store import E2EOutput
from rageval.store.runs import RANKING_COLUMNS
from rageval.types import Query
from ui import auth, data, glossary, navigation
from ui import format as fmt
from ui.format import escape_markdown, judge_name, method_name
from ui.stop import stop_with_error

REFERENCE_NAMES = {"semi_gold": "semi-gold answers", "gold_answers": "gold answers"}
RANKING_BASE_COLUMNS = RANKING_COLUMNS
SETTING_NAMES = {
    "dataset": "Dataset", "retriever": "Retriever", "model_id": "Model", "prompt": "Prompt",
    "k": "k (passages per query)", "label_metric": "Label metric", "num_queries": "Queries",
    "corpus": "Corpus", "created_at": "Created", "rageval_version": "rageval version",
    "command": "Command", "duration_s": "Duration",
}
RUN_STATE = "app.run"  # shared by every page, so it carries the page name "app"
URL_VALUES_STATE = "app.url_values"  # param -> the values this session wrote into the URL (not the user's link)
URL_VALUE_CHARS = 80
EMPTY_STATE_COMMAND = "rageval evaluate --queries Q.jsonl --corpus C.jsonl --run R.trec --k 1,5,10 --methods all"
SHIPPED_MARK = "shipped, read-only"


# --- formatting (pure) ---------------------------------------------------------------------------------

def format_correlation(value: float, low: float, high: float) -> str:
    """``0.412 [0.21, 0.60]``, or ``undefined (constant)`` when the coefficient is undefined
    (:func:`ui.format.format_correlation`)."""
    return fmt.format_correlation(value, low, high)


def format_label(value: Any) -> str:
    """A label cell: ✓ for 1, ✗ for 0, two decimals for a graded value, – when missing."""
    if fmt.is_missing(value):
        return fmt.MISSING
    if value == 1:
        return "✓"
    if value == 0:
        return "✗"
    return f"{float(value):.2f}"


def format_setting(key: str, value: Any) -> str:
    """One setting as a short string: prompts as ``name (hash)``, corpora as ``name (N passages)``; a setting
    stored as null is :data:`ui.format.MISSING`."""
    if value is None:
        return fmt.MISSING
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


def provenance_text(settings: Mapping[str, Any], n_queries: int | None = None, k: int | str | None = None) -> str:
    """What produced a table or chart, as plain text: model, dataset, retriever, k (``k`` when given, else the
    run's ``k`` setting as ``top-k``) and, when given, the number of queries behind it."""
    parts = [f"{label} {format_setting(key, settings[key])}"
             for key, label in (("model_id", "model"), ("dataset", "dataset"), ("retriever", "retriever"))
             if key in settings]
    if k is not None:
        parts.append(f"k={k}")
    elif "k" in settings:
        parts.append(f"top-{settings['k']}")
    if n_queries is not None:
        parts.append(query_count(n_queries))
    return " · ".join(parts)


def provenance(settings: Mapping[str, Any], n_queries: int | None = None, k: int | str | None = None) -> str:
    """Escaped Markdown caption saying what produced a table (:func:`provenance_text`). A page says it once, under
    its heading (:func:`render_provenance`); its elements' captions then say only what is particular to them
    (:func:`sample_note`)."""
    return escape_markdown(provenance_text(settings, n_queries, k))


def query_count(n_queries: int) -> str:
    """``1 query``, ``5 queries``, ``1,200 queries``."""
    return f"{n_queries:,} {'query' if n_queries == 1 else 'queries'}"


def render_provenance(settings: Mapping[str, Any], n_queries: int | None = None, *, run: str | None = None,
                      suffix: str = "") -> None:
    """The page's one provenance line, under its heading: ``Run NAME · model … · dataset … · retriever … · top-k
    · N queries`` and ``suffix`` (escaped Markdown). The captions of the page's tables and charts then say only
    their own sample (:func:`sample_note`), and its charts carry the line in their subtitle
    (:func:`with_provenance`), which their PNG/SVG export keeps."""
    from rageval.store.provenance import describe_brought

    head = escape_markdown(f"Run {run} · ") if run else ""
    brought = describe_brought(settings)
    yours = escape_markdown(f" · {brought[0]}") if brought else ""
    st.caption(head + provenance(settings, n_queries) + yours + suffix,
               help="What produced every number on this page; each table or chart says how many queries (and which "
                    "k) it is computed over." + (f" {brought[1]}" if brought else ""))


def render_unparsed_notes(counts: Sequence[tuple[str, str, int, int]],
                          counted_as_no: Sequence[tuple[str, str, int, int]] = ()) -> None:
    """One compact warning for every LLM judge of the run with answers it could not read (``counts``:
    :meth:`rageval.store.RunReader.unparsed_counts`; ``counted_as_no``: those an older rageval stored as No,
    :meth:`rageval.store.RunReader.counted_as_no`), with each judge's sentence
    (:func:`rageval.finding.unparsed_finding`: "N of M answers of the judge MODEL could not be parsed", and what
    that leaves out) in an expander under it."""
    from rageval.finding import counted_as_no_finding, unparsed_finding

    found = [f for f in [*(unparsed_finding(judge, model, unparsed, answers, method_name, judge_name)
                           for judge, model, unparsed, answers in counts),
                         *(counted_as_no_finding(judge, model, count, answers, method_name, judge_name)
                           for judge, model, count, answers in counted_as_no)] if f is not None]
    if not found:
        return
    unread = sum(f.target["unparsed"] for f in found)
    answers = sum(f.target["answers"] for f in found)
    judges = len(found)
    st.warning(f"{unread:,} of {answers:,} LLM judge answers could not be parsed ({judges} "
               f"{'judge' if judges == 1 else 'judges'}); what that leaves out: under \"Unread judge answers\".")
    with st.expander("Unread judge answers"):
        st.markdown("\n".join(f"- {escape_markdown(f.text)}" for f in found))


def sample_note(n_queries: int, k: int | str | None = None) -> str:
    """Escaped Markdown for an element's caption: the part of the page's provenance particular to it (its queries
    and its k): ``5 queries at k=10``."""
    return escape_markdown(query_count(n_queries) + (f" at k={k}" if k is not None else "") + ".")


#: A chart subtitle's colour, set because Streamlit's dark theme leaves a Vega-Lite subtitle unthemed (dark on
#: dark): a mid grey reads on both backgrounds.
SUBTITLE_COLOUR = "#8c8c8c"
#: Characters per line of a chart's provenance subtitle (Vega-Lite does not wrap titles; a chart is ~320-600 px).
SUBTITLE_CHARS = 60


def with_provenance(spec: Mapping[str, Any], text: str) -> dict:
    """A copy of Vega-Lite ``spec`` whose title carries ``text`` (:func:`provenance_text`) as its subtitle, cut into
    lines at its `` · `` separators, so a chart saved as PNG or SVG still says what produced it."""
    lines: list[str] = []
    for part in text.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= SUBTITLE_CHARS:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    title = spec.get("title")
    title = dict(title) if isinstance(title, Mapping) else {"text": title or ""}
    return {**spec, "title": {**title, "subtitle": lines, "subtitleColor": SUBTITLE_COLOUR, "subtitleFontSize": 10}}


def rescored_answer_column(method: str) -> str:
    """The inspector's column of the single-passage answers a re-score job's model gave (``Answer (erag:em@m)``)."""
    return f"Answer ({method})"


def ranking_view(ranking: pd.DataFrame, rescored: Mapping[str, Mapping[str, str]] | None = None) -> pd.DataFrame:
    """The ranked passages as displayed: rank, title, score, one ✓/✗ column per label method (gold labels
    first), the single-passage answer (the run's own model), one column per re-scored method with the answer its
    model gave from the passage alone (``rescored``: method -> passage id -> answer), and the passage text."""
    methods = order_label_methods([c for c in ranking.columns if c not in RANKING_BASE_COLUMNS])
    # The gold labels first (right after the score): with many label methods they sat beyond 1,400 px (issue 42).
    methods = [m for m in GOLD_METHODS if m in methods] + [m for m in methods if m not in GOLD_METHODS]
    view = pd.DataFrame({"Rank": ranking["rank"], "Title": ranking["title"], "Score": ranking["score"]})
    for method in methods:
        view[method_name(method)] = ranking[method].map(format_label)
    view["Single-passage answer"] = ranking["output"].fillna("")
    for method, answers in (rescored or {}).items():
        view[rescored_answer_column(method)] = [answers.get(p, "") for p in ranking["passage_id"]]
    view["Passage"] = [passage_preview(text, size) for text, size in zip(ranking["text"], ranking["text_size"])]
    return view


def passage_pages(size: Any) -> int:
    """How many parts of :data:`ui.data.PASSAGE_PAGE_SIZE` a passage of ``size`` (its ``text_size``) is shown in."""
    if size is None or pd.isna(size):
        return 1
    return max(1, math.ceil(int(size) / data.PASSAGE_PAGE_SIZE))


def passage_preview(text: str, size: Any) -> str:
    """A passage's text as read for display (its first part, :data:`ui.data.PASSAGE_PAGE_SIZE`), marked ``… (part
    1 of N)`` when the passage is longer."""
    pages = passage_pages(size)
    return text if pages == 1 else f"{text} … (part 1 of {pages:,})"


def render_ranking_notes(ranked: data.RankedPassages, *, labels_shown: bool = True) -> None:
    """A warning for each odd thing the run file holds for this query's ranking (:class:`ui.data.RankedPassages`):
    ranked passages without text, ranking rows dropped as duplicates and, when the page shows the labels,
    negative labels."""
    if ranked.missing:
        st.warning(escape_markdown(
            f"{ranked.missing} ranked passage(s) of this query are missing from the run file's passages table: "
            f"they are listed at their rank with \"{data.MISSING_PASSAGE_TEXT}\"."))
    if ranked.duplicates:
        st.warning(escape_markdown(
            f"{ranked.duplicates} duplicate ranking row(s) of this query were dropped (the same rank, or the same "
            "passage, stored twice in the run file): the first of each is shown."))
    if ranked.negative and labels_shown:
        st.warning(negative_labels_note(ranked.negative, "among this query's passages",
                                        "they are shown as stored and count as not relevant"))


def negative_labels_note(counts: Mapping[str, int], where: str, treated: str) -> str:
    """Escaped Markdown: how many negative labels each method has ``where`` (labels are 0/1 or graded in [0, 1])
    and how the page ``treated`` them."""
    per_method = ", ".join(f"{method_name(m)}: {n}" for m, n in counts.items())
    return escape_markdown(f"{sum(counts.values())} negative label value(s) {where} ({per_method}). Labels are 0/1 "
                           f"or graded in [0, 1]; {treated}.")


def render_passage_text(text: str, size: Any, *, key: str, load_page: Callable[[int], str]) -> None:
    """A passage's text (``st.text``). ``text`` holds its first part (:data:`ui.data.PASSAGE_PAGE_SIZE`) and
    ``size`` its whole size; a longer passage gets a part number input (widget ``key``), and part ``i`` (1 first)
    shows what ``load_page(i - 1)`` reads, so the whole text is never loaded."""
    pages = passage_pages(size)
    if pages == 1:
        st.text(text)
        return
    page = int(st.number_input(f"Part (of {pages:,})", min_value=1, max_value=pages, value=1, step=1, key=key,
                               help="This passage is too long to show at once: choose which part to read"))
    st.caption(escape_markdown(f"Part {page:,} of {pages:,}: the passage is too long to show at once, so it is shown "
                               f"about {data.PASSAGE_PAGE_SIZE:,} characters at a time."))
    st.text(text if page == 1 else load_page(page - 1))


# --- URL-synced selection ----------------------------------------------------------------------------

def _widget_key(state_key: str) -> str:
    return f"{state_key}.widget"


def _remember_url_values(param: str, values: Sequence[Any]) -> None:
    written = st.session_state.setdefault(URL_VALUES_STATE, {})
    written.setdefault(param, set()).update(str(v) for v in values)


def _written_by_us(param: str, value: str) -> bool:
    """Whether ``?param=value`` was put in the URL by this session (a choice made on another run, say), not by the
    link the user opened."""
    return value in st.session_state.get(URL_VALUES_STATE, {}).get(param, ())


def url_value_is_ours(param: str, value: str) -> bool:
    """Whether ``?param=value`` was written by this session (:func:`commit_choice`), not by the link opened."""
    return _written_by_us(param, value)


def _shown_value(value: Any) -> str:
    text = str(value)
    return repr(text if len(text) <= URL_VALUE_CHARS else text[:URL_VALUE_CHARS - 1] + "…")


def warn_unknown_url_value(param: str, values: Sequence[str], instead: str) -> None:
    """A visible warning that the link's ``?param=`` names something this page does not have (an unknown run or
    query id, a k that is not a number or not one of the run's), and what is shown instead."""
    unknown = ", ".join(_shown_value(v) for v in values)
    st.warning(escape_markdown(f"The link asks for {param} {unknown}, which is not one of the choices here; "
                               f"showing {instead} instead."))


#: Every URL parameter a page of the dashboard reads (``tests/ui/test_app_links.py`` checks it against the pages'
#: code), and Streamlit's own: any other name in a link is a visible warning on every page
#: (:func:`warn_unknown_params`, called by ``app.py`` before the page runs).
KNOWN_PARAMS = frozenset({
    "run", "run_a", "run_b", "query", "k", "method", "measure", "judge", "category", "case", "answer", "statistic",
    "rows", "retriever", "scenario", "queue", "mode", "kind", "format", "dataset", "agent", "all_runs", "list",
    "list_name", "annotator", "view", "item", "embed", "embed_options", "basis"})


def warn_unknown_params() -> None:
    """A visible warning naming each ``?name=`` of the link that no page reads (a typo, an old link): it is ignored,
    and the page says so instead of silently showing something else."""
    unknown = sorted(name for name in st.query_params if name not in KNOWN_PARAMS)
    if unknown:
        names = ", ".join(_shown_value(name) for name in unknown)
        st.warning(escape_markdown(f"The link has {'a parameter' if len(unknown) == 1 else 'parameters'} {names} "
                                   "that no page reads; ignored."))


def commit_choice(state_key: str, param: str, value: str) -> None:
    """Make ``value`` the current choice: in session state (kept across pages), in the selectbox and in
    the URL (``?param=value``) so the view can be shared. Safe inside widget callbacks."""
    st.session_state[state_key] = value
    if st.session_state.get(_widget_key(state_key)) != value:
        st.session_state[_widget_key(state_key)] = value
    if st.query_params.get(param) != value:
        st.query_params[param] = value
    _remember_url_values(param, [value])


def _on_select(state_key: str, param: str) -> None:
    commit_choice(state_key, param, st.session_state[_widget_key(state_key)])


#: Failure cases listed by default (table rows and the case picker's options): a 100k-query run has tens of
#: thousands, megabytes sent to the browser for rows nobody scrolls to (the walk link still carries the whole
#: list). 1,000 rows of the shipped runs' cases were 575 kB of table and 118 kB of picker options, and 0.3 s of a
#: cold visit more than 200 (bench_dashboard, paired); "Cases listed" (:func:`select_case_rows`) lists more.
CASE_ROWS = 200
#: The longer lists "Cases listed" offers after :data:`CASE_ROWS`.
MORE_CASE_ROWS = (1_000, 5_000)


def select_case_rows(where: Any, state_key: str) -> int:
    """How many cases a page lists ("Cases listed", ``?rows=``): :data:`CASE_ROWS` unless a longer list of
    :data:`MORE_CASE_ROWS` is chosen."""
    choices = [str(n) for n in (CASE_ROWS, *(n for n in MORE_CASE_ROWS if n > CASE_ROWS))]
    return int(select_synced(where, "Cases listed", choices, state_key=state_key, param="rows",
                             format_func=lambda n: f"at most {int(n):,}",
                             help="Rows of the case table and options of the case picker (the walk link always "
                                  "carries every case's query)"))


def listed_positions(ids: Sequence[str], wanted: str | None, limit: int | None = None) -> list[int]:
    """Positions of the rows to list: the first ``limit`` (default :data:`CASE_ROWS`), and the one whose id is
    ``wanted`` (a shared ``?case=`` link) when it is further down, so that such a link still opens its case."""
    limit = CASE_ROWS if limit is None else limit
    positions = list(range(min(limit, len(ids))))
    if wanted is not None and len(ids) > limit:
        further = [i for i in range(limit, len(ids)) if ids[i] == wanted]
        positions += further[:1]
    return positions


def listed_note(total: int, limit: int | None = None) -> str:
    """Words for a list cut at ``limit`` (default :data:`CASE_ROWS`): `` (the first 200 are listed below; ...)``,
    else empty."""
    limit = CASE_ROWS if limit is None else limit
    return (f" (the first {limit:,} are listed below; list more with \"Cases listed\", or narrow the filters)"
            if total > limit else "")


def select_synced(where: Any, label: str, options: Sequence[str], *, state_key: str, param: str,
                  format_func: Callable[[Any], str] = str, default: Callable[[], str] | None = None,
                  widget: str = "selectbox", **selectbox_args: Any) -> str:
    """A selectbox (or another one-choice widget with its signature: ``widget="radio"``) whose choice comes from
    ``?param=`` (if valid), else the session, else ``default()`` (the first option without one), and is written
    back to both. A link naming something that is not an option gets a visible warning naming it (never a silent
    substitute)."""
    from_url = st.query_params.get(param)
    if from_url in options:
        chosen = from_url
    elif st.session_state.get(state_key) in options:
        chosen = st.session_state[state_key]
    else:
        chosen = default() if default is not None else options[0]
    if from_url is not None and from_url not in options and not _written_by_us(param, from_url):
        warn_unknown_url_value(param, [from_url], _shown_value(format_func(chosen)))
    commit_choice(state_key, param, chosen)
    # Streamlit puts the page in a widget's id, so the same key on another page is another widget, which a
    # value kept in the session from the previous page does not set: seed it on every run, before it exists.
    st.session_state[_widget_key(state_key)] = chosen
    return getattr(where, widget)(label, options, key=_widget_key(state_key), format_func=format_func,
                                  on_change=_on_select, args=(state_key, param), **selectbox_args)


def _on_multiselect(param: str, widget_key: str) -> None:
    st.query_params[param] = [str(value) for value in st.session_state[widget_key]]
    _remember_url_values(param, st.query_params.get_all(param))


def multiselect_synced(where: Any, label: str, options: Sequence[Any], *, key: str, param: str,
                       **multiselect_args: Any) -> list[Any]:
    """A multiselect whose choice comes from ``?param=a&param=b`` (the options named there, matched as text), else
    the widget's last value, else every option; changes are written back to the URL. Options are shown as
    text, so they must differ as text."""
    by_text = {str(option): option for option in options}
    if key not in st.session_state:
        in_url = st.query_params.get_all(param)
        from_url = [by_text[t] for t in in_url if t in by_text]
        unknown = [t for t in in_url if t not in by_text and not _written_by_us(param, t)]
        st.session_state[key] = from_url or list(options)
        if unknown:
            warn_unknown_url_value(param, unknown, ", ".join(map(str, st.session_state[key])) or "none")
    else:  # drop choices that are no longer options (another run, another judge)
        st.session_state[key] = [v for v in st.session_state[key] if str(v) in by_text]
    return where.multiselect(label, list(options), key=key, on_change=_on_multiselect, args=(param, key),
                             **multiselect_args)


# --- blocks ------------------------------------------------------------------------------------------

def page_heading(file: str, title: str | None = None) -> None:
    """A page's title (its navigation title unless ``title`` is given) and, under it, the one question the page
    answers (``question`` of its :data:`ui.navigation.PAGES` entry)."""
    page = navigation.BY_FILE[file]
    st.title(title or page.title)
    st.caption(escape_markdown(page.question))


def select_query(questions: Mapping[str, str], *, state_key: str) -> str:
    """The question selector of a run (``?query=<id>``, type to search) between ◀ Prev and Next ▶ buttons;
    ``questions`` maps query id to question in run order. Returns the chosen query id."""
    ids = list(questions)
    previous_column, select_column, next_column = st.columns([1.2, 7.6, 1.2], vertical_alignment="bottom")
    query_id = select_synced(
        select_column, f"Question ({len(ids)} in this run; type to search)", ids, state_key=state_key,
        param="query", format_func=lambda qid: f"{questions[qid]}  [{qid}]", filter_mode="contains")
    position = ids.index(query_id)
    previous_column.button("◀ Prev", disabled=position == 0, on_click=commit_choice,
                           args=(state_key, "query", ids[max(position - 1, 0)]), width="stretch")
    next_column.button("Next ▶", disabled=position == len(ids) - 1, on_click=commit_choice,
                       args=(state_key, "query", ids[min(position + 1, len(ids) - 1)]), width="stretch")
    return query_id


def run_label(name: str, listing: data.RunListing) -> str:
    """A run's name in the selector, marked when it is a shipped, read-only run."""
    return f"{name} · {SHIPPED_MARK}" if name in listing.shipped else name


def render_run_folders(listing: data.RunListing) -> None:
    """Sidebar caption: where the runs come from; a warning naming any file that could not be listed."""
    shipped = data.shipped_runs_dir()
    st.sidebar.caption(escape_markdown(f"Your runs: {data.runs_dir()}")
                       + (escape_markdown(f" · shipped demo runs ({SHIPPED_MARK}): {shipped}") if shipped else ""))
    if listing.problems:
        st.sidebar.warning(escape_markdown(f"{len(listing.problems)} file(s) skipped: " + "; ".join(listing.problems)))
    if listing.shadowed:
        st.sidebar.caption(escape_markdown("Hidden by a run of yours with the same name: "
                                           + ", ".join(str(p) for p in listing.shadowed)))


#: ``?all_runs=1``: a page that lists only the runs it can show (:func:`select_run`'s ``needs``) lists every run.
ALL_RUNS_PARAM = "all_runs"


def compatible_runs(runs: Mapping[str, Path], needs: Callable[[tuple[str, int]], bool]) -> list[str]:
    """The names of ``runs`` whose file opens and has what a page ``needs`` (``needs(run_key)``), in order."""
    found = []
    for stem, path in runs.items():
        try:
            with data.isolated():
                if needs(data.run_key(path)):
                    found.append(stem)
        except (StoreError, OSError):
            continue
    return found


def select_run(needs: Callable[[tuple[str, int]], bool] | None = None, needs_text: str = "") -> Path:
    """The sidebar run selector (``?run=<file stem>``, default the newest of the user's runs, else of the
    shipped ones). Stops the page with the empty state when there is no run, and with an error when the chosen
    file is not a readable run.

    With ``needs`` (``run_key -> bool``: the run has what the page shows, ``needs_text`` says what in words), only
    the runs that have it are offered, plus the one a link names, unless "Show all runs" is on (``?all_runs=1``);
    the sidebar says how many are hidden. No run has it: every run is offered (the page then says what the run
    lacks and how to compute it)."""
    listing = data.find_all_runs()
    runs = listing.runs
    if not runs:
        render_empty_state()
        for problem in listing.problems:
            st.warning(escape_markdown(problem))
        st.stop()
    offered = runs
    run_slot = st.sidebar.container()  # the selector above the switch that decides its options
    if needs is not None:
        fitting = compatible_runs(runs, needs)
        hidden = len(runs) - len(fitting)
        show_all = False
        if fitting and hidden:
            show_all = st.sidebar.toggle(
                "Show all runs", value=st.query_params.get(ALL_RUNS_PARAM) == "1", key="app.all_runs",
                help=escape_markdown(f"{len(fitting)} of {len(runs)} runs have {needs_text or 'what this page shows'}"
                                     f"; off, the {hidden} other(s) are not listed"))
            if show_all:
                st.query_params[ALL_RUNS_PARAM] = "1"
            elif ALL_RUNS_PARAM in st.query_params:
                del st.query_params[ALL_RUNS_PARAM]
        if fitting and not show_all:
            named = st.query_params.get("run")
            offered = {stem: path for stem, path in runs.items() if stem in fitting or stem == named}
    stem = select_synced(run_slot, "Run", list(offered), state_key=RUN_STATE, param="run",
                         format_func=lambda name: run_label(name, listing), default=lambda: first_readable(offered),
                         help="Your run files (*.sqlite), newest first, then the shipped demo runs")
    render_run_folders(listing)
    try:
        key = data.run_key(runs[stem])
    except OSError as error:  # deleted since it was listed
        stop_with_error(error)
    data.load_settings(*key)  # a damaged file stops the page with its error (data.unreadable)
    note = data.load_read_note(*key)
    if note:
        st.warning(escape_markdown(note))
    return runs[stem]


def render_compatible_runs(page: str, runs: Sequence[str], what: str, limit: int = 5) -> None:
    """Links to ``page`` on the runs that have ``what`` the chosen one lacks (at most ``limit``), so a run
    without it is no dead end when another run has it."""
    if not runs:
        return
    st.markdown(escape_markdown(f"Runs that have {what}:"))
    for stem in runs[:limit]:
        auth.page_link(st, page, label=stem, icon=":material/arrow_forward:", query_params={"run": stem})
    if len(runs) > limit:
        st.caption(escape_markdown(f"and {len(runs) - limit} more (the sidebar lists them)."))


def first_readable(runs: Mapping[str, Path]) -> str:
    """The first of ``runs`` that opens (the default run: a damaged newest file does not hide the others); the
    first of all when none does, so its error is shown."""
    for stem, path in runs.items():
        try:
            with data.isolated():
                data.load_settings(*data.run_key(path))
        except (StoreError, OSError):
            continue
        return stem
    return next(iter(runs))


def select_kind_run(title: str, runs: Sequence[Path], folder: Path, *, state_key: str, command: str,
                    read_settings: Callable[[str, int], Any]) -> Path:
    """The sidebar selector of a run of another kind (attributed answers, IUM), ``?run=<file stem>``, default the
    newest. Stops the page with an empty state naming ``command`` when ``folder`` holds no such run, and with an
    error when the chosen file cannot be read (``read_settings(path, mtime_ns)`` is tried on it)."""
    if not runs:
        st.title(title)
        st.info(escape_markdown(f"No {title} run files (*.sqlite) in {folder}.")
                + " Build one with the command below (see its options), or point the dashboard at another runs "
                  f"folder with the `{data.RUNS_DIR_ENV}` environment variable:")
        st.code(command, language="bash")
        st.stop()
    by_stem = {path.stem: path for path in runs}
    stem = select_synced(st.sidebar, f"{title} run", list(by_stem), state_key=state_key, param="run",
                         help="Run files (*.sqlite) of this kind, newest first")
    st.sidebar.caption(escape_markdown(f"from {folder}"))
    try:
        read_settings(*data.run_key(by_stem[stem]))  # a damaged file stops the page with its error
    except (StoreError, OSError) as error:
        stop_with_error(error)
    return by_stem[stem]


def citations_command() -> str:
    """How a user scores their own attributed answers into a run the Citations page lists."""
    return (f"rageval evaluate-citations ANSWERS.jsonl --out {data.attribution_runs_dir() / 'my-answers.sqlite'}"
            "   # docs/citations_format.md")


def render_empty_state() -> None:
    """What to do when there is no run to show."""
    st.title("rageval")
    st.info(escape_markdown(f"No run files (*.sqlite) in {data.runs_dir()}.") +
            " Upload your retrieval run on the Upload page, or evaluate your own questions, passages and candidate "
            "lists with the command below (`rageval evaluate --help`; it writes into that folder), or point the "
            f"dashboard at another folder with the `{data.RUNS_DIR_ENV}` environment variable:")
    st.code(EMPTY_STATE_COMMAND, language="bash")
    auth.page_link(st, navigation.UPLOAD, label="Upload a run", icon=":material/upload_file:")


def labelled_count(n: int, n_queries: int) -> str:
    """``"40 of 100"`` when a method's measures cover fewer queries than the run has, else ``"100"``."""
    return f"{n:,} of {n_queries:,}" if n < n_queries else f"{n:,}"


def partial_methods_note(summary: pd.DataFrame, n_queries: int) -> str:
    """`` · erag:em@x: 40 of 100 labelled`` for each method measured on fewer queries than the run has (a partial
    re-score), so no mean is read as one over every query; empty when every method covers them all."""
    partial = [f"{method_name(m)}: {labelled_count(int(n), n_queries)} labelled"
               for m, n in summary["n"].items() if int(n) < n_queries]
    return (" · " + " · ".join(partial)) if partial else ""


def render_table(frame: pd.DataFrame, column_config: Mapping[str, Any] | None = None, *, where: Any = None,
                 digits: int | Mapping[str, int] = fmt.MEAN_DIGITS, help: Mapping[str, str] | None = None,
                 **dataframe_args: Any) -> None:
    """``st.dataframe`` (on ``where``, default the page) of ``frame`` with missing cells shown as "–", never
    "None"/"nan" (:func:`ui.format.display_frame`, floats of those columns with ``digits``): a column with a gap
    becomes text and its header help says what "–" means (:data:`ui.format.MISSING_HELP`), keeping the label,
    width and help ``column_config`` gave it. Complete columns keep their numbers and their config. Every column
    gets a header help: ``help``'s text for it, else its own, else :data:`ui.glossary.COLUMN_HELP`'s."""
    config = dict(column_config or {})
    explicit = dict(help or {})
    for column in frame.columns:
        given = config.get(column, {})
        if given is None:  # a hidden column
            continue
        given = {"label": given} if isinstance(given, str) else dict(given)
        text = explicit.get(column) or given.get("help") or glossary.COLUMN_HELP.get(str(column))
        if text:
            config[column] = {**given, "help": text}
    kept = [c for c, given in config.items()  # links, images, checkboxes: an empty cell is already blank there
            if isinstance(given, Mapping) and given.get("type_config", {}).get("type") not in (None, "number", "text")]
    gaps = [c for c in fmt.columns_with_missing(frame) if c not in kept]
    for column in gaps:
        given = config.get(column) or {}
        given = {"label": given} if isinstance(given, str) else given
        help_text = " · ".join(h for h in (given.get("help"), fmt.MISSING_HELP) if h)
        config[column] = st.column_config.TextColumn(given.get("label") or str(column), width=given.get("width"),
                                                     help=help_text)
    shown = frame.copy()
    filled = fmt.display_frame(frame[gaps], dict(digits) if isinstance(digits, Mapping) else digits)
    for column in gaps:
        shown[column] = filled[column]
    (where or st).dataframe(shown, column_config=config, **dataframe_args)


def measure_notes(columns: Sequence[str], methods: Sequence[str], graded: Sequence[str] = ()) -> dict[str, str]:
    """Header help of the measure columns whose values read as wrong without their convention, for the label
    ``methods`` of a table: nDCG@c when a method is graded (:func:`rageval.erag.measures.is_graded_method`, or
    named in ``graded``: :data:`ui.glossary.GRADED_NDCG_NOTE`) and R@c when one is list-bound
    (:func:`rageval.erag.measures.is_list_bound_method`: :data:`ui.glossary.LIST_BOUND_RECALL_NOTE`)."""
    from rageval.erag.measures import is_graded_method, is_list_bound_method

    methods = order_label_methods(list(methods))
    graded_names = [method_name(m) for m in methods if is_graded_method(m) or m in graded]
    bound_names = [method_name(m) for m in methods if is_list_bound_method(m) and not (is_graded_method(m)
                                                                                     or m in graded)]
    from rageval.labelmethods import levels_text, relevant_grade

    scale_names = [f"{method_name(m)} {levels_text(m)}" for m in methods if relevant_grade(m) is not None]
    notes = {}
    for column in columns:
        if str(column).startswith("nDCG@") and graded_names:
            notes[column] = glossary.GRADED_NDCG_NOTE.format(methods=", ".join(graded_names))
            if scale_names:
                notes[column] += "; " + glossary.SCALE_NDCG_NOTE.format(methods=", ".join(scale_names))
        elif str(column).startswith("nDCG@") and scale_names:
            notes[column] = glossary.SCALE_NDCG_NOTE.format(methods=", ".join(scale_names))
        elif str(column).startswith("R@") and bound_names:
            notes[column] = glossary.LIST_BOUND_RECALL_NOTE.format(methods=", ".join(bound_names))
    return notes


def measure_footnote(notes: Mapping[str, str]) -> str:
    """Escaped Markdown under a measure table: the notes of :func:`measure_notes`, once each (every nDCG column
    has the same one), marked as what the column headers' help says."""
    if not notes:
        return ""
    return escape_markdown("Read with care (also in the column headers' help): "
                           + "; ".join(dict.fromkeys(notes.values())) + ".")


def render_measure_summary(summary: pd.DataFrame, n_queries: int | None = None) -> None:
    """Mean measure values, one row per label method; ``n`` is the number of queries each mean is over, shown
    as ``n of N labelled`` for a method that covers fewer than the run's ``n_queries``. The nDCG and R columns
    say how graded and list-bound labels read (:func:`measure_notes`: in their header help and a footnote); a
    method with no R value is graded (R is not defined for graded labels)."""
    recall = [c for c in summary.columns if str(c).startswith("R@")]
    graded = [m for m in summary.index if recall and summary.loc[m, recall].isna().all()]
    notes = measure_notes([c for c in summary.columns if c != "n"], list(summary.index), graded)
    shown = summary.loc[order_label_methods(list(summary.index))].rename(index=method_name)
    shown.index.name = "Labels"
    config = {c: st.column_config.NumberColumn(c, format="%.3f") for c in shown.columns if c != "n"}
    if n_queries is not None and (shown["n"] < n_queries).any():
        shown["n"] = [labelled_count(int(n), n_queries) for n in shown["n"]]
        config["n"] = st.column_config.TextColumn("n", help=f"labelled queries averaged over, of the run's "
                                                            f"{n_queries:,}")
    else:
        config["n"] = st.column_config.NumberColumn("n", help="queries averaged over", format="%d")
    render_table(shown, config, help=notes)  # "–" where a method lacks a measure (graded labels have no R@k)
    if notes:
        st.caption(measure_footnote(notes))


def measure_interval_view(intervals: pd.DataFrame) -> pd.DataFrame:
    """``mean [low, high]`` of every measure (columns, in measure order) per label method (rows, display order),
    from :func:`ui.data.load_measure_intervals`; ``–`` where a method lacks the measure."""
    if intervals.empty:
        return pd.DataFrame()
    cells = intervals.assign(cell=[fmt.format_estimate(m, lo, hi) for m, lo, hi in
                                   zip(intervals["mean"], intervals["low"], intervals["high"])])
    view = cells.pivot(index="method", columns="measure", values="cell")
    view = view[sorted(view.columns, key=measure_sort_key)].fillna(fmt.MISSING)
    view = view.loc[order_label_methods(list(view.index))].rename(index=method_name)
    view.index.name, view.columns.name = "Labels", None
    return view


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
    right.metric("E2E exact match", score_cell(e2e.score))


# --- an E2E score, links, notes (the evidence and LLM-retEval tables: ui/render_evidence.py) -----------------

def score_cell(score: Any) -> str:
    """An E2E exact match as shown: ✓/✗ and its value, or "unscored" (an imported answer without gold answers)."""
    return "– unscored (no gold answers)" if fmt.is_missing(score) else f"{format_label(score)} {float(score):g}"


def inspector_url(run: str, query_id: str) -> str:
    """Relative link from a page to the query inspector on ``query_id`` of ``run`` (the ``?run=&query=``
    parameters page 1 reads)."""
    from urllib.parse import urlencode

    return "Query_inspector?" + urlencode({"run": run, "query": query_id})


def small_sample_note(n_queries: int) -> None:
    """A visible note on a page showing statistics of a run of fewer than
    :data:`rageval.stats.correlation.MIN_INTERVAL_QUERIES` queries: "Small sample: 5 queries. ..."; nothing
    for a larger run."""
    from rageval.stats.correlation import MIN_INTERVAL_QUERIES, has_interval

    if has_interval(n_queries):
        return
    st.warning(f"**Small sample: {n_queries:,} {'query' if n_queries == 1 else 'queries'}.** Correlations get no "
               f"interval below {MIN_INTERVAL_QUERIES} queries (a bootstrap interval does not reach its 95% "
               "coverage there), and every mean, share and test rests on very few values: read them as examples, "
               "not as estimates.", icon=":material/info:")
