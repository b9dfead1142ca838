"""The "what this run lacks" panel, shown on the run overview and on the Correlations, LLM-retEval and Failure-cases
pages: the pieces the run lacks in words, a small form that starts the background job computing them with the
chosen model (:mod:`rageval.jobs`, kind ``complete``), and that job's progress, polled until it ends; then the whole
page reruns and, the run file being rewritten, shows the new data."""

from __future__ import annotations

import shlex
from pathlib import Path

import streamlit as st

from rageval.errors import JobError, RagevalError, StoreError
from rageval.generation.factory import DEFAULT_BASE_URL, DEFAULT_MODEL
from rageval.jobs.spec import ACTIVE, COMPLETE, JobSpec, job_status
from rageval.store.jobs import DONE, Job
from rageval.team.roles import RUN_JOBS
from ui import auth, data, data_jobs, render, render_jobs
from ui import data_lacks as loaders

REFRESH_S = 2.0
MODEL_CHOICES = {"packaged": f"{DEFAULT_MODEL} (packaged, runs here on the CPU or a GPU)",
                 "folder": "A local Hugging Face model folder",
                 "server": "An OpenAI-compatible server (vLLM, Ollama, rageval serve-model)"}
NOTICE_STATE = "lacks.notice"


def complete_command(path: Path) -> str:
    """The command line that does what the button does."""
    return f"rageval rescore start {shlex.quote(str(path))} --complete"


def model_form(path: Path) -> JobSpec | None:
    """The small form: which model computes the missing pieces; the job's spec on submit, else None. The choice
    stands outside the form, so choosing reruns the page and the form shows only the inputs that choice needs
    (none for the packaged model; the folder; the server's URL and model name)."""
    choice = st.radio("Model", list(MODEL_CHOICES), format_func=MODEL_CHOICES.get, key="lacks.model_choice",
                      horizontal=True)
    model_folder = base_url = served_model = ""
    with st.form("lacks.form", border=False):
        if choice == "folder":
            model_folder = st.text_input("Model folder (local Hugging Face model)", key="lacks.folder",
                                         placeholder="/path/to/model")
        elif choice == "server":
            url, served = st.columns([2, 1])
            base_url = url.text_input("Server base URL", DEFAULT_BASE_URL, key="lacks.base_url")
            served_model = served.text_input("Served model name", key="lacks.served_model")
        submitted = st.form_submit_button("Compute missing pieces", type="primary")
    if not submitted:
        return None
    if choice == "folder":
        if not model_folder.strip():
            raise JobError("give the model folder (a local Hugging Face model), or choose another model")
        model, backend = model_folder.strip(), "transformers"
    elif choice == "server":
        if not served_model.strip():
            raise JobError("give the name of the model the server serves")
        model, backend = served_model.strip(), "openai"
    else:
        model, backend = DEFAULT_MODEL, "transformers"
    return JobSpec.from_flat(str(path), model=model, backend=backend, base_url=base_url.strip() or DEFAULT_BASE_URL,
                   label_kind=COMPLETE)


def job_in_progress(path: Path) -> bool:
    """Whether a complete job on the run at ``path`` is queued or running (its panel then shows the job, not the
    button)."""
    try:
        return _active(loaders.load_run_jobs(path))
    except StoreError:  # a damaged jobs database: the panel says so, and no job can be running from it
        return False


def compute_hint(path: Path, what: str, alternative: str = "") -> str:
    """The sentence a page shows where it lacks ``what``, following the panel above it: while a job computes it,
    that the job is on it; else to press the button (``alternative``: another way, appended, e.g. a command)."""
    if job_in_progress(path):
        return (f"A background job is computing {what} now (its progress is above); this page fills in when it "
                "is done.")
    return f"Compute {what} with the button above{alternative}"


def _act(job: Job[JobSpec], action: str | None) -> None:
    try:
        data_jobs.apply_action(job.job_id, action)
    except RagevalError as error:
        st.error(render.escape_markdown(str(error)))
    else:
        if action:
            st.rerun()


def _active(job_list: list[Job[JobSpec]]) -> bool:
    return bool(job_list) and job_status(job_list[0]) in ACTIVE


