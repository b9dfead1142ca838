"""The data layer of the "what this run lacks" panel (:mod:`ui.render_lacks`): the run's missing pieces, keyed by
the file's ``(path, mtime_ns)`` like every table of :mod:`ui.data` (a finished job rewrites the file, so the next
rerun reads the new one), the complete jobs on the run, and starting one. No widgets."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rageval.jobs.spec import INTERRUPTED, JobSpec, job_status
from rageval.pipeline.summary import missing_pieces, run_summary
from rageval.store.jobs import Job
from ui import data, data_jobs

_TTL_S = 3600
#: The pieces in words, as the panel lists them ("eRAG labels: missing · E2E: k=5 only").
PIECE_NAMES = {"erag": "eRAG labels", "e2e": "E2E", "baselines": "baselines", "reteval": "LLM-retEval"}


@st.cache_data(ttl=_TTL_S, max_entries=64, show_spinner=False)
def load_missing_pieces(path: str, mtime_ns: int) -> dict[str, str]:
    """Piece -> what the run lacks of it (:func:`rageval.pipeline.summary.missing_pieces` of
    :func:`~rageval.pipeline.summary.run_summary`, the function ``rageval info --json`` prints); empty when the
    run has everything."""
    return missing_pieces(run_summary(path), data.load_settings(path, mtime_ns))


def lacks_text(lacking: dict[str, str]) -> str:
    """``eRAG labels: missing · E2E: k=5 only · LLM-retEval: missing`` (plain text)."""
    return " · ".join(f"{PIECE_NAMES.get(piece, piece)}: {what}" for piece, what in lacking.items())


def load_run_jobs(path: Path) -> list[Job[JobSpec]]:
    """The complete jobs on this run file, newest first (a dead worker's run file is repaired on the way)."""
    db = data_jobs.jobs_db()
    if not (db.exists() or db.is_symlink()):  # no job yet (a dangling link is an error)
        return []
    resolved = str(Path(path).resolve())
    found = [job for job in data_jobs.load_jobs(str(db), data_jobs.jobs_revision(db))
             if job.run_path == resolved and job.spec.is_complete]
    for job in found:
        if job_status(job) == INTERRUPTED and Path(job.run_path).is_file():
            from rageval.jobs.run_file import recover_run_file  # here: a page with a lacks panel loads no job writer

            recover_run_file(job.run_path)
    return found


def start_complete(spec: JobSpec) -> Job[JobSpec]:
    """Create the complete job and start its background worker (:class:`rageval.errors.JobError` on bad input)."""
    return data_jobs.start_rescore(spec)
