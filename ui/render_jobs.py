"""The re-scoring page's blocks: the job form, and one block per job (progress bar, ETA, buttons).

Formatting helpers are pure; the blocks create widgets. Model names, errors and query text are shown through
``st.text`` / escaped Markdown only.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rageval.erag.format_probe import FormatProbe
from rageval.errors import JobError
from rageval.generation.factory import DEFAULT_BASE_URL, DEFAULT_MODEL
from rageval.jobs.spec import ACTIVE, DTYPES, ERAG, INTERRUPTED, JobSpec, Progress, job_estimate, job_progress
from rageval.labelmethods import judges, method_kind
from rageval.store.jobs import CANCELLED, DONE, FAILED, QUEUED, RUNNING, Job
from rageval.team.roles import RUN_JOBS
from ui import auth, navigation, render

ERAG_KIND_NAME = "eRAG utility: the model answers from each passage alone, scored against the gold answers"
#: The form's choice of a judge file (a path typed below it) rather than a registered kind.
JUDGE_FILE = "judge file"
METRIC_NAMES = {"em": "exact match", "f1": "token F1", "accuracy": "answer accuracy (gold answer contained)",
                "rougeL": "ROUGE-L", "bertscore": "BERTScore (MiniLM)"}
BACKEND_NAMES = {"transformers": "Local model (transformers; a GPU when present, else the CPU)",
                 "openai": "OpenAI-compatible server (vLLM, Ollama, rageval serve-model)"}
DTYPE_CHOICES = ("device default", *DTYPES)
QUERY_CHOICES = ("all", "first", "chosen")
STATUS_NAMES = {QUEUED: "… queued (its worker process is starting)", RUNNING: "▶ running", DONE: "✓ done",
                FAILED: "✗ failed", CANCELLED: "■ cancelled", INTERRUPTED: "⚠ interrupted (worker gone)"}
LOADING = "▶ loading the model"
INSPECTOR = navigation.INSPECTOR


# --- formatting (pure) ---------------------------------------------------------------------------------

def format_duration(seconds: float | None) -> str:
    """``42 s``, ``3.5 min``, ``1.2 h``; ``–`` when unknown."""
    if seconds is None or math.isnan(seconds):
        return "–"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_time(timestamp: float | None) -> str:
    """A Unix time as ``YYYY-MM-DD HH:MM:SS UTC``; ``–`` when unset."""
    if timestamp is None:
        return "–"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def status_name(job: Job[JobSpec], progress: Progress) -> str:
    """The job's one status in words: queued until its worker claims it, then ``loading the model`` until the
    worker has its model (``items_started`` is set then, and cleared by each new attempt's claim), then running;
    an ended job's outcome."""
    if progress.status == RUNNING and job.items_started is None:
        return LOADING
    return STATUS_NAMES.get(progress.status, progress.status)


def preparing_text(job: Job[JobSpec], progress: Progress, now: float | None = None) -> str | None:
    """What the worker does before its first LLM call, with the time since it began: ``preparing the model:
    loading gemma-3-270m on the CPU · 1.5 min so far``; None once the model is ready (or the job ended)."""
    if not job.activity or progress.status not in ACTIVE or job.items_started is not None:
        return None
    since = job.activity_since or job.started
    elapsed = max((time.time() if now is None else now) - since, 0.0) if since else None
    return f"{job.activity} · {format_duration(elapsed)} so far"


def progress_text(job: Job[JobSpec], progress: Progress, now: float | None = None) -> str:
    """The counts, never a status (:func:`status_name` says that): ``12/30 passages labelled · 0.80 per s · ETA
    23 s``; for a complete job the stage in progress, its calls answered from the LLM-call cache apart from the
    new ones, then the whole job (its plan: :func:`rageval.jobs.spec.job_estimate`): ``stage e2e 5/15 LLM calls (5
    from the cache, 0 new) · whole job: stage 2 of 5, 23/78 LLM calls, 40 new left · 0.50 new calls per s · ETA
    80 s``. The rate and ETA are of the new calls (or passages) alone, shown once there is one; a complete job's
    are the whole job's (all its stages) when it has a plan, else the stage's. Before the first LLM call, what the
    worker does (:func:`preparing_text`)."""
    preparing = preparing_text(job, progress, now)
    if preparing is not None:
        return f"{preparing} · no LLM call yet" if job.spec.is_complete else \
            f"{preparing} · {job.done}/{job.total} passages labelled"
    rate, eta = progress.rate_per_s, progress.eta_s
    if job.spec.is_complete:
        if job.stage is None:
            return "no LLM call yet" if progress.status in ACTIVE else "no stage started"
        cached = min(job.done_at_start, job.done)
        parts = [f"stage {job.stage} {job.done}/{job.total} LLM calls ({cached} from the cache, "
                 f"{job.done - cached} new)"]
        unit = "new calls per s"
        estimate = job_estimate(job, now)
        if estimate is not None:
            parts.append(f"whole job: stage {estimate.stage_number} of {estimate.stages}, "
                         f"{estimate.calls_done}/{estimate.calls} LLM calls, {estimate.new_left} new left")
            rate, eta = estimate.rate_per_s, estimate.eta_s
    else:
        parts = [f"{job.done}/{job.total} passages labelled"]
        unit = "per s"
    if rate is not None:
        parts.append(f"{rate:.2f} {unit}")
    if eta is not None:
        parts.append(f"ETA {format_duration(eta)}")
    return " · ".join(parts)


def progress_fraction(job: Job[JobSpec], progress: Progress, now: float | None = None) -> float:
    """The bar's share: a complete job's over all its stages when it has a plan, else the stage's (or items')."""
    estimate = job_estimate(job, now) if job.spec.is_complete else None
    return estimate.fraction if estimate is not None else progress.fraction


def _where(job: Job[JobSpec], show_server: bool = True) -> str:
    """`` on cpu`` / `` on server http://...`` once the worker has its model, else the server asked for (once:
    a served model's device is its server); without ``show_server`` a server is not named by its URL."""
    if job.device:
        return f" on {job.device}" if show_server or not job.spec.model_settings.is_server else " on a model server"
    if not job.spec.model_settings.is_server:
        return ""
    return f" at {job.spec.model_settings.base_url}" if show_server else " on a model server"


def job_description(job: Job[JobSpec], show_server: bool = True) -> str:
    """What the job labels and with what, in one line (plain text); ``show_server=False``: the model server is not
    named by its URL (team mode, for a role that may not run jobs)."""
    spec, model_settings = job.spec, job.spec.model_settings
    where = _where(job, show_server)
    if spec.is_complete:
        pieces = ", ".join(spec.pieces) if spec.pieces else "every missing piece"
        return f"{pieces} of run {Path(job.run_path).stem} with {job.model_id or model_settings.model}{where}"
    kind = (f"eRAG {METRIC_NAMES.get(spec.metric, spec.metric)}" if spec.label_kind == ERAG else
            method_kind(spec.label_kind).display)
    queries = "all queries" if spec.query_ids is None else f"{len(spec.query_ids)} chosen queries"
    k = f"top-{spec.k}" if spec.k else "the run's top-k"
    model = job.model_id or model_settings.model
    return f"{kind} labels from {model}{where}, {k} of {queries} of run {Path(job.run_path).stem}"


def jobs_summary(job_list: Sequence[Job[JobSpec]], now: float | None = None) -> pd.DataFrame:
    """One row per job: id, run, method, status, done, total, ETA, started, last heartbeat."""
    rows = []
    for job in job_list:
        progress = job_progress(job, now)
        estimate = job_estimate(job, now) if job.spec.is_complete else None
        rows.append({"Job": job.job_id, "Run": Path(job.run_path).stem, "Labels": job.method,
                     "Status": status_name(job, progress), "Done": job.done,
                     "Total": job.total,
                     "ETA": format_duration(estimate.eta_s if estimate else progress.eta_s),
                     "Started": format_time(job.started),
                     "Heartbeat": format_time(job.heartbeat)})
    return pd.DataFrame(rows, columns=["Job", "Run", "Labels", "Status", "Done", "Total", "ETA", "Started",
                                       "Heartbeat"])


def default_dtype(settings: Mapping[str, Any]) -> str:
    """The precision the run's own model ran in when its id names one (``... [bfloat16]``), so re-scoring with
    that model reuses its cached answers; else the device default."""
    model_id = str(settings.get("model_id", ""))
    return next((d for d in DTYPES if model_id.endswith(f"[{d}]")), DTYPE_CHOICES[0])


# --- blocks ---------------------------------------------------------------------------------------------

def job_form(path: Path, settings: Mapping[str, Any], queries: pd.DataFrame, max_k: int) -> JobSpec | None:
    """The form that starts a job; returns its spec on submit (None otherwise). The backend is chosen above the
    form (choosing reruns the page), so the form shows only that backend's inputs: the server's URL for a server,
    the precision for a local model."""
    from rageval.erag.labels import ALL_METRICS

    texts = dict(zip(queries["query_id"], queries["text"]))
    ids = list(texts)
    backend = st.radio("Backend", list(BACKEND_NAMES), format_func=BACKEND_NAMES.get, key="rescore.backend",
                       horizontal=True)
    base_url, dtype = DEFAULT_BASE_URL, DTYPE_CHOICES[0]
    with st.form("rescore.form"):
        left, right = st.columns(2)
        kind_names = {ERAG: ERAG_KIND_NAME, **{k.name: f"{k.display}: {k.description}" for k in judges()},
                      JUDGE_FILE: "your own judge: a TOML file (name, description, prompt, [parse])"}
        kind = left.radio("Labels", list(kind_names), format_func=kind_names.get, key="rescore.kind")
        judge_file = left.text_input("Judge file (.toml), for 'your own judge'", "", key="rescore.judge_file",
                                     help="the path of a TOML judge on this machine; `rageval methods` shows the form")
        metrics = list(ALL_METRICS)
        metric = left.selectbox("Label metric (eRAG)", metrics, format_func=lambda m: f"{m}: {METRIC_NAMES.get(m, m)}",
                                index=metrics.index(settings.get("label_metric", "em"))
                                if settings.get("label_metric", "em") in metrics else 0, key="rescore.metric")
        k = left.number_input("Passages per query: the top k of the run's ranking", 1, max_k, max_k,
                              key="rescore.k")
        how = left.radio("Queries", QUERY_CHOICES, key="rescore.queries", horizontal=True,
                         format_func={"all": f"all {len(ids)}", "first": "the first N", "chosen": "chosen"}.get)
        first = left.number_input("N (the first N queries)", 1, max(len(ids), 1), min(10, max(len(ids), 1)),
                                  key="rescore.first")
        chosen = left.multiselect("Chosen queries", ids, format_func=lambda q: f"{texts[q]}  [{q}]",
                                  key="rescore.chosen", placeholder="type to search the questions")
        model = right.text_input("Model", DEFAULT_MODEL, key="rescore.model",
                                 help=f"'{DEFAULT_MODEL}' (packaged), a local Hugging Face model folder, a model id "
                                      "already in the local Hugging Face cache, or the name a server serves")
        if backend == "openai":
            base_url = right.text_input("Server base URL (OpenAI-compatible backend)", DEFAULT_BASE_URL,
                                        key="rescore.base_url")
        else:
            dtype = right.selectbox("Precision (local model)", DTYPE_CHOICES, index=DTYPE_CHOICES.index(
                default_dtype(settings)), key="rescore.dtype",
                help="device default: float32 on the CPU, bfloat16 on a GPU; the precision is part of the model's id")
        submitted = st.form_submit_button("Start re-scoring", type="primary")
    if not submitted:
        return None
    query_ids = {"all": None, "first": tuple(ids[:int(first)]), "chosen": tuple(chosen)}[how]
    if how == "chosen" and not chosen:
        raise JobError("choose at least one query, or pick 'all' or 'the first N'")
    if kind == JUDGE_FILE and not judge_file.strip().endswith(".toml"):
        raise JobError("your own judge: type the path of its TOML file (ending in .toml)")
    kind = judge_file.strip() if kind == JUDGE_FILE else kind
    return JobSpec.from_flat(str(path), model=model.strip(), backend=backend, label_kind=kind, metric=metric, k=int(k),
                   query_ids=query_ids, base_url=base_url.strip(),
                   dtype=None if dtype == DTYPE_CHOICES[0] else dtype)


def probe_block(spec: JobSpec, probe: FormatProbe) -> str | None:
    """What trying the model on a few passages found (:func:`ui.data_jobs.probe_rescore`), before its job starts:
    "this model (M) answered 4 of 5 in UMBRELA's format", each reply behind it, and the buttons ``start`` (start
    the job) and ``drop`` (do not); returns the one clicked, or None."""
    kind = method_kind(spec.base_method).display
    holder = st.empty()  # cleared once the user chose: the page then shows the job, or nothing
    choice = None
    with holder.container(border=True):
        sentence = probe.sentence[0].upper() + probe.sentence[1:] + "."
        if probe.asked and probe.answered == probe.asked:
            st.success(render.escape_markdown(sentence))
        else:
            st.warning(render.escape_markdown(
                f"{sentence} A reply not in {kind}'s format leaves its passage unlabelled (never a grade 0): at "
                f"this rate the job would label about {probe.rate:.0%} of the passages." if probe.asked else
                f"{sentence} The run has no passage to try it on."))
        with st.expander(f"The {probe.asked} replies"):
            st.dataframe(pd.DataFrame([{"Query": q, "Passage": p, "Reply": reply, "Read as": grade}
                                       for q, p, reply, grade in probe.replies],
                                      columns=["Query", "Passage", "Reply", "Read as"]), hide_index=True)
        st.caption("The replies are kept in the LLM-call cache: the job does not ask these passages again.")
        start, drop = st.columns(2)
        if start.button("Start the job", key="rescore.probe.start", type="primary", width="stretch"):
            choice = "start"
        if drop.button("Don't start it", key="rescore.probe.drop", width="stretch"):
            choice = "drop"
    if choice:
        holder.empty()
    return choice


def render_job(job: Job[JobSpec], now: float | None = None) -> str | None:
    """One job: title, progress bar with done/total and ETA, what produced it, its error, a link to the query
    inspector, and the buttons that apply; returns the action clicked (``cancel``, ``stop``, ``resume``) or None."""
    progress = job_progress(job, now)
    action = None
    # Team mode: the buttons, the server's URL and the worker's error text only for a role that may run jobs
    # (the server refuses the others' clicks anyway: ui.data_jobs); the others are told why there are none.
    controls = auth.allowed(RUN_JOBS)
    with st.container(border=True):
        head, buttons = st.columns([5, 2], vertical_alignment="center")
        head.markdown(f"**Job {job.job_id}** · {render.escape_markdown(job.method)} · "
                      f"{render.escape_markdown(status_name(job, progress))}")
        head.progress(progress_fraction(job, progress, now), text=progress_text(job, progress, now))
        head.caption(render.escape_markdown(
            f"{job_description(job, show_server=controls)} · attempt {job.attempts} · "
            f"started {format_time(job.started)}"
            + (f" · finished {format_time(job.finished)}" if job.finished and progress.status not in ACTIVE
               else f" · last heartbeat {format_time(job.heartbeat)}")))
        if job.error:
            head.error(render.escape_markdown(job.error) if controls else
                       "This job stopped with an error; an operator or admin sees why on the Re-score page.")
        if not controls:
            buttons.caption(render.escape_markdown(f"Cancel, Stop now and Resume are for operators and admins "
                                                   f"(you are {auth.current_identity().role or 'without a role'})."))
        elif progress.status in ACTIVE:
            if buttons.button("Cancel", key=f"rescore.cancel.{job.job_id}", width="stretch",
                              help="stop after the batch in progress; every label saved so far is kept"):
                action = "cancel"
            if job.pid and buttons.button("Stop now", key=f"rescore.stop.{job.job_id}", width="stretch",
                                          help="send the worker process SIGTERM; saved labels are kept"):
                action = "stop"
        elif (progress.status != DONE or job.done < job.total) and buttons.button(
                "Resume", key=f"rescore.resume.{job.job_id}", width="stretch",
                help="start the job again; the passages it already labelled are skipped"):
            action = "resume"
        if job.done and not job.spec.is_complete:
            params = {"run": Path(job.run_path).stem}
            if job.spec.query_ids:
                params["query"] = job.spec.query_ids[0]
            auth.page_link(buttons, INSPECTOR, label="See the labels in the query inspector", icon=":material/search:",
                           query_params=params)
    return action
