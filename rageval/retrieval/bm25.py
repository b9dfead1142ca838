"""BM25 retrieval with Lucene (Anserini, through pyserini) over our own passages; no prebuilt index is ever used.

BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009), as Lucene 9
computes it, scores a passage d for a query q as

    score(q, d) = sum over terms t of q:  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

(Lucene drops the classic (k1 + 1) numerator factor, which does not change rankings; |d| is stored lossily
for long passages.) Text is analysed as Anserini does by default, the same for passages and queries: Lucene's
English analyzer (lowercasing, stopword removal, Porter stemming); the query is a bag of words, so query text
needs no escaping. Anserini rounds scores to 4 decimals and breaks ties by passage id (lexicographic order),
which makes rankings deterministic; ties are common.

Defaults k1 = 0.9, b = 0.4 are Anserini's and pyserini's defaults (``LuceneSearcher.set_bm25``), used by
their "default" BM25 baselines on MS MARCO passage and on DPR Wikipedia passages, which resemble ours (their
MS MARCO-tuned values, k1 = 0.82, b = 0.68, are not used here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from rageval.errors import RagevalError
from rageval.paths import cache_dir
from rageval.retrieval.checks import check_k, check_unique_query_ids
from rageval.retrieval.jvm import anserini_jar, ensure_jvm, find_java_home, java_env, jvm_options
from rageval.types import Passage, Query, Ranking, ScoredPassage

BM25_K1 = 0.9
BM25_B = 0.4
MANIFEST_NAME = "rageval-bm25.json"  # written last inside the index: its presence marks a complete index
_INDEXER_CLASS = "io.anserini.index.IndexCollection"
# counts are printed with the JVM locale's grouping ("18,439", "18.439", "18 439")
_COUNTER_RE = re.compile(r"^.*\b(indexed|unindexable|empty|skipped|errors):\s+(\d[\d,.'\u00a0\u202f ]*)$",
                         re.MULTILINE)


def write_json_collection(passages: Iterable[Passage], path: Path) -> int:
    """Write passages as an Anserini ``JsonCollection`` file (one ``{"id", "contents"}`` object a line).

    ``contents`` is :meth:`Passage.as_document` (title, newline, text). Returns the number of passages written;
    raises :class:`RagevalError` on an empty or repeated passage id (Lucene would index both copies).
    """
    seen: set[str] = set()
    with open(path, "w", encoding="utf-8") as out:
        for number, passage in enumerate(passages, start=1):
            if not passage.passage_id:
                raise RagevalError(f"passage {number} (title {passage.title!r}): empty passage_id; "
                                   f"every passage needs a unique id to be indexed")
            if passage.passage_id in seen:
                raise RagevalError(f"passage {number}: passage_id {passage.passage_id!r} occurs twice; "
                                   f"passage ids must be unique within an index")
            seen.add(passage.passage_id)
            out.write(json.dumps({"id": passage.passage_id, "contents": passage.as_document()},
                                 ensure_ascii=False))
            out.write("\n")
    return len(seen)


def parse_indexer_counters(log: str) -> dict[str, int]:
    """The final counters Anserini's indexer prints (``indexed:``, ``empty:``, ``errors:``, ...)."""
    return {name: int(re.sub(r"\D", "", value)) for name, value in _COUNTER_RE.findall(log)}


