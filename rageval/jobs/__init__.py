"""Re-scoring jobs: label a run's retrieved passages again with another model, in a background process.

A job is a run file, a label kind, a model and the passages to label: the top ``k`` of the run's ranking for all
or some of its queries. Two label kinds exist, both per passage:

- ``erag``: the model answers the question from each passage alone and the answer is scored against the gold
  answers with a downstream metric E (eRAG, Salemi & Zamani, SIGIR 2024: G_q[d] = E(M(q, {d}), y));
  method ``erag:<metric>@<model>``, e.g. ``erag:em@gemma-3-270m``;
- ``llm_relevance``: the model is asked whether the passage is relevant (eRAG's baseline (c), after Thomas et al.
  2023); method ``llm_relevance@<model>``.

A third kind, ``complete``, is not per passage: it computes what the run file lacks (eRAG labels, E2E answers at
the usual ks, the baselines, LLM-retEval; :func:`rageval.pipeline.summary.missing_pieces`) with
:func:`rageval.pipeline.run.complete_run_file`, which rewrites the file atomically once everything is computed.
Its progress is per stage (``erag 30/120``, stored in the jobs database as ``stage``, ``done``, ``total``); a
cancel or a kill leaves the run file as it was, and since every LLM call is in the LLM-call cache, resuming it
costs no call already made. Its method is ``complete@<model>``.

The worker runs as its own OS process (``rageval rescore run JOB``, started detached by :func:`launch_worker`),
so it outlives the dashboard's reruns and a closed browser. Its state lives in a small SQLite database, the
jobs database (:func:`default_jobs_db`: ``jobs.sqlite`` in the user cache, beside the LLM-call cache), which the
command line and every dashboard session share wherever the run file lives; ``$RAGEVAL_CACHE_DIR`` moves both.

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
  code (:func:`rageval.erag.compute_measure_values`) and written into the run file with what produced them
  (settings ``rescored``), so every view of the dashboard shows the new method like any other.

The modules, in the order a job flows through them: :mod:`~rageval.jobs.spec` (what a job is: :class:`JobSpec`,
:class:`Job`, statuses, the method name it writes), :mod:`~rageval.jobs.store` (the jobs database),
:mod:`~rageval.jobs.control` (create, launch, resume, cancel), :mod:`~rageval.jobs.worker` (the worker process),
:mod:`~rageval.jobs.labelling` (its model and labels), :mod:`~rageval.jobs.run_file` (what it reads from and writes
into the run file), :mod:`rageval.cli.rescore` (``rageval rescore``).
"""

from typing import TYPE_CHECKING

from rageval.lazy import lazy_names

if TYPE_CHECKING:  # the names below are imported on first use (__getattr__): importing the package is cheap
    from rageval.jobs.control import (
                                   cancel_job,
                                   check_no_conflict,
                                   check_writable,
                                   create_job,
                                   lacking_pieces,
                                   launch_worker,
                                   resume_job,
                                   start_job,
                                   worker_command,
    )
    from rageval.jobs.labelling import answer_from_evidence, check_model, erag_evidence, label_items, load_job_generator
    from rageval.jobs.run_file import (
                                   RUN_WRITE_TIMEOUT_S,
                                   JobInputs,
                                   compute_method_measures,
                                   labelled_depth,
                                   labelled_items,
                                   read_job_inputs,
                                   record_provenance,
                                   recover_run_file,
                                   run_cutoffs,
                                   write_labels,
                                   write_method_measures,
    )
    from rageval.jobs.spec import (
                                   ACTIVE,
                                   BACKENDS,
                                   CANCELLED,
                                   COMPLETE,
                                   DONE,
                                   DTYPES,
                                   FAILED,
                                   HEARTBEAT_S,
                                   INTERRUPTED,
                                   JOB_KINDS,
                                   LABEL_KINDS,
                                   PIECES,
                                   QUEUED,
                                   RUNNING,
                                   STALE_AFTER_S,
                                   Job,
                                   JobCancelled,
                                   JobError,
                                   JobSpec,
                                   Progress,
                                   job_progress,
                                   job_status,
                                   method_name,
                                   model_short_name,
                                   process_alive,
                                   worker_alive,
    )
    from rageval.jobs.store import SCHEMA_VERSION, JobStore, default_jobs_db
    from rageval.jobs.worker import run_complete_job, run_job

