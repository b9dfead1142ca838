"""Views of the citations page (``app_pages/3_Citations.py``): attributed-answer runs (``rageval attribution``,
``rageval evaluate-citations``).

Pure functions from the data layer's tables to display tables and charts, plus the passage block. Answer,
statement and passage text is shown through ``st.text`` / ``st.dataframe`` (never Markdown or HTML); the heatmap
carries numbers and labels only, no corpus text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from rageval.attribution.results_section import to_percent
from rageval.attribution.user_answers import SOURCE as USER_SOURCE
from ui import data_attribution, render, theme
from ui.render import escape_markdown, format_label

METRIC_NAMES = {
    "bleu": "BLEU", "rougeL_p": "ROUGE-L P", "rougeL_r": "ROUGE-L R", "rougeL_f": "ROUGE-L F",
    "bertscore_p": "BERTScore P", "bertscore_r": "BERTScore R", "bertscore_f": "BERTScore F",
    "overlap_p": "Overlap P", "overlap_r": "Overlap R", "autoais_cit": "AutoAIS cit", "autoais_pssg": "AutoAIS pssg",
    "alce_precision": "ALCE P", "alce_recall": "ALCE R",
}
METRIC_ORDER = ("autoais_cit", "autoais_pssg", "alce_precision", "alce_recall", "overlap_p", "overlap_r", "bleu",
                "rougeL_p", "rougeL_r", "rougeL_f", "bertscore_p", "bertscore_r", "bertscore_f")
#: The circles that mark the cited cells of the entailment heatmap (red on every shade of blue, and on both themes).
CITED_COLOUR = theme.METHOD_COLOURS["human"]
AGREEMENT_SCORES = {"nli_verdict_cited": "NLI verdict on the cited passages", "p_entail_cited": "best cited p(entail)"}


def provenance(settings: Mapping[str, Any], n_answers: int | None = None) -> str:
    """Escaped Markdown caption saying what produced a number: generator, NLI model (and the build's, for a run
    re-scored by ``rageval attribution --rescore``), BERTScore model, dataset and, when given, the number of answers
    behind it."""
    parts = [f"{label} {settings[key]}" for key, label in (("generator", "generator"), ("nli", "NLI"),
                                                           ("bertscore", "BERTScore"), ("dataset", "dataset"))
             if settings.get(key)]
    rescored = settings.get("rescored")
    if rescored:  # rageval attribution --rescore: the scores are not the build's checker's
        parts.insert(2 if settings.get("generator") and settings.get("nli") else 1,
                     f"re-scored {str(rescored.get('date', ''))[:10]} (built with NLI {rescored.get('previous_nli')})")
    if n_answers is not None:
        parts.append(f"{n_answers:,} {'answer' if n_answers == 1 else 'answers'}")
    return escape_markdown(" · ".join(parts))


def is_user_run(settings: Mapping[str, Any]) -> bool:
    """Whether the run scored a user's own answers (``rageval evaluate-citations``) rather than HAGRID scenarios."""
    return settings.get("source") == USER_SOURCE


def page_title(settings: Mapping[str, Any]) -> str:
    """The page title: the answers file of a user run, else the dataset (HAGRID for ``rageval attribution``)."""
    if is_user_run(settings):
        return f"Citations · attributed answers from {settings.get('dataset') or 'your system'}"
    dataset = str(settings.get("dataset", ""))
    return "Citations · attributed answers on " + ("HAGRID" if dataset.startswith("hagrid") or not dataset
                                                   else dataset)


def invalid_citations_note(settings: Mapping[str, Any]) -> str:
    """Escaped Markdown warning about citations that named no passage of their answer ('' when there were none)."""
    invalid = settings.get("invalid_citations") or {}
    count = int(invalid.get("citations", 0) or 0)
    if not count:
        return ""
    listed = [str(w["line"]) for w in invalid.get("first", [])]
    more = ", ..." if invalid.get("answers", 0) > len(listed) else ""
    where = f" (input line{'s' if len(listed) > 1 or more else ''} {', '.join(listed)}{more})" if listed else ""
    return escape_markdown(
        f"{count:,} citation(s) in {invalid.get('answers', '?')} answer(s) name no passage of the answer's list "
        f"(numbered from 1): they support nothing and count as unsupported{where}.")


def metric_table_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`rageval.attribution.results_section.scenario_metric_table` in percent, citation metrics first, named for
    people; ``n`` (answers) last. A metric no scenario has (e.g. overlap in a run without gold citations) is left
    out."""
    present = [m for m in METRIC_ORDER if m in table.columns and table[m].notna().any()]
    shown = to_percent(table)[present].rename(columns=METRIC_NAMES)
    shown["n"] = table["n"].astype(int)
    shown.index.name = "Scenario"
    return shown


def answer_metrics_view(metrics: Mapping[str, float]) -> pd.DataFrame:
    """One answer's metric values (percent; BLEU as is) in the order of :func:`metric_table_view`, one row."""
    return pd.DataFrame([{METRIC_NAMES[m]: metrics[m] * (1 if m == "bleu" else 100)
                          for m in METRIC_ORDER if m in metrics}])


def statements_view(statements: pd.DataFrame, *, with_human: bool) -> pd.DataFrame:
    """One answer's statements: number, text, the passages it cites, the NLI verdicts (AutoAIS_cit: one cited
    passage entails it; ALCE recall: its cited passages together entail it) and, ``with_human``, HAGRID's
    annotators' label beside them (✓/✗, – when missing). A statement citing nothing is not judged (–): the run
    stores 0 for it, AutoAIS' convention for its answer-level mean, but no passage was asked about it."""
    judged = [bool(cited) for cited in statements["citations"]]  # an uncited statement is not judged (stored 0)
    view = pd.DataFrame({
        "#": statements["statement"].astype(int) + 1,
        "Statement": statements["text"],
        "Cites": [" ".join(f"[{n}]" for n in cited) or "none" for cited in statements["citations"]],
        "NLI: a citation supports it (AutoAIS)": [format_label(v) if j else "–"
                                                  for v, j in zip(statements["supported"], judged)],
        "NLI: citations jointly support it (ALCE)": [format_label(v) if j else "–"
                                                     for v, j in zip(statements["alce_recall"], judged)],
    })
    if with_human:
        view["Human: attributable"] = statements["human_attributable"].map(format_label)
    return view