def build_bm25_index(passages: Iterable[Passage], index_dir: Path, threads: int = 2) -> Path:
    """Build a Lucene BM25 index of ``passages`` at ``index_dir`` (which must not exist yet) and return it.

    Runs Anserini's ``IndexCollection`` in a Java subprocess (the JVM options of :func:`jvm_options`; positions,
    document vectors and raw text are not stored: rageval keeps passage text itself), merging into one segment.
    Everything is built inside a temporary sibling folder and renamed to ``index_dir`` at the end, so a killed
    build never leaves a half index at ``index_dir`` (only a ``.<name>.building-*`` folder that is safe to delete).
    Passages whose document is blank are not indexed (Anserini counts them as ``empty``).
    """
    index_dir = Path(index_dir)
    if index_dir.exists():
        raise RagevalError(f"{index_dir}: already exists; delete it to rebuild the BM25 index")
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{index_dir.name}.building-", dir=index_dir.parent))
    try:
        collection = work / "collection"
        collection.mkdir()
        count = write_json_collection(passages, collection / "passages.jsonl")
        if count == 0:
            raise RagevalError(f"{index_dir}: no passages to index")
        staged = work / "index"
        java_home = find_java_home()
        command = [str(java_home / "bin" / "java"), *jvm_options(), "-cp", str(anserini_jar()), _INDEXER_CLASS,
                   "-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator",
                   "-input", str(collection), "-index", str(staged), "-threads", str(threads), "-optimize"]
        done = subprocess.run(command, env={**os.environ, **java_env(java_home)}, capture_output=True,
                              text=True, errors="replace", check=False)
        log = done.stdout + done.stderr
        counters = parse_indexer_counters(log)
        indexed = counters.get("indexed", -1)
        if done.returncode != 0 or indexed + counters.get("empty", 0) != count or counters.get("errors", 0):
            raise RagevalError(f"{index_dir}: the Lucene indexer failed (exit {done.returncode}, {count} passages "
                               f"written, counters {counters}); its last output:\n{log[-2000:]}")
        manifest = {"passages": count, "indexed": indexed, "empty": counters.get("empty", 0),
                    "anserini": anserini_jar().name}
        (staged / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.rename(staged, index_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return index_dir


def is_complete_index(index_dir: Path) -> bool:
    """True when ``index_dir`` holds an index that :func:`build_bm25_index` finished."""
    return (Path(index_dir) / MANIFEST_NAME).is_file()


def bm25_index_dir(fingerprint: str) -> Path:
    """Where the BM25 index of the corpus with this fingerprint is cached: ``cache_dir()/indexes/bm25-<fp[:16]>``."""
    if not re.fullmatch(r"[0-9A-Za-z]{16,}", fingerprint):
        raise ValueError(f"corpus fingerprint {fingerprint!r}: expected at least 16 letters or digits (a hex digest)")
    return cache_dir() / "indexes" / f"bm25-{fingerprint[:16]}"


def load_or_build_bm25_index(passages: Iterable[Passage], fingerprint: str, threads: int = 2) -> Path:
    """The cached BM25 index for the corpus ``fingerprint``; built from ``passages`` only if not cached yet.

    ``passages`` is not read at all when the index is cached. The caller owns the fingerprint: it must change
    whenever the passages do (e.g. a hash of every id, title and text).
    """
    index_dir = bm25_index_dir(fingerprint)
    if is_complete_index(index_dir):
        return index_dir
    try:
        return build_bm25_index(passages, index_dir, threads=threads)
    except (RagevalError, OSError):
        if is_complete_index(index_dir):  # another process finished the same build first
            return index_dir
        raise


def _to_ranking(query_id: str, hits) -> Ranking:
    # Anserini's scores are already rounded to 4 decimals but held as float32 (7.6575 arrives as 7.65749979...)
    return Ranking(query_id, tuple(ScoredPassage(hit.docid, round(float(hit.score), 4)) for hit in hits))


class BM25Retriever:
    """Searches one Lucene index with BM25 (see the module docstring for the formula and the defaults).

    Holds the index open for its lifetime; all retrievers share the process's one JVM. Searching is safe from
    several threads (Lucene's searcher is thread-safe; pyjnius attaches each calling thread to the JVM).
    """

    def __init__(self, index_dir: Path, k1: float = BM25_K1, b: float = BM25_B):
        self.index_dir = Path(index_dir)
        self.k1 = float(k1)
        self.b = float(b)
        if not is_complete_index(self.index_dir):
            raise RagevalError(f"{self.index_dir}: not a BM25 index built by rageval (no {MANIFEST_NAME}); "
                               f"build it with build_bm25_index or load_or_build_bm25_index")
        searcher_class = ensure_jvm()
        self._searcher = searcher_class(str(self.index_dir))
        self._searcher.set_bm25(self.k1, self.b)

    @property
    def num_passages(self) -> int:
        return int(self._searcher.num_docs)

    def search(self, query_text: str, k: int = 10, query_id: str = "") -> Ranking:
        """The top ``k`` passages for ``query_text``, best first (fewer if fewer passages share a query term)."""
        check_k(k)
        if not query_text.strip():
            return Ranking(query_id, ())
        return _to_ranking(query_id, self._searcher.search(query_text, k=int(k)))

    def batch_search(self, queries: Sequence[Query], k: int = 10, threads: int = 2) -> dict[str, Ranking]:
        """Rankings of the top ``k`` passages for every query, keyed by query id in input order.

        Uses Anserini's multi-threaded batch search; results equal :meth:`search` query by query.
        """
        check_k(k)
        check_unique_query_ids(queries)
        ids = [query.query_id for query in queries]
        searchable = [query for query in queries if query.text.strip()]
        hits = {}
        if searchable:
            hits = self._searcher.batch_search([q.text for q in searchable], [q.query_id for q in searchable],
                                               k=int(k), threads=int(threads))
        return {qid: _to_ranking(qid, hits.get(qid, ())) for qid in ids}

    def close(self) -> None:
        """Release the index files; the retriever cannot search afterwards."""
        self._searcher.close()

    def __enter__(self) -> BM25Retriever:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BM25Retriever({str(self.index_dir)!r}, k1={self.k1}, b={self.b})"


