"""The names of label methods: what a run file's ``labels.method`` column holds, parsed in one place.

A name is ``<base>[@<model>]``:

- base ``erag:<metric>``: eRAG labels under a downstream metric (``erag:em``, ``erag:f1``; :mod:`rageval.erag.labels`);
- base ``gold``, ``gold_page``, ``contains_answer``, ``llm_relevance``: the classic baselines
  (:mod:`rageval.erag.baselines`);
- base ``umbrela``: the LLM's graded 0-3 relevance with UMBRELA's prompt (Upadhyay et al. 2024; TREC RAG 2024's
  assessor), beside the yes/no ``llm_relevance``: graded labels, relevant from grade 2;
- base ``qrels``: the relevance judgments given with the data (a TREC qrels file, uploaded or ``--qrels``), as given;
- any other base: a user's own method, named in an upload;
- ``@<model>``: labels re-scored with another model than the run's own (``erag:em@gemma-3-270m``,
  ``llm_relevance@smollm2``; written by :mod:`rageval.jobs`). The base decides the measure rules
  (:mod:`rageval.erag.measures`); the model only tells the labels apart.

``qrels`` and ``gold`` are one concept seen twice: relevance *given* with the data, not computed by a model, and
global (an unretrieved relevant passage counts for recall). ``qrels`` keeps the judgments as given (possibly graded);
``gold`` is the binary view, 1 for each of a query's gold passages (``Query.gold_passage_ids``). When qrels are
given, a query's gold passages are its passages with a positive qrels value, so ``gold`` = ``qrels`` > 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rageval.prompts import UMBRELA_RELEVANT_GRADE

ERAG_PREFIX = "erag:"
GOLD = "gold"
GOLD_PAGE = "gold_page"
CONTAINS_ANSWER = "contains_answer"
LLM_RELEVANCE = "llm_relevance"
UMBRELA = "umbrela"
QRELS = "qrels"
MODEL_SEPARATOR = "@"
#: The order label methods are listed in (docs/results.md's tables, the dashboard's tables, selectors and legends):
#: eRAG by downstream metric, then the baselines of eRAG's Table 1, the LLM's relevance judgements last (yes/no,
#: then UMBRELA's grades).
METHOD_ORDER = ("erag:em", "erag:accuracy", "erag:f1", "erag:rougeL", "erag:bertscore", CONTAINS_ANSWER, GOLD,
                GOLD_PAGE, LLM_RELEVANCE, UMBRELA)


@dataclass(frozen=True)
class LabelMethod:
    """A parsed label-method name: ``base`` (``erag:em``, ``gold``) and the ``model`` of re-scored labels (or None).

    ``str(LabelMethod("erag:em", "gemma-3-270m"))`` is ``"erag:em@gemma-3-270m"``, and :func:`parse_label_method`
    of that string gives the same object back.
    """

    base: str
    model: str | None = None

    def __post_init__(self):
        if not self.base or MODEL_SEPARATOR in self.base:
            raise ValueError(f"label method base {self.base!r}: expected a non-empty name without "
                             f"'{MODEL_SEPARATOR}'")
        if self.base.startswith(ERAG_PREFIX) and not self.metric:
            raise ValueError(f"label method {self.base!r}: expected a metric after '{ERAG_PREFIX}', e.g. 'erag:em'")
        if self.model is not None and (not self.model or MODEL_SEPARATOR in self.model):
            raise ValueError(f"label method model {self.model!r}: expected a non-empty name without "
                             f"'{MODEL_SEPARATOR}'")

    @property
    def metric(self) -> str | None:
        """The downstream metric of eRAG labels (``em`` of ``erag:em@gemma``); None for other methods."""
        return self.base[len(ERAG_PREFIX):] if self.is_erag else None

    @property
    def is_erag(self) -> bool:
        return self.base.startswith(ERAG_PREFIX)

    @property
    def name(self) -> str:
        return f"{self.base}{MODEL_SEPARATOR}{self.model}" if self.model is not None else self.base

    def __str__(self) -> str:
        return self.name


def parse_label_method(name: str) -> LabelMethod:
    """``"erag:em@gemma-3-270m"`` -> ``LabelMethod("erag:em", "gemma-3-270m")``; ``"gold"`` -> ``LabelMethod("gold")``.

    Raises ``ValueError`` for a name that is not ``<base>[@<model>]`` (empty, ``erag:`` without a metric, an empty
    or second ``@`` part).
    """
    base, separator, model = name.partition(MODEL_SEPARATOR)
    return LabelMethod(base, model if separator else None)


#: Label-method base -> the lowest grade that counts as relevant, for methods whose labels are grades on a scale
#: (UMBRELA's 0-3: relevant from 2, its own and TREC RAG 2024's convention). nDCG reads the grades; every other
#: measure, and the share of relevant labels, reads "grade >= threshold" (:mod:`rageval.erag.measures`).
RELEVANT_FROM_GRADE = {UMBRELA: UMBRELA_RELEVANT_GRADE}


def relevant_grade(method: str) -> int | None:
    """The lowest grade that counts as relevant when ``method`` (whichever model made it: ``umbrela@gemma``) labels
    on a scale of grades (:data:`RELEVANT_FROM_GRADE`); None for 0/1 and [0, 1]-graded methods, and for a name that
    is not ``<base>[@<model>]``."""
    try:
        return RELEVANT_FROM_GRADE.get(parse_label_method(method).base)
    except ValueError:
        return None


def erag_method(metric: str, model: str | None = None) -> str:
    """The label-method name of eRAG labels made with ``metric`` (and re-scored with ``model``): ``"erag:em"``,
    ``"erag:em@gemma-3-270m"``."""
    return LabelMethod(f"{ERAG_PREFIX}{metric}", model).name


def method_sort_key(method: str) -> tuple[int, int, str]:
    """Sort key of a label method: those of :data:`METHOD_ORDER` in that order, then any other eRAG method (a
    re-scored ``erag:em@model``, ``erag:<metric>``), then the rest, each alphabetically."""
    if method in METHOD_ORDER:
        return 0, METHOD_ORDER.index(method), method
    return (1 if method.startswith(ERAG_PREFIX) else 2), 0, method


def order_label_methods(methods: Iterable[str]) -> list[str]:
    """``methods`` sorted by :func:`method_sort_key`."""
    return sorted(methods, key=method_sort_key)
