"""Compare runs: two runs side by side (for example two retrievers over the same questions) on one per-query score,
a label method's measure or the end-to-end score: their settings, per-query wins, ties and losses on the queries
both hold, the mean difference with paired significance tests (:mod:`rageval.compare`), and the queries that
changed most, each linked to the query inspector in both runs.

``?run_a=<name>&run_b=<name>&method=<label method or e2e>&measure=<measure or E2E@k>`` selects the view; ``?run=``
(as every other page reads it) names run A when ``run_a`` is not given.
"""

import streamlit as st

from rageval.compare import DEFAULT_PERMUTATIONS, DEFAULT_SEED, E2E_METHOD, changed_most
from rageval.team import roles
from ui import auth, data, navigation, render
from ui import data_compare as loaders
from ui import format as fmt
from ui import render_compare as view
from ui import render_inspector as inspect

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

RUN_A_STATE = "compare.run_a"
RUN_B_STATE = "compare.run_b"
METHOD_STATE = "compare.method"
MEASURE_STATE = "compare.measure"
CHANGED_ROWS = 25


listing = data.find_all_runs()  # your runs, then the shipped ones
# Every run is opened on its own: one that cannot be read is named in a warning and left out, never fatal.
keys = {stem: key for stem, path in listing.runs.items() for key in data.safe_run_keys([path])}
readable, problems = data.readable_runs(tuple(keys.values()))
unreadable = [*listing.problems, *problems.values()]
settings_by_run = {stem: readable[key[0]] for stem, key in keys.items() if key[0] in readable}


def warn_unreadable() -> None:
    if unreadable:
        st.warning(render.escape_markdown(f"{len(unreadable)} run file(s) could not be read and are left out: "
                                          + "; ".join(unreadable)))


if not settings_by_run:
    render.render_empty_state()
    warn_unreadable()
    st.stop()

stems = list(settings_by_run)
st.session_state.setdefault(RUN_A_STATE, st.session_state.get(render.RUN_STATE))  # the run other pages show
if "run_a" not in st.query_params and (linked := st.query_params.get("run")) is not None:
    # ?run= (the parameter every other page reads) names run A: a link from another page compares that run.
    if linked in stems:
        st.session_state[RUN_A_STATE] = linked
    elif not render.url_value_is_ours("run", linked):
        render.warn_unknown_url_value("run", [linked], "run A " + repr(st.session_state.get(RUN_A_STATE) or stems[0]))
run_a = render.select_synced(st.sidebar, "Run A", stems, state_key=RUN_A_STATE, param="run_a",
                             help="Run files (*.sqlite), newest first")
settings_a = settings_by_run[run_a]
ids_a = data.load_query_ids(*keys[run_a])
shared = {stem: len(ids_a & data.load_query_ids(*keys[stem])) for stem in stems}  # queries each run shares with A
partner = view.default_partner(run_a, stems, settings_by_run, shared)
st.session_state.setdefault(RUN_B_STATE, partner)
run_b = render.select_synced(st.sidebar, "Run B", stems, state_key=RUN_B_STATE, param="run_b",
                             format_func=lambda stem: view.partner_label(stem, run_a, shared),
                             help="The run compared with A, with the number of queries it shares with A "
                                  "(default: the run sharing the most, preferably another retriever)")
settings_b = settings_by_run[run_b]
render.render_run_folders(listing)
key_a, key_b = keys[run_a], keys[run_b]

render.page_heading(navigation.COMPARE)
warn_unreadable()
st.caption(render.escape_markdown(
    f"A: {run_a} · B: {run_b} · {shared[run_b]:,} shared queries"
    + (" (B is the run that shares the most queries with A)" if run_b == partner and run_b != run_a else "")))
