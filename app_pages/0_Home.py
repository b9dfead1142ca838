"""Home page (the default page of ``app.py``'s navigation): pick a run, see what produced it and its aggregate
measures. ``?run=<name>`` selects one by file name without ``.sqlite``. A run that lacks pieces (an upload: no
eRAG labels, no E2E answers, no LLM-retEval) says so, with a button that computes them in the background.
"""

import math

import streamlit as st

from ui import data, navigation, render
from ui import format as fmt
from ui.render_lacks import render_lacks_panel

path = render.select_run()

key = data.run_key(path)
settings = data.load_settings(*key)
counts = data.load_counts(*key)
queries = data.load_query_table(*key)
summary = data.load_measure_summary(*key)

main_k = data.load_main_k(*key)
e2e_ks = data.load_e2e_ks(*key)

st.title("rageval · retrieval evaluation for RAG")
st.caption(render.escape_markdown(f"Run {path.name}" + (f" · {render.SHIPPED_MARK}" if data.is_shipped(path)
                                                          else "")))
render_lacks_panel(path)

sizes = st.columns(5)
sizes[0].metric("Queries", f"{counts['queries']:,}")
sizes[1].metric("Passages", f"{counts['passages']:,}")
sizes[2].metric("Ranking rows", f"{counts['rankings']:,}")
sizes[3].metric("LLM outputs", f"{counts['doc_outputs'] + counts['e2e_outputs']:,}",
                help=f"{counts['doc_outputs']:,} single-passage + {counts['e2e_outputs']:,} end-to-end")
e2e_scores = queries["e2e_score"].dropna()
e2e_mean = e2e_scores.mean() if len(e2e_scores) else math.nan
# Wilson interval for 0/1 exact match (a share), Student-t for a graded score (ui.format.describe_score)
e2e_shown = fmt.format_share(e2e_mean) if fmt.is_binary(e2e_scores) else fmt.format_number(e2e_mean)
sizes[4].metric("E2E EM (mean)", e2e_shown,
                help=f"exact match of the end-to-end answer from the top-{main_k} passages over "
                     f"{len(e2e_scores)} queries: {fmt.describe_score(e2e_scores)} (95% interval)"
                     if main_k else "this run stores no end-to-end answers")

st.subheader("Aggregate measures")
if summary.empty:
    st.info("This run stores no measure values.")
else:
    if nonfinite := data.load_nonfinite_measure_counts(*key):
        st.warning(render.escape_markdown(
            f"{sum(nonfinite.values())} per-query measure value(s) are missing or not a finite number in the run "
            "file and are left out of the means ("
            + ", ".join(f"{render.method_name(m)}: {n}" for m, n in nonfinite.items()) + ")."))
    means_tab, intervals_tab = st.tabs(["Means", "Means with 95% confidence intervals"])
    with means_tab:
        render.render_measure_summary(summary, counts["queries"])
    intervals_tab.dataframe(render.measure_interval_view(data.load_measure_intervals(*key)))
    st.caption("Mean over the labelled queries of each per-query measure, one row per relevance-label method; "
               "intervals are Student-t over those queries, Wilson for a measure whose values are all 0 or 1 "
               "(rageval.stats.intervals). "
               + render.provenance(settings, counts["queries"])
               + render.escape_markdown(render.partial_methods_note(summary, counts["queries"])))
if len(e2e_scores):
    st.caption(f"E2E EM {fmt.describe_score(e2e_scores)} (95% interval): "
               + render.provenance(settings, len(e2e_scores), k=main_k))

if e2e_ks and not summary.empty:
    st.page_link(navigation.CORRELATIONS, label="Which labels predict the end-to-end answer? Kendall's tau and "
                 "Spearman's rho with intervals, per-query scatter, k sweep", icon=":material/scatter_plot:",
                 query_params={"run": path.stem})

st.subheader("What produced this run")
st.dataframe(render.settings_frame(settings), hide_index=True)
if settings.get("notes"):
    st.info(render.escape_markdown(settings["notes"]))

st.page_link(navigation.INSPECTOR, label="Inspect queries one by one", icon=":material/search:",
             query_params={"run": path.stem})
if not data.load_verdicts(*key).empty:
    st.page_link(navigation.RETEVAL, label="LLM-retEval: judged answers and failure cases", icon=":material/gavel:",
                 query_params={"run": path.stem})
st.page_link(navigation.COMPARE, label="Compare this run with another", icon=":material/compare_arrows:",
             query_params={"run_a": path.stem})
