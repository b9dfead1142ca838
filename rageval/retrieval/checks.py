"""Argument checks every retriever and fusion method shares."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rageval.types import Query


def check_k(k: int) -> int:
    """``k`` as an int, or ValueError when fewer than one passage is asked for."""
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return int(k)


def check_unique_query_ids(queries: Sequence[Query]) -> None:
    """ValueError naming the repeated ids: batch results are keyed by query id."""
    counts = Counter(q.query_id for q in queries)
    repeated = sorted(qid for qid, n in counts.items() if n > 1)
    if repeated:
        raise ValueError(f"batch_search: query ids must be unique; repeated: {repeated[:5]}")
