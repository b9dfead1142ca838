"""Re-scoring jobs: label a run's retrieved passages again with another model, in a background process.

A job is a run file, a label kind, a model and the passages to label: the top ``k`` of the run's ranking for all
or some of its queries. The label kinds are per passage:

- ``erag``: the model answers the question from each passage alone and the answer is scored against the gold
  answers with a downstream metric E (eRAG, Salemi & Zamani, SIGIR 2024: G_q[d] = E(M(q, {d}), y));
  method ``erag:<metric>@<model>``, e.g. ``erag:em@gemma-3-270m``;
- an LLM judge (:func:`rageval.labelmethods.judges`: the yes/no relevance of eRAG's baseline (c), the graded 0-3
  one, a judge file's): the model judges each passage with the judge's prompt; method ``<judge>@<model>``.

A third kind, ``complete``, is not per passage: it computes what the run file lacks (eRAG labels, E2E answers at
the usual ks, the baselines, LLM-retEval; :func:`rageval.pipeline.summary.missing_pieces`) with
:func:`rageval.pipeline.run.complete_run_file`, which rewrites the file atomically once everything is computed.
Its progress is per stage (``erag 30/120``, stored in the jobs database as ``stage``, ``done``, ``total``), and
over the whole job: before its first LLM call the worker counts each stage's calls, and how many the LLM-call cache
already holds, with the dry run (:func:`rageval.pipeline.run.completion_plan`), stored as the job's ``plan``, so the
ETA is the whole job's (:func:`~rageval.jobs.spec.job_estimate`); until that first call the worker says what it does
(counting, converting or loading the model: ``activity``); a
cancel or a kill leaves the run file as it was, and since every LLM call is in the LLM-call cache, resuming it
costs no call already made. Its method is ``complete@<model>``.

The worker runs as its own OS process (``rageval rescore run JOB``, started detached by
:func:`~rageval.jobs.control.launch_worker`), so it outlives the dashboard's reruns and a closed browser. Its state
lives in a small SQLite database, the jobs database (:func:`~rageval.store.jobs.default_jobs_db`: ``jobs.sqlite`` in
the user cache, beside the LLM-call cache), which the command line and every dashboard session share wherever the
run file lives; ``$RAGEVAL_CACHE_DIR`` moves both.

What survives what:

- every label is written into the run file itself (tables ``labels`` and ``label_evidence``: the model's output
  from that passage alone is the evidence) in one transaction per small batch, as soon as it is produced, so a
  killed worker loses at most the batch in flight; every LLM call also goes through the LLM-call cache, so that
  batch costs nothing when the job runs again;
- cancelling sets a flag the worker reads between batches (``cancel_job(..., terminate=True)`` also sends the
  worker SIGTERM, which the command line turns into the same clean stop);
- resuming starts the same job again: the labels already in the run file are skipped (they are the record of
  what is done), so every passage is labelled exactly once;
- when the job is done, the per-query measure values of the new method are computed with the run builders' own
  code (:func:`rageval.erag.measures.compute_measure_values`) and written into the run file with what produced
  them (settings ``rescored``), so every view of the dashboard shows the new method like any other.

The modules, in the order a job flows through them: :mod:`~rageval.jobs.spec` (what a job is: :class:`JobSpec`,
the jobs database reading it, :class:`JobStore`, status and progress, the method name it writes), with the jobs
database's SQL and its row :class:`~rageval.store.jobs.Job` and stored statuses in :mod:`rageval.store.jobs`;
:mod:`~rageval.jobs.control` (create, launch, resume, cancel), :mod:`~rageval.jobs.worker` (the worker process),
:mod:`~rageval.jobs.labelling` (its model and labels), :mod:`~rageval.jobs.run_file` (what it reads from and writes
into the run file), :mod:`rageval.cli.rescore` (``rageval rescore``).

The package re-exports nothing: import each name from the submodule that defines it.
"""
