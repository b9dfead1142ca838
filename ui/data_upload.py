"""Cached loader of the Upload page (``app_pages/10_Upload.py``): an upload converted once per content.

Uploaded files have no path or modification time, so the key is their content: ``(slot, file name, bytes)``
plus the run options. Validate and Save, and every rerun in between, then parse the files once. No widgets.
"""

from __future__ import annotations

import streamlit as st

from rageval.paths import REPO_ROOT
from rageval.upload.convert import convert_upload
from rageval.upload.problems import UploadFile, UploadResult

FORMAT_DOC = "docs/upload_format.md"
FORMAT_DOC_PATH = REPO_ROOT / FORMAT_DOC


@st.cache_data(ttl=600, max_entries=2, show_spinner="Validating the upload…")
def load_upload(form: str, files: tuple[tuple[str, str, bytes], ...], dataset: str, retriever: str,
                model: str) -> UploadResult:
    """:func:`rageval.upload.convert.convert_upload` of uploaded files given as ``(slot key, file name, bytes)``."""
    return convert_upload(form, {key: UploadFile(name, content) for key, name, content in files},
                          dataset=dataset, retriever=retriever, model=model)


@st.cache_data(ttl=600, show_spinner=False)
def format_doc() -> str:
    """The text of ``docs/upload_format.md`` (our own Markdown), or a line saying where it should be."""
    try:
        return FORMAT_DOC_PATH.read_text(encoding="utf-8")
    except OSError:
        return f"The format document {FORMAT_DOC} is not in this installation ({FORMAT_DOC_PATH})."
