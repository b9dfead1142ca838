"""rageval dashboard: the entry point. ``streamlit run app.py`` from the checkout.

It only sets up the page frame and the navigation (the page table is :mod:`ui.navigation`); each page is its own
script under ``app_pages/`` (not ``pages/``: Streamlit would serve that folder's scripts on their own). Its
``.streamlit/config.toml`` binds the server to 127.0.0.1 only and turns Streamlit's usage statistics off, and nothing
the dashboard loads asks an outside service (:mod:`rageval.offline`). Runs are read from your runs folder
(``$RAGEVAL_RUNS_DIR``, else ``~/.local/share/rageval/runs``) and, read-only, from the shipped ``data/runs``.
"""

import streamlit as st

from ui.navigation import FAVICON, PAGES

# A local favicon: a Material icon here would be fetched from fonts.gstatic.com by the browser.
st.set_page_config(page_title="rageval", page_icon=str(FAVICON), layout="wide")

sections: dict[str, list] = {}
for entry in PAGES:
    sections.setdefault(entry.section, []).append(
        st.Page(entry.file, title=entry.title, icon=entry.icon, url_path=entry.url_path or None,
                default=not entry.url_path))
st.navigation(sections).run()