def cited_cells(matrix: pd.DataFrame, citations: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """(statement, passage number) of every cell of ``matrix`` whose passage the statement cites (citations to a
    number outside the matrix, i.e. invalid citations, are left out)."""
    numbers = set(matrix.columns)
    return [(statement, number) for statement, cited in zip(matrix.index, citations)
            for number in dict.fromkeys(cited) if number in numbers]


def entailment_chart(matrix: pd.DataFrame, citations: Sequence[Sequence[int]]) -> tuple[pd.DataFrame, dict]:
    """Heatmap of p(passage ⊨ statement): one row per statement (S1 on top), one column per input passage (its
    citation number), colour 0..1 (:data:`ui.theme.SCORE_SCHEME`) with the value written in each cell; an open red
    circle marks each cell the statement cites. As ``(data, Vega-Lite spec)`` for ``st.vega_lite_chart``: one row
    per cell (``statement``, ``passage``, ``p_entail``, ``cited`` yes/no). Vega-Lite rather than plotly: the page
    then loads no plotly.js (4.7 MB)."""
    rows = [f"S{int(s) + 1}" for s in matrix.index]
    columns = [f"[{int(n)}]" for n in matrix.columns]
    cited = {(f"S{int(s) + 1}", f"[{int(n)}]") for s, n in cited_cells(matrix, citations)}
    values = matrix.to_numpy(dtype=float)
    cells = pd.DataFrame([{"statement": row, "passage": column, "p_entail": float(values[i, j]),
                           "cited": "yes" if (row, column) in cited else "no"}
                          for i, row in enumerate(rows) for j, column in enumerate(columns)],
                         columns=["statement", "passage", "p_entail", "cited"])
    x = {"field": "passage", "type": "nominal", "sort": columns, "title": "input passage (citation number)",
         "axis": {"labelAngle": 0}}
    y = {"field": "statement", "type": "nominal", "sort": rows, "title": "statement"}
    spec = {
        "title": "Entailment of each statement by each input passage",
        "autosize": theme.FIT_WIDTH, "height": {"step": 44},
        "encoding": {"x": x, "y": y, "tooltip": [  # on every layer: the number and the circle hide the cell
            {"field": "statement", "title": "statement"}, {"field": "passage", "title": "passage"},
            {"field": "p_entail", "type": "quantitative", "format": ".3f", "title": "p(passage entails statement)"},
            {"field": "cited", "title": "the statement cites it"}]},
        "layer": [
            {"mark": {"type": "rect"},
             "encoding": {
                 "color": {"field": "p_entail", "type": "quantitative", "title": "p(entail)",
                           "scale": {"scheme": theme.SCORE_SCHEME, "domain": [0.0, 1.0]}}}},
            {"mark": {"type": "text", "fontSize": 12},
             "encoding": {"text": {"field": "p_entail", "type": "quantitative", "format": ".2f"},
                          "color": theme.heatmap_text_colour("p_entail")}},
            {"transform": [{"filter": "datum.cited === 'yes'"}, {"calculate": "'cited'", "as": "marker"}],
             "mark": {"type": "point", "shape": "circle", "filled": False, "size": 700, "strokeWidth": 3},
             "encoding": {"stroke": {"field": "marker", "type": "nominal", "title": None,
                                     "scale": {"domain": ["cited"], "range": [CITED_COLOUR]}}}},
        ],
    }
    return cells, spec


def agreement_view(agreement: pd.DataFrame) -> pd.DataFrame:
    """Agreement of the automatic scores with HAGRID's human labels: level, score, n, Pearson, Spearman,
    accuracy (percent), human and model positive rates (percent)."""
    def percent(values: pd.Series) -> list[float]:
        return [math.nan if v is None or v != v else 100 * float(v) for v in values]

    return pd.DataFrame({
        "Level": agreement["level"],
        "Automatic score": agreement["score"].map(lambda s: METRIC_NAMES.get(s, AGREEMENT_SCORES.get(s, s))),
        "n": agreement["n"].astype(int),
        "Pearson": agreement["pearson"].astype(float),
        "Spearman": agreement["spearman"].astype(float),
        "Accuracy %": percent(agreement["accuracy"]),
        "Human yes %": percent(agreement["human_positive_rate"]),
        "Model yes %": percent(agreement["model_positive_rate"]),
    })


def render_input_passages(inputs: pd.DataFrame, *, run_key: tuple[str, int], scenario: str, query_id: str,
                          key: str) -> None:
    """One bordered block per input passage (:func:`ui.data_attribution.load_attribution_inputs` of ``scenario``
    and ``query_id`` in the run ``run_key``): ``[number] title · passage id``, then the text (as text; a page at
    a time when long, widget keys ``<key>.<number>``)."""
    for row in inputs.itertuples():
        with st.container(border=True):
            title = escape_markdown(row.title) if row.title else "(untitled passage)"
            st.markdown(f"**\\[{int(row.number)}\\] {title}** · {escape_markdown(row.passage_id)}")
            render.render_passage_text(row.text, row.text_size, key=f"{key}.{int(row.number)}", load_page=partial(
                data_attribution.load_attribution_input_page, *run_key, scenario, query_id, int(row.number)))
