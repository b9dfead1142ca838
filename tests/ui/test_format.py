"""ui.format, the one formatter of the dashboard's numbers: missing values, intervals, shares with Wilson intervals.
Expected strings are written out by hand from the rule in ui/format.py's docstring."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rageval.stats.intervals import wilson_interval
from ui import format as fmt


@pytest.mark.parametrize("value", [None, math.nan, np.nan, pd.NA, pd.NaT, np.float32("nan")])
def test_missing_values_are_a_dash(value):
    assert fmt.is_missing(value)
    assert fmt.format_number(value) == fmt.MISSING == "–"
    assert fmt.format_share(value) == fmt.MISSING
    assert fmt.format_estimate(value, 0.1, 0.2) == fmt.MISSING
    assert fmt.format_interval(value, 0.2) == fmt.MISSING
    assert fmt.format_cell(value) == fmt.MISSING


def test_numbers_have_fixed_digits():
    assert fmt.format_number(0.41234) == "0.412"
    assert fmt.format_number(12345.678, 1) == "12,345.7"
    assert fmt.format_number(np.int64(3000)) == "3,000"
    assert fmt.format_count(1234.0) == "1,234"
    assert fmt.format_number(True) == "1"


def test_intervals_are_brackets_with_a_comma():
    assert fmt.format_interval(-0.028, 0.161) == "[-0.03, 0.16]"
    assert fmt.format_estimate(0.067, -0.028, 0.161) == "0.067 [-0.03, 0.16]"
    assert fmt.format_estimate(0.5, math.nan, math.nan) == "0.500"
    assert fmt.format_correlation(0.4123, 0.21, 0.6) == "0.412 [0.21, 0.60]"
    assert fmt.format_correlation(math.nan, math.nan, math.nan) == "undefined (constant)"


def test_shares_are_percentages_with_wilson_intervals():
    assert fmt.format_share(0.2333) == "23.3%"
    assert fmt.format_share_estimate(0.2333, 0.176, 0.302) == "23.3% [17.6%, 30.2%]"
    scores = [1] * 2 + [0] * 28 + [None]  # one missing score is dropped, not counted as 0
    share = fmt.share_of(scores)
    assert share.n == 30 and share.mean == pytest.approx(2 / 30)
    assert (share.low, share.high) == pytest.approx(wilson_interval(2, 30))
    assert share.low > 0  # the Student-t interval of these scores starts below 0
    low, high = wilson_interval(2, 30)
    assert fmt.describe_share(scores) == f"6.7% [{100 * low:.1f}%, {100 * high:.1f}%] of 30"
    assert fmt.describe_share([]) == fmt.MISSING


def test_display_frame_shows_no_none_or_nan():
    frame = pd.DataFrame({"name": ["a", None, "c"], "value": [0.5, np.nan, 1.0], "n": [1, 2, 3],
                          "rank": pd.array([1, None, 3], dtype="Int64"), "score": [0.25, 0.5, 0.75]},
                         index=["x", "y", "z"])
    shown = fmt.display_frame(frame)
    assert list(shown.index) == ["x", "y", "z"]
    assert list(shown["value"]) == ["0.500", "–", "1.000"]
    assert list(shown["name"]) == ["a", "–", "c"]
    assert list(shown["rank"]) == [1, "–", 3]
    assert list(shown["n"]) == [1, 2, 3]  # complete columns keep their numbers (and their sorting)
    assert shown["score"].dtype == float
    assert not any(fmt.shown_missing(v) for v in shown.to_numpy().ravel())
    assert fmt.columns_with_missing(frame) == ["name", "value", "rank"]
    assert fmt.columns_with_missing(shown) == ["name", "value", "rank"]
    assert frame["value"].isna().sum() == 1  # the input is not changed


@pytest.mark.parametrize("text", ["None", "nan", "NaN", "<NA>", " None "])
def test_leaked_missing_text_is_recognised(text):
    assert fmt.shown_missing(text)
    assert not fmt.shown_missing("Nonesuch")


def test_score_interval_is_wilson_for_0_1_scores_and_student_t_for_graded():
    from rageval.stats.intervals import mean_interval

    binary = [1, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert fmt.is_binary(binary) and not fmt.is_binary([0.5, 1])
    share = fmt.score_interval(binary)
    assert (share.low, share.high) == pytest.approx(wilson_interval(2, 10))
    graded = [0.5, 0.25, 1.0, 0.0]
    got = fmt.score_interval(graded)
    expected = mean_interval(graded)
    assert (got.mean, got.low, got.high) == pytest.approx((expected.mean, expected.low, expected.high))
    assert fmt.describe_score(binary).endswith("of 10") and fmt.describe_score(binary).startswith("20.0% [")
    assert fmt.describe_score(graded).startswith("0.438 [") and fmt.describe_score(graded).endswith("over 4")
