"""rageval dashboard: the entry point. ``streamlit run app.py`` from the checkout.

It only sets up the page frame and the navigation (the page table is :mod:`ui.navigation`); each page is its own
script under ``app_pages/`` (not ``pages/``: Streamlit would serve that folder's scripts on their own). Its
``.streamlit/config.toml`` binds the server to 127.0.0.1 only and turns Streamlit's usage statistics off, and nothing
the dashboard loads asks an outside service (:mod:`rageval.offline`). Runs are read from your runs folder
(``$RAGEVAL_RUNS_DIR``, else ``~/.local/share/rageval/runs``) and, read-only, from the shipped ``data/runs``.

Served for a team (``rageval serve --team team.toml``: :mod:`ui.auth`), a session that is not signed in (or has no
role) gets one page, the sign-in page, and nothing of the runs folder is read; a signed-in session is listed only
the pages its role may use, and the page it opens is checked again before it runs (as each page checks at its top).
"""

import streamlit as st

from rageval.team.roles import VIEW
from ui import auth, render
from ui.navigation import FAVICON, PAGES, TEAM_PAGES

# A local favicon: a Material icon here would be fetched from fonts.gstatic.com by the browser.
st.set_page_config(page_title="rageval", page_icon=str(FAVICON), layout="wide")

entries = PAGES
if auth.team_mode():
    identity = auth.current_identity()
    if not identity.user_id or not identity.role:  # signed out, expired, or no role: one page, no run data
        st.navigation([st.Page(lambda: auth.require(VIEW), title="Sign in", icon=":material/login:",
                               url_path="sign_in", default=True)], position="hidden").run()
        st.stop()
    entries = tuple(entry for entry in PAGES + TEAM_PAGES if auth.allowed(entry.action))
    auth.render_account(st.sidebar)

sections: dict[str, list] = {}
for entry in entries:
    sections.setdefault(entry.section, []).append(
        st.Page(entry.file, title=entry.title, icon=entry.icon, url_path=entry.url_path or None,
                default=not entry.url_path))
page = st.navigation(sections)
if auth.team_mode():
    auth.require(next(e.action for e in entries if e.title == page.title))
render.warn_unknown_params()  # ?nmae=... on any page: said, not silently ignored
if auth.team_mode():
    with auth.errors_with_an_id(page.title):  # a short error with an id; the trace in the server log
        page.run()
else:
    page.run()
