"""Correlations: does a label method's per-query measure predict the end-to-end (E2E) answer's score? The
per-query scatter of any stored measure (eRAG, LLM relevance, contains-answer, gold) against the E2E score at k,
with the queries behind it linked to the query inspector; Kendall's tau-b and Spearman's rho with bootstrap
intervals for every method x measure (eRAG's Table 1, Salemi & Zamani 2024) and the k sweep (their Figure 1).

``?run=<name>&method=<label method>&k=<k>&measure=<measure>&statistic=<tau|rho>`` selects the view, so it can be
shared.
"""

import streamlit as st

from rageval.correlations import best_measures
from rageval.labelmethods import levels_text, relevant_grade
from rageval.team import roles
from ui import auth, data, glossary, navigation, render
from ui import data_correlations as loaders
from ui import format as fmt
from ui import render_correlations as view
from ui import render_inspector as inspect
from ui.render_lacks import complete_command, compute_hint, job_in_progress, render_lacks_panel

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

METHOD_STATE = "correlations.method"
K_STATE = "correlations.k"
MEASURE_STATE = "correlations.measure"
STATISTIC_STATE = "correlations.statistic"
STATISTICS = {"tau": "Kendall's tau-b", "rho": "Spearman's rho"}


NEEDS = "end-to-end answers and measure values"
path = render.select_run(data.has_correlation_data, NEEDS)
key = data.run_key(path)
settings = data.load_settings(*key)
e2e_ks = data.load_e2e_ks(*key)
measures = data.load_measure_names(*key)  # method, measure: which are stored, no values

render.page_heading(navigation.CORRELATIONS, "Correlations: labels against the end-to-end answer")
render.render_provenance(settings, data.load_counts(*key)["queries"], run=path.name)
render_lacks_panel(path)
render.render_unparsed_notes(data.load_unparsed_counts(*key), data.load_counted_as_no(*key))  # unread answers
if not e2e_ks or measures.empty:
    missing = "end-to-end answers" if not e2e_ks else "per-query measure values"
    st.info(render.escape_markdown(f"Run {path.stem} stores no {missing}, so there is nothing to correlate.")
            + " This view needs both: the measures of each label method (eRAG labels, the baselines) and the score "
              "of the answer the LLM gives from the top-k passages. "
            + ("It is a shipped run: choose one of yours, or copy it into your runs folder and compute what it "
               "lacks there." if data.is_shipped(path) else
               compute_hint(path, "what this run lacks", " (any model: the packaged Gemma, a local model folder "
                            "or a server), or from a terminal:")))
    if not data.is_shipped(path) and not job_in_progress(path):
        st.code(complete_command(path), language="bash")
    render.render_compatible_runs(navigation.CORRELATIONS, render.compatible_runs(
        data.find_all_runs().runs, data.has_correlation_data), NEEDS)
    st.stop()

metric = view.e2e_metric_name(settings)
main_k = data.load_main_k(*key)
st.session_state.setdefault(K_STATE, str(main_k))  # the run's own k, unless the URL or the session says otherwise

method_column, k_column, measure_column = st.columns(3)
method = render.select_synced(method_column, "Label method", render.order_label_methods(measures["method"].unique()),
                              state_key=METHOD_STATE, param="method", format_func=fmt.method_name,
                              help="Which relevance labels the measure is computed from")
k = int(render.select_synced(k_column, "k (passages given to the LLM)", [str(k) for k in e2e_ks],
                             state_key=K_STATE, param="k", help="The E2E score is that of the answer from the top k"))
measure = render.select_synced(measure_column, "Measure", view.measure_options(measures, method, k),
                               state_key=MEASURE_STATE, param="measure",
                               help="Measures at cutoff k (and R-precision) of the chosen labels")
label = f"{fmt.method_name(method)} {measure}"

points = loaders.load_scatter_points(*key, method, measure, k, questions_up_to=view.SCATTER_MAX_POINTS)
if points.empty:
    st.info(render.escape_markdown(f"No query of this run has both {label} and an {metric} at k={k}."))
    st.stop()