if shared[run_b] == 0:
    others = view.sharing_runs(run_a, shared)
    st.warning(render.escape_markdown(
        f"Runs {run_a} and {run_b} have no query in common, so they cannot be compared query by query. "
        + (f"Runs that share queries with {run_a}: {', '.join(others)}." if others else
           f"No other run shares a query with {run_a}: compare runs over the same questions.")))
    st.stop()
settings_columns = {"Run A": st.column_config.TextColumn(f"A: {run_a}", width="large"),
                    "Run B": st.column_config.TextColumn(f"B: {run_b}", width="large")}
differences = view.setting_differences(settings_a, settings_b)
if differences.empty:
    st.caption("Both runs were produced with the same settings (creation time and command aside).")
else:
    st.markdown("**How the runs differ**")
    st.dataframe(differences, hide_index=True, column_config=settings_columns)
with st.expander("Every setting of both runs"):
    st.dataframe(view.settings_comparison(settings_a, settings_b), hide_index=True, column_config=settings_columns)

options = view.common_options(loaders.load_score_options(*key_a), loaders.load_score_options(*key_b))
if not options:
    st.info(render.escape_markdown(f"Runs {run_a} and {run_b} have no score in common.")
            + " Two runs can be compared on a label method's measure both store (for example gold nDCG@10) or on "
              "the end-to-end score at a k both store. Choose another pair in the sidebar.")
    st.stop()
method_column, measure_column = st.columns(2)
method = render.select_synced(method_column, "Score from", list(options), state_key=METHOD_STATE, param="method",
                              format_func=view.method_label,
                              help="A label method's measure, or the score of the end-to-end answer")
st.session_state.setdefault(MEASURE_STATE, view.default_measure(options[method], settings_a.get("k")))
measure = render.select_synced(measure_column, "Measure", options[method], state_key=MEASURE_STATE, param="measure",
                               format_func=lambda m: view.score_name(method, m, settings_a) if method == E2E_METHOD
                               else m, help="Measures (or E2E k) both runs store")
score = view.score_name(method, measure, settings_a)

comparison = loaders.load_comparison(*key_a, *key_b, method, measure, DEFAULT_PERMUTATIONS, DEFAULT_SEED)
dropped = {run: loaders.load_dropped_scores(*run_key, method, measure) for run, run_key in (("A", key_a), ("B", key_b))}
if any(dropped.values()):
    st.warning(view.dropped_scores_note(dropped, score))
n = comparison.n_shared
coverage = render.escape_markdown(
    f"{n} queries are in both runs and compared; {len(comparison.only_a)} only in A and {len(comparison.only_b)} "
    f"only in B are left out.")
both = "A: " + render.provenance(settings_a, n) + " · B: " + render.provenance(settings_b, n)
if n == 0:
    st.info(coverage + " Choose two runs over the same questions.")
    st.stop()
render.small_sample_note(n)

st.subheader(render.escape_markdown(f"{score}: A against B"))
columns = st.columns(7)
columns[0].metric("Shared queries", f"{n:,}", help=f"{len(comparison.only_a)} only in A, "
                                                    f"{len(comparison.only_b)} only in B")
columns[1].metric("A better", comparison.a_better)
columns[2].metric("Ties", comparison.ties)
columns[3].metric("B better", comparison.b_better)
for column, name, side in ((columns[4], "Mean A", "a"), (columns[5], "Mean B", "b")):
    values = comparison.pairs[side]
    # a share with its Wilson interval for 0/1 scores (E2E exact match, Hit@k), else Student-t (ui.format)
    column.metric(name, fmt.format_share(values.mean()) if fmt.is_binary(values) else f"{values.mean():.4f}",
                  help=f"{score} over the {n:,} shared queries: {fmt.describe_score(values)} (95% interval)"
                  + "".join(f". {note}" for note in render.measure_notes(
                      [measure], [method], settings_a.get("graded_label_methods", [])).values()))
