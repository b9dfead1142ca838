"""rageval: inspect and evaluate the retrieval component of retrieval-augmented generation.

The engine never imports streamlit, and heavy dependencies (torch, transformers, the JVM behind
pyserini, faiss) are imported where they are used, never at package import. Importing the package sets the
telemetry and hub opt-outs of :mod:`rageval.offline` first, so no library it later loads asks an outside service.

The notebook API (docs/api.md): ``rageval.evaluate(...)`` builds a run, ``rageval.open(path)`` opens one, each a
:class:`rageval.Run`. They are defined in :mod:`rageval.api`, which is imported the first time one of the names is
used (a module ``__getattr__``, PEP 562), so ``import rageval`` and ``rageval --help`` pay nothing for them.
"""

from rageval.offline import apply_opt_outs

apply_opt_outs()

from rageval.version import __version__  # noqa: E402 (after the opt-outs)

#: The names of the notebook API, stable: each is :mod:`rageval.api`'s name of the same spelling.
API_NAMES = ("Run", "evaluate", "open")

__all__ = ["Run", "__version__", "evaluate", "open"]


def __getattr__(name: str) -> object:
    """``rageval.evaluate``, ``rageval.open`` and ``rageval.Run``: :mod:`rageval.api`'s, imported on first use. By
    name (importlib), so importing the package never depends on the API above it in the layer contract
    (``lint-imports``; the engine reads the version from the leaf :mod:`rageval.version`); type checkers see the
    names in :mod:`rageval.api`."""
    if name in API_NAMES:
        import importlib

        return getattr(importlib.import_module("rageval.api"), name)
    raise AttributeError(f"module 'rageval' has no attribute {name!r}")
