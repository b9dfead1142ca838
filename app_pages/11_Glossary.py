"""Glossary: the dashboard's jargon (eRAG, E2E, semi-gold, the measures, the statistics, the failure categories),
one line each with the paper that defines it. Each term is a heading with its own anchor (``Glossary#ndcg``:
:func:`ui.glossary.terms`), so help texts on other pages link to one term (:func:`ui.navigation.glossary_url`).
"""

import streamlit as st

from rageval.team import roles
from ui import auth, glossary, navigation, render

# Team mode: stop here, before anything is read, unless this session may view (ui.auth).
auth.require(roles.VIEW)

render.page_heading(navigation.GLOSSARY)
every_term = glossary.terms()  # read now: a judge loaded since the server started is listed
st.markdown(" · ".join(f"[{render.escape_markdown(term.name)}](#{term.anchor})" for term in every_term))
for section in glossary.SECTIONS:
    st.header(section, anchor=section.lower().replace(" ", "-"), divider="gray")
    for term in (t for t in every_term if t.section == section):
        st.subheader(render.escape_markdown(term.name), anchor=term.anchor)
        st.markdown(render.escape_markdown(term.definition))
        st.caption(render.escape_markdown(term.source))
