"""One colour scheme for every view: label values, label methods, failure categories, comparison outcomes.

Every chart that colours by one of these uses the maps below (a Vega-Lite scale's ``domain`` and ``range``), so
"useful" is the same green and eRAG EM the same blue on every page. Pure constants: no streamlit import.

The dashboard follows the OS light or dark theme, and charts take Streamlit's theme (``st.vega_lite_chart``'s
default ``theme="streamlit"``: no chart here sets a background or a font colour). So every colour below is a mid
tone that stays visible on both backgrounds, white and Streamlit's dark one: a contrast ratio (WCAG 2) of at least
:data:`MIN_CONTRAST` against each (tests/ui/test_theme.py); black or a dark navy would vanish on the dark one.
"""

from __future__ import annotations

from collections.abc import Sequence

from rageval.labelmethods import method_colours as registered_colours

#: The least contrast ratio of a chart colour against the light and the dark background.
MIN_CONTRAST = 1.7
LIGHT_BACKGROUND, DARK_BACKGROUND = "#ffffff", "#171614"  # as Chromium draws them (tests/browser/test_browser_theme.py)

#: A binary label or verdict: useful / supported / relevant, not, and no label.
LABEL_COLOURS = {"useful": "#1a9850", "not useful": "#d73027", "no label": "#bdbdbd"}
POSITIVE, NEGATIVE, MISSING = LABEL_COLOURS["useful"], LABEL_COLOURS["not useful"], LABEL_COLOURS["no label"]
#: Continuous scores in [0, 1] (p(entail), utility, similarity) and signed ones (Kendall's tau, differences).
SCORE_SCALE = "Blues"
SIGNED_SCALE = "RdBu"
#: The same two as Vega schemes (Vega-Lite charts): white to dark blue; dark red (-1) through white to dark blue (1).
SCORE_SCHEME = "blues"
SIGNED_SCHEME = "redblue"
#: From this value (or this far from 0 on the signed scheme) a heatmap cell is dark enough for white text.
DARK_CELL = 0.6

#: Label methods' colours, each kind's own (rageval.labelmethods: tab10, colour-blind friendlier order).
METHOD_COLOURS = registered_colours()
#: Failure categories of LLM-retEval: A-C (recall fails) in reds, D-F (LLM-retEval fails) in blues.
CATEGORY_COLOURS = {"A": "#fcae91", "B": "#fb6a4a", "C": "#cb181d", "D": "#9ecae1", "E": "#4292c6",
                    "F": "#2171b5"}
#: Paired comparison of run A against run B on one query.
OUTCOME_COLOURS = {"A better": "#1a9850", "tie": "#bdbdbd", "B better": "#d73027"}

_FALLBACK = ("#6b6ecf", "#637939", "#8c6d31", "#ad494a", "#a55194", "#5254a3", "#8ca252", "#bd9e39")


def method_colours(methods: Sequence[str]) -> dict[str, str]:
    """A colour for every label method in ``methods``: the fixed one when it has one, else a stable fallback."""
    fixed = registered_colours()
    unknown = sorted(m for m in methods if m not in fixed)
    extra = {m: _FALLBACK[i % len(_FALLBACK)] for i, m in enumerate(unknown)}
    return {m: fixed.get(m, extra.get(m)) for m in methods}


#: A Vega-Lite chart's ``autosize``: as wide as its column, as high as its spec says (plot area plus title, axes and
#: legend). Streamlit's default (``fit``) fits the whole chart into 350 px: a legend below the plot squeezed it and
#: its title was not drawn.
FIT_WIDTH = {"type": "fit-x", "contains": "padding"}


def share_scale(**scale) -> dict:
    """The Vega-Lite ``scale`` of a share's (or a score's) axis: it starts at 0 (``zero``), so that a difference of
    0.13 points does not fill the chart and read as a collapse (an axis autoscaled to 4.87-5.01 did); the top is
    still fitted to the data. ``scale`` adds to it (e.g. ``domain``). An axis that does not start at 0 says so in
    its title."""
    return {"zero": True, **scale}


def heatmap_text_colour(field: str, *, signed: bool = False) -> dict:
    """A Vega-Lite ``color`` for the numbers written on a heatmap's cells (scheme :data:`SCORE_SCHEME`, or
    :data:`SIGNED_SCHEME` when ``signed``): white on the dark cells (a value from :data:`DARK_CELL`, or that far from 0
    when signed), black on the light ones, whichever theme the page has (the cells' colours are the same on both)."""
    value = f"abs(datum[{field!r}])" if signed else f"datum[{field!r}]"
    return {"condition": {"test": f"{value} >= {DARK_CELL}", "value": "white"}, "value": "black"}
