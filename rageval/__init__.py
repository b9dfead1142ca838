"""rageval: inspect and evaluate the retrieval component of retrieval-augmented generation.

The engine never imports streamlit, and heavy dependencies (torch, transformers, the JVM behind
pyserini, faiss) are imported where they are used, never at package import. Importing the package sets the
telemetry and hub opt-outs of :mod:`rageval.offline` first, so no library it later loads asks an outside service.
"""

from rageval.offline import apply_opt_outs

apply_opt_outs()

__version__ = "0.1.0"
