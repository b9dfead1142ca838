"""One formatter for every number the dashboard shows (pure: no streamlit import).

- A missing value is :data:`MISSING` ("–"), never "None" or "nan"; tables say what it means in a column's help
  (:data:`MISSING_HELP`, :func:`display_frame` for a frame whose cells are text).
- An interval is ``[-0.03, 0.16]`` (square brackets, a comma, never a hyphen that reads as a minus sign), after its
  estimate: ``0.412 [0.21, 0.60]``.
- A share of 0/1 outcomes (exact match, Yes verdicts, a hit) is a percentage with its Wilson interval
  (:func:`rageval.stats.intervals.wilson_interval`, never outside [0, 1]): ``23.3% [17.6%, 30.2%]``.
- Fixed digits per kind: correlations 3 (interval 2), means of graded scores 3, shares 1 decimal of a percent,
  counts with thousands separators.
- Text from data shown in Markdown goes through :func:`escape_markdown`.
"""

from __future__ import annotations

import numbers
import re
import string
from collections.abc import Iterable
from typing import Any

import pandas as pd

from rageval.labelmethods import display_name, method_order

#: What a missing value looks like in a cell or a metric (an en dash).
MISSING = "–"
#: The help text of a column that can hold missing values.
MISSING_HELP = "– means no value: the run stores none here (not computed, or not defined for this row)"
#: Digits of each kind of number.
CORRELATION_DIGITS = 3
INTERVAL_DIGITS = 2
MEAN_DIGITS = 3
SHARE_DIGITS = 1
_MARKDOWN_SPECIALS = frozenset(string.punctuation)
_WHITESPACE_RUN = re.compile(r"\s+")


