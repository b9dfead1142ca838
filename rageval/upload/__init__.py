"""A user's own run, uploaded: validated, converted into a rageval run file that every view shows.

Two input forms (``docs/upload_format.md`` documents both, with examples):

- **TREC**: a run file (``qid Q0 docid rank score tag``), optional qrels (``qid 0 docid rel``), a queries JSONL
  (``{"query_id", "text", "answers"}``) and a passages JSONL (``{"passage_id", "title", "text"}``);
- **JSONL with answers**: one query per line with its text, gold answers, ranked passages (id, title, text,
  score, labels by method, the single-passage answer) and the end-to-end answers from the top k.

Everything is parsed with ``json.loads`` and ``str.split`` (never pickle or eval), as strict UTF-8, within the
size limits of :class:`~rageval.upload.problems.UploadLimits`. Every problem is a
:class:`~rageval.upload.problems.Problem` naming the file, the 1-based line and what was expected; errors stop the
conversion, warnings do not (the list of which is which is in the format document). Measures are computed with the
engine's own code (:mod:`rageval.measures`) under the conventions of
:func:`rageval.erag.measures.compute_measure_values`; E2E answers are scored by exact match against the gold
answers (:func:`rageval.text_metrics.exact_match`).

The modules, in the order an upload flows through them: :mod:`~rageval.upload.problems` (the files, limits and
problems), :mod:`~rageval.upload.fields` (lines and JSON fields, read with every problem reported),
:mod:`~rageval.upload.parts` (what a reader read), :mod:`~rageval.upload.jsonl` (queries and passages files, and the
one-JSONL form), :mod:`~rageval.upload.trec` (the TREC form), :mod:`~rageval.upload.build` (measures and settings of
the converted run), :mod:`~rageval.upload.convert` (:func:`~rageval.upload.convert.convert_upload`, either form; the
one place a read upload is finished into a run),
:mod:`~rageval.upload.save` (run names and the atomic write), :mod:`rageval.cli.upload` (``rageval upload``).

The package re-exports nothing: import each name from the submodule that defines it.
"""
