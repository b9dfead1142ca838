"""One colour scheme for every view: label values, label methods, failure categories, comparison outcomes.

Every chart that colours by one of these uses the maps below (plotly ``color_discrete_map``), so "useful" is the
same green and eRAG EM the same blue on every page. Pure constants: no streamlit import.
"""

from __future__ import annotations

from collections.abc import Sequence

#: A binary label or verdict: useful / supported / relevant, not, and no label.
LABEL_COLOURS = {"useful": "#1a9850", "not useful": "#d73027", "no label": "#bdbdbd"}
POSITIVE, NEGATIVE, MISSING = LABEL_COLOURS["useful"], LABEL_COLOURS["not useful"], LABEL_COLOURS["no label"]
#: Continuous scores in [0, 1] (p(entail), utility, similarity) and signed ones (Kendall's tau, differences).
SCORE_SCALE = "Blues"
SIGNED_SCALE = "RdBu"

#: Label methods, in the display order of ui.render.METHOD_ORDER (tab10, colour-blind friendlier order).
METHOD_COLOURS = {
    "erag:em": "#1f77b4", "erag:f1": "#17becf", "erag:accuracy": "#9467bd", "erag:rougeL": "#8c564b",
    "erag:bertscore": "#e377c2", "llm_relevance": "#ff7f0e", "contains_answer": "#2ca02c", "gold": "#7f7f7f",
    "gold_page": "#bcbd22", "human": "#000000",
}
#: Failure categories of LLM-retEval: A-C (recall fails) in reds, D-F (LLM-retEval fails) in blues.
CATEGORY_COLOURS = {"A": "#fcae91", "B": "#fb6a4a", "C": "#cb181d", "D": "#9ecae1", "E": "#4292c6",
                    "F": "#08519c"}
#: Paired comparison of run A against run B on one query.
OUTCOME_COLOURS = {"A better": "#1a9850", "tie": "#bdbdbd", "B better": "#d73027"}

_FALLBACK = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#8ca252", "#bd9e39")


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    """A colour for every label method in ``methods``: the fixed one when it has one, else a stable fallback."""
    unknown = sorted(m for m in methods if m not in METHOD_COLOURS)
    extra = {m: _FALLBACK[i % len(_FALLBACK)] for i, m in enumerate(unknown)}
    return {m: METHOD_COLOURS.get(m, extra.get(m)) for m in methods}
