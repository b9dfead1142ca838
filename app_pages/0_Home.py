"""Home page (the default page of ``app.py``'s navigation): the findings of the selected run, then the leaderboard of
all runs, then what produced the run and its aggregate measures. ``?run=<name>`` selects a run by file name without
``.sqlite``.

Findings: the 2 x 2 of gold retrieved x answer right at the run's k (each cell opens the query inspector walking its
queries), the sentences ``rageval results`` derives (each linked to the page that proves it), and warnings on label
methods whose correlations mean little; with human labels, what they make of the main eRAG method's P@k (PPI,
:mod:`rageval.trust`). A run that lacks pieces says which, with a button that computes them.
"""

import streamlit as st

from rageval import findings
from rageval.labelmethods import LLM_RELEVANCE
from rageval.stats.correlation import MIN_INTERVAL_QUERIES
from rageval.team import roles
from rageval.trust.report import headline_method
from rageval.trust.report_text import trust_finding
from ui import auth, data, navigation, render
from ui import data_findings as loaders
from ui import data_trust as trust_data
from ui import format as fmt
from ui import render_findings as view
from ui.render_lacks import compute_hint, render_lacks_panel

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

path = render.select_run()

key = data.run_key(path)
settings = data.load_settings(*key)
counts = data.load_counts(*key)
main_k = data.load_main_k(*key)

st.title("Findings")
st.caption(navigation.BY_FILE[navigation.HOME].question)
render.render_provenance(settings, counts["queries"], run=path.name + (f" · {render.SHIPPED_MARK}"
                                                                     if data.is_shipped(path) else ""))
render_lacks_panel(path)
render.small_sample_note(counts["queries"])
render.render_unparsed_notes(data.load_unparsed_counts(*key), data.load_counted_as_no(*key))  # unread answers

# --- the 2 x 2 ---------------------------------------------------------------------------------------------
metric = view.metric_name(settings)
gold_answer = None
if main_k is None:
    st.info("This run stores no end-to-end answers, so whether retrieving a gold passage leads to a right answer "
            "cannot be told. "
            + ("It is a shipped run without answers: choose a run with answers in the sidebar or the leaderboard "
               "below. " if data.is_shipped(path) else
               compute_hint(path, "the E2E answers", " (or `rageval evaluate` on your data).") + " ")
            + "The leaderboard and the measures below still show what the run has.")
else:
    gold_answer = loaders.load_gold_answer(*key, main_k)
    table = gold_answer.table
    st.subheader(f"Gold passage retrieved × answer right {table.answer_at}")
    if gold_answer.source is None or table.without_gold == table.n_queries:
        st.info("No query of this run has gold passages (gold_passage_ids, or gold / qrels labels), so whether the "
                "retriever found one cannot be told. Give the questions' gold passages (or qrels) when you upload "
                "or evaluate a run; the findings below use the labels the run has.")
        gold_answer = None
    else:
        view.render_two_by_two(table, loaders.load_cell_links(*key, main_k))
        left_out = [f"{n:,} {what}" for n, what in ((table.without_gold, "without gold passages"),
                                                   (table.without_answer, f"without an E2E answer {table.answer_at}"))
                    if n]
        st.caption(render.escape_markdown(
            f"Gold retrieved: at least one of {view.gold_source_text(gold_answer.source)} is ranked {table.where}. "
            f"Answer right: {view.right_rule(settings, table.threshold, table.own_lists)}. Shares of the {table.n:,} "
            f"queries with both, with Wilson 95% intervals"
            + (f"; left out: {', '.join(left_out)}" if left_out else "") + "."))

# --- the finding sentences ----------------------------------------------------------------------------------
found: list[findings.Finding] = []
# The E2E score the same for every query at k: the answer's side is why no correlation is defined there.
constant = loaders.load_constant_answer(*key, main_k) if main_k is not None else None
if constant is not None and (finding := findings.constant_answer_finding(constant, metric)) is not None:
    found.append(finding)
if main_k is not None:
    correlations = loaders.load_home_correlations(*key, main_k)
    if correlations.table is not None and (finding := findings.correlation_finding(
            correlations.table, main_k, fmt.method_name)) is not None:
        found.append(finding)
    if gold_answer is not None and (finding := findings.two_by_two_finding(gold_answer.table)) is not None:
        found.append(finding)
llm_share = loaders.load_label_share(*key, LLM_RELEVANCE)
if (finding := findings.label_share_finding(LLM_RELEVANCE, *llm_share, name=fmt.method_name)) is not None:
    found.append(finding)
failure_counts = loaders.load_failure_counts(*key)
if (finding := findings.failure_finding(failure_counts, main_k, fmt.judge_name)) is not None:
    found.append(finding)
if (trust := trust_data.load_home_report(*key)) is not None and (finding := trust_finding(
        trust, headline_method(list(trust.methods), settings.get("label_metric")) or "", name=fmt.method_name)):
    found.append(finding)

if found:
    st.subheader("What this run says")
    for finding in found:
        text_column, link_column = st.columns([4, 1.3])
        text_column.markdown(render.escape_markdown(finding.text))
        link = view.finding_link(finding, path.stem, loaders.load_cell_links(*key, main_k) if gold_answer else None)
        if link is not None:
            page, label, params, icon = link
            auth.page_link(link_column, page, label=label, icon=icon, query_params=params)
    if main_k is not None and loaders.load_home_correlations(*key, main_k).table is None:
        st.caption("This run stores no correlations (a large run: they are not computed here); the Correlations page "
                   "computes them.")
