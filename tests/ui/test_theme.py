"""ui.theme: chart colours readable on the light and the dark theme; share axes that start at 0."""

from __future__ import annotations

import pandas as pd
import pytest

from ui import render_ium, theme


def luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    low, high = sorted((luminance(a), luminance(b)))
    return (high + 0.05) / (low + 0.05)


COLOURS = {**{f"label {k}": v for k, v in theme.LABEL_COLOURS.items()},
           **{f"method {k}": v for k, v in theme.METHOD_COLOURS.items()},
           **{f"category {k}": v for k, v in theme.CATEGORY_COLOURS.items()},
           **{f"outcome {k}": v for k, v in theme.OUTCOME_COLOURS.items()},
           **{f"fallback {i}": v for i, v in enumerate(theme._FALLBACK)}}


@pytest.mark.parametrize("name", sorted(COLOURS))
def test_colour_is_visible_on_light_and_dark(name):
    colour = COLOURS[name]
    assert contrast(colour, theme.LIGHT_BACKGROUND) >= theme.MIN_CONTRAST
    assert contrast(colour, theme.DARK_BACKGROUND) >= theme.MIN_CONTRAST


def test_contrast_helper_on_known_pairs():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)  # WCAG's maximum
    assert contrast("#000000", theme.DARK_BACKGROUND) < theme.MIN_CONTRAST  # why "human" is no longer black


def test_online_ium_chart_starts_at_zero():
    # 4.87% to 5.01% over batch sizes: autoscaled, the axis spans only these and 0.13 points look like a collapse
    frame, spec = render_ium.batch_chart(pd.Series([0.0501, 0.0487, 0.0495], index=[1, 10, 100]))
    assert spec["encoding"]["y"]["scale"] == theme.share_scale() == {"zero": True}
    assert list(frame["score"]) == pytest.approx([5.01, 4.87, 4.95])
    curves = pd.DataFrame({"personalised": [0.05, 0.051], "not": [0.05, 0.0499]}, index=[0, 1])
    assert render_ium.iteration_chart(curves)[1]["encoding"]["y"]["scale"]["zero"] is True
    assert render_ium.summary_chart(curves.T)[1]["encoding"]["y"]["scale"]["zero"] is True
    # no background, config or font colour of its own: Streamlit's theme (light or dark) decides them
    assert not {"background", "config"} & set(spec)

