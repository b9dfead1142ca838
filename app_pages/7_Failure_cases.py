"""Failure cases across runs: how many queries fall in each LLM-retEval failure category A-F at each k, for every
run that has LLM-retEval verdicts, filtered by judge, category, k, dataset and retriever, with the cases listed and
linked to the query inspector (Alinejad et al. 2024, §4).

``?judge=<judge>&category=A&category=C&k=5&run=<name>&dataset=...&retriever=...&rows=1000`` preset the filters and
how many cases are listed (``?run=`` one run's cases, as the pages about one run link here), and
``?case=<run query k category>`` the case shown, so a view can be shared.
"""

import streamlit as st

from rageval.reteval import CATEGORY_NAMES
from rageval.team import roles
from ui import auth, data, data_failures, navigation, render, render_evidence
from ui import format as fmt
from ui import render_inspector as inspect
from ui.render_failures import (
    COUNT_SCALE_NOTE,
    case_keys,
    count_chart,
    count_table,
    example_view,
    filter_cases,
    inspect_links,
    run_worklists,
)
from ui.render_lacks import render_lacks_panel

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

render.page_heading(navigation.FAILURES)

listing = data.find_all_runs()
run_keys = data.safe_run_keys(list(listing.runs.values()))
# each run on its own: one bad file hides none
problems = data.readable_runs(run_keys, data_failures.read_failure_tables)[1]
unreadable = [*listing.problems, *problems.values()]
if unreadable:
    st.warning(render.escape_markdown(f"{len(unreadable)} run file(s) could not be read and are left out: "
                                      + "; ".join(unreadable)))
run_keys = tuple(key for key in run_keys if key[0] not in problems)  # the cases of the runs that read
judges = data_failures.load_failure_judges(run_keys)
without = [name for name, path in listing.runs.items()
           if data.run_id(path) not in problems and not data_failures.has_failure_cases(data.run_key(path))]
named_without = [name for name in st.query_params.get_all("run") if name in without]  # a link to such a run
with st.expander(f"Runs without failure cases ({len(without)})", expanded=not judges or bool(named_without)):
    if without:
        chosen_run = st.selectbox("Run", without, key="failures.lacking_run",
                                  index=without.index(named_without[0]) if named_without else 0,
                                  help="A run of yours without LLM-retEval: see what it lacks and compute it")
        render_lacks_panel(listing.runs[chosen_run])
    else:
        st.caption("Every run has LLM-retEval failure cases.")
if not judges:
    st.info(render.escape_markdown(f"No run in {data.runs_dir()} (or among the shipped runs) has LLM-retEval "
                                   "failure cases.")
            + " LLM-retEval stores semi-gold answers, the judges' verdicts and the failure cases A-F: compute it "
              "for a run of yours above, or evaluate your own data with it, e.g.:")
    st.code("rageval evaluate --queries Q.jsonl --corpus C.jsonl --run R.trec --methods all", language="bash")
    st.stop()

judges = sorted(judges, key=lambda j: (j != "em", j))
judge = render.select_synced(st.sidebar, "Judge", judges, state_key="failures.judge", param="judge",
                             format_func=fmt.judge_name,
                             help="Which judge compared the top-k answer with the semi-gold answers")
cases = data_failures.load_failure_overview(run_keys, judge)
categories = render.multiselect_synced(
    st.sidebar, "Categories (A-C: recall fails, D-F: LLM-retEval fails)", list(CATEGORY_NAMES),
    key="failures.categories", param="category",
    help=render.escape_markdown(" · ".join(f"{c}: {n}" for c, n in CATEGORY_NAMES.items())))
runs = render.multiselect_synced(st.sidebar, "Run", [name for name in listing.runs if name in set(cases["run"])],
                                 key="failures.runs", param="run",
                                 help="The runs whose cases are counted and listed (a link with ?run=NAME opens one)")
