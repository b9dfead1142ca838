"""Agreement of human labels: with the automatic label methods (Cohen's kappa per method, the 2x2 counts, the
disagreements to look at) and between annotators (pairwise kappa, Fleiss' kappa, Krippendorff's alpha). Pure
functions on the frames of :mod:`rageval.annotations` (latest labels per annotator and item); the statements'
automatic verdicts as label methods (:func:`statement_method_labels`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from rageval.annotations import CITATION_METHODS, STATEMENT_METHODS, USEFUL_THRESHOLD, _with_labels
from rageval.store.annotations import ITEM_COLUMNS


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa of two raters over ``n`` items, with the 2x2 confusion counts (first rater's label, second's)."""

    n: int
    kappa: float
    observed: float  # p_o
    expected: float  # p_e
    both_yes: int
    first_only: int  # first says 1, second 0
    second_only: int  # first says 0, second 1
    both_no: int
    reason: str = ""  # why kappa is undefined (NaN); empty when it is defined


def cohen_kappa(first: Sequence[int], second: Sequence[int]) -> Kappa:
    """Cohen's kappa (Cohen 1960, "A coefficient of agreement for nominal scales") of two binary raters.

    With the confusion counts a = both 1, b = first 1 and second 0, c = first 0 and second 1, d = both 0 over
    n = a + b + c + d items::

        p_o = (a + d) / n                                   observed agreement
        p_e = ((a + b)(a + c) + (c + d)(b + d)) / n^2       agreement expected by chance from each rater's shares
        kappa = (p_o - p_e) / (1 - p_e)

    kappa is 1 for perfect agreement and 0 for chance agreement. It is undefined (NaN, with ``reason``) when there
    is no item (n = 0) or when p_e = 1, i.e. both raters gave every item the same single label (0/0).
    """
    if len(first) != len(second):
        raise ValueError(f"cohen_kappa: {len(first)} labels against {len(second)}")
    bad = next((value for value in (*first, *second) if value not in (0, 1)), None)
    if bad is not None:  # checked before int(): int(0.7) would silently read a 0.7 as 0
        raise ValueError(f"cohen_kappa: labels must be 0 or 1, got {bad!r}")
    pairs = [(int(x), int(y)) for x, y in zip(first, second)]
    a = sum(1 for x, y in pairs if x == 1 and y == 1)
    b = sum(1 for x, y in pairs if x == 1 and y == 0)
    c = sum(1 for x, y in pairs if x == 0 and y == 1)
    d = sum(1 for x, y in pairs if x == 0 and y == 0)
    n = a + b + c + d
    if n == 0:
        return Kappa(0, math.nan, math.nan, math.nan, 0, 0, 0, 0, "no item labelled by both")
    observed = (a + d) / n
    expected = ((a + b) * (a + c) + (c + d) * (b + d)) / n ** 2
    if expected == 1:
        word = "1 (useful / supported)" if a else "0 (not)"
        return Kappa(n, math.nan, observed, expected, a, b, c, d,
                     f"both gave all {n} items the label {word}: chance agreement is 1, so kappa is 0/0")
    return Kappa(n, (observed - expected) / (1 - expected), observed, expected, a, b, c, d)


AGREEMENT_COLUMNS = ("n", "kappa", "observed", "expected", "both_useful", "person_only", "method_only", "both_not",
                     "reason")


def _kappa_row(kappa: Kappa) -> dict:
    return {"n": kappa.n, "kappa": kappa.kappa, "observed": kappa.observed, "expected": kappa.expected,
            "both_useful": kappa.both_yes, "person_only": kappa.first_only, "method_only": kappa.second_only,
            "both_not": kappa.both_no, "reason": kappa.reason}


def method_labels_of(items: pd.DataFrame, method_labels: pd.DataFrame, kind: str = "passage",
                     threshold: float = USEFUL_THRESHOLD) -> pd.DataFrame:
    """Each method's label on each of ``items`` (item columns): item columns, method, value (the stored value) and
    method_label (value >= threshold).

    Passage labels are qrels: a passage a method did not label, in a query it labelled, counts as 0 (trec_eval's
    reading, and how a run stores ``gold``: only its positive rows); queries a method never labelled are left out.
    """
    columns = list(ITEM_COLUMNS[kind])
    wanted = items[columns].drop_duplicates()
    theirs = method_labels[method_labels["query_id"].isin(set(wanted["query_id"]))]  # a few queries of many
    theirs = theirs[["method", *columns, "value"]].dropna(subset=["value"])
    if kind == "passage":
        judged = theirs[["method", "query_id"]].drop_duplicates()
        candidates = wanted.merge(judged, on="query_id")
        theirs = candidates.merge(theirs, on=["method", *columns], how="left").fillna({"value": 0.0})
    else:
        theirs = wanted.merge(theirs, on=columns, how="inner")
    return theirs.assign(method_label=(theirs["value"].astype(float) >= threshold).astype(int))


