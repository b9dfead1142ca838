"""LLM-retEval: how a run's retriever fares when judged by the answer its top-k yields against the answer the
gold passages yield (Alinejad et al. 2024, Tables 1-2), and a browser of the failure cases A-F with their reasons.

``?run=<name>&judge=<judge>&k=<k>&category=A&category=C&rows=1000&case=<query id> <category>`` selects the run,
the judge, the failure cases shown (and how many are listed) and the case opened, so a view can be shared; the
cases link to the query inspector with the shown queries as its worklist (Prev / Next walk them).
"""

import streamlit as st

from rageval.reteval import CATEGORY_NAMES
from rageval.team import roles
from ui import auth, data, data_failures, navigation, render, render_evidence
from ui import format as fmt
from ui import render_inspector as inspect
from ui.render_lacks import complete_command, compute_hint, job_in_progress, render_lacks_panel

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

JUDGE_STATE = "reteval.judge"
K_STATE = "reteval.k"
CASE_STATE = "reteval.case"


NEEDS = "LLM-retEval verdicts"
path = render.select_run(data.has_reteval_data, NEEDS)

key = data.run_key(path)
settings = data.load_settings(*key)
judges = data_failures.load_judges(*key)
render.page_heading(navigation.RETEVAL)
render.render_provenance(settings, data.load_counts(*key)["queries"], run=path.stem)
render_lacks_panel(path)
render.render_unparsed_notes(data.load_unparsed_counts(*key), data.load_counted_as_no(*key))  # unread answers
if not judges:
    st.info(render.escape_markdown(f"Run {path.stem} has no LLM-retEval verdicts.")
            + " LLM-retEval answers each question from its gold passages (semi-gold answers), then judges the "
              "answer from the top-k against them and sorts the failures into cases A-F; it needs the questions' "
              "gold passages (gold_passage_ids, or qrels). "
            + ("This is a shipped run: choose one of yours." if data.is_shipped(path) else
               compute_hint(path, "it", ", or from a terminal:")))
    if not data.is_shipped(path) and not job_in_progress(path):
        st.code(complete_command(path) + " --pieces reteval", language="bash")
    render.render_compatible_runs(navigation.RETEVAL, render.compatible_runs(
        data.find_all_runs().runs, data.has_reteval_data), NEEDS)
    st.stop()

judges = sorted(judges, key=lambda j: (j != "em", j))
judge = render.select_synced(st.sidebar, "Judge", judges, state_key=JUDGE_STATE, param="judge",
                             format_func=fmt.judge_name,
                             help="Which judge compares the top-k answer with the semi-gold answers")
reteval_settings = settings.get("reteval") or {}
thresholds = {"token_f1": reteval_settings.get("f1_threshold"), "cosine": reteval_settings.get("cosine_threshold")}
judge_note = fmt.judge_name(judge) + (f" (threshold {thresholds[judge]:g})" if thresholds.get(judge) else "")
sampling = reteval_settings.get("semi_gold") or {}

table = data_failures.load_reteval_table(*key, judge)
n_judged = int(table["n"].max()) if len(table) else 0
st.subheader(render.escape_markdown(f"Retriever evaluation, judge: {judge_note}"))
st.dataframe(render_evidence.reteval_view(table), height="content")
st.caption(render.escape_markdown(
    f"The LLM-retEval paper's Tables 1-2 on this run, judge {judge_note}. Failure rows count the queries "
    f"in each category at k; Recall/Precision/F1@k are against the gold passages; LLM-retEval is the share of "
    f"queries whose top-k answer the judge finds equal to the semi-gold answers "
    f"({sampling.get('samples', '?')} samples at temperature {sampling.get('temperature', '?')}); QA accuracy "
    f"is the same judge against the gold answers; Refined leaves out the queries with a recall failure (A-C) "
    f"at that k.") + " " + render.sample_note(n_judged, ", ".join(str(int(k)) for k in table["k"])))

st.subheader("Failure cases")
ks = sorted(int(k) for k in table["k"])
filter_k, filter_category, filter_rows = st.columns([1, 4, 1])
k = int(render.select_synced(filter_k, "k", [str(k) for k in ks], state_key=K_STATE, param="k",
                             help="The failure cases of the answer from the top k passages the LLM was given"))
categories = render.multiselect_synced(
    filter_category, "Categories (A-C: recall fails, D-F: LLM-retEval fails)", list(CATEGORY_NAMES),
    key="reteval.categories", param="category",
    help=render.escape_markdown(" · ".join(f"{c}: {n}" for c, n in CATEGORY_NAMES.items())))
rows = render.select_case_rows(filter_rows, "reteval.rows")
cases = data_failures.load_failure_case_table(*key, judge, k)
shown = cases[cases["category"].isin(categories)].reset_index(drop=True)
if shown.empty:
    st.info(render.escape_markdown(f"No failure case of the chosen categories at k={k} under judge {judge_note}."))
    st.stop()

run_order = list(data.load_query_order(*key))
list_name = f"LLM-retEval failures, {fmt.judge_name(judge)}, k={k}, {''.join(sorted(set(shown['category'])))}"
inspect.render_walk_link(path.stem, shown["query_id"].tolist(), run_order, list_name)
auth.page_link(st, navigation.FAILURES, label="This run's failure cases at every k, counted per category",
               icon=":material/report:", query_params={"run": path.stem, "judge": judge})
all_case_ids = [f"{query_id} {category}" for query_id, category in zip(shown["query_id"], shown["category"])]
listed = shown.iloc[render.listed_positions(all_case_ids, st.query_params.get("case"), rows)].reset_index(drop=True)
view = render_evidence.failure_cases_view(listed, with_judge=False).drop(columns="k")
view.insert(view.columns.get_loc("Category") + 1, "Inspect",
            inspect.inspect_links(path.stem, listed["query_id"].tolist(), run_order, list_name))
render.render_table(view, hide_index=True, column_config={
    "Question": st.column_config.TextColumn(width="medium"),
    "Reason": st.column_config.TextColumn(width="large"),
    "Inspect": st.column_config.LinkColumn("Inspect", display_text="open ↗",
                                           help="Open this query in the query inspector (a new tab), walking the "
                                                "queries of this table")})
st.caption(render.escape_markdown(
    f"{len(shown)} failure cases ({shown['query_id'].nunique()} queries) at k={k} under judge {judge_note}, "
    f"categories {', '.join(sorted(set(shown['category'])))}{render.listed_note(len(shown), rows)}.")
    + " " + render.sample_note(n_judged, k))

case_ids = [f"{row.query_id} {row.category}" for row in listed.itertuples()]
labels = {i: f"{row.category} · {row.text}  [{row.query_id}]" for i, row in zip(case_ids, listed.itertuples())}
chosen = render.select_synced(st, "Open a case", case_ids, state_key=CASE_STATE, param="case",
                              format_func=lambda i: labels.get(i, i), filter_mode="contains")
case = listed.iloc[case_ids.index(chosen)]
walk = inspect.worklist_query_params(path.stem, shown["query_id"].tolist(), run_order, list_name)
render_evidence.render_failure_case(case, path.stem, k, {p: walk[p] for p in ("list", "list_name")})
