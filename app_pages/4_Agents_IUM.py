"""Agents (IUM): one search engine serving several RAG agents, trained on their utility feedback by Iterative
Utility Maximization (Salemi & Zamani, ICTIR 2025). Downstream score per agent and method with the macro average
(the paper's Table 3) and McNemar tests, the offline iteration curve personalised vs not (Fig. 2a), the online
batch-size curve (Fig. 2b), personalisation between agents (Fig. 5), and the lists each method served.

Runs come from your runs folder (and its ``ium/``) and the shipped ``data/runs/ium`` (``rageval ium``).
``?run=<name>&agent=<agent>&query=<query id>`` selects the run and the served lists shown, so a view can be shared.
"""

import streamlit as st

from rageval.team import roles
from ui import auth, data, data_ium, navigation, render
from ui import render_ium as view

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

RUN_STATE = "ium.run"
AGENT_STATE = "ium.agent"
QUERY_STATE = "ium.query_id"
SIGNIFICANCE_STATE = "ium.significance_agent"


path = render.select_kind_run("IUM", data.find_ium_runs(), data.ium_runs_dir(), state_key=RUN_STATE,
                              command="rageval ium --help", read_settings=data_ium.load_ium_settings)
key = data.run_key(path)
settings = data_ium.load_ium_settings(*key)
agents = data_ium.load_ium_table(*key, "agents")
counts = data_ium.load_ium_test_counts(*key)

render.page_heading(navigation.AGENTS, "Agents · Iterative Utility Maximization")
st.caption(render.escape_markdown(f"Run {path.name}") + " · " + view.provenance(settings))
if agents.empty or not counts:
    st.info("This run stores no agents or no test outcomes.")
    st.stop()
render.render_table(view.agents_view(agents), hide_index=True)
st.caption(render.escape_markdown(f"The {len(agents)} agents: task, reader model, k passages read, and the utility "
                                  "their feedback and downstream score use (em: exact match, contains or "
                                  "accuracy: answer contained, f1: token F1, rougeL: ROUGE-L)."))

st.subheader("Downstream score per agent and method")
low, high = min(counts.values()), max(counts.values())
per_agent = f"{low}{'' if low == high else f'-{high}'} test queries per agent"
summary = data_ium.load_ium_summary(*key)
st.vega_lite_chart(*view.summary_chart(summary), key="ium.summary")
render.render_table(view.summary_view(summary, counts), digits=1, column_config={
    **{m: st.column_config.NumberColumn(m, format="%.1f") for m in summary.columns},
    "n": st.column_config.NumberColumn("n", help="test queries (agents, on the macro-average row)", format="%d")})
st.caption(render.escape_markdown(
    f"Mean utility (percent) of each agent's answer from the top k passages a method serves, over the agent's test "
    f"queries; macro average: the unweighted mean over the {len(counts)} agents (the paper's Table 3). Online IUM "
    f"uses b = {settings.get('online_default_batch_size', '?')}; {per_agent}."))

intervals = data_ium.load_ium_macro_intervals(*key)
if not intervals.empty:
    render.render_table(view.macro_intervals_view(intervals), hide_index=True)
    first = "each run's own ranking" if "first-stage" in intervals.index else "BM25"
    st.caption(render.escape_markdown(
        f"Macro average with its 95% bootstrap interval (2,000 resamples of the test questions within each task, "
        f"one draw shared by the agents of a task), and each method minus the first stage ({first}) on the same "
        f"questions; {per_agent}."))

significance = data_ium.load_ium_table(*key, "significance")
if not significance.empty:
    st.markdown("**McNemar tests between the methods**")
    pools = list(dict.fromkeys(["all agents", *significance["agent"]]))
    pool = st.selectbox("Agent (or all agents' test queries pooled)", pools, key=SIGNIFICANCE_STATE)
    render.render_table(view.significance_view(significance[significance["agent"] == pool]), hide_index=True,
                 column_config={"p-value": st.column_config.NumberColumn("p-value", format="%.3f")})
    st.caption("Exact McNemar test on each pair of methods (an answer counts as right when its score is at least "
               "0.5): the queries only A or only B got right, and the two-sided p-value.")