loaded = data.load_correlations(*key, cutoff=k)
correlations = loaded.table
render.small_sample_note(len(data.load_query_order(*key)))
# Which side is constant, read only when a coefficient at k is undefined (a large run whose correlations are all
# defined reads nothing more).
sides = loaders.load_constant_sides(*key, k) if correlations["tau"].isna().any() else None
if sides is not None and sides.e2e_constant:
    st.warning(render.escape_markdown(view.constant_e2e_text(sides, metric)))
    if (other := sides.nearest_varying_k()) is not None:
        st.button(f"Show k={other}", key="correlations.varying_k", on_click=render.commit_choice,
                  args=(K_STATE, "k", str(other)), help=f"The correlations at k={other}, where the {metric} varies")
dropped = data.load_dropped_measures(*key, k)
others = [(m, x, int(n)) for m, x, n in zip(dropped["method"], dropped["measure"], dropped["n"])
          if (m, x) != (method, measure) and (x.endswith(f"@{k}") or x == "Rprec")]
note = view.dropped_values_note(label, data.dropped_count(dropped, method=method, measure=measure), f"{metric}@{k}",
                                data.dropped_count(data.load_e2e_scores(*key, k).dropped, k=k), others)
if note:
    st.warning(note)
row = correlations[(correlations["method"] == method) & (correlations["measure"] == measure)]
scatter_column, counts_column = st.columns([3, 2])
scatter_data, scatter_spec = view.scatter_chart(points, method, measure, k, metric)
event = scatter_column.vega_lite_chart(scatter_data, render.with_provenance(scatter_spec, render.provenance_text(
    settings, len(points), k=k)), key="correlations.scatter", on_select="rerun")
scatter_column.caption(render.escape_markdown(
    f"Queries per value pair: {label} (x) against the {metric} of the answer from the top {k} passages (y); "
    f"past {view.SCATTER_MAX_POINTS:,} queries a grid of counts replaces the points. Click a cell (shift-click for "
    f"more) to list its queries below." if view.is_density(len(points))
    else f"One point per query: {label} against the {metric} of the answer from the top {k} passages. Both values "
    f"are jittered so that equal values do not hide each other; hover for the exact values. Drag a box or click "
    f"points (shift-click for more) to list those queries below; double-click clears the box.")
    + " " + render.sample_note(len(points), k))
if len(row):
    stats = row.iloc[0]
    for name, statistic in (("Kendall's tau-b", "tau"), ("Spearman's rho", "rho")):
        # The estimate as the metric, its interval on the line below (a metric's value is cut, not wrapped, in a
        # narrow column).
        counts_column.metric(name, view.correlation_estimate(stats[statistic]))
        counts_column.caption(view.correlation_interval(stats[f"{statistic}_low"], stats[f"{statistic}_high"],
                                                        int(stats["n"])))
    if sides is not None and (why := view.constant_measure_text(sides, method, measure, metric)):
        counts_column.caption(render.escape_markdown(why))
    counts_column.caption(render.escape_markdown(
        f"Between {label} and {metric}@{k} across {int(stats['n'])} queries, with "
        f"{view.interval_words(loaded)}."))
else:
    counts_column.caption(render.escape_markdown(
        f"{label} is not measured at cutoff {k}, so the table below (measures at cutoff {k}) has no row for it."))
counts_column.dataframe(view.count_table(points, measure, f"{metric}@{k}"))
counts_column.caption(render.escape_markdown(
    f"Queries per value of {label} (rows) and of {metric}@{k} (columns): the exact counts behind the jittered "
    f"points (many distinct values are grouped into {view.COUNT_BINS} equal-width bins).")
    + " " + render.sample_note(len(points), k))

selected = view.selected_rows(event, points)
shown = points.iloc[selected] if selected else points
st.markdown(f"**{'Selected queries' if selected else 'The queries'}** ({len(shown)})")
run_order = data.load_query_order(*key)
list_name = f"{'selected' if selected else 'all'}: {label} vs {metric}@{k}"
table = view.points_view(shown, path.stem, measure, f"{metric}@{k}", run_order, list_name, limit=view.TABLE_ROWS,
                         questions=None if len(points) <= view.SCATTER_MAX_POINTS else
                         lambda ids: data.load_question_texts(*key, tuple(ids)))
inspect.render_walk_link(path.stem, table["Query"].tolist(), run_order, list_name,
                         label=f"Open these {len(table):,} in the query inspector (worst answers first)")
