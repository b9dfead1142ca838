"""A user's own run, uploaded: validated, converted into a rageval run file that every view shows.

Two input forms (``docs/upload_format.md`` documents both, with examples):

- **TREC**: a run file (``qid Q0 docid rank score tag``), optional qrels (``qid 0 docid rel``), a queries JSONL
  (``{"query_id", "text", "answers"}``) and a passages JSONL (``{"passage_id", "title", "text"}``);
- **JSONL with answers**: one query per line with its text, gold answers, ranked passages (id, title, text,
  score, labels by method, the single-passage answer) and the end-to-end answers from the top k.

Everything is parsed with ``json.loads`` and ``str.split`` (never pickle or eval), as strict UTF-8, within the
size limits of :class:`UploadLimits`. Every problem is a :class:`Problem` naming the file, the 1-based line and
what was expected; errors stop the conversion, warnings do not (the list of which is which is in the format
document). Measures are computed with the engine's own code (:mod:`rageval.measures`) under the conventions of
:func:`rageval.erag.compute_measure_values`; E2E answers are scored by exact match against the gold answers
(:func:`rageval.text_metrics.exact_match`).

The modules, in the order an upload flows through them: :mod:`~rageval.upload.problems` (the files, limits and
problems), :mod:`~rageval.upload.fields` (lines and JSON fields, read with every problem reported),
:mod:`~rageval.upload.jsonl` (queries and passages files, and the one-JSONL form), :mod:`~rageval.upload.trec` (the
TREC form), :mod:`~rageval.upload.build` (measures and settings of the converted run),
:mod:`~rageval.upload.convert` (:func:`convert_upload`, either form), :mod:`~rageval.upload.save` (run names and the
atomic write), :mod:`rageval.cli.upload` (``rageval upload``).
"""

from rageval.upload.build import STANDARD_CUTOFFS, compute_upload_measures, is_graded, measure_cutoffs
from rageval.upload.convert import FORMS, convert_upload
from rageval.upload.fields import FieldReader, describe, encoding_problem, read_json_records
from rageval.upload.jsonl import convert_jsonl_upload, read_passages_file, read_queries_file
from rageval.upload.problems import (
                                     DEFAULT_LIMITS,
                                     ERROR,
                                     MAX_UPLOAD_MIB,
                                     WARNING,
                                     Problem,
                                     Problems,
                                     UploadError,
                                     UploadFile,
                                     UploadLimits,
                                     UploadResult,
                                     raise_first_error,
)
from rageval.upload.save import check_run_name, name_in_use, run_file_path, save_upload
from rageval.upload.trec import TREC_QRELS_FIELDS, TREC_RUN_FIELDS, convert_trec_upload, read_trec_qrels

__all__ = [
                                     "DEFAULT_LIMITS",
                                     "ERROR",
                                     "FORMS",
                                     "MAX_UPLOAD_MIB",
                                     "STANDARD_CUTOFFS",
                                     "TREC_QRELS_FIELDS",
                                     "TREC_RUN_FIELDS",
                                     "WARNING",
                                     "FieldReader",
                                     "Problem",
                                     "Problems",
                                     "UploadError",
                                     "UploadFile",
                                     "UploadLimits",
                                     "UploadResult",
                                     "check_run_name",
                                     "compute_upload_measures",
                                     "convert_jsonl_upload",
                                     "convert_trec_upload",
                                     "convert_upload",
                                     "describe",
                                     "encoding_problem",
                                     "is_graded",
                                     "measure_cutoffs",
                                     "name_in_use",
                                     "raise_first_error",
                                     "read_json_records",
                                     "read_passages_file",
                                     "read_queries_file",
                                     "read_trec_qrels",
                                     "run_file_path",
                                     "save_upload",
]