columns[6].metric("Mean A - B", f"{comparison.mean_difference:+.4f}")
st.caption(coverage + " " + both)
# The charts right under the numbers, the tests after them: the browser fetches Vega's code (0.77 MB) only when a
# chart arrives, so a chart sent early is drawn sooner (0.26 s of a cold visit, bench_dashboard paired).
scatter_column, histogram_column = st.columns(2)
changed = changed_most(comparison.pairs, CHANGED_ROWS)
# The questions the page shows: the scatter's hover (drawn points only; a grid of counts has none) and the table's.
texts = loaders.load_question_texts(*key_a, [*([] if view.is_density(n) else comparison.pairs["query_id"]),
                                             *changed["query_id"]])
# Vega-Lite, not plotly: the page loads a sixth of plotly.js's browser code; both charts send only their own columns
# (past SCATTER_MAX_POINTS queries, counted cells and bars rather than one row a query).
scatter_column.vega_lite_chart(*view.paired_scatter_chart(comparison.pairs, texts, run_a, run_b, score),
                               height=view.CHART_HEIGHT, key="compare.scatter")
histogram_column.vega_lite_chart(*view.difference_chart(comparison.pairs, score), height=view.CHART_HEIGHT,
                                 key="compare.differences")
st.caption(render.escape_markdown(
    (f"Left: how many shared queries have each pair of {score} values in A (x) and B (y) (past "
     f"{view.SCATTER_MAX_POINTS:,} queries a grid of counts replaces the points; the diagonal is A = B)"
     if view.is_density(n) else
     f"Left: {score} of each shared query in A (x) and B (y), jittered so equal values stay visible (hover for the "
     f"exact values; both axes include 0)") + "; right: the distribution of A - B (the dashed line is 0). Green: A "
    "better, grey: tie, red: B better.") + " " + both)

st.dataframe(view.tests_view(comparison), hide_index=True, column_config={
    "Counts": st.column_config.TextColumn(width="large"),
    "p-value (two-sided)": st.column_config.NumberColumn(format="%.4g")})
st.caption(render.escape_markdown(
    "Two-sided tests of no difference over the shared queries (rageval.compare). Randomization: each query's "
    "A - B keeps its size and takes either sign; p = share of sign assignments whose mean is at least as far from "
    "0 as the observed mean (Monte Carlo: (1 + hits) / (1 + draws)). Sign test: the A-better count against "
    "Binomial(m, 1/2) over the m non-tied queries. McNemar: the exact test on the queries only one run gets "
    "right, when both scores are 0/1.") + " " + both)

st.subheader("Queries that changed most")
if changed.empty:
    st.info(render.escape_markdown(f"No query changed: every shared query has the same {score} in both runs."))
    st.stop()
orders = tuple(list(data.load_query_order(*run_key)) for run_key in (key_a, key_b))
list_name = f"changed most: {score}, {run_a} vs {run_b}"
table = view.changed_view(changed, texts, run_a, run_b, orders, list_name)
walk_a, walk_b = st.columns(2)
for where, run, order in ((walk_a, run_a, orders[0]), (walk_b, run_b, orders[1])):
    inspect.render_walk_link(run, table["Query"].tolist(), order, list_name, where=where,
                             label=f"Walk these {len(table):,} queries in run {run}'s inspector")
st.dataframe(table, hide_index=True, column_config={
    "Question": st.column_config.TextColumn(width="large"),
    **{c: st.column_config.NumberColumn(format="%.3f") for c in ("A", "B")},
    "A - B": st.column_config.NumberColumn(format="%+.3f"),
    "Inspect in A": st.column_config.LinkColumn(display_text="open in A ↗",
                                                help="This query in run A's inspector (new tab), walking this table"),
    "Inspect in B": st.column_config.LinkColumn(display_text="open in B ↗",
                                                help="This query in run B's inspector (new tab), walking this table")})
st.caption(render.escape_markdown(
    f"The {len(changed)} shared queries with the largest |A - B| of {score} (ties left out), largest first.")
    + " " + both)
