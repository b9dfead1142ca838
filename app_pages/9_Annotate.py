"""Annotate: a person labels the retrieved passages of a run (useful or not) or the statements of attributed answers
(supported or not). Each label is saved at once, with the annotator's name and the time, in the runs folder's
``annotations.sqlite`` (or ``$RAGEVAL_ANNOTATIONS``; :mod:`rageval.annotations`); Cohen's kappa with every automatic
label method and with the other annotators, the disagreements, and CSV / TREC qrels downloads follow.

``?annotator=<name>&mode=passages|statements&run=<name>&query=<query id>`` (statements: also ``&scenario=`` and
``&answer=``) selects the view, so it can be shared.
"""

import streamlit as st

from rageval.annotations import PassageItem, StatementItem
from rageval.errors import StoreError
from ui import data, render, render_citations
from ui import data_annotate as annotations
from ui import render_annotate as view

MODE_STATE = "annotate.mode"
QUERY_STATE = "annotate.query_id"
ATTRIBUTION_RUN_STATE = "annotate.attribution_run"
SCENARIO_STATE = "annotate.scenario"
ANSWER_STATE = "annotate.answer_id"


mode = render.select_synced(st.sidebar, "What to label", list(view.MODES), state_key=MODE_STATE, param="mode",
                            format_func=view.MODES.get)
kind = view.KIND_OF_MODE[mode]
if kind == "passage":
    path = render.select_run()
else:
    path = render.select_kind_run("attribution", data.find_attribution_runs(), data.attribution_runs_dir(),
                                  state_key=ATTRIBUTION_RUN_STATE, command=render.citations_command(),
                                  read_settings=data.load_attribution_settings)
key = data.run_key(path)
store_path = annotations.annotation_file()
st.sidebar.caption(render.escape_markdown(f"Labels are saved to {store_path}"))

st.title("Annotate")
annotator = view.annotator_input(st)
try:
    store_key = annotations.annotation_key(store_path)
except StoreError as error:  # our own message: the file and what is wrong with it
    render.stop_with_error(error)
if not annotator:
    st.info("Enter your name to start labelling: every label is saved with it and the time (UTC), and you can change "
            "a label later (the history is kept; your latest label counts).")
    st.stop()
run = path.stem
if annotations.SAVE_ERROR_STATE in st.session_state:
    st.error(st.session_state[annotations.SAVE_ERROR_STATE])  # our own message: the file and the reason
mine = annotations.load_latest(*store_key, run, kind, annotator)
save = (str(store_path), run, annotator)

if kind == "passage":
    settings = data.load_settings(*key)
    queries = data.load_query_table(*key)
    if queries.empty:
        st.info("This run has no queries.")
        st.stop()
    questions = dict(zip(queries["query_id"], queries["text"]))
    view.render_progress(len(mine), data.load_counts(*key)["rankings"], annotator, "retrieved passages of this run")
    query_id = render.select_query(questions, state_key=QUERY_STATE)

    query = data.load_query(*key, query_id)
    st.subheader(render.escape_markdown(query.text))
    st.markdown("**Gold answers:** " + (" · ".join(render.escape_markdown(a) for a in query.answers) or "none"))
    st.caption("Is each passage useful for answering the question? The automatic labels are hidden here so they do "
               "not sway you; the agreement below compares them. " + render.provenance(settings)
               + " · " + render.escape_markdown(f"query {query_id}"))
    current = mine[mine["query_id"] == query_id].set_index("passage_id")
    ranked = data.load_ranking(*key, query_id)
    render.render_ranking_notes(ranked, labels_shown=False)  # the automatic labels are hidden here
    for row in ranked.table.itertuples():
        view.render_passage_to_label(
            row, current.loc[row.passage_id] if row.passage_id in current.index else None,
            key=f"annotate.passage.{int(row.rank)}", on_label=annotations.save_label,
            args=(*save, PassageItem(query_id, row.passage_id)), run_key=key,
            page_key=f"annotate.page.{query_id}.{int(row.rank)}")
    provenance = render.provenance(settings, mine["query_id"].nunique())
