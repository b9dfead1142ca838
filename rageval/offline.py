"""rageval asks no outside service: the telemetry and hub opt-outs of the libraries it loads, set in one place.

:func:`apply_opt_outs` runs when the ``rageval`` package is imported (``rageval/__init__.py``), so every process
that uses rageval (the command line, the dashboard, a background job worker, a cost-report child) has them in its
environment before any of those libraries loads; child processes inherit them. Each is a default
(``os.environ.setdefault``): a variable the user set is kept, so ``HF_HUB_OFFLINE=0`` allows hub downloads again.

Measured on this project (``strace -f -e trace=connect`` around ``rageval eval-retrieval --systems bm25``):
onnxruntime, which pyserini imports with its searcher, resolves Microsoft's telemetry host
(``mobile.events.data.microsoft.com``, 1DS) from its own C++ threads, about 8 times per 45 s per BM25 process,
unless ``ORT_DISABLE_TELEMETRY`` is set before it loads. No Python-level guard can see those lookups.
"""

from __future__ import annotations

import os

#: Variable -> value. onnxruntime: its 1DS telemetry (above). Hugging Face hub: no telemetry, and no download or
#: "is there a newer revision" request (rageval loads models with ``local_files_only=True`` anyway).
#: ``DO_NOT_TRACK``: the cross-tool convention other tools honour. (Streamlit's own settings, bound to 127.0.0.1 and no
#: usage statistics, are in ``.streamlit/config.toml``.)
OPT_OUTS: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "DO_NOT_TRACK": "1",
}


def apply_opt_outs() -> None:
    """Set every :data:`OPT_OUTS` variable the environment does not set already (idempotent, cheap)."""
    for name, value in OPT_OUTS.items():
        os.environ.setdefault(name, value)