def imported_note(settings: dict) -> str:
    """What a run imported from traces says about itself (rageval.traces.importer): its answers are the system's,
    at the k it used, never generated again, and what the traces lacked (traces per kind, documents without text);
    "" for any other run."""
    imported = settings.get("imported")
    if settings.get("e2e_answers") != "imported" or not isinstance(imported, dict):
        return ""
    answers = ", ".join(f"{n:,} at k={k}" for k, n in (imported.get("answers") or {}).items()) or "none"
    missing = settings.get("missing") or {}
    lacked = ", ".join(f"{kind.replace('_', ' ')} {n:,}" for kind, n in sorted(missing.items())) or "nothing"
    return (f"Imported from {imported.get('traces', 0):,} {imported.get('format', '')} traces: their answers "
            f"({answers}) are this run's end-to-end answers and are never generated again. Missing from the "
            f"traces: {lacked}.")


def imported_warnings(settings: dict) -> list[str]:
    """What a run imported from traces must warn about (rageval.traces.importer): lists a tracer's attribute limit
    cut (their first documents gone, so their measures are not the system's); [] for any other run."""
    from rageval.traces.importer import cut_list_warning

    imported = settings.get("imported")
    if settings.get("e2e_answers") != "imported" or not isinstance(imported, dict):
        return []
    cut = cut_list_warning(imported.get("cut_lists") or [])
    return [cut.removeprefix("warning: ")] if cut else []


def render_lacks_panel(path: Path) -> dict[str, str]:
    """The panel for the run at ``path``; returns what it lacks (piece -> words; empty when complete). Shows
    nothing for a complete run without a job in progress."""
    key = data.run_key(path)
    try:
        lacking = loaders.load_missing_pieces(*key)
    except (StoreError, OSError) as error:
        st.warning(render.escape_markdown(f"Cannot tell what this run lacks: {error}"))
        return {}
    try:
        job_list = loaders.load_run_jobs(path)
    except StoreError as error:  # a damaged jobs database: no job can be shown or started
        st.warning(render.escape_markdown(f"Cannot list the jobs on this run: {error}"))
        return lacking
    latest = job_list[0] if job_list else None
    settings = data.load_settings(*key)
    note = imported_note(settings)
    if note:
        st.caption(render.escape_markdown(note))
    for warning in imported_warnings(settings):
        st.warning(render.escape_markdown(warning))
    if not lacking and not _active(job_list):
        return lacking
    with st.container(border=True):
        if lacking:
            st.markdown("**What this run lacks:** " + render.escape_markdown(loaders.lacks_text(lacking)))
        if latest is not None and (_active(job_list) or job_status(latest) != DONE):
            _job_block(path)
        elif data.is_shipped(path):
            st.caption(render.escape_markdown(
                f"This is a shipped demo run ({render.SHIPPED_MARK}): nothing is written into it. Copy it into "
                f"your runs folder ({data.runs_dir()}) to complete it there."))
        else:
            if latest is not None and lacking:
                st.caption(render.escape_markdown(
                    f"Job {latest.job_id} finished ({render_jobs.format_time(latest.finished)}) and this is still "
                    "missing: what it lacks could not be computed from this run (LLM-retEval needs each question's "
                    "gold passages: gold_passage_ids in the questions, or qrels)."))
            if auth.allowed(RUN_JOBS):
                _start_block(path)
            else:  # team mode, a role below operator: the server refuses the job anyway (ui.data_jobs)
                st.caption("Computing them is for the operators of this dashboard (team mode).")
    return lacking


def _start_block(path: Path) -> None:
    notice = st.session_state.pop(NOTICE_STATE, None)
    if notice:
        st.error(render.escape_markdown(notice))
    st.caption("Compute them in the background with the model you choose: the job keeps every LLM call in the "
               "LLM-call cache, so a cancel loses nothing and a resume repeats no call; the pages fill in when it "
               "is done. The same from a terminal:")
    st.code(complete_command(path), language="bash")
    try:
        spec = model_form(path)
        if spec is not None:
            loaders.start_complete(spec)
            st.rerun()  # the whole page, so the job's progress shows and polls
    except RagevalError as error:  # our own message, naming the file or model at fault
        st.session_state[NOTICE_STATE] = str(error)
        st.rerun()


def _job_block(path: Path) -> None:
    @st.fragment(run_every=REFRESH_S if _active(loaders.load_run_jobs(path)) else None)
    def progress() -> None:
        """The job in progress; reloads itself every REFRESH_S seconds while the job runs, then the whole page."""
        current = loaders.load_run_jobs(path)
        if not current:
            return
        job = current[0]
        _act(job, render_jobs.render_job(job))
        if job_status(job) not in ACTIVE:
            if st.session_state.get(f"lacks.active.{job.job_id}"):
                st.session_state[f"lacks.active.{job.job_id}"] = False
                st.rerun()  # the whole page: the run file is new, every table reloads
        else:
            st.session_state[f"lacks.active.{job.job_id}"] = True

    progress()
