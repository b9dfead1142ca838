"""Query inspector: one question of a run with its gold answers, the end-to-end answer and every ranked
passage with its labels and single-passage answer.

``?run=<name>&query=<query id>`` selects the run and the query, so a view can be shared.
"""

import streamlit as st

from ui import data, render

QUERY_STATE = "inspect.query_id"

st.set_page_config(page_title="Query inspector · rageval", page_icon="🔍", layout="wide")

path = render.select_run()

key = data.run_key(path)
settings = data.load_settings(*key)
queries = data.load_query_table(*key)
st.title("Query inspector")
if queries.empty:
    st.info("This run has no queries.")
    st.stop()

ids = queries["query_id"].tolist()
texts = dict(zip(ids, queries["text"]))

previous_column, select_column, next_column = st.columns([1.2, 7.6, 1.2], vertical_alignment="bottom")
query_id = render.select_synced(
    select_column, f"Question ({len(ids)} in this run; type to search)", ids, state_key=QUERY_STATE,
    param="query", format_func=lambda qid: f"{texts[qid]}  [{qid}]", filter_mode="contains")
position = ids.index(query_id)
previous_column.button("◀ Prev", disabled=position == 0, on_click=render.commit_choice,
                       args=(QUERY_STATE, "query", ids[max(position - 1, 0)]), width="stretch")
next_column.button("Next ▶", disabled=position == len(ids) - 1, on_click=render.commit_choice,
                   args=(QUERY_STATE, "query", ids[min(position + 1, len(ids) - 1)]), width="stretch")

query = data.load_query(*key, query_id)
ranking = data.load_ranking_table(*key, query_id)
render.render_question(query, data.load_e2e_output(*key, query_id))

st.subheader("Ranked passages")
st.dataframe(render.ranking_view(ranking), hide_index=True,
             column_config={"Score": st.column_config.NumberColumn(format="%.2f"),
                            "Passage": st.column_config.TextColumn(width="large")})
st.caption("Labels: ✓ relevant, ✗ not, – no label. " + render.provenance(settings)
           + render.escape_markdown(f" · query {query_id}"))
render.render_passages(ranking)
