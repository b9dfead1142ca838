"""Re-score: label a run's retrieved passages again with another model (eRAG utility or the LLM's relevance
judgement), on the CPU or a GPU, or through an OpenAI-compatible server. Each job runs in its own background
process (:mod:`rageval.jobs`), so it survives reruns and closed browsers; every batch of labels is saved into the
run file as it is produced, a job can be cancelled and resumed, and its labels show in every other view.

``?run=<name>`` selects the run.
"""

import math

import streamlit as st

from rageval.errors import RagevalError, StoreError
from rageval.jobs.spec import ACTIVE, HEARTBEAT_S, job_progress
from rageval.store.jobs import STALE_AFTER_S
from rageval.team import roles
from ui import auth, data, navigation, render
from ui import data_jobs as loaders
from ui import render_jobs as view

# Team mode: stop here, before anything is read, unless this session may run jobs (ui.auth).
auth.require(roles.RUN_JOBS)

REFRESH_S = 2.0
ACTIVE_STATE = "rescore.active"
PROBE_STATE = "rescore.probe"  # (spec, probe) of a judge job waiting for the user's go after trying the model


path = render.select_run()
key = data.run_key(path)
settings = data.load_settings(*key)
counts = data.load_counts(*key)
queries = data.load_query_table(*key)
st.sidebar.caption(render.escape_markdown(f"Jobs are kept in {loaders.jobs_db()}"))

render.page_heading(navigation.RESCORE)
st.caption("Label the top-k passages of this run again with another model. The job runs in a background process; "
           "each batch of labels is saved into the run file as it is produced (method "
           "`erag:<metric>@<model>` or `<judge>@<model>`), so a closed browser, a cancel or a killed worker "
           "loses nothing, and Resume skips what is already labelled. When it is done, the new method's "
           "per-query measures are added and every page shows them.")
if data.is_shipped(path):
    st.info(render.escape_markdown(
        f"Run {path.stem} is a shipped demo run ({render.SHIPPED_MARK}): no job writes into it. Choose one of your "
        f"runs, or copy this file into your runs folder ({data.runs_dir()}) and re-score the copy."))
    st.stop()
if queries.empty:
    st.info("This run has no queries to re-score.")
    st.stop()

max_k = max(int(settings.get("k") or 0), math.ceil(counts["rankings"] / max(counts["queries"], 1)), 1)
notice = None
try:
    spec = view.job_form(path, settings, queries, max_k)
    if spec is not None and loaders.needs_probe(spec):  # UMBRELA, a judge file: try the model before the job
        with st.spinner(f"Trying {spec.model_settings.model} on a few passages with the judge's prompt…"):
            st.session_state[PROBE_STATE] = (spec, loaders.probe_rescore(spec))
        spec = None
    if PROBE_STATE in st.session_state:
        probed, probe = st.session_state[PROBE_STATE]
        choice = view.probe_block(probed, probe) if probed.run_path == str(path.resolve()) else "drop"
        if choice:
            del st.session_state[PROBE_STATE]
        spec = probed if choice == "start" else spec
    if spec is not None:
        job = loaders.start_rescore(spec)
        notice = ("success", f"Job {job.job_id} started: {job.method}, {job.total} passages of {path.stem}.")
except RagevalError as error:
    notice = ("error", str(error))  # our own message, naming the file, query or model at fault
# Always one element here, so the job list keeps its place between reruns (no stale copy while a rerun runs).
slot = st.empty()
if notice:
    getattr(slot, notice[0])(render.escape_markdown(notice[1]))

st.subheader("Jobs")
try:
    job_list = loaders.load_folder_jobs()
except StoreError as error:  # a damaged jobs database: said here, the rest of the page still works
    st.error(render.escape_markdown(str(error)))
    st.stop()
active = any(job_progress(job).status in ACTIVE for job in job_list)


@st.fragment(run_every=REFRESH_S if active else None)
def show_jobs() -> None:
    """The job list; while a job is active it reloads itself every REFRESH_S seconds (only this fragment)."""
    current = loaders.load_folder_jobs()
    if not current:
        st.info("No re-scoring job on this runs folder yet: choose a model above and start one.")
        return
    for job in current:
        action = view.render_job(job)
        try:
            loaders.apply_action(job.job_id, action)
        except RagevalError as error:
            st.error(render.escape_markdown(str(error)))
        else:
            if action:
                st.rerun()  # the whole page, so polling starts or stops with the job
    still_active = any(job_progress(job).status in ACTIVE for job in current)
    if st.session_state.get(ACTIVE_STATE) and not still_active:
        st.session_state[ACTIVE_STATE] = False
        st.rerun()  # the whole page: stop polling, and show the finished labels everywhere
    st.session_state[ACTIVE_STATE] = still_active


show_jobs()
with st.expander("All jobs as a table"):
    st.dataframe(view.jobs_summary(job_list), hide_index=True)
    st.caption(render.escape_markdown(
        f"Every job on run files in {data.runs_dir()}, newest first; status, counts and times from the jobs "
        f"database {loaders.jobs_db()} (a worker beats its heartbeat every {HEARTBEAT_S:g} s; one silent for "
        f"{STALE_AFTER_S:g} s, or whose process is gone, is shown as interrupted)."))
