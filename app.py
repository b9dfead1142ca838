"""rageval dashboard, home page: pick a run, see what produced it and its aggregate measures.

Run with ``streamlit run app.py``. Runs are read from ``data/runs`` (or ``$RAGEVAL_RUNS_DIR``); ``?run=<name>``
selects one by file name without ``.sqlite``.
"""

import math

import streamlit as st

from rageval.report import best_measures
from rageval.stats.intervals import mean_interval
from ui import data, render

st.set_page_config(page_title="rageval", page_icon="🔎", layout="wide")

path = render.select_run()

key = data.run_key(path)
settings = data.load_settings(*key)
counts = data.load_counts(*key)
queries = data.load_query_table(*key)
summary = data.load_measure_summary(*key)

main_k = data.load_main_k(*key)
e2e_ks = data.load_e2e_ks(*key)

st.title("rageval · retrieval evaluation for RAG")
st.caption(render.escape_markdown(f"Run {path.name}"))

sizes = st.columns(5)
sizes[0].metric("Queries", f"{counts['queries']:,}")
sizes[1].metric("Passages", f"{counts['passages']:,}")
sizes[2].metric("Ranking rows", f"{counts['rankings']:,}")
sizes[3].metric("LLM outputs", f"{counts['doc_outputs'] + counts['e2e_outputs']:,}",
                help=f"{counts['doc_outputs']:,} single-passage + {counts['e2e_outputs']:,} end-to-end")
e2e_scores = queries["e2e_score"].dropna()
e2e_mean = e2e_scores.mean() if len(e2e_scores) else math.nan
e2e_interval = mean_interval(e2e_scores)
sizes[4].metric("E2E EM (mean)", "–" if math.isnan(e2e_mean) else f"{e2e_mean:.3f}",
                help=f"exact match of the end-to-end answer from the top-{main_k} passages, mean over "
                     f"{len(e2e_scores)} queries, 95% interval [{e2e_interval.low:.3f}, {e2e_interval.high:.3f}]"
                     if main_k else "this run stores no end-to-end answers")

st.subheader("Aggregate measures")
if summary.empty:
    st.info("This run stores no measure values.")
else:
    means_tab, intervals_tab = st.tabs(["Means", "Means with 95% confidence intervals"])
    with means_tab:
        render.render_measure_summary(summary)
    intervals_tab.dataframe(render.measure_interval_view(data.load_measure_intervals(*key)))
    n_queries = int(summary["n"].max())
    st.caption("Mean over queries of each per-query measure, one row per relevance-label method; intervals are "
               "Student-t over queries (rageval.stats.intervals). " + render.provenance(settings, n_queries))
if len(e2e_scores):
    st.caption(f"E2E EM {e2e_mean:.3f} (95% interval {e2e_interval.low:.3f}-{e2e_interval.high:.3f}): "
               + render.provenance(settings, len(e2e_scores), k=main_k))

if len(e2e_scores) >= 3 and e2e_ks and not summary.empty:
    st.subheader("Which labels predict the end-to-end answer?")
    k = st.selectbox("k: measures at k against the E2E EM of the answer from the top-k passages", e2e_ks,
                     index=e2e_ks.index(main_k), key="home.k",
                     help="The run's E2E k sweep; the default is the run's own k.")
    correlations = data.load_correlation_table(*key, cutoff=k)
    n_correlated = int(correlations["n"].max()) if len(correlations) else 0
    tau_tab, rho_tab = st.tabs(["Kendall's tau-b", "Spearman's rho"])
    tau_tab.dataframe(render.correlation_view(correlations, "tau"))
    rho_tab.dataframe(render.correlation_view(correlations, "rho"))
    st.caption(f"Correlation across queries between each per-query measure at k={k} (and R-precision) and the "
               f"E2E EM at k={k}, with 95% percentile bootstrap intervals ({data.DASHBOARD_RESAMPLES:,} resamples "
               "over queries); "
               "eRAG's Table 1 on this run. " + render.provenance(settings, n_correlated, k=k))
    graded = [m for m in settings.get("graded_label_methods", []) if m in set(correlations["method"])]
    if graded:
        st.caption(render.escape_markdown(
            f"Graded labels ({', '.join(render.method_name(m) for m in render.order_label_methods(graded))}) "
            "have only P, nDCG and Hit (a label above 0 counts as relevant for Hit); their other cells show –."))

    st.markdown(f"**Best measure per label method at k={k}**")
    best = best_measures(correlations, k)
    st.dataframe(render.best_measures_view(best), hide_index=True)
    st.caption(f"For each label method, its measure at k={k} with the highest Kendall's tau-b against the E2E EM "
               "(R-precision and undefined coefficients left out). " + render.provenance(settings, n_correlated, k=k))

    if len(e2e_ks) > 1:
        sweep = data.load_k_sweep(*key)
        if not sweep.empty:
            st.markdown("**How the agreement changes with k**")
            st.plotly_chart(render.k_sweep_figure(sweep), key="home.k_sweep")
            st.caption(render.escape_markdown(
                f"Kendall's tau-b between each label method's best measure family (chosen at the run's k={main_k}) "
                f"at k and the E2E EM at k, for every k of the sweep; point estimates, eRAG's Figure 1 on this "
                f"run.") + " " + render.provenance(settings, int(sweep["n"].max()), k=", ".join(map(str, e2e_ks))))

st.subheader("What produced this run")
st.dataframe(render.settings_frame(settings), hide_index=True)
if settings.get("notes"):
    st.info(render.escape_markdown(settings["notes"]))

st.page_link("pages/1_Query_inspector.py", label="Inspect queries one by one", icon="🔍",
             query_params={"run": path.stem})
if not data.load_verdicts(*key).empty:
    st.page_link("pages/2_LLM_retEval.py", label="LLM-retEval: judged answers and failure cases", icon="⚖️",
                 query_params={"run": path.stem})
st.page_link("pages/5_Correlations.py", label="Correlations: labels against the end-to-end answer", icon="📈",
             query_params={"run": path.stem})
st.page_link("pages/6_Compare_runs.py", label="Compare this run with another", icon="🆚",
             query_params={"run_a": path.stem})