curves = data_ium.load_ium_iteration_curves(*key)
batch = data_ium.load_ium_batch_curve(*key)
iteration_column, batch_column = st.columns(2)
if not curves.dropna(how="all").empty:
    iteration_column.vega_lite_chart(*view.iteration_chart(curves), key="ium.iterations")
    iteration_column.caption(render.escape_markdown(
        "Macro-average downstream score after each offline iteration (methods offline-IUM@t<t> and "
        "offline-IUM-nonpersonalised@t<t>); t = 0 is the BM25 first stage."))
if len(batch):
    batch_column.vega_lite_chart(*view.batch_chart(batch), key="ium.batches")
    batch_column.caption(render.escape_markdown(
        "Macro-average downstream score of online IUM (methods online-IUM@b<b>), trained from the last offline "
        "checkpoint on the test queries' feedback b queries at a time, each query served before it is trained on."))

personalisation = data_ium.load_ium_personalisation(*key)
if not personalisation.empty:
    st.subheader("Personalisation: how different are the lists agents are served?")
    tau_tab, jaccard_tab, table_tab = st.tabs(["Kendall's tau", "Jaccard", "Table"])
    tau_tab.vega_lite_chart(*view.personalisation_chart(personalisation, "kendall_tau"), key="ium.tau")
    jaccard_tab.vega_lite_chart(*view.personalisation_chart(personalisation, "jaccard"), key="ium.jaccard")
    render.render_table(view.personalisation_view(personalisation), where=table_tab, hide_index=True, column_config={
        c: st.column_config.NumberColumn(c, format="%.3f") for c in ("Kendall's tau", "Jaccard")})
    st.caption(render.escape_markdown(
        "Between the lists two agents of one dataset are served for the same test query (top min(k) of each): "
        "mean Kendall's tau (absent items tied last) and Jaccard over the shared test queries (n); 1 means "
        f"identical lists (the paper's Fig. 5); at most {int(personalisation['n'].max()):,} shared test queries."))

st.subheader("What each method served")
queries = data_ium.load_ium_table(*key, "queries")
agent_column, query_column = st.columns([1, 3])
agent = render.select_synced(agent_column, "Agent", list(agents["name"]), state_key=AGENT_STATE, param="agent")
tests = queries[(queries["agent"] == agent) & (queries["split"] == "test")]
if tests.empty:
    st.info(render.escape_markdown(f"Agent {agent} has no test queries in this run."))
    st.stop()
texts = dict(zip(tests["query_id"], tests["text"]))
query_id = render.select_synced(query_column, f"Test query ({len(texts)}; type to search)", list(texts),
                                state_key=QUERY_STATE, param="query",
                                format_func=lambda q: f"{texts[q]}  [{q}]", filter_mode="contains")
gold = tests[tests["query_id"] == query_id]["answers"].iloc[0]
st.markdown(f"**{render.escape_markdown(texts[query_id])}**")
st.caption("Gold answers: " + render.escape_markdown(gold or "none"))
served = data_ium.load_ium_table(*key, "served")
outcomes = data_ium.load_ium_table(*key, "outcomes")
chosen = (served["agent"] == agent) & (served["query_id"] == query_id)
answered = (outcomes["agent"] == agent) & (outcomes["query_id"] == query_id)
render.render_table(view.served_view(served[chosen], outcomes[answered]), hide_index=True, digits=0, column_config={
    "Served passages (rank order)": st.column_config.TextColumn(width="large"),
    "Score %": st.column_config.NumberColumn("Score %", format="%.0f")})
k = agents.set_index("name")["k"].get(agent, "?")
st.caption(render.escape_markdown(
    f"The top {k} passage ids each method served agent {agent} for query {query_id}, the agent's answer from "
    f"them and its utility (percent)."))
