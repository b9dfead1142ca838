"""Annotate: a person labels a seeded random sample of a run's retrieved passages (useful, not useful, unsure or
skip; keys 1 / 0 / u / s, j / k to move, the next pending item opening after each label), or the statements of
attributed answers (supported or not). Each label is saved at once, with the annotator's name, the time and a note,
in the runs folder's ``annotations.sqlite`` (or ``$RAGEVAL_ANNOTATIONS``; :mod:`rageval.annotations`), as is the
sample, which every annotator of the run shares. Once a question's sampled passages are labelled, each automatic
method's label is revealed beside the person's; Cohen's kappa with every method and with the other annotators
(Fleiss' kappa and Krippendorff's alpha with more than two), the disagreements, each method's PPI / PPI++
estimate beside the human-only one (narrowing as labels arrive), its calibration and the next items to label
(:mod:`rageval.trust`), and CSV / TREC qrels downloads follow.

``?annotator=<name>&mode=passages|statements&run=<name>&view=pending|done&item=<n>`` (statements: ``&scenario=``,
``&query=`` and ``&answer=``) selects the view, so it can be shared. An annotator to whom a queue assigned items
(:mod:`rageval.queues`, created on the Queues page) gets the mode "My queue" (``?mode=queue&queue=<id>``): the
queue's guidelines and their next assigned item, labelled with the same buttons and keys.
"""


import functools

import pandas as pd
import streamlit as st

from rageval.annotations import SINGLE_HOP, default_guideline, sample_status, task_type
from rageval.errors import StoreError
from rageval.store.annotations import LABELLED, PassageItem, StatementItem
from rageval.team import roles
from ui import auth, data, data_attribution, render, render_citations, render_queues
from ui import data_annotate as annotations
from ui import data_queues as queues_data
from ui import data_trust as trust_data
from ui import render_annotate as view
from ui import render_trust as trust_view

# Team mode: stop here, before anything is read, unless this session may label (ui.auth).
auth.require(roles.LABEL)

MODE_STATE = "annotate.mode"
QUERY_STATE = "annotate.query_id"
ATTRIBUTION_RUN_STATE = "annotate.attribution_run"
SCENARIO_STATE = "annotate.scenario"
ANSWER_STATE = "annotate.answer_id"
FULL_RUN_STATE = "annotate.full_run_revision"
QUEUE_MODE = "queue"  # "My queue": shown when the annotator has items assigned by a queue (?mode=queue&queue=<id>)
QUEUE_STATE = "annotate.queue"


store_path = annotations.annotation_file()
identity = auth.current_identity(view.current_annotator())
try:
    queue_key = queues_data.queue_key(store_path)
    my_queues = queues_data.load_my_queues(*queue_key, identity.user_id) if identity.user_id else []
except StoreError:  # shown with its reason below, as before
    my_queues = []
modes = {**view.MODES, **({QUEUE_MODE: "My queue"} if my_queues else {})}
mode = render.select_synced(st.sidebar, "What to label", list(modes), state_key=MODE_STATE, param="mode",
                            format_func=modes.get, default=(lambda: QUEUE_MODE) if my_queues else None)
if mode == QUEUE_MODE:  # the items a queue assigned to this annotator
    st.sidebar.caption(render.escape_markdown(f"Labels are saved to {store_path}"))
    st.title("Annotate")
    view.annotator_input(st)
    by_id = {str(queue.id): queue for queue in my_queues}
    chosen = render.select_synced(st.sidebar, "Queue", list(reversed(list(by_id))), state_key=QUEUE_STATE,
                                  param="queue", format_func=lambda i: f"{by_id[i].name} ({by_id[i].run})")
    render_queues.render_my_queue(str(store_path), queue_key, by_id[chosen], identity.user_id)
    st.stop()
kind = view.KIND_OF_MODE[mode]
if kind == "passage":
    path = render.select_run()
else:
    path = render.select_kind_run("attribution", data.find_attribution_runs(), data.attribution_runs_dir(),
                                  state_key=ATTRIBUTION_RUN_STATE, command=render.citations_command(),
                                  read_settings=data_attribution.load_attribution_settings)
key = data.run_key(path)
st.sidebar.caption(render.escape_markdown(f"Labels are saved to {store_path}"))

