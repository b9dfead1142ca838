"""How a page stops on a file it cannot read: the error in a box. Below both the data layer (:func:`ui.data.unreadable`)
and the render helpers, so neither imports the other for it."""

from __future__ import annotations

from typing import NoReturn

import streamlit as st

from ui.format import escape_markdown


def stop_with_error(error: Exception) -> NoReturn:
    """The page cannot go on (a file it needs is missing or damaged): the error, which names the file and says
    what is wrong, in a box; then the page stops."""
    st.error(escape_markdown(str(error)))
    st.stop()
    raise AssertionError("st.stop() returned")  # outside a script run (a unit test); never reached in the app