#: Name -> the submodule that defines it, imported when the name is first asked for (PEP 562).
_LAZY = {
    "ACTIVE": "spec",
    "BACKENDS": "spec",
    "CANCELLED": "spec",
    "COMPLETE": "spec",
    "DONE": "spec",
    "DTYPES": "spec",
    "FAILED": "spec",
    "HEARTBEAT_S": "spec",
    "INTERRUPTED": "spec",
    "JOB_KINDS": "spec",
    "Job": "spec",
    "JobCancelled": "spec",
    "JobError": "spec",
    "JobInputs": "run_file",
    "JobSpec": "spec",
    "JobStore": "store",
    "LABEL_KINDS": "spec",
    "PIECES": "spec",
    "Progress": "spec",
    "QUEUED": "spec",
    "RUNNING": "spec",
    "RUN_WRITE_TIMEOUT_S": "run_file",
    "SCHEMA_VERSION": "store",
    "STALE_AFTER_S": "spec",
    "answer_from_evidence": "labelling",
    "cancel_job": "control",
    "check_model": "labelling",
    "check_no_conflict": "control",
    "check_writable": "control",
    "compute_method_measures": "run_file",
    "create_job": "control",
    "default_jobs_db": "store",
    "erag_evidence": "labelling",
    "job_progress": "spec",
    "job_status": "spec",
    "label_items": "labelling",
    "labelled_depth": "run_file",
    "labelled_items": "run_file",
    "lacking_pieces": "control",
    "launch_worker": "control",
    "load_job_generator": "labelling",
    "method_name": "spec",
    "model_short_name": "spec",
    "process_alive": "spec",
    "read_job_inputs": "run_file",
    "record_provenance": "run_file",
    "recover_run_file": "run_file",
    "resume_job": "control",
    "run_complete_job": "worker",
    "run_cutoffs": "run_file",
    "run_job": "worker",
    "start_job": "control",
    "worker_alive": "spec",
    "worker_command": "control",
    "write_labels": "run_file",
    "write_method_measures": "run_file",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
                               "ACTIVE",
                               "BACKENDS",
                               "CANCELLED",
                               "COMPLETE",
                               "DONE",
                               "DTYPES",
                               "FAILED",
                               "HEARTBEAT_S",
                               "INTERRUPTED",
                               "JOB_KINDS",
                               "LABEL_KINDS",
                               "PIECES",
                               "QUEUED",
                               "RUNNING",
                               "RUN_WRITE_TIMEOUT_S",
                               "SCHEMA_VERSION",
                               "STALE_AFTER_S",
                               "Job",
                               "JobCancelled",
                               "JobError",
                               "JobInputs",
                               "JobSpec",
                               "JobStore",
                               "Progress",
                               "answer_from_evidence",
                               "cancel_job",
                               "check_model",
                               "check_no_conflict",
                               "check_writable",
                               "compute_method_measures",
                               "create_job",
                               "default_jobs_db",
                               "erag_evidence",
                               "job_progress",
                               "job_status",
                               "label_items",
                               "labelled_depth",
                               "labelled_items",
                               "lacking_pieces",
                               "launch_worker",
                               "load_job_generator",
                               "method_name",
                               "model_short_name",
                               "process_alive",
                               "read_job_inputs",
                               "record_provenance",
                               "recover_run_file",
                               "resume_job",
                               "run_complete_job",
                               "run_cutoffs",
                               "run_job",
                               "start_job",
                               "worker_alive",
                               "worker_command",
                               "write_labels",
                               "write_method_measures",
]
