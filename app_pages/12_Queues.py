"""Queues: an admin creates an annotation queue over a run's passages or statements (a sampling plan, a size, an
overlap N, the annotators, guidelines), then follows each queue's progress per annotator, the agreement on its
overlapped items, adjudicates the disagreements (stored apart: no one's label changes) and exports its labels with
their stratum and inclusion weight. The engine is :mod:`rageval.queues`; the labels live in the annotation file.

``?queue=<id>`` selects the queue shown; ``?kind=passage|statement&run=<name>`` the run a new queue is drawn from.
"""

import pandas as pd
import streamlit as st

from rageval.errors import StoreError
from rageval.team import roles
from ui import auth, data, data_attribution, navigation, render
from ui import data_annotate as annotate_data
from ui import data_queues as queues_data
from ui import render_annotate as annotate_view
from ui import render_queues as view

QUEUE_STATE = "queues.queue"
KIND_STATE = "queues.kind"
RUN_STATE = "queues.run"

auth.require(roles.MANAGE_QUEUES)  # before anything is read
render.page_heading(navigation.QUEUES)
store_path = annotate_data.annotation_file()
st.sidebar.caption(render.escape_markdown(f"Queues and labels are saved to {store_path}"))
typed = annotate_view.annotator_input(st.sidebar)
identity = auth.current_identity(typed)
who = identity.user_id
try:
    key = queues_data.queue_key(store_path)
except StoreError as error:  # our own message: the file and what is wrong with it
    render.stop_with_error(error)
if queues_data.ERROR_STATE in st.session_state:
    st.error(st.session_state[queues_data.ERROR_STATE])  # our own message: the reason
if queues_data.MESSAGE_STATE in st.session_state:
    st.success(render.escape_markdown(st.session_state.pop(queues_data.MESSAGE_STATE)))
if queues_data.WARNING_STATE in st.session_state:
    st.warning(render.escape_markdown(st.session_state.pop(queues_data.WARNING_STATE)), icon=":material/person_off:")
queues = queues_data.load_queues(*key)

with st.expander("Create a queue", icon=":material/playlist_add:", expanded=not queues):
    if not who:
        st.info("Enter your name in the sidebar: the queue is stored with who created it.")
    else:
        kind = render.select_synced(st, "Items", list(view.KIND_NAMES), state_key=KIND_STATE, param="kind",
                                    format_func=view.KIND_NAMES.get, widget="radio", horizontal=True)
        runs = queues_data.runs_of_kind(kind)
        if not runs:
            st.info("No run of this kind yet: evaluate or upload one first.")
        else:
            run = render.select_synced(st, "Run", list(runs), state_key=RUN_STATE, param="run")
            run_path = runs[run]
            population, method_labels = queues_data.load_population(*data.run_key(run_path), kind)
            methods = render.order_label_methods(sorted(set(method_labels["method"])))
            view.render_create_form(kind, methods, len(population), on_create=queues_data.create_queue,
                                    args=(str(store_path), str(run_path), kind, typed))

if not queues:
    st.info("No queue yet: create one above. Each annotator then finds theirs on the Annotate page, under "
            "\"My queue\".")
    st.stop()
view.render_queue_list(queues, queues_data.load_queue_totals(*key))
by_id = {queue.id: queue for queue in queues}
queue_id = render.select_synced(st, "Queue", [str(i) for i in reversed(list(by_id))], state_key=QUEUE_STATE,
                                param="queue", format_func=lambda i: f"{i} · {by_id[int(i)].name} · "
                                                                     f"{by_id[int(i)].run}")
queue = by_id[int(queue_id)]
queue_view = queues_data.load_queue_view(*key, queue.id)
view.render_queue_summary(queue, queue_view)
view.render_queue_agreement(queue_view["agreement"], queue)

found = queue_view["disagreements"]
texts: dict[int, tuple[str, str]] = {}
run_path = queues_data.run_file(queue.run, queue.kind)
if run_path is not None and not found.empty:
    run_key = data.run_key(run_path)
    first = found.drop_duplicates("position")
    if queue.kind == "passage":
        questions = data.load_query_table(*run_key).set_index("query_id")["text"]
        for row in first.itertuples():
            ranking = data.load_ranking(*run_key, row.query_id).table
            passage = ranking[ranking["passage_id"] == row.passage_id]
            texts[int(row.position)] = (str(questions.get(row.query_id, "")),
                                        str(passage["text"].iloc[0]) if len(passage) else "")
    else:
        statements = data_attribution.load_all_attribution_statements(*run_key).set_index(
            ["scenario", "query_id", "answer_id", "statement"])["text"]
        for row in first.itertuples():
            item = (row.scenario, row.query_id, row.answer_id, int(row.statement))
            texts[int(row.position)] = ("", str(statements.get(item, "")))
view.render_adjudication(found, queue, texts, on_adjudicate=queues_data.adjudicate,
                         args=(str(store_path), queue.id, typed), allowed=auth.allowed(roles.ADJUDICATE) and bool(who))
if not who and not found.empty:
    st.caption("Enter your name in the sidebar to adjudicate: the adjudication is stored with it.")
view.render_export(queue_view["csv"], queue)
if pd.isna(queue_view["agreement"].fleiss) and queue.overlap >= 2:
    st.caption("Agreement appears once items have all their annotators' labels.")
