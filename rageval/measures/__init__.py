"""IR measures over ranked passages with binary or graded labels, modelled on ir_measures/trec_eval.

>>> from rageval.measures import compute_measures, aggregate_measures
>>> per_query = compute_measures(["P@1", "nDCG@10"], {"q1": ["d2", "d1"]}, {"q1": {"d1": 1}})
>>> aggregate_measures(per_query)["value"].tolist()
[0.0, 0.6309297535714575]

Each measure lives in its own module and registers itself in :mod:`rageval.measures.registry`;
label semantics (binary, integer-graded and fractional eRAG labels) are in :mod:`rageval.measures.base`.
Runs and qrels held as tables or TREC files take the columnar path of :mod:`rageval.measures.columnar`
(``compute_measures_from_frames``, ``compute_measures_from_files``), which fills the same label matrices;
TREC files are read by :mod:`rageval.trec`, the one TREC reader (``read_trec_run``, re-exported here).
"""

from rageval.measures.average_precision import AP
from rageval.measures.base import Measure, MeasureDefinition, RankedLabels
from rageval.measures.columnar import (
    build_ranked_labels_from_frames,
    compute_measures_from_files,
    compute_measures_from_frames,
)
from rageval.measures.compute import (
    aggregate_measures,
    build_ranked_labels,
    build_ranked_labels_from_run,
    compute_measure_values,
    compute_measures,
    compute_measures_from_run,
    rank_by_score,
    required_depths,
)
from rageval.measures.hit import Hit
from rageval.measures.ndcg import nDCG

# Importing a measure module registers it; the order here is the order of registered_measures().
from rageval.measures.precision import P
from rageval.measures.recall import R
from rageval.measures.reciprocal_rank import RR
from rageval.measures.registry import get_definition, parse_measure, register_measure, registered_measures
from rageval.measures.rprec import Rprec
from rageval.trec import read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run

__all__ = [
    "AP",
    "RR",
    "Hit",
    "Measure",
    "MeasureDefinition",
    "P",
    "R",
    "RankedLabels",
    "Rprec",
    "aggregate_measures",
    "build_ranked_labels",
    "build_ranked_labels_from_frames",
    "build_ranked_labels_from_run",
    "compute_measure_values",
    "compute_measures",
    "compute_measures_from_files",
    "compute_measures_from_frames",
    "compute_measures_from_run",
    "get_definition",
    "nDCG",
    "parse_measure",
    "rank_by_score",
    "read_trec_qrels",
    "read_trec_run",
    "register_measure",
    "registered_measures",
    "required_depths",
    "write_trec_qrels",
    "write_trec_run",
]