st.title("Annotate")
# The run's provenance once, under the heading; the captions below say only their own sample (issue 42).
if kind == "passage":
    render.render_provenance(data.load_settings(*key), run=path.stem)
else:
    st.caption(render.escape_markdown(f"Run {path.stem} · ") + render_citations.provenance(
        data_attribution.load_attribution_settings(*key)))
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
if annotations.SAVE_ERROR_STATE in st.session_state and kind != "passage":  # passages: in the queue
    st.error(st.session_state[annotations.SAVE_ERROR_STATE])  # our own message: the file and the reason
mine = annotations.load_latest(*store_key, run, kind, annotator)
save = (str(store_path), run, annotator)

task = task_type(data.load_settings(*key)) if kind == "passage" else SINGLE_HOP
guideline = annotations.load_guideline(store_path, store_key[1], run, kind, task)
st.session_state[annotations.GUIDELINE_SHOWN_STATE] = guideline  # stored with each label given under it
view.render_guideline(kind, guideline, guideline == default_guideline(kind, task), task,
                      on_save=annotations.save_guideline, args=(str(store_path), run, kind, annotator))
if kind == "passage":
    settings = data.load_settings(*key)
    queries = data.load_query_table(*key)
    if queries.empty:
        st.info("This run has no queries.")
        st.stop()
    questions = dict(zip(queries["query_id"], queries["text"]))
    sample = annotations.load_sample(store_key[0], run)
    population = data.load_counts(*key)["rankings"]
    draw_args = (str(store_path), run, *key, annotator)
    if sample is None:
        if annotations.SAVE_ERROR_STATE in st.session_state:
            st.error(st.session_state[annotations.SAVE_ERROR_STATE])  # our own message: the file and the reason
        st.info("Start by drawing the sample every annotator of this run labels: a seeded random choice of its "
                "retrieved passages, grouped by question. Your progress counts against it.")
        view.render_sample_form(population, on_draw=annotations.draw_sample, args=draw_args, again=False)
        st.stop()
    st.caption(view.sample_caption(sample))
    with st.expander("Draw a new sample", icon=":material/shuffle:"):
        st.caption("The newest sample is the one everyone labels; labels already given are kept.")
        view.render_sample_form(population, on_draw=annotations.draw_sample, args=draw_args, again=True)
    st.session_state[FULL_RUN_STATE] = store_key[1]  # the labels the agreement below is computed from

    @st.fragment
    def label_queue() -> None:
        """The queue: a label reruns only this (the item, the progress, the reveal), not the agreement below,
        which follows on the next full run: when the sample is finished, or on Update."""
        revision = annotations.annotation_key(store_path)[1]
        mine = annotations.load_latest(str(store_key[0]), revision, run, kind, annotator)
        if annotations.SAVE_ERROR_STATE in st.session_state:
            st.error(st.session_state[annotations.SAVE_ERROR_STATE])  # our own message: the file and the reason
        status = sample_status(sample.items, mine)
        view.render_queue_progress(status, annotator)
        counts = view.queue_counts(status)
        shown = view.select_view(counts)
        pending = list(status.loc[status["status"] == "pending", "position"])
        done = list(status.loc[status["status"] != "pending", "position"])
        position = annotations.position_from_url()
        position = position if position is not None else st.session_state.get(annotations.POSITION_STATE)
        # Pending: j / k walk the whole sample (k goes back to the item just labelled), a label opens the next pending
        # item. Done: j / k and a relabel walk the done items.
        if shown == "pending":
            if position is None or not 0 <= position < len(status):
                position = pending[0] if pending else None
            walk = list(status["position"])
        else:
            if position not in done:
                position = done[0] if done else None
            walk = done
        if position is None:
            st.success("Every sampled passage is done: see the agreement below, or the Done view to revise a label."
                       if shown == "pending" else "Nothing done yet: label passages in the Pending view.")
        else:
            annotations.go_to(position)  # the item on screen, in the session and the URL (a link may name it)
            item = status.set_index("position").loc[position]
            index = walk.index(position)
            previous = walk[index - 1] if index > 0 else None
            following = walk[index + 1] if index + 1 < len(walk) else None
            if shown == "pending":
                after = next((p for p in pending if p > position), next((p for p in pending if p != position), None))
            else:
                after = following if following is not None else position
            ranking = data.load_ranking(*key, item["query_id"])
            render.render_ranking_notes(ranking, labels_shown=False)  # the automatic labels are hidden here
            ranked = ranking.table[ranking.table["passage_id"] == item["passage_id"]]
            if ranked.empty:  # the run file changed since the sample was drawn
                st.warning(render.escape_markdown(
                    f"Passage {item['passage_id']} of the sample is no longer in the run's ranking of query "
                    f"{item['query_id']}: skip it, or draw a new sample."))
                ranked = pd.DataFrame({"rank": [0], "title": [""], "text": [data.MISSING_PASSAGE_TEXT],
                                       "text_size": [0]})
            passage = ranked.iloc[0]
            query = data.load_query(*key, item["query_id"])
            with st.container(border=True):
                where = (f"Item {position + 1:,} of {len(status):,}" if shown == "pending" else
                         f"Done item {index + 1:,} of {len(done):,} · item {position + 1:,} of {len(status):,}")
                st.caption(render.escape_markdown(
                    f"{where} · {len(pending):,} pending · query {item['query_id']} · rank {int(passage['rank'])}"))
                st.subheader(render.escape_markdown(query.text))
                st.markdown("**Gold answers:** " + (" · ".join(render.escape_markdown(a) for a in query.answers)
                                                    or "none"))
                title = render.escape_markdown(passage["title"]) if passage["title"] else "(untitled passage)"
                st.markdown(f"**{int(passage['rank'])}\\. {title}** · {render.escape_markdown(item['passage_id'])}")
                render.render_passage_text(passage["text"], passage["text_size"], key=f"annotate.page.{position}",
                                           load_page=functools.partial(data.load_passage_page, *key,
                                                                       item["passage_id"]))
                view.render_decision_badge(view.decision_of(item))
                note_key = f"annotate.note.{sample.id}.{position}"
                if note_key not in st.session_state:
                    st.session_state[note_key] = item["note"]
                st.text_input("Note (saved with your next label of this passage)", key=note_key,
                              placeholder="optional: why, or what is unclear")
                view.render_queue_buttons(
                    view.decision_of(item), on_decide=annotations.decide,
                    decide_args=(str(store_path), run, annotator, PassageItem(item["query_id"], item["passage_id"]),
                                 note_key, position, after),
                    on_move=annotations.go_to, previous=previous, following=following)
            view.render_hotkeys()
            st.caption("Keys: 1 useful · 0 not useful · u unsure · s skip · j next · k previous. The automatic labels "
                       "stay hidden until you finish this question's sampled passages.")
        # The reveal: the question on screen if its sampled passages are all done, else the one labelled last.
        decided = mine.sort_values("id")
        candidates = ([status.set_index("position").at[position, "query_id"]] if position is not None else []) + \
            [q for q in reversed(list(decided["query_id"])) if q in set(status["query_id"])][:1]
        revealed = next((q for q in candidates if (status.loc[status["query_id"] == q, "status"] != "pending").all()),
                        None)
        if revealed is not None:
            items = status[status["query_id"] == revealed]
            ranked = data.load_ranking(*key, revealed).table[["passage_id", "rank", "title"]]
            items = items.merge(ranked, on="passage_id", how="left").fillna({"title": "", "rank": 0})
            view.render_reveal(
                items, annotations.load_item_method_labels(path, items), questions.get(revealed, revealed),
                on_relabel=annotations.save_label,
                relabel_args=lambda row: (str(store_path), run, annotator,
                                          PassageItem(row["query_id"], row["passage_id"])),
                provenance=render.escape_markdown(f"Query {revealed}."))
        if (status["status"] != "pending").all() and revision != st.session_state.get(FULL_RUN_STATE):
            st.rerun()  # the sample is finished: the agreement below follows

    label_queue()
    provenance = render.sample_note(mine["query_id"].nunique())
