"""rageval dashboard, home page: pick a run, see what produced it and its aggregate measures.

Run with ``streamlit run app.py``. Runs are read from ``data/runs`` (or ``$RAGEVAL_RUNS_DIR``); ``?run=<name>``
selects one by file name without ``.sqlite``.
"""

import math

import streamlit as st

from ui import data, render

st.set_page_config(page_title="rageval", page_icon="🔎", layout="wide")

path = render.select_run()

key = data.run_key(path)
settings = data.load_settings(*key)
counts = data.load_counts(*key)
queries = data.load_query_table(*key)
summary = data.load_measure_summary(*key)

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
sizes[4].metric("E2E EM (mean)", "–" if math.isnan(e2e_mean) else f"{e2e_mean:.3f}",
                help=f"exact match of the end-to-end answer, mean over {len(e2e_scores)} queries")

st.subheader("Aggregate measures")
if summary.empty:
    st.info("This run stores no measure values.")
else:
    render.render_measure_summary(summary)
    n_queries = int(summary["n"].max())
    st.caption("Mean over queries of each per-query measure, one row per relevance-label method. "
               + render.provenance(settings, n_queries))
if len(e2e_scores):
    st.caption(f"E2E EM {e2e_mean:.3f}: " + render.provenance(settings, len(e2e_scores)))

k = settings.get("k")
if len(e2e_scores) >= 3 and isinstance(k, int) and not summary.empty:
    st.subheader("Which labels predict the end-to-end answer?")
    correlations = data.load_correlation_table(*key, cutoff=k)
    tau_tab, rho_tab = st.tabs(["Kendall's tau-b", "Spearman's rho"])
    tau_tab.dataframe(render.correlation_view(correlations, "tau"))
    rho_tab.dataframe(render.correlation_view(correlations, "rho"))
    st.caption("Correlation across queries between each per-query measure and the E2E EM, with 95% percentile "
               "bootstrap intervals (1,000 resamples over queries); eRAG's Table 1 on this run. "
               + render.provenance(settings, int(correlations["n"].max())))

st.subheader("What produced this run")
st.dataframe(render.settings_frame(settings), hide_index=True)
if settings.get("notes"):
    st.info(render.escape_markdown(settings["notes"]))

st.page_link("pages/1_Query_inspector.py", label="Inspect queries one by one", icon="🔍",
             query_params={"run": path.stem})
