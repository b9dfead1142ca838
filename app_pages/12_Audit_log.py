"""Audit log (team mode, admins): who signed in, started or cancelled jobs, uploaded runs, created annotation
queues or adjudicated, and when (UTC), newest first, from the runs folder's append-only ``audit.sqlite``
(:mod:`rageval.store.audit`). Listed only on a dashboard served for a team (``rageval serve --team``).
"""

import streamlit as st

from rageval.errors import StoreError
from rageval.team import roles
from ui import auth, navigation, render

# Team mode: stop here, before anything is read, unless this session may read the audit log (ui.auth).
auth.require(roles.READ_AUDIT)

SHOWN = 1000

render.page_heading(navigation.AUDIT_LOG)
path = auth.audit_file()
try:
    entries = auth.read_audit(limit=SHOWN)
    verification = auth.verify_audit()
except StoreError as error:  # our own message: the file and what is wrong with it
    render.stop_with_error(error)
if verification.ok:
    if verification.entries:
        st.success(render.escape_markdown(f"The hash chain verifies: {verification.entries:,} entries, each as "
                                          f"written (last hash {verification.last_hash})."), icon=":material/verified:")
else:
    st.error(render.escape_markdown(verification.summary() + ". Compare with the copy kept off this machine "
                                    "(docs/deploy.md); `rageval audit verify` says the same."),
             icon=":material/gpp_bad:")
st.caption(render.escape_markdown(f"{len(entries):,} newest entries (at most {SHOWN:,}) of {path}. Entries are "
                                  "only ever appended: the file refuses changes, deletions and replacements, and "
                                  "each entry carries a hash over its content and the previous entry's hash, so a "
                                  "change made by someone who can write the file shows above."))

ENDED_STATE = "audit.sessions_ended"


def end_sessions() -> None:
    """The button's ``on_click``: every session of the person typed, begun until now, ends on the server."""
    try:
        user = auth.end_sessions(st.session_state.get("audit.end_user", ""))
        st.session_state[ENDED_STATE] = ("success", f"Every session of {user} begun until now is ended: they "
                                                    "sign in again.")
    except auth.NotAllowed as refused:
        st.session_state[ENDED_STATE] = ("error", f"No session was ended: {refused}")


with st.expander("End a person's sessions"):
    st.caption("Someone left, or a device was lost: their sessions end now, on every browser (a copied cookie "
               "included), and they must sign in again. Remove them from team.toml too so they get no role then.")
    st.text_input("Their email (or the provider's subject)", key="audit.end_user")
    st.button("End their sessions", key="audit.end_sessions", on_click=end_sessions, icon=":material/logout:")
    if ENDED_STATE in st.session_state:
        kind, message = st.session_state.pop(ENDED_STATE)
        getattr(st, kind)(render.escape_markdown(message))
if not entries:
    st.info("Nothing recorded yet.")
    st.stop()
render.render_table(auth.audit_frame(entries), hide_index=True)