def is_missing(value: Any) -> bool:
    """None, NaN, pandas' NA/NaT: a value the dashboard shows as :data:`MISSING`."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or array is not one missing value
        return False


def format_number(value: Any, digits: int = MEAN_DIGITS) -> str:
    """A number with ``digits`` decimals (integers as they are, with thousands separators); :data:`MISSING` when
    missing."""
    if is_missing(value):
        return MISSING
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    return f"{float(value):,.{digits}f}"


def format_count(value: Any) -> str:
    """A count, ``1,234``; :data:`MISSING` when missing."""
    return MISSING if is_missing(value) else f"{int(value):,}"


def count_noun(count: int, noun: str, plural: str | None = None) -> str:
    """``1 run`` / ``2 runs`` / ``1,000 queries``: a count with its noun in the right number."""
    return f"{count:,} {noun if count == 1 else (plural or noun + 's')}"


def format_interval(low: Any, high: Any, digits: int = INTERVAL_DIGITS) -> str:
    """``[-0.03, 0.16]``; :data:`MISSING` when either end is missing (fewer than 2 values, say)."""
    if is_missing(low) or is_missing(high):
        return MISSING
    return f"[{float(low):.{digits}f}, {float(high):.{digits}f}]"


def format_estimate(value: Any, low: Any, high: Any, digits: int = MEAN_DIGITS,
                    interval_digits: int = INTERVAL_DIGITS) -> str:
    """``0.412 [0.21, 0.60]``: the estimate and its interval; the estimate alone when it has no interval;
    :data:`MISSING` when the estimate is missing."""
    if is_missing(value):
        return MISSING
    shown = f"{float(value):.{digits}f}"
    if is_missing(low) or is_missing(high):
        return shown
    return f"{shown} {format_interval(low, high, interval_digits)}"


def format_correlation(value: Any, low: Any, high: Any) -> str:
    """A correlation with its interval, ``0.412 [0.21, 0.60]``, or ``undefined (constant)`` when the coefficient
    is undefined (one of the two variables is constant)."""
    if is_missing(value):
        return "undefined (constant)"
    return format_estimate(value, low, high, CORRELATION_DIGITS, INTERVAL_DIGITS)


def format_share(value: Any, digits: int = SHARE_DIGITS) -> str:
    """A share in [0, 1] as a percentage, ``23.3%``; :data:`MISSING` when missing."""
    return MISSING if is_missing(value) else f"{100 * float(value):.{digits}f}%"


def format_share_interval(low: Any, high: Any, digits: int = SHARE_DIGITS) -> str:
    """An interval of a share as percentages, ``[17.6%, 30.2%]``; :data:`MISSING` when missing."""
    if is_missing(low) or is_missing(high):
        return MISSING
    return f"[{format_share(low, digits)}, {format_share(high, digits)}]"


def format_share_estimate(value: Any, low: Any, high: Any, digits: int = SHARE_DIGITS) -> str:
    """``23.3% [17.6%, 30.2%]``: a share and its (Wilson) interval; the share alone without one."""
    if is_missing(value):
        return MISSING
    if is_missing(low) or is_missing(high):
        return format_share(value, digits)
    return f"{format_share(value, digits)} {format_share_interval(low, high, digits)}"


def share_of(values: Iterable[Any], confidence: float = 0.95):
    """The share of 1s among 0/1 ``values`` (missing ones dropped) with its Wilson interval
    (:func:`rageval.stats.intervals.share_interval`): a ``MeanInterval`` (mean, low, high, n)."""
    from rageval.stats.intervals import share_interval

    return share_interval(_numbers(values).to_numpy(float), confidence)


def describe_share(values: Iterable[Any], confidence: float = 0.95) -> str:
    """``23.3% [17.6%, 30.2%] of 300``: :func:`share_of` in words for a metric or a caption."""
    share = share_of(values, confidence)
    if share.n == 0:
        return MISSING
    return f"{format_share_estimate(share.mean, share.low, share.high)} of {share.n:,}"


def _numbers(values: Iterable[Any]) -> pd.Series:
    """``values`` as floats, anything that is not a number as NaN (a numeric Series or array without a copy to
    Python objects: this runs on a whole run's per-query scores)."""
    if isinstance(values, pd.Series) and pd.api.types.is_numeric_dtype(values):
        return values.astype(float)
    return pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").astype(float)


def is_binary(values: Iterable[Any]) -> bool:
    """Whether every present value is 0 or 1 (exact match, a Yes verdict, a hit): its mean is a share."""
    return bool(_numbers(values).dropna().isin((0.0, 1.0)).all())


def score_interval(values: Iterable[Any], confidence: float = 0.95):
    """The mean of per-query scores with its interval: :func:`share_of` (Wilson) when every score is 0 or 1, else
    the Student-t interval (:func:`rageval.stats.intervals.mean_interval`)."""
    from rageval.stats.intervals import mean_interval

    numbers_ = _numbers(values)
    if is_binary(numbers_):
        return share_of(numbers_, confidence)
    return mean_interval(numbers_.to_numpy(float), confidence)


def describe_score(values: Iterable[Any], confidence: float = 0.95) -> str:
    """A mean score in words with its interval and n: ``23.3% [17.6%, 30.2%] of 300`` for 0/1 scores (a share,
    Wilson interval), ``0.412 [0.38, 0.44] over 300`` for graded ones (Student-t)."""
    numbers_ = _numbers(values)
    estimate = score_interval(numbers_, confidence)
    if estimate.n == 0:
        return MISSING
    if is_binary(numbers_):
        return f"{format_share_estimate(estimate.mean, estimate.low, estimate.high)} of {estimate.n:,}"
    return f"{format_estimate(estimate.mean, estimate.low, estimate.high)} over {estimate.n:,}"


def format_cell(value: Any, digits: int = MEAN_DIGITS) -> Any:
    """A table cell for display: missing -> :data:`MISSING`, floats with ``digits`` decimals, the rest as is."""
    if is_missing(value):
        return MISSING
    if isinstance(value, float):
        return format_number(value, digits)
    return value


def display_frame(frame: pd.DataFrame, digits: int | dict[str, int] = MEAN_DIGITS) -> pd.DataFrame:
    """``frame`` with every column that holds a missing value turned into text: missing cells :data:`MISSING`,
    floats with fixed ``digits`` (or per column). Complete columns keep their numbers (and their sorting); the
    index is kept; the input is not changed. Pair a converted column with :data:`MISSING_HELP`
    (:func:`columns_with_missing`)."""
    shown = frame.copy()
    for column in shown.columns:
        if shown[column].isna().any():
            places = digits.get(column, MEAN_DIGITS) if isinstance(digits, dict) else digits
            shown[column] = [format_cell(v, places) for v in shown[column].astype(object)]
    return shown


def columns_with_missing(frame: pd.DataFrame) -> list[str]:
    """The columns of ``frame`` that hold a missing value (or :data:`MISSING`), which get :data:`MISSING_HELP`."""
    return [c for c in frame.columns
            if frame[c].isna().any() or (frame[c].astype(object) == MISSING).any()]


def shown_missing(value: Any) -> bool:
    """Whether a displayed cell reads like a missing value leaked through (``None``, ``nan``, ``NaN``, ``<NA>``)."""
    return is_missing(value) or str(value).strip() in {"None", "nan", "NaN", "<NA>", "NaT", "null"}


def escape_markdown(text: Any) -> str:
    """``text`` as Markdown that displays literally: every ASCII punctuation character is backslash-escaped
    (CommonMark allows it for all of them), which also disarms HTML tags, links, ``:emoji:`` codes and
    ``$math$``; line breaks become spaces so the text stays one paragraph."""
    one_line = _WHITESPACE_RUN.sub(" ", str(text))  # a leading/trailing space stays, so pieces can be joined
    return "".join(f"\\{ch}" if ch in _MARKDOWN_SPECIALS else ch for ch in one_line)


# --- names of label methods and judges -----------------------------------------------------------------

#: The built-in label methods' display names (each kind's own, :mod:`rageval.labelmethods`).
METHOD_NAMES = {method: display_name(method) for method in method_order()}
JUDGE_NAMES = {"em": "exact match", "token_f1": "token F1", "cosine": "MiniLM cosine", "llm": "LLM (few-shot prompt)"}


def method_name(method: str) -> str:
    """Display name of a label method (``erag:em`` -> ``eRAG EM``); unknown methods are shown as stored."""
    return display_name(method)


def judge_name(judge: str) -> str:
    """Display name of an LLM-retEval judge (``token_f1`` -> ``token F1``); unknown judges as stored."""
    return JUDGE_NAMES.get(judge, judge)
