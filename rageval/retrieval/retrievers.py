"""The one place a retriever name becomes rankings: :class:`Retrievers` over one corpus, and its :meth:`search`.

Names (:data:`RETRIEVERS`): ``bm25`` (pyserini Lucene, k1=0.9, b=0.4), ``dense`` (all-MiniLM-L6-v2, exact inner
product with faiss), ``hybrid`` (CombSUM of the min-max normalised BM25 and dense top-k; Fox & Shaw, TREC-2) and
``hybrid-rrf`` (reciprocal rank fusion, rrf_k = 60; Cormack et al., SIGIR 2009). The BM25 index and the passage
embeddings are built once per corpus, keyed by :func:`rageval.corpus.corpus_fingerprint`, and cached in the user
cache. ``rageval evaluate``, the shipped demo runs, ``rageval eval-retrieval``, the attribution and IUM runs all
retrieve through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from rageval.errors import RagevalError
from rageval.retrieval.fusion import comb_sum, reciprocal_rank_fusion
from rageval.types import Passage, Query, Ranking

#: Retrievers over a corpus (``rageval evaluate --retriever``).
RETRIEVERS = ("bm25", "dense", "hybrid")
#: Fusions of the BM25 and dense lists, by name.
FUSED = ("hybrid", "hybrid-rrf")


def hybrid_rrf(first: Mapping[str, Ranking], second: Mapping[str, Ranking], k: int) -> dict[str, Ranking]:
    """Per query, :func:`reciprocal_rank_fusion` of the two rankings (rrf_k = 60), top ``k``."""
    return {qid: reciprocal_rank_fusion([first[qid], second[qid]], k=k, query_id=qid) for qid in first}


def hybrid_combsum(first: Mapping[str, Ranking], second: Mapping[str, Ranking], k: int) -> dict[str, Ranking]:
    """Per query, :func:`comb_sum` of the two rankings' min-max normalised scores, top ``k``."""
    return {qid: comb_sum([first[qid], second[qid]], "min_max", k=k, query_id=qid) for qid in first}


def fuse(name: str, bm25: Mapping[str, Ranking], dense: Mapping[str, Ranking], k: int) -> dict[str, Ranking]:
    """The hybrid ``name`` (one of :data:`FUSED`) of the BM25 and dense rankings."""
    return (hybrid_combsum if name == "hybrid" else hybrid_rrf)(bm25, dense, k)


class Retrievers:
    """BM25, dense and the MiniLM encoder over one corpus, loaded on first use and shared by every search.

    ``bm25``/``dense``: ready retrievers (tests) instead of the cached ones. ``log`` announces an index load."""

    def __init__(self, passages: Iterable[Passage], fingerprint: str | None = None, *, bm25=None, dense=None,
                 encoder=None, batch_size: int = 64, log: Callable[[str], None] = lambda message: None):
        self.corpus: tuple[Passage, ...] = tuple(passages)
        self.passages: dict[str, Passage] = {p.passage_id: p for p in self.corpus}
        self._fingerprint = fingerprint
        self._bm25, self._dense, self._encoder = bm25, dense, encoder
        self.batch_size = batch_size
        self.log = log

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            from rageval.corpus import corpus_fingerprint

            self._fingerprint = corpus_fingerprint(self.corpus)
        return self._fingerprint

    @property
    def bm25(self):
        if self._bm25 is None:
            from rageval.retrieval.bm25 import BM25Retriever, load_or_build_bm25_index

            self.log(f"BM25 index over {len(self.corpus):,} passages (built once, cached)")
            self._bm25 = BM25Retriever(load_or_build_bm25_index(self.corpus, self.fingerprint))
        return self._bm25

    @property
    def dense(self):
        if self._dense is None:
            from rageval.retrieval.dense import load_dense_retriever

            self.log(f"dense embeddings of {len(self.corpus):,} passages (computed once, cached)")
            self._dense = load_dense_retriever(self.corpus, self.fingerprint, batch_size=self.batch_size,
                                               encoder=self.encoder)
        return self._dense

    @property
    def encoder(self):
        if self._encoder is None:
            from rageval.retrieval.dense import MiniLMEncoder

            self._encoder = MiniLMEncoder()
        return self._encoder

    def loaded(self, name: str):
        """The ``bm25`` or ``dense`` retriever if given or loaded already, else None (nothing is loaded)."""
        return self._bm25 if name == "bm25" else self._dense

    def search(self, name: str, queries: Sequence[Query], k: int) -> dict[str, Ranking]:
        """Each query's top ``k`` by the retriever ``name`` (``bm25``, ``dense``, ``hybrid`` or ``hybrid-rrf``)."""
        if name == "bm25":
            return self.bm25.batch_search(queries, k)
        if name == "dense":
            return self.dense.batch_search(queries, k)
        if name in FUSED:
            return fuse(name, self.search("bm25", queries, k), self.search("dense", queries, k), k)
        raise RagevalError(f"retriever {name!r}: expected one of {', '.join(RETRIEVERS + FUSED[1:])}")


def retrieve(name: str, queries: Sequence[Query], passages: Iterable[Passage], k: int,
             log: Callable[[str], None] = lambda message: None) -> dict[str, Ranking]:
    """Each query's top ``k`` from ``passages`` by the retriever ``name`` (:meth:`Retrievers.search`)."""
    return Retrievers(passages, log=log).search(name, queries, k)