else:
    settings = data_attribution.load_attribution_settings(*key)
    answers = data_attribution.load_attribution_answers(*key)
    if answers.empty:
        st.info("This run stores no answers.")
        st.stop()
    all_statements = data_attribution.load_all_attribution_statements(*key)
    cited = all_statements[all_statements["citations"] != "[]"]  # the statements anyone is asked about
    cited_keys = set(zip(cited["scenario"], cited["query_id"], cited["answer_id"], cited["statement"]))
    done = sum(k in cited_keys for k in zip(mine["scenario"], mine["query_id"], mine["answer_id"], mine["statement"]))
    view.render_progress(done, len(cited), annotator, "statements with a citation of this run")
    cited_per_scenario = cited["scenario"].value_counts().to_dict()
    # The scenario with the most cited statements first (the default): one without citations has nothing to label.
    scenarios = sorted(dict.fromkeys(answers["scenario"]), key=lambda s: (-cited_per_scenario.get(s, 0), s))
    scenario_column, query_column, answer_column = st.columns([2, 7, 1.4])
    scenario = render.select_synced(scenario_column, "Scenario", scenarios, state_key=SCENARIO_STATE, param="scenario",
                                    format_func=lambda s: f"{s} ({cited_per_scenario.get(s, 0):,} cited)")
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
    if not cited_per_scenario.get(scenario):
        st.warning("This scenario's answers cite no passage, so none of its statements is judged (by you or by the "
                   "NLI methods): pick a scenario with citations.")
    st.caption("Is each statement supported by the passages it cites? A statement citing nothing is not judged, by "
               "you or by the NLI methods. The NLI verdicts are hidden here; the agreement below compares them. "
               + where)
    inputs = data_attribution.load_attribution_inputs(*key, scenario, query_id)
    with st.expander(f"Input passages ({len(inputs)})", expanded=True):
        if inputs.empty:
            st.caption("None: this scenario answers closed-book.")
        render_citations.render_input_passages(inputs, run_key=key, scenario=scenario, query_id=query_id,
                                               key=f"annotate.input_page.{scenario}.{query_id}")
    statements = data_attribution.load_attribution_statements(*key, scenario, query_id, answer_id)
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
    provenance = render.escape_markdown(f"{len(mine):,} statements.")