st.dataframe(table, hide_index=True, column_config={
    "Question": st.column_config.TextColumn(width="large"),
    measure: st.column_config.NumberColumn(format="%.3f"),
    f"{metric}@{k}": st.column_config.NumberColumn(format="%.3f"),
    "Inspect": st.column_config.LinkColumn("Inspect", display_text="open ↗",
                                           help="Open this query in the query inspector (a new tab), walking the "
                                                "queries of this table")})
st.caption(render.escape_markdown(
    f"Lowest {metric}@{k} first, then highest {label}: the top rows are the queries whose labels look good but "
    f"whose answer is wrong" + (f" (the first {view.TABLE_ROWS:,} of {len(shown):,})." if len(shown) > view.TABLE_ROWS
                               else ".")) + " " + render.sample_note(len(shown), k))

st.subheader(render.escape_markdown(f"Every label method and measure at k={k}"))
if correlations.empty:
    st.info(render.escape_markdown(f"This run stores no measure at cutoff {k} to correlate with the {metric}@{k}."))
else:
    # One table at a time (a choice, not two tabs): a hidden tab's table is drawn all the same, 0.17-0.38 s
    # of a cold visit on the shipped run (bench_dashboard, paired, two runs of 4 rounds).
    statistic = render.select_synced(st, "Statistic", list(STATISTICS), state_key=STATISTIC_STATE,
                                     param="statistic", format_func=STATISTICS.__getitem__, widget="radio",
                                     horizontal=True, label_visibility="collapsed")
    st.dataframe(view.correlation_view(correlations, statistic))
    st.caption(render.escape_markdown(
        f"Correlation across queries (up to {int(correlations['n'].max())}) between each per-query measure at k={k} "
        f"(and R-precision) and the {metric} at k={k}, with {view.interval_words(loaded)}; eRAG's Table 1 on this "
        f"run; – where a method has no such measure.") + " "
        + render.sample_note(int(correlations["n"].max()), k))
    if sides is not None and (why := view.constant_measures_text(sides)):
        st.caption(render.escape_markdown(why))
    graded = [m for m in settings.get("graded_label_methods", []) if m in set(correlations["method"])]
    if graded:
        st.caption(render.escape_markdown(
            f"Graded labels ({', '.join(fmt.method_name(m) for m in render.order_label_methods(graded))}) "
            "have only P, nDCG and Hit (a label above 0 counts as relevant for Hit); their other cells show –."))
    if scale := [f"{fmt.method_name(m)} {levels_text(m)}" for m in render.order_label_methods(
            set(correlations["method"])) if relevant_grade(m) is not None]:
        st.caption(render.escape_markdown(glossary.SCALE_NDCG_NOTE.format(methods=", ".join(scale)) + "."))
    st.markdown(f"**Best measure per label method at k={k}**")
    best = best_measures(correlations, k)
    if best.empty:
        # No defined coefficient at k: say why instead of an empty table.
        st.info(render.escape_markdown(
            (view.constant_e2e_text(sides, metric) if sides is not None and sides.e2e_constant else
             f"Every coefficient at k={k} is undefined: each measure at cutoff {k} is the same for every query.")
            if sides is not None else f"No measure at cutoff {k} has a defined coefficient."))
    else:
        st.dataframe(view.best_measures_view(best), hide_index=True)
        st.caption(render.escape_markdown(
            f"For each label method, its measure at k={k} with the highest Kendall's tau-b against the {metric} "
            "(R-precision and undefined coefficients left out).")
            + " " + render.sample_note(int(correlations["n"].max()), k))

if len(e2e_ks) > 1:
    sweep = data.load_k_sweep(*key)
    if not sweep.empty:
        st.subheader("How the agreement changes with k")
        sweep_data, sweep_spec = view.k_sweep_chart(sweep, metric)
        st.vega_lite_chart(sweep_data, render.with_provenance(sweep_spec, render.provenance_text(
            settings, int(sweep["n"].max()), k=", ".join(map(str, e2e_ks)))), key="correlations.k_sweep")
        st.caption(render.escape_markdown(
            f"Kendall's tau-b between each label method's best measure family (chosen at the run's k={main_k}) at k "
            f"and the {metric} at k, for every k of the sweep; point estimates, eRAG's Figure 1 on this run.") + " "
            + render.sample_note(int(sweep["n"].max()), ", ".join(map(str, e2e_ks))))
