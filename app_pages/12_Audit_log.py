"""Audit log (team mode, admins): who signed in, started or cancelled jobs, uploaded runs, created annotation
queues or adjudicated, and when (UTC), newest first, from the runs folder's append-only ``audit.sqlite``
(:mod:`rageval.team.audit`). Listed only on a dashboard served for a team (``rageval serve --team``).
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
if not entries:
    st.info("Nothing recorded yet.")
    st.stop()
render.render_table(auth.audit_frame(entries), hide_index=True)