if kind == "passage":
    update, note = st.columns([1.6, 6], vertical_alignment="center")
    update.button("Update the agreement", icon=":material/refresh:", key="annotate.update_agreement", width="stretch")
    note.caption(render.escape_markdown(
        f"From {annotator}'s {len(mine):,} decisions when the page last loaded: a label reloads only the item above "
        "(faster); what follows is brought up to date when the sample is finished, or on Update."))
table, found, between = annotations.load_agreement(store_key, path, kind, annotator)
if kind == "passage" and (negative := data.load_negative_label_counts(*key)):
    st.warning(render.negative_labels_note(negative, "in this run's automatic labels",
                                           "the agreement counts them as not useful"))
left_out = int((mine["status"] != LABELLED).sum())
view.render_agreement(table, between, found, kind=kind, run=run, annotator=annotator, questions=questions,
                      provenance=provenance, left_out=left_out)
if kind == "passage":  # the PPI estimates: what people would say of every passage, from the labels so far
    bases = trust_data.load_bases(*store_key, run)
    basis = ""
    if len(bases) > 1:  # a queue and the shared sample (or several queues): the user picks what the numbers rest on
        basis = render.select_synced(st, "Estimates rest on", list(bases), state_key="annotate.trust_basis",
                                     param="basis", format_func=bases.get)
    trust = trust_data.load_report(*store_key, *key, basis)
    if trust_view.render_heading(trust) and trust is not None:
        choice, measure_choice = st.columns(2)
        method = choice.selectbox("Method for the chart and the plan", view.order_methods(list(trust.methods)),
                                  format_func=view.method_display_name, key="annotate.trust_method")
        measure = measure_choice.radio("Measure", trust_view.passage_measures(trust), horizontal=True,
                                       format_func=trust_view.measure_label, key="annotate.trust_measure")
        trust_view.render_trust(trust, measure, trust_data.load_narrowing(*store_key, *key, method, measure, basis),
                                trust_data.load_plan(*store_key, *key, method, basis=basis)[0], method,
                                render.provenance(settings))
view.render_multi_rater(annotations.load_multi_rater(*store_key, run, kind), provenance)
view.render_downloads(annotations.load_history(*store_key, run, kind), annotations.load_latest(*store_key, run, kind),
                      kind=kind, run=run, annotator=annotator)
