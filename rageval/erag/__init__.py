"""eRAG: evaluating retrieval by the RAG LLM's own use of each document (Salemi & Zamani, SIGIR 2024).

    G_q[d] = E(M(q, {d}), y)     the eRAG label of document d: the LLM's answer from d alone, scored (labels)
    E2E_q@k = E(M(q, R_k), y)    the end-to-end score it is judged against (e2e)

Any IR measure aggregates the labels into one score per ranked list (measures), next to the classic baselines
(baselines); cost compares eRAG's and E2E's time and memory (the paper's Table 2). Label-method names: methods.
"""

from typing import TYPE_CHECKING

from rageval.lazy import lazy_names

if TYPE_CHECKING:  # the names below are imported on first use (__getattr__): importing the package is cheap
    from rageval.erag.baselines import compute_llm_relevance_labels, compute_reference_labels
    from rageval.erag.e2e import compute_e2e
    from rageval.erag.labels import (
                                     ALL_METRICS,
                                     BINARY_METRICS,
                                     DOWNSTREAM_METRICS,
                                     MODEL_METRICS,
                                     EragSettings,
                                     ProgressCallback,
                                     compute_erag_labels,
                                     generate_in_batches,
                                     metric_labels,
                                     prompt_builder,
                                     score_outputs,
                                     top_k,
    )
    from rageval.erag.measures import (
                                     GRADED_MEASURES,
                                     compute_measure_values,
                                     is_graded_method,
                                     is_list_bound_method,
                                     measure_names,
    )
    from rageval.erag.methods import (
                                     CONTAINS_ANSWER,
                                     ERAG_PREFIX,
                                     GOLD,
                                     GOLD_PAGE,
                                     LLM_RELEVANCE,
                                     QRELS,
                                     LabelMethod,
                                     erag_method,
                                     parse_label_method,
    )

#: Name -> the submodule that defines it, imported when the name is first asked for (PEP 562).
_LAZY = {
    "ALL_METRICS": "labels",
    "BINARY_METRICS": "labels",
    "CONTAINS_ANSWER": "methods",
    "DOWNSTREAM_METRICS": "labels",
    "ERAG_PREFIX": "methods",
    "EragSettings": "labels",
    "GOLD": "methods",
    "GOLD_PAGE": "methods",
    "GRADED_MEASURES": "measures",
    "LLM_RELEVANCE": "methods",
    "LabelMethod": "methods",
    "MODEL_METRICS": "labels",
    "ProgressCallback": "labels",
    "QRELS": "methods",
    "compute_e2e": "e2e",
    "compute_erag_labels": "labels",
    "compute_llm_relevance_labels": "baselines",
    "compute_measure_values": "measures",
    "compute_reference_labels": "baselines",
    "erag_method": "methods",
    "generate_in_batches": "labels",
    "is_graded_method": "measures",
    "is_list_bound_method": "measures",
    "measure_names": "measures",
    "metric_labels": "labels",
    "parse_label_method": "methods",
    "prompt_builder": "labels",
    "score_outputs": "labels",
    "top_k": "labels",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "ALL_METRICS", "BINARY_METRICS", "CONTAINS_ANSWER", "DOWNSTREAM_METRICS", "ERAG_PREFIX", "GOLD", "GOLD_PAGE",
    "GRADED_MEASURES", "LLM_RELEVANCE", "MODEL_METRICS", "QRELS", "EragSettings", "LabelMethod", "ProgressCallback",
    "compute_e2e", "compute_erag_labels", "compute_llm_relevance_labels", "compute_measure_values",
    "compute_reference_labels", "erag_method", "generate_in_batches", "is_graded_method", "is_list_bound_method",
    "measure_names", "metric_labels", "parse_label_method", "prompt_builder", "score_outputs", "top_k",
]