def pair_labels(person: pd.DataFrame, method_labels: pd.DataFrame, kind: str = "passage",
                threshold: float = USEFUL_THRESHOLD) -> pd.DataFrame:
    """Items labelled 0/1 by the person and by a method: item columns, method, label (person), value and
    method_label (:func:`method_labels_of`)."""
    items = list(ITEM_COLUMNS[kind])
    mine = _with_labels(person)[[*items, "label"]]
    return mine.merge(method_labels_of(mine, method_labels, kind, threshold), on=items, how="inner")


def agreement_with_methods(person: pd.DataFrame, method_labels: pd.DataFrame, kind: str = "passage",
                           threshold: float = USEFUL_THRESHOLD) -> pd.DataFrame:
    """Cohen's kappa between one person's labels and each automatic label method, over the items both labelled.

    ``person``: the person's current labels (:func:`latest_labels` of one annotator and run: item columns and
    ``label``; rows "unsure" or "skipped" are left out); ``method_labels``: long format, ``method``, item
    columns, ``value`` (a run's ``labels`` table, or :func:`statement_method_labels`). A method value counts as 1
    when ``>= threshold`` (graded eRAG labels); a passage a method left unlabelled in a query it labelled counts as
    0 (qrels).
    Returns one row per method (every method of ``method_labels``, n = 0 for those sharing no item) with
    :data:`AGREEMENT_COLUMNS`; ``person_only`` counts items the person called useful and the method not.
    """
    return agreement_from_pairs(pair_labels(person, method_labels, kind, threshold), method_labels["method"].unique())