else:
    settings = data.load_attribution_settings(*key)
    answers = data.load_attribution_answers(*key)
    if answers.empty:
        st.info("This run stores no answers.")
        st.stop()
    all_statements = data.load_all_attribution_statements(*key)
    view.render_progress(len(mine), len(all_statements), annotator, "statements of this run")
    judged = set(all_statements.loc[all_statements["supported"].notna(), "scenario"])
    scenarios = sorted(dict.fromkeys(answers["scenario"]), key=lambda s: s not in judged)  # NLI-judged ones first
    scenario_column, query_column, answer_column = st.columns([2, 7, 1.4])
    scenario = render.select_synced(scenario_column, "Scenario", scenarios, state_key=SCENARIO_STATE, param="scenario")
    in_scenario = answers[answers["scenario"] == scenario]
    questions = dict(zip(in_scenario["query_id"], in_scenario["question"]))
    query_id = render.select_synced(
        query_column, f"Question ({len(questions)} in this scenario; type to search)", list(questions),
        state_key=QUERY_STATE, param="query", format_func=lambda q: f"{questions[q]}  [{q}]" if questions[q] else q,
        filter_mode="contains")
    of_query = in_scenario[in_scenario["query_id"] == query_id]
    answer_id = render.select_synced(answer_column, "Answer", list(of_query["answer_id"]), state_key=ANSWER_STATE,
                                     param="answer")
    answer = of_query[of_query["answer_id"] == answer_id].iloc[0]
    st.subheader(render.escape_markdown(questions[query_id] or query_id))
    st.text(answer["text"] or "(empty answer)")
    where = render.escape_markdown(f"{scenario} · query {query_id} · answer {answer_id}")
    st.caption("Is each statement supported by the passages it cites (or, without citations, by the input passages)? "
               "The NLI verdicts are hidden here; the agreement below compares them. "
               + render_citations.provenance(settings, 1) + " · " + where)
    inputs = data.load_attribution_inputs(*key, scenario, query_id)
    with st.expander(f"Input passages ({len(inputs)})", expanded=True):
        if inputs.empty:
            st.caption("None: this scenario answers closed-book.")
        render_citations.render_input_passages(inputs, run_key=key, scenario=scenario, query_id=query_id,
                                               key=f"annotate.input_page.{scenario}.{query_id}")
    statements = data.load_attribution_statements(*key, scenario, query_id, answer_id)
    if statements.empty:
        st.caption("This answer has no statements (an empty answer).")
    current = mine[(mine["scenario"] == scenario) & (mine["query_id"] == query_id) & (mine["answer_id"] == answer_id)]
    current = current.set_index("statement")
    for row in statements.itertuples():
        view.render_statement_to_label(
            row, current.loc[row.statement] if row.statement in current.index else None,
            key=f"annotate.statement.{int(row.statement)}", on_label=annotations.save_label,
            args=(*save, StatementItem(scenario, query_id, answer_id, int(row.statement))))
    questions = dict(zip(answers["query_id"], answers["question"]))
    provenance = render_citations.provenance(settings) + " · " + render.escape_markdown(f"{len(mine)} statements")

table, found, between = annotations.load_agreement(store_key, path, kind, annotator)
if kind == "passage" and (negative := data.load_negative_label_counts(*key)):
    st.warning(render.negative_labels_note(negative, "in this run's automatic labels",
                                           "the agreement counts them as not useful"))
view.render_agreement(table, between, found, kind=kind, run=run, annotator=annotator, questions=questions,
                      provenance=provenance)
view.render_downloads(annotations.load_history(*store_key, run, kind), annotations.load_latest(*store_key, run, kind),
                      kind=kind, run=run, annotator=annotator)
