"""Upload: your own run (a TREC run + qrels + queries/passages JSONL, or one JSONL with answers) is validated, with
every problem listed by file and line, and saved into the runs folder as a run every view shows.

``?format=trec`` or ``?format=jsonl`` selects the form. The engine is :mod:`rageval.upload`; the formats are
documented in ``docs/upload_format.md``.
"""

import streamlit as st

from rageval.team import audit as audit_log
from rageval.team import roles
from rageval.upload.problems import DEFAULT_LIMITS, MAX_UPLOAD_MIB, UploadError
from rageval.upload.save import check_run_name, name_in_use, save_upload
from ui import auth, data, data_upload, navigation, render
from ui import render_upload as ru

# Team mode: stop here, before anything is read, unless this session may upload (ui.auth).
auth.require(roles.UPLOAD)

FORMAT_STATE = "upload.format"
CHECKED_STATE = "upload.checked"  # the upload_key the last Validate was pressed for
SAVED_STATE = "upload.saved"  # the name of the run saved last

render.page_heading(navigation.UPLOAD, "Upload a run")
st.markdown(
    "Bring your own retrieval run: it is checked (every problem with its file and line) and saved as a run file "
    "in the runs folder, where the overview, the query inspector and the other views show it. Formats, examples "
    f"and which problems are errors or warnings: `{data_upload.FORMAT_DOC}`, opened by the box below. Limits: "
    f"{ru.LIMIT_TEXT}, {DEFAULT_LIMITS.max_queries:,} queries, "
    f"{DEFAULT_LIMITS.max_passages_per_query:,} passages per query, {DEFAULT_LIMITS.max_text_chars:,} characters "
    "per text field; UTF-8 only.")
with st.expander(ru.FORMAT_DOC_TITLE, expanded=False):
    st.markdown(data_upload.format_doc())

form = render.select_synced(st, "What you upload", list(ru.SLOTS), state_key=FORMAT_STATE, param="format",
                            format_func=ru.FORM_NAMES.get)
columns = st.columns(len(ru.SLOTS[form]))
chosen = {slot.key: column.file_uploader(slot.label, key=f"upload.file.{slot.key}", help=slot.help,
                                         max_upload_size=MAX_UPLOAD_MIB)  # the engine's limit, in the widget's words
          for column, slot in zip(columns, ru.SLOTS[form])}
missing = ru.missing_files(form, chosen)
if missing:
    st.info(render.escape_markdown(f"Chosen: {ru.chosen_names(form, chosen)}. Still needed: {', '.join(missing)}."))
    st.stop()

with st.expander("What produced this run (shown with every number)", expanded=False):
    left, middle, right = st.columns(3)
    dataset = left.text_input("Dataset", value="uploaded", key="upload.dataset")
    retriever = middle.text_input("Retriever", key="upload.retriever",
                                  help="Empty: the TREC run tag (or 'not stated by the uploader')")
    model = right.text_input("RAG LLM", key="upload.model", help="The model behind the answers, if any")
options = (dataset.strip(), retriever.strip(), model.strip())
key = ru.upload_key(form, chosen, options)

if st.button("Validate", key="upload.validate", type="primary"):
    st.session_state[CHECKED_STATE] = key
    st.session_state.pop(SAVED_STATE, None)
if st.session_state.get(CHECKED_STATE) != key:
    st.caption(render.escape_markdown(f"Press Validate to check {ru.chosen_names(form, chosen)}."))
    st.stop()

result = data_upload.load_upload(form, ru.file_contents(chosen), *options)
if result.problems:
    render.render_table(ru.problems_frame(result.problems), {"Message": st.column_config.TextColumn(width="large")},
                        help=ru.PROBLEM_HELP, hide_index=True, row_height=ru.PROBLEM_ROW_HEIGHT)
if not result.ok:
    st.error(render.escape_markdown(ru.result_summary(result) + " Fix the errors above and upload the files again."))
    st.stop()
st.success(render.escape_markdown(ru.result_summary(result)))

folder = data.runs_dir()
main_file = next(f for f in chosen.values() if f is not None)
name = st.text_input("Run name", value=ru.suggest_run_name(main_file.name), key="upload.name",
                     help="The file <runs folder>/<name>.sqlite and the ?run= value of every page").strip()
name_problem = check_run_name(name)
existing = None if name_problem else name_in_use(folder, name)
saved = st.session_state.get(SAVED_STATE) == name
replace = False
if existing is not None and existing.parent.resolve() != folder.resolve():
    name_problem = f"the name {name} is used by the run {existing}; choose another name"
if name_problem:
    st.error(render.escape_markdown(name_problem))
elif existing is not None and not saved:
    st.warning(render.escape_markdown(f"A run named {name} exists ({existing}): replace it, or choose another name."))
    replace = st.checkbox(render.escape_markdown(f"Replace the existing run {name}"), key="upload.replace")

if st.button("Save", key="upload.save", disabled=bool(name_problem) or saved or (existing is not None and not replace)):
    try:
        uploader = auth.check(roles.UPLOAD)  # on the server, whatever the browser sent
        saved_path = save_upload(result.run, folder, name, overwrite=replace, command="dashboard upload page",
                                 uploaded_by=uploader.user_id if uploader.team_mode else None)
        auth.audit(audit_log.UPLOAD, {"run": name, "path": str(saved_path), "replaced": replace})
    except (UploadError, auth.NotAllowed) as error:
        st.error(render.escape_markdown(str(error)))
    else:
        st.session_state[SAVED_STATE] = name
        st.rerun()  # show the saved state: links on, Save off

if st.session_state.get(SAVED_STATE) == name:
    st.success(render.escape_markdown(f"Saved run {name} into {folder}."))
    auth.page_link(st, navigation.HOME, label="Open its overview", icon=":material/insights:",
                   query_params={"run": name})
    auth.page_link(st, navigation.INSPECTOR, label="Inspect its queries", icon=":material/search:",
                   query_params={"run": name})
    st.caption("The new run: " + render.provenance(result.run.settings, len(result.run.queries)))
