"""Citations: attributed answers (Djeddal et al., CIKM 2024). Per scenario, the correctness and citation metrics;
per answer, its statements with their citations, the NLI verdicts (beside HAGRID's human labels where the run has
them), the statement × passage entailment heatmap and the passages the generator saw; and, for HAGRID runs, the
agreement of the automatic scores with the human labels; and the quality of the entailment checkers (the shipped
report and ``rageval nli-eval --json`` reports in ``<runs folder>/nli/``), naming the one that scored the run.

Runs come from your runs folder (and its ``attribution/``) and the shipped ``data/runs/attribution``:
``rageval attribution`` (HAGRID) or ``rageval evaluate-citations`` (a user's own answers; no human labels).
``?run=<name>&scenario=<scenario>&query=<query id>&answer=<answer id>`` selects the run and the answer, so a view
can be shared.
"""

import streamlit as st

from rageval.attribution.experiment import GOLD_SCENARIO
from rageval.team import roles
from ui import auth, data, data_attribution, data_checkers, navigation, render
from ui import render_checkers as checker_views
from ui import render_citations as view

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

RUN_STATE = "citations.run"
SCENARIO_STATE = "citations.scenario"
QUERY_STATE = "citations.query_id"
ANSWER_STATE = "citations.answer_id"


path = render.select_kind_run("attribution", data.find_attribution_runs(), data.attribution_runs_dir(),
                              state_key=RUN_STATE, command=render.citations_command(),
                              read_settings=data_attribution.load_attribution_settings)
key = data.run_key(path)
settings = data_attribution.load_attribution_settings(*key)
table = data_attribution.load_attribution_metric_table(*key)
answers = data_attribution.load_attribution_answers(*key)

user_run = view.is_user_run(settings)
render.page_heading(navigation.CITATIONS, view.page_title(settings))
st.caption(render.escape_markdown(f"Run {path.name}") + " · " + view.provenance(settings))
invalid = view.invalid_citations_note(settings)
if invalid:
    st.warning(invalid)

st.subheader("Correctness and citation quality per scenario")
if table.empty:
    st.info("This run stores no metric values.")
else:
    render.render_table(view.metric_table_view(table), column_config={
        **{name: st.column_config.NumberColumn(name, format="%.1f") for name in view.METRIC_NAMES.values()},
        "n": st.column_config.NumberColumn("n", help="answers averaged over", format="%d")}, digits=1)
    st.caption("Mean over each scenario's answers, percent (BLEU on its own 0-100 scale); an empty answer scores 0 "
               "on every citation metric" + (
                   ", and a citation naming no given passage supports nothing. AutoAIS and ALCE are decided by the "
                   "NLI model, BLEU/ROUGE-L/BERTScore (when the answers came with gold answers) against the gold "
                   "answers. " if user_run else
                   ", and a scenario without citations (G) has none. AutoAIS and ALCE are decided by the NLI model, "
                   "overlap against the query's HAGRID quotes, BLEU/ROUGE-L/BERTScore against the gold answers (the "
                   "paper's Table 2). ") + render.escape_markdown(f"{int(table['n'].sum()):,} answers."))

st.subheader("Checker quality")
reports, unreadable = [], []
for report_path in data_checkers.checker_report_files():
    report, problem = data_checkers.load_checker_report(*data_checkers.report_key(report_path))
    if report is not None:
        reports.append((report_path.name, report))
    else:
        unreadable.append(problem)
sections = checker_views.checker_sections(reports)
for section in sections:
    st.markdown(f"**{render.escape_markdown(section['checker'])}**"
                + (f" · {render.escape_markdown(section['description'])}" if section["description"] else ""))
    render.render_table(section["table"], hide_index=True, help=checker_views.COLUMN_HELP)
    st.caption(render.escape_markdown(f"Checker spec {section['spec'] or '?'}; from "
                                      f"{', '.join(section['files'])}; intervals: 95% percentile bootstrap."))
if not sections:
    st.caption("No checker evaluation yet: `rageval nli-eval labelled.jsonl --checker SPEC --json "
               "<runs folder>/nli/NAME.json` writes one (docs/checkers.md).")
for problem in unreadable:
    st.caption(render.escape_markdown(f"Not shown: {problem}"))
st.caption(render.escape_markdown(checker_views.run_checker_note(settings, sections)))

if answers.empty:
    st.info("This run stores no answers.")
    st.stop()

st.subheader("One answer")
scenarios = list(dict.fromkeys([s for s in table.index if s in set(answers["scenario"])] + list(answers["scenario"])))
scenario_column, query_column, answer_column = st.columns([2, 7, 1.4])
scenario = render.select_synced(scenario_column, "Scenario", scenarios, state_key=SCENARIO_STATE, param="scenario")
in_scenario = answers[answers["scenario"] == scenario]
questions = dict(zip(in_scenario["query_id"], in_scenario["question"]))
query_ids = list(questions)
query_id = render.select_synced(
    query_column, f"Question ({len(query_ids)} in this scenario; type to search)", query_ids,
    state_key=QUERY_STATE, param="query", format_func=lambda q: f"{questions[q]}  [{q}]" if questions[q] else q,
    filter_mode="contains")