elif main_k is not None:
    st.caption(render.escape_markdown(findings.no_finding_text({
        "correlations": loaders.load_home_correlations(*key, main_k).table is not None,
        "gold passages": gold_answer is not None, "LLM-relevance labels": bool(llm_share[0]),
        "LLM-retEval": not failure_counts.empty})))

warn_k = main_k if main_k is not None else settings.get("k")  # a retrieval-only run: its own depth
if isinstance(warn_k, int):
    measure, warnings = loaders.load_label_warnings(*key, warn_k, constant is not None and warn_k == main_k)
    if warnings:
        st.warning("**Label methods whose correlations mean little**\n\n"
                   + "\n".join(f"- {render.escape_markdown(w.text)}" for w in warnings))

# --- the leaderboard ---------------------------------------------------------------------------------------
st.subheader("All runs")
listing = data.find_all_runs()
rows, unreadable = loaders.load_leaderboard(data.safe_run_keys(list(listing.runs.values())))
unreadable = [*listing.problems, *unreadable]
if unreadable:
    st.warning(render.escape_markdown(f"{len(unreadable)} run file(s) could not be read and are left out: "
                                      + "; ".join(unreadable)))
board = view.leaderboard_view(rows)
board_key = f"home.leaderboard.{path.stem}"  # one per run: a pick made on another run's page is not carried over


def open_picked_run() -> None:
    """A selected row opens that run's findings here (a callback: it runs before the run selector exists)."""
    picked = st.session_state[board_key]["selection"]["rows"]
    if picked and (chosen := board["Run"].iloc[picked[0]]) != path.stem:
        render.commit_choice(render.RUN_STATE, "run", chosen)


st.dataframe(board, hide_index=True, column_config=view.leaderboard_column_config(), on_select=open_picked_run,
             selection_mode="single-row", key=board_key)
st.caption("Select a row to open that run's findings here. One row per run, ranked by what the intervals support: "
           "a run ranks below another only when its interval lies wholly below it, so overlapping intervals share a "
           f"rank (=); runs of fewer than {MIN_INTERVAL_QUERIES} answered queries are marked small. The E2E score "
           "at each run's own k (95% interval: Wilson for 0/1 scores, else Student-t) and the eRAG measure that best "
           "predicts it (Kendall's tau, 95% bootstrap interval; as stored in the run by rageval evaluate, else "
           f"computed here for runs of at most {loaders.SMALL_RUN_QUERIES:,} queries).")

# --- this run in numbers -----------------------------------------------------------------------------------
st.subheader("This run in numbers")
summary = data.load_measure_summary(*key)
sizes = st.columns(5)
sizes[0].metric("Queries", f"{counts['queries']:,}")
sizes[1].metric("Passages", f"{counts['passages']:,}")
sizes[2].metric("Ranking rows", f"{counts['rankings']:,}")
sizes[3].metric("LLM outputs", f"{counts['doc_outputs'] + counts['e2e_outputs']:,}",
                help=f"{counts['doc_outputs']:,} single-passage + {counts['e2e_outputs']:,} end-to-end")
e2e = loaders.load_leaderboard_row(*key)  # the run's own row of the leaderboard: SQLite aggregates, cached
if e2e["e2e_n"]:
    # A share with its Wilson interval for 0/1 scores (exact match), a mean with its Student-t interval otherwise.
    wilson = e2e["interval"] == "Wilson"
    shown = (fmt.format_share if wilson else fmt.format_number)(e2e["e2e"])
    interval = (fmt.format_share_interval if wilson else fmt.format_interval)(e2e["e2e_low"], e2e["e2e_high"])
    sizes[4].metric(f"E2E {metric} (mean)", shown,
                    help=f"{metric} of the end-to-end answer from the top-{main_k} passages over {e2e['e2e_n']} "
                         f"queries; 95% interval {interval} ({e2e['interval']})")
else:
    sizes[4].metric(f"E2E {metric} (mean)", fmt.MISSING, help="this run stores no end-to-end answers")

if summary.empty:
    st.info("This run stores no measure values.")
else:
    if nonfinite := data.load_nonfinite_measure_counts(*key):
        st.warning(render.escape_markdown(
            f"{sum(nonfinite.values())} per-query measure value(s) are missing or not a finite number in the run "
            "file and are left out of the means ("
            + ", ".join(f"{fmt.method_name(m)}: {n}" for m, n in nonfinite.items()) + ")."))
    means_tab, intervals_tab = st.tabs(["Means", "Means with 95% confidence intervals"])
    with means_tab:
        render.render_measure_summary(summary, counts["queries"])
    intervals_tab.dataframe(render.measure_interval_view(data.load_measure_intervals(*key)))
    st.caption("Mean over the labelled queries of each per-query measure, one row per relevance-label method; "
               "intervals are Student-t over those queries, Wilson for a measure whose values are all 0 or 1 "
               "(rageval.stats.intervals). "
               + render.sample_note(counts["queries"])
               + render.escape_markdown(render.partial_methods_note(summary, counts["queries"])))

if main_k is not None and not summary.empty:
    auth.page_link(st, navigation.CORRELATIONS, label="Which labels predict the end-to-end answer? Kendall's tau and "
                   "Spearman's rho with intervals, per-query scatter, k sweep", icon=":material/scatter_plot:",
                   query_params={"run": path.stem})
auth.page_link(st, navigation.INSPECTOR, label="Inspect queries one by one", icon=":material/search:",
               query_params={"run": path.stem})
auth.page_link(st, navigation.COMPARE, label="Compare this run with another", icon=":material/compare_arrows:",
               query_params={"run_a": path.stem})

with st.expander("What produced this run"):
    st.dataframe(render.settings_frame(settings), hide_index=True)
    if settings.get("notes"):
        st.info(render.escape_markdown(settings["notes"]))
