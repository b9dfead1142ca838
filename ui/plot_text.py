"""Text from users' data in a plotly figure: plotly renders a subset of HTML in titles, legends, axis and tick labels
and hover labels (``<a href>`` becomes a live link, ``<span style>`` restyles, ``<br>`` breaks), so every run,
method, annotator, agent, query or measure name and every question that goes into a figure goes through
:func:`plot_text` (names) or :func:`plotly_text` (long texts) first: HTML-escaped, shown literally (plotly decodes
``&lt;`` back to ``<`` on screen). Fixed wording and markup of our own (``<br>``, ``%{x}``) is not escaped.
"""

from __future__ import annotations

import html
from typing import Any

HOVER_CHARS = 120


def plot_text(value: Any) -> str:
    """A name for a plotly title, legend, axis, tick or hover label, shown literally: ``<``, ``>``, ``&`` escaped."""
    return html.escape(str(value), quote=False)


def plotly_text(text: Any, limit: int = HOVER_CHARS) -> str:
    """Data text (a question) for a hover label: whitespace collapsed, cut to ``limit`` characters, escaped."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return plot_text(flat)
