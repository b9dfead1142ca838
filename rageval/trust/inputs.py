"""What a trust report is computed from (:class:`TrustInputs`: the run's items, each method's automatic labels and
the people's labels as plain tables) and the rule by which the people's label of an item is decided
(:data:`LABEL_RULE`). Read by :mod:`rageval.trust.report`, which builds them and the report, and by
:mod:`rageval.trust.plan`, which picks the next items to label from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

#: How the people's label of an item is decided (:mod:`rageval.trust.report`'s docstring), said by the page and
#: ``--json``.
LABEL_RULE = ("in an annotation queue: an adjudicated label is the item's label; otherwise the majority of the "
              "queue's own annotators of the item. Outside a queue: the majority of every annotator's latest label. "
              "A tie is unresolved: listed, not counted as 0.")


@dataclass(frozen=True)
class TrustInputs:
    """What :func:`rageval.trust.report.build_report` needs, as plain tables: ``population`` (query_id, passage_id,
    rank: every retrieved passage), ``auto`` (the same rows' 0/1 label of each method: one column per method,
    aligned with ``population``), ``human`` (query_id, passage_id, label: the people's 0/1 label, one row per
    labelled item, with ``labelled_at`` when known), ``e2e`` (query_id -> E2E score at k; NaN: none) and the
    queries in run order."""

    run: str
    k: int
    population: pd.DataFrame
    auto: pd.DataFrame
    human: pd.DataFrame
    e2e: Mapping[str, float]
    queries: Sequence[str]
    annotators: tuple[str, ...] = ()
    #: Items whose people's label is a tie: query_id, passage_id, ones, zeros, where ("queue N" or "all labels").
    unresolved: tuple[dict, ...] = ()
    label_rule: str = LABEL_RULE
    adjudicated: int = 0  # items whose label is an adjudication (a queue's)
