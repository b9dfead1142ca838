"""IR measures over ranked passages with binary or graded labels, modelled on ir_measures/trec_eval.

>>> from rageval.measures import compute_measures, aggregate_measures
>>> per_query = compute_measures(["P@1", "nDCG@10", "P(rel=2)@2"], {"q1": ["d2", "d1"]}, {"q1": {"d1": 1}})
>>> aggregate_measures(per_query)["value"].tolist()
[0.0, 0.6309297535714575, 0.0]

A measure is named by one string, ir_measures' grammar (``NAME(param=value,...)@k``, parsed by
:func:`parse_measure`; the measures and their parameters are listed in docs/measures.md). Each measure family lives
in its own module and registers itself in :mod:`rageval.measures.registry`; label semantics (binary,
integer-graded and fractional eRAG labels) are in :mod:`rageval.measures.base`, the label parameters (``rel``,
``judged_only``, ``gains``, ``dcg``) in :mod:`rageval.measures.views`. Runs and qrels held as tables or TREC files
take the columnar path of :mod:`rageval.measures.columnar` (``compute_measures_from_frames``,
``compute_measures_from_files``), which fills the same label matrices; TREC files are read by :mod:`rageval.trec`,
the one TREC reader (``read_trec_run``, re-exported here).
"""

# Importing a measure module registers it (registered_measures() keeps the import order).
from rageval.measures.average_precision import AP
from rageval.measures.base import Measure, MeasureDefinition
from rageval.measures.bpref import Bpref
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
    requires_judgments,
)
from rageval.measures.counts import NumQ, NumRel, NumRelRet, NumRet
from rageval.measures.dcg import DCG
from rageval.measures.f_measure import F1, SetF
from rageval.measures.hit import Hit
from rageval.measures.infap import infAP
from rageval.measures.iprec import IPrec, IPrec11pt
from rageval.measures.judged import Judged
from rageval.measures.ndcg import nDCG
from rageval.measures.params import Param
from rageval.measures.precision import P
from rageval.measures.ranked_labels import RankedLabels
from rageval.measures.rbp import RBP
from rageval.measures.recall import R
from rageval.measures.reciprocal_rank import RR
from rageval.measures.registry import (
    get_definition,
    parse_measure,
    parse_measure_list,
    register_measure,
    registered_measures,
)
from rageval.measures.rprec import Rprec
from rageval.measures.set_measures import SetAP, SetP, SetR
from rageval.trec import read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run

__all__ = [
    "AP",
    "DCG",
    "F1",
    "RBP",
    "RR",
    "Bpref",
    "Hit",
    "IPrec",
    "IPrec11pt",
    "Judged",
    "Measure",
    "MeasureDefinition",
    "NumQ",
    "NumRel",
    "NumRelRet",
    "NumRet",
    "P",
    "Param",
    "R",
    "RankedLabels",
    "Rprec",
    "SetAP",
    "SetF",
    "SetP",
    "SetR",
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
    "infAP",
    "nDCG",
    "parse_measure",
    "parse_measure_list",
    "rank_by_score",
    "read_trec_qrels",
    "read_trec_run",
    "register_measure",
    "registered_measures",
    "required_depths",
    "requires_judgments",
    "write_trec_qrels",
    "write_trec_run",
]
