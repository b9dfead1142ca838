"""The names of label methods: what a run file's ``labels.method`` column holds.

- ``erag:<metric>``: eRAG labels under a downstream metric (``erag:em``, ``erag:f1``);
- ``gold``, ``gold_page``, ``contains_answer``, ``llm_relevance``: the classic baselines
  (:mod:`rageval.erag.baselines`);
- ``qrels``: the relevance judgments a user gave with their run (:mod:`rageval.upload`).
"""

from __future__ import annotations

GOLD = "gold"
GOLD_PAGE = "gold_page"
CONTAINS_ANSWER = "contains_answer"
LLM_RELEVANCE = "llm_relevance"


def erag_method(metric: str) -> str:
    """The label-method name of eRAG labels made with ``metric``, e.g. ``"erag:em"``."""
    return f"erag:{metric}"
