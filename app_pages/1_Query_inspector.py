"""Query inspector: one question of a run with its gold answers, its end-to-end answers at every k, every
ranked passage with its labels, their evidence and its single-passage answer, and (when the run has them) the
LLM-retEval facts: semi-gold answers, the judges' verdicts and the failure cases with their reasons.

``?run=<name>&query=<query id>`` selects the run and the query, so a view can be shared; ``&list=TOKEN&list_name=
NAME`` (ui/worklist.py, made by the pages that list queries) is the list Prev / Next walk, "case 3 of 130".
"""

import streamlit as st

from rageval.team import roles
from ui import auth, data, data_failures, navigation, render, render_evidence
from ui import render_inspector as inspect

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

QUERY_STATE = "inspect.query_id"


path = render.select_run()

key = data.run_key(path)
settings = data.load_settings(*key)
queries = data.load_questions(*key)
st.title("Query inspector")
render.render_provenance(settings, run=path.stem,
                         suffix=render.escape_markdown(". Every table below is of this run and this query."))
if queries.empty:
    st.info("This run has no queries.")
    st.stop()

query_id = inspect.select_query(dict(zip(queries["query_id"], queries["text"])), run=path.stem,
                                state_key=QUERY_STATE)

query = data.load_query(*key, query_id)
ranked = data.load_ranking(*key, query_id)
ranking = ranked.table
render.render_question(query, data.load_e2e_output(*key, query_id))

e2e_outputs = data.load_query_e2e_outputs(*key, query_id)
wrong = inspect.wrong_answers(e2e_outputs, query.answers) if not e2e_outputs.empty else {}
if not e2e_outputs.empty:
    max_new_tokens = (data.load_settings(*key).get("decoding") or {}).get("max_new_tokens")
    st.dataframe(inspect.with_cut_off(render_evidence.e2e_outputs_view(e2e_outputs), e2e_outputs, max_new_tokens),
                 hide_index=True,
                 column_config={"End-to-end answer": st.column_config.TextColumn(width="large")})
    e2e_ks = ", ".join(map(str, e2e_outputs["k"]))
    st.caption(render.escape_markdown(
        f"The end-to-end answer from the top-k passages at every k of the run (k={e2e_ks}), with its exact match "
        f"against the gold answers; 'Cut off': the answer's tokens, estimated without the model's tokenizer, reach "
        f"the run's limit ({max_new_tokens} new tokens) within {inspect.CUT_OFF_MARGIN}, so it was probably cut "
        f"there · query {query_id}"))

st.subheader("Ranked passages")
render.render_ranking_notes(ranked)
rescored = data.load_rescored_answers(*key, query_id)
st.dataframe(render.ranking_view(ranking, rescored), hide_index=True,
             column_config={"Score": st.column_config.NumberColumn(format="%.2f"),
                            "Passage": st.column_config.TextColumn(width="large")})
st.caption("Labels: ✓ relevant, ✗ not, – no label (graded labels show their value). "
           + ("Answer (method): the answer the re-scoring model gave from that passage alone. " if rescored else ""))

stages = data.load_stage_analysis(*key)
if stages is not None:  # a run imported from traces with a first-stage and a reranked list
    fates = stages["fates"]
    mine = fates[fates["query_id"] == query_id]
    inspect.render_stage_section(stages, query_id, int(mine["k"].iloc[0]) if not mine.empty else settings.get("k"))

evidence = data.load_label_evidence(*key, query_id)
if not evidence.empty:
    st.markdown("**Label evidence**")
    # A table, not a data grid: its cells wrap, so an evidence is read whole, never cut mid-word (issue 42).
    st.table(render_evidence.evidence_view(evidence, ranking).set_index("Passage id"))
    st.caption("What each label was decided on, e.g. the LLM's reply to the relevance prompt (a reply that is "
               "neither Yes nor No counts as not relevant).")

if data_failures.load_judges(*key):
    st.subheader("LLM-retEval")
    reteval_settings = settings.get("reteval") or {}
    semi_gold = data_failures.load_query_semi_gold(*key, query_id)
    if semi_gold.empty:
        st.info("No semi-gold answers for this query: it has no gold passage in this run, so LLM-retEval "
                "did not judge it.")
    else:
        st.markdown("**Semi-gold answers** (the LLM's answers from the gold passages alone)")
        st.dataframe(render_evidence.semi_gold_view(semi_gold), hide_index=True)
        sampling = reteval_settings.get("semi_gold") or {}
        st.caption(render.escape_markdown(
            f"{len(semi_gold)} samples at temperature {sampling.get('temperature', '?')}."))

        failures = data_failures.load_query_failure_cases(*key, query_id)
        st.markdown("**Failure cases**")
        if failures.empty:
            st.caption("No failure category applies to this query at any k under any judge.")
        else:
            st.dataframe(render_evidence.failure_cases_view(failures), hide_index=True, height="content",
                         column_config={"Reason": st.column_config.TextColumn(width="large")})
            st.caption("Categories A-C are failures of Recall@k, D-F failures of LLM-retEval; each is decided by "
                       "an explicit rule over the stored facts (rageval.reteval.classify\\_failures).")

        verdicts = data_failures.load_query_verdicts(*key, query_id)
        st.markdown("**Verdicts**")
        st.dataframe(inspect.verdict_pivot(verdicts), height="content")
        st.caption("Each judge's Yes/No on the top-k answer (columns: k) against the semi-gold answers "
                   "(LLM-retEval) and against the dataset's gold answers (QA accuracy).")
        with st.expander("What each judge saw (the evidence of every verdict)"):
            st.dataframe(render_evidence.verdicts_view(verdicts), hide_index=True, height="content",
                         column_config={"Evidence": st.column_config.TextColumn(width="large")})
    auth.page_link(st, navigation.RETEVAL, label="LLM-retEval over the whole run", icon=":material/gavel:",
                   query_params={"run": path.stem})

st.subheader("Passages")
st.markdown(":green-background[gold answer] · :red-background[a wrong end-to-end answer] · "
            ":material/warning: distractor: the answer from the passage alone is the wrong end-to-end answer")
inspect.render_passages(ranking, rescored, gold=query.answers, wrong=wrong, run_key=key,
                        key=f"inspect.passage_page.{query_id}")