of_query = in_scenario[in_scenario["query_id"] == query_id]
answer_id = render.select_synced(answer_column, "Answer", list(of_query["answer_id"]), state_key=ANSWER_STATE,
                                 param="answer", help="the answer ids of this question" if user_run else
                                 "HAGRID has up to two gold answers per question")
answer = of_query[of_query["answer_id"] == answer_id].iloc[0]
where = render.escape_markdown(f"{scenario} · query {query_id} · answer {answer_id}")

st.markdown(f"**{render.escape_markdown(questions[query_id] or query_id)}**")
st.text(answer["text"] or "(empty answer)")
if scenario == GOLD_SCENARIO:
    st.caption(f"HAGRID's annotators: attributable {render.format_label(answer['human_attributable'])}, "
               f"informative {render.format_label(answer['human_informative'])} · {where}")
metrics = data_attribution.load_answer_metrics(*key, scenario, query_id, answer_id)
if metrics:
    render.render_table(view.answer_metrics_view(metrics), hide_index=True, digits=1,
                 column_config={c: st.column_config.NumberColumn(c, format="%.1f") for c in view.METRIC_NAMES.values()})
    st.caption("This answer's metrics, percent (BLEU 0-100). " + where)

statements = data_attribution.load_attribution_statements(*key, scenario, query_id, answer_id)
with_human = scenario == GOLD_SCENARIO or statements["human_attributable"].notna().any()
st.markdown("**Statements and their citations**")
if statements.empty:
    st.caption("This answer has no statements (an empty answer).")
else:
    render.render_table(view.statements_view(statements, with_human=with_human), hide_index=True,
                 column_config={"Statement": st.column_config.TextColumn(width="large")})
    st.caption("✓ supported, ✗ not, – not judged (no citation, or a scenario without citations). AutoAIS: one "
               "cited passage entails the statement; ALCE: its cited passages (at most 3) jointly do"
               + ("; the human label is HAGRID's annotators' sentence label" if with_human else "") + ". " + where)

inputs = data_attribution.load_attribution_inputs(*key, scenario, query_id)
matrix = data_attribution.load_entailment_matrix(*key, scenario, query_id, answer_id)
if not matrix.empty:
    cites = dict(zip(statements["statement"], statements["citations"]))
    cells, heatmap = view.entailment_chart(matrix, [cites.get(s, []) for s in matrix.index])
    st.vega_lite_chart(cells, heatmap, key="citations.heatmap")
    st.caption(render.escape_markdown(
        f"p(passage entails statement) from the NLI model {settings.get('nli', '?')} for each of the "
        f"{matrix.shape[0]} statements (rows) and {matrix.shape[1]} input passages (columns, by citation number); "
        f"circles mark the passages each statement cites.") + " · " + where)

st.markdown("**Input passages**")
if inputs.empty:
    st.caption("None: this scenario answers closed-book." if scenario == "G" else "No input passages stored.")
else:
    shown_to = ("HAGRID's annotators (the query's quotes), numbered as the gold answer cites them"
                if scenario == GOLD_SCENARIO else "the system that wrote the answer, numbered as its citations"
                if user_run else f"the generator {settings.get('generator', '?')}, numbered as its citations")
    st.caption(render.escape_markdown(f"The input passages shown to {shown_to} ({len(inputs)}).") + " · " + where)
    view.render_input_passages(inputs, run_key=key, scenario=scenario, query_id=query_id,
                               key=f"citations.page.{scenario}.{query_id}")

agreement = data_attribution.load_attribution_agreement(*key)
if agreement.empty:
    st.caption("No agreement with human labels: this run has none (only HAGRID's gold answers, in a "
               "`rageval attribution` run, carry annotators' labels).")
else:
    st.subheader("Agreement with HAGRID's human labels")
    render.render_table(view.agreement_view(agreement), hide_index=True, column_config={
        **{c: st.column_config.NumberColumn(c, format="%.3f") for c in ("Pearson", "Spearman")},
        **{c: st.column_config.NumberColumn(c, format="%.1f") for c in ("Accuracy %", "Human yes %", "Model yes %")},
        "n": st.column_config.NumberColumn("n", help="labelled answers (answer level) or sentences (sentence level)")},
        digits={"Pearson": 3, "Spearman": 3, "Accuracy %": 1, "Human yes %": 1, "Model yes %": 1})
    st.caption("Gold answers only. Answer level: each answer's automatic score against its human attributable "
               "label; sentence level: each annotated sentence's NLI verdict (supported by one of its citations) and "
               "its best cited p(entail) against the sentence's label; accuracy counts a score ≥ 0.5 as yes; "
               "n: the labelled answers or sentences. "
               + render.escape_markdown(f"{(answers['scenario'] == GOLD_SCENARIO).sum():,} gold answers."))
