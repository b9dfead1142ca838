"""The dense retriever's caches: passage embeddings and the HNSW index are computed once per (model, corpus) and
read back by the next run (no encode call, no index build, the same rankings); a build killed while writing leaves
no cache entry behind. A tiny deterministic encoder stands in for MiniLM
(``tests/retrieval/test_dense.py`` runs MiniLM)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rageval.paths import REPO_ROOT
from rageval.retrieval import dense
from rageval.retrieval.dense import HnswSettings, embedding_cache_path, faiss_index_cache_path, load_dense_retriever
from rageval.types import Passage, Query

DIM = 24
FINGERPRINT = hashlib.sha256(b"the test corpus").hexdigest()
TESTS = Path(__file__).resolve().parent


class HashEncoder:
    """Unit vectors drawn from a seed made of each text's sha256: the same text always gets the same vector.
    ``encoded`` lists the size of every encode call, so a test sees whether passages were encoded."""

    def __init__(self, model_id: str = "test/hash-encoder"):
        self.model_id = model_id
        self.encoded: list[int] = []

    def encode(self, texts, batch_size=64, progress=None):
        self.encoded.append(len(texts))
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(f"{self.model_id}|{text}".encode()).digest()[:8], "big")
            vector = np.random.default_rng(seed).standard_normal(DIM)
            rows.append(vector / np.linalg.norm(vector))
        if progress is not None:
            progress(len(texts))
        return np.asarray(rows, dtype=np.float32)


def make_passages(n: int = 300) -> list[Passage]:
    return [Passage(f"p{i}", f"Title {i}", f"passage number {i} about topic {i % 11}", "test") for i in range(n)]


def make_queries(passages: list[Passage]) -> list[Query]:
    """A query per tenth passage whose text is that passage's document: its own passage must come first."""
    return [Query(f"q{i}", p.as_document()) for i, p in enumerate(passages[::10])]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_the_second_run_reads_the_cache_and_ranks_the_same(cache, monkeypatch, kind):
    passages = make_passages()
    queries = make_queries(passages)
    first_encoder = HashEncoder()
    first = load_dense_retriever(passages, FINGERPRINT, index=kind, encoder=first_encoder, progress=False)
    assert first_encoder.encoded == [len(passages)]
    first_rankings = first.batch_search(queries, k=5)
    assert all(first_rankings[q.query_id].passage_ids[0] == passages[10 * i].passage_id
               for i, q in enumerate(queries))
    assert embedding_cache_path(first_encoder.model_id, FINGERPRINT).is_file()
    assert faiss_index_cache_path(first_encoder.model_id, FINGERPRINT, HnswSettings()).is_file() == (kind == "hnsw")

    def no_hnsw_build(matrix, index="flat", *settings):
        assert index == "flat", "the HNSW index must come from the cache"
        return real_build(matrix, index, *settings)

    real_build = dense.build_faiss_index
    monkeypatch.setattr(dense, "build_faiss_index", no_hnsw_build)
    second_encoder = HashEncoder()
    second = load_dense_retriever(passages, FINGERPRINT, index=kind, encoder=second_encoder, progress=False)
    assert second_encoder.encoded == []  # no passage encoded
    assert second.batch_search(queries, k=5) == first_rankings
    assert second_encoder.encoded == [len(queries)]  # only the queries
    assert not list(cache.rglob("*.tmp"))


def test_another_model_or_corpus_gets_its_own_entry(cache):
    passages = make_passages(50)
    load_dense_retriever(passages, FINGERPRINT, index="hnsw", encoder=HashEncoder("a/model"), progress=False)
    other_model = HashEncoder("b/model")  # the same last name, another model: its own cache entry
    load_dense_retriever(passages, FINGERPRINT, index="hnsw", encoder=other_model, progress=False)
    assert other_model.encoded == [50]
    other_corpus = HashEncoder("a/model")
    load_dense_retriever(passages[:40], hashlib.sha256(b"40").hexdigest(), index="hnsw", encoder=other_corpus,
                         progress=False)
    assert other_corpus.encoded == [40]
    assert len(list((cache / "embeddings").glob("*.npy"))) == 3
    assert len(list((cache / "indexes").glob("faiss-hnsw-*.faiss"))) == 3


def test_an_unreadable_index_file_is_built_again(cache):
    passages = make_passages(60)
    queries = make_queries(passages)
    expected = load_dense_retriever(passages, FINGERPRINT, index="hnsw", encoder=HashEncoder(),
                                    progress=False).batch_search(queries, k=3)
    path = faiss_index_cache_path("test/hash-encoder", FINGERPRINT, HnswSettings())
    path.write_bytes(b"not a faiss index")
    again = load_dense_retriever(passages, FINGERPRINT, index="hnsw", encoder=HashEncoder(), progress=False)
    assert again.batch_search(queries, k=3) == expected
    assert path.stat().st_size > 1000  # replaced by a good index


KILLED_BUILD = """
import os, sys
sys.path.insert(0, {tests!r})
import faiss
import numpy as np
from rageval.retrieval.dense import load_dense_retriever
from test_dense_cache import FINGERPRINT, HashEncoder, make_passages

def die_half_written(target, *rest):  # a kill in the middle of writing: part of the file, then gone
    if hasattr(target, "write"):
        target.write(b"\\x93NUMPY half a matrix")
        target.flush()
    else:
        open(rest[0], "wb").write(b"half an index")
    os._exit(137)

if sys.argv[1] == "matrix":
    np.save = die_half_written
else:
    faiss.write_index = lambda index, path: die_half_written(None, path)
load_dense_retriever(make_passages(), FINGERPRINT, index="hnsw", encoder=HashEncoder(), progress=False)
"""


@pytest.mark.parametrize("killed_while_writing", ["matrix", "index"])
def test_a_build_killed_while_writing_leaves_no_cache_entry(cache, killed_while_writing):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "RAGEVAL_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", KILLED_BUILD.format(tests=str(TESTS)), killed_while_writing],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 137, done.stderr
    matrix = embedding_cache_path("test/hash-encoder", FINGERPRINT)
    index = faiss_index_cache_path("test/hash-encoder", FINGERPRINT, HnswSettings())
    assert not index.exists()
    assert matrix.exists() == (killed_while_writing == "index")  # the embeddings were complete before the index
    assert list(cache.rglob(".*.tmp"))  # what the kill left: a temporary name, never read

    passages = make_passages()
    encoder = HashEncoder()
    retriever = load_dense_retriever(passages, FINGERPRINT, index="hnsw", encoder=encoder, progress=False)
    assert encoder.encoded == ([] if killed_while_writing == "index" else [len(passages)])
    assert index.is_file() and matrix.is_file()
    queries = make_queries(passages)
    rankings = retriever.batch_search(queries, k=1)
    assert [rankings[q.query_id].passage_ids[0] for q in queries] == [p.passage_id for p in passages[::10]]
