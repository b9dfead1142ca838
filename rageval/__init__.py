"""rageval: inspect and evaluate the retrieval component of retrieval-augmented generation.

The engine never imports streamlit, and heavy dependencies (torch, transformers, the JVM behind
pyserini, faiss) are imported where they are used, never at package import.
"""

__version__ = "0.1.0"