def agreement_from_pairs(paired: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """:func:`agreement_with_methods` from the person's labels already paired with the methods' (:func:`pair_labels`),
    one row per method of ``methods``."""
    rows = []
    for method in sorted(methods):
        of_method = paired[paired["method"] == method]
        rows.append({"method": method, **_kappa_row(cohen_kappa(of_method["label"], of_method["method_label"]))})
    return pd.DataFrame(rows, columns=["method", *AGREEMENT_COLUMNS])


def disagreements(person: pd.DataFrame, method_labels: pd.DataFrame, kind: str = "passage",
                  threshold: float = USEFUL_THRESHOLD) -> pd.DataFrame:
    """The items where the person's label and a method's (binarised at ``threshold``) differ, one row per (item,
    method): item columns, method, label (the person's), value (the method's stored value), method_label."""
    return disagreements_from_pairs(pair_labels(person, method_labels, kind, threshold), kind)


def disagreements_from_pairs(paired: pd.DataFrame, kind: str = "passage") -> pd.DataFrame:
    """:func:`disagreements` from the labels already paired (:func:`pair_labels`)."""
    differing = paired[paired["label"] != paired["method_label"]]
    return differing.sort_values([*ITEM_COLUMNS[kind], "method"]).reset_index(drop=True)


def agreement_between_annotators(latest: pd.DataFrame, kind: str = "passage") -> pd.DataFrame:
    """Cohen's kappa of every pair of annotators (alphabetical) over the items both labelled; ``latest`` is
    :func:`latest_labels` of one run ("unsure" and "skipped" left out). Columns annotator_a, annotator_b and
    :data:`AGREEMENT_COLUMNS`, where ``person_only`` counts items annotator_a called useful and annotator_b not
    (``method_only`` the reverse)."""
    items = list(ITEM_COLUMNS[kind])
    latest = _with_labels(latest)
    names = sorted(latest["annotator"].unique())
    rows = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            a = latest.loc[latest["annotator"] == first, [*items, "label"]]
            b = latest.loc[latest["annotator"] == second, [*items, "label"]]
            both = a.merge(b, on=items, suffixes=("_a", "_b"))
            rows.append({"annotator_a": first, "annotator_b": second,
                         **_kappa_row(cohen_kappa(both["label_a"], both["label_b"]))})
    return pd.DataFrame(rows, columns=["annotator_a", "annotator_b", *AGREEMENT_COLUMNS])


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many raters") of N items each rated by
    the same number n >= 2 of raters into categories; ``counts[i][j]`` = raters who put item i in category j::

        P_i = (sum_j n_ij^2 - n) / (n (n - 1))      agreement on item i
        p_j = sum_i n_ij / (N n)                    share of category j
        kappa = (mean_i P_i - sum_j p_j^2) / (1 - sum_j p_j^2)

    NaN when there is no item or every rating is the same category (0/0)."""
    import numpy as np

    table = np.asarray(counts, dtype=float)
    if table.size == 0 or len(table) == 0:
        return math.nan
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("fleiss_kappa: every item needs the same number (at least 2) of ratings, got "
                         f"{sorted(set(raters.astype(int).tolist()))}")
    n = raters[0]
    per_item = ((table ** 2).sum(axis=1) - n) / (n * (n - 1))
    shares = table.sum(axis=0) / table.sum()
    chance = float((shares ** 2).sum())
    if chance == 1:
        return math.nan
    return float((per_item.mean() - chance) / (1 - chance))


def krippendorff_alpha(ratings: Sequence[Sequence[float]]) -> float:
    """Krippendorff's alpha for nominal data (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"):
    ``ratings[r][u]`` is rater r's value on unit u, NaN where r gave none; units with fewer than 2 values are left
    out. With the coincidences o_ck = sum_u (number of ordered pairs of values (c, k) in u) / (m_u - 1), n_c = sum_k
    o_ck and n = sum_c n_c::

        alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k

    NaN when fewer than 2 values are pairable or every pairable value is the same (no expected disagreement)."""
    import numpy as np

    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2 or data.size == 0:
        return math.nan
    values = np.unique(data[~np.isnan(data)])
    index = {v: i for i, v in enumerate(values)}
    coincidences = np.zeros((len(values), len(values)))
    for unit in data.T:
        present = unit[~np.isnan(unit)]
        if len(present) < 2:
            continue
        counts = np.zeros(len(values))
        for v in present:
            counts[index[v]] += 1
        coincidences += (np.outer(counts, counts) - np.diag(counts)) / (len(present) - 1)
    totals = coincidences.sum(axis=1)
    n = totals.sum()
    expected = n * n - (totals ** 2).sum()  # sum_{c != k} n_c n_k
    if n < 2 or expected == 0:
        return math.nan
    observed = coincidences.sum() - np.trace(coincidences)
    return float(1 - (n - 1) * observed / expected)


@dataclass(frozen=True)
class MultiRater:
    """Agreement of several annotators: Fleiss' kappa over the ``fleiss_items`` items every one of the
    ``annotators`` labelled 0/1, Krippendorff's alpha (nominal) over the ``alpha_items`` items at least two of them
    labelled 0/1 (``alpha_values`` labels in all)."""

    annotators: int
    fleiss_items: int
    fleiss: float
    alpha_items: int
    alpha_values: int
    alpha: float


def multi_annotator_agreement(latest: pd.DataFrame, kind: str = "passage") -> MultiRater:
    """:class:`MultiRater` of every annotator of :func:`latest_labels` of one run (items labelled "unsure" or
    "skipped" count as not labelled by that annotator)."""
    items = list(ITEM_COLUMNS[kind])
    rows = _with_labels(latest[latest["kind"] == kind] if "kind" in latest.columns else latest)
    names = sorted(rows["annotator"].unique())
    if rows.empty:
        return MultiRater(len(names), 0, math.nan, 0, 0, math.nan)
    wide = rows.pivot_table(index=items, columns="annotator", values="label", aggfunc="last")
    rated = wide.notna().sum(axis=1)
    everyone = wide[rated == len(names)]
    counts = [[int((row == 0).sum()), int((row == 1).sum())] for row in everyone.to_numpy()]
    fleiss = fleiss_kappa(counts) if counts and len(names) >= 2 else math.nan
    pairable = wide[rated >= 2]
    alpha = krippendorff_alpha(pairable.to_numpy(dtype=float).T) if len(pairable) else math.nan
    return MultiRater(len(names), len(everyone), fleiss, len(pairable), int(pairable.notna().sum().sum()), alpha)


def _citation_list(value) -> list:
    if isinstance(value, str):
        return list(json.loads(value))
    return list(value) if value is not None else []


def statement_method_labels(statements: pd.DataFrame) -> pd.DataFrame:
    """An attribution run's ``statements`` table as long-format method labels: ``method`` (the names of
    :data:`STATEMENT_METHODS`), scenario, query_id, answer_id, statement, value. Unjudged statements (NULL: a
    scenario without citations, no human label) are left out, and so are the NLI verdicts
    (:data:`CITATION_METHODS`) of a statement that cites nothing: the run stores 0 there (AutoAIS' convention for its
    answer-level mean) but nothing was judged, and the person is not asked about it either."""
    items = list(ITEM_COLUMNS["statement"])
    present = [column for column in STATEMENT_METHODS if column in statements.columns]
    long = statements[[*items, *present]].melt(id_vars=items, value_vars=present, var_name="method",
                                               value_name="value").dropna(subset=["value"])
    long = long.assign(method=long["method"].map(STATEMENT_METHODS), value=long["value"].astype(float))
    if "citations" in statements.columns:
        uncited = statements.loc[[not _citation_list(c) for c in statements["citations"]], items]
        uncited = uncited.assign(_uncited=True)
        long = long.merge(uncited, on=items, how="left")
        long = long[~(long["_uncited"].fillna(False).astype(bool) & long["method"].isin(CITATION_METHODS))]
    return long[["method", *items, "value"]].reset_index(drop=True)