ks = render.multiselect_synced(st.sidebar, "k", sorted(int(k) for k in cases["k"].unique()), key="failures.k",
                               param="k")
datasets = render.multiselect_synced(st.sidebar, "Dataset", sorted(cases["dataset"].unique()),
                                     key="failures.datasets", param="dataset")
retrievers = render.multiselect_synced(st.sidebar, "Retriever", sorted(cases["retriever"].unique()),
                                       key="failures.retrievers", param="retriever")
rows = render.select_case_rows(st.sidebar, "failures.rows")

shown = filter_cases(cases, judge=judge, categories=categories, ks=ks, datasets=datasets, retrievers=retrievers,
                     runs=runs)
judge_label = fmt.judge_name(judge)
if shown.empty:
    st.info("No failure case passes these filters: widen the runs, categories, k, datasets or retrievers in the "
            "sidebar.")
    st.stop()

provenance = "; ".join(
    f"{run}: " + render.provenance({"model_id": model, "dataset": dataset, "retriever": retriever},
                                   int(group["query_id"].nunique()))
    for (run, model, dataset, retriever), group in shown.groupby(["run", "model", "dataset", "retriever"]))
count_data, count_spec = count_chart(shown, judge_label)
st.vega_lite_chart(count_data, count_spec, key="failures.counts")
render.render_table(count_table(shown), hide_index=True,
                    help={c: f"Queries in category {c}: {name}" for c, name in CATEGORY_NAMES.items()})
st.caption(render.escape_markdown(
    f"Queries per failure category at each k under judge {judge_label}; a query can fall in several categories. "
    "Each category is decided by an explicit rule over the stored facts (rageval.reteval.classify_failures). "
    + COUNT_SCALE_NOTE) + " Queries with a case, per run: " + provenance)

st.subheader("Cases")
worklists = run_worklists(shown)
run_orders = {run: list(data.load_query_order(*data.run_key(listing.runs[run]))) for run in worklists}
list_name = f"failure cases, {judge_label}, {''.join(categories)}, k={','.join(map(str, ks))}"
for run, ids in worklists.items():
    inspect.render_walk_link(run, ids, run_orders[run], f"{list_name} · {run}",
                             label=f"Walk the {len(ids):,} queries of run {run} in the query inspector")
all_case_ids = case_keys(shown)
listed = data_failures.with_failure_details(
    shown.iloc[render.listed_positions(all_case_ids, st.query_params.get("case"), rows)].reset_index(drop=True),
    run_keys)
render.render_table(example_view(listed, inspect_links(listed, run_orders, list_name)), hide_index=True, column_config={
    "Question": st.column_config.TextColumn(width="medium"),
    "Reason": st.column_config.TextColumn(width="large"),
    "Inspect": st.column_config.LinkColumn("Inspect", display_text="open ↗",
                                           help="Open this query of this run in the query inspector (a new tab), "
                                                "walking this run's queries of the table")})
st.caption(render.escape_markdown(
    f"{fmt.count_noun(len(shown), 'failure case')} ({fmt.count_noun(shown['query_id'].nunique(), 'query', 'queries')}) "
    f"in {fmt.count_noun(shown['run'].nunique(), 'run')}, judge "
    f"{judge_label}{render.listed_note(len(shown), rows)}."))

case_ids = case_keys(listed)
labels = {i: f"{row.category} · k={row.k} · {row.text}  [{row.run} · {row.query_id}]"
          for i, row in zip(case_ids, listed.itertuples())}
chosen = render.select_synced(st, "Open a case", case_ids, state_key="failures.case", param="case",
                              format_func=labels.__getitem__, filter_mode="contains")  # ?case= shares it
case = listed.iloc[case_ids.index(chosen)]
walk = inspect.worklist_query_params(case["run"], worklists[case["run"]], run_orders[case["run"]],
                                     f"{list_name} · {case['run']}")
render_evidence.render_failure_case(case, case["run"], int(case["k"]), {p: walk[p] for p in ("list", "list_name")})
