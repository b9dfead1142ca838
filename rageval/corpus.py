"""The retrieval corpus built from the shipped files: ~16.5k deduplicated Wikipedia passages and the NQ queries.

Only the NQ gold passages are on-topic for NQ; every other passage is a distractor from another dataset, so
retrieval over this corpus is much easier than over full Wikipedia (21M DPR passages). Say so wherever results
over it are shown.

Passage ids (stable across builds: derived from the source record, never from a running counter):

==============  =========================================  ==============================================
source          id                                         from
==============  =========================================  ==============================================
``nq_long``     ``nq-long:<example_id>``                   NQ long answer, ``nq_open_gold_test_2889``
``nq_oracle``   ``nq-dpr:<line>``                          gold DPR passage, ``nq_open_oracle_psgs_w100``
``hotpotqa``    ``hotpotqa:<question_id>:<context id>``    HotpotQA distractor-setting paragraph
``hagrid``      ``hagrid:<docid>``                         HAGRID quote (MIRACL-en id ``<page>#<n>``)
``2wiki``       ``2wiki:<record>``                         2WikiMultihopQA corpus, 1-based list position
``wiki18``      ``wiki18:<id>``                            DPR wiki-18 sample, the file's own id
==============  =========================================  ==============================================

Query ids: ``nq:<example_id>`` for the 2,889 questions of the gold file, ``nq-oracle:<line>`` for the questions
that only the oracle file has.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from rageval.data import (
    CORPUS_2WIKI_FILE,
    CORPUS_WIKI18_FILE,
    HAGRID_FILE,
    HAGRID_RUN_FILE,
    HOTPOTQA_FILE,
    NQ_GOLD_FILE,
    NQ_ORACLE_FILE,
    NqGoldRecord,
    NqOracleRecord,
    iter_jsonl_gz,
    read_corpus_2wiki,
    read_corpus_wiki18,
    read_hagrid,
    read_hagrid_run,
    read_hotpotqa,
    read_nq_open_gold,
    read_nq_open_oracle,
)
from rageval.errors import DataError
from rageval.paths import DATA_DIR
from rageval.types import Passage, Query

# Which copy of a duplicated passage keeps its id: the NQ gold passages first, so NQ gold ids stay themselves.
SOURCE_ORDER = ("nq_oracle", "nq_long", "hotpotqa", "hagrid", "2wiki", "wiki18")
NQ_DATASET = "nq_open"
CORPUS_FORMAT = "rageval.corpus"
CORPUS_VERSION = 1

_NON_ALNUM = re.compile(r"[\W_]+")


def normalize_text(text: str) -> str:
    """Lowercase, keep only (Unicode) letters and digits, separated by single spaces.

    ``"Röntgen , of Germany"`` (PTB-tokenised) and ``"Röntgen, of Germany"`` both become ``"röntgen of germany"``;
    ``"1940 -- 1942"`` and ``"1940–1942"`` both become ``"1940 1942"``.
    """
    return _NON_ALNUM.sub(" ", text.lower()).strip()


@dataclass(frozen=True)
class SourceCount:
    """How many passages one source contributed: ``read`` distinct ids, ``kept`` as canonical, the rest aliased."""

    source: str
    read: int
    kept: int

    @property
    def duplicates(self) -> int:
        return self.read - self.kept


@dataclass(frozen=True)
class Corpus:
    """Deduplicated passages, the NQ queries whose gold ids point into them, and the duplicate-id aliases.

    ``aliases`` maps the id of every removed duplicate to its canonical passage id (sorted pairs).
    """

    passages: tuple[Passage, ...]
    nq_queries: tuple[Query, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    source_counts: tuple[SourceCount, ...] = ()
    _by_id: Mapping[str, Passage] = field(init=False, repr=False, compare=False, hash=False)
    _alias_map: Mapping[str, str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        by_id = {p.passage_id: p for p in self.passages}
        if len(by_id) != len(self.passages):
            raise ValueError("Corpus passages must have unique ids")
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_alias_map", dict(self.aliases))

    def __len__(self) -> int:
        return len(self.passages)

    def __contains__(self, passage_id: object) -> bool:
        return passage_id in self._by_id or passage_id in self._alias_map

    def resolve(self, passage_id: str) -> str:
        """The canonical id of ``passage_id`` (itself unless it is the id of a removed duplicate)."""
        return self._alias_map.get(passage_id, passage_id)

    def get(self, passage_id: str) -> Passage | None:
        """The passage with this id or alias, or None."""
        return self._by_id.get(self.resolve(passage_id))

    def passage(self, passage_id: str) -> Passage:
        """The passage with this id or alias; ``KeyError`` naming the id when there is none."""
        found = self.get(passage_id)
        if found is None:
            raise KeyError(f"no passage {passage_id!r} in the corpus")
        return found


# ------------------------------------------------------------------------------------------ dedup


@dataclass(frozen=True)
class Deduplicated:
    passages: tuple[Passage, ...]
    aliases: dict[str, str]  # duplicate id -> canonical id
    source_counts: tuple[SourceCount, ...]


def deduplicate_passages(passages: Iterable[Passage]) -> Deduplicated:
    """Keep the first of every group of passages with the same normalised text and compatible titles.

    Two passages are duplicates when ``normalize_text`` of their texts is equal and their normalised titles are
    equal or at least one is empty. Input order decides which id is canonical (callers pass ``SOURCE_ORDER``);
    a canonical passage without a title takes the title of its first titled duplicate. A repeated id (the same
    HAGRID quote offered for several queries) is the same passage, not a duplicate: only its first copy counts.
    """
    kept: list[Passage] = []
    groups: dict[str, list[int]] = {}  # normalised text -> positions in kept
    aliases: dict[str, str] = {}
    seen_ids: set[str] = set()
    read: dict[str, int] = {}
    for p in passages:
        if p.passage_id in seen_ids:
            continue
        seen_ids.add(p.passage_id)
        read[p.source] = read.get(p.source, 0) + 1
        title = normalize_text(p.title)
        group = groups.setdefault(normalize_text(p.text), [])
        match = next((i for i in group if not title or not kept[i].title or normalize_text(kept[i].title) == title),
                     None)
        if match is None:
            group.append(len(kept))
            kept.append(p)
            continue
        aliases[p.passage_id] = kept[match].passage_id
        if p.title and not kept[match].title:
            kept[match] = replace(kept[match], title=p.title)
    kept_per_source: dict[str, int] = {}
    for p in kept:
        kept_per_source[p.source] = kept_per_source.get(p.source, 0) + 1
    counts = tuple(SourceCount(s, n, kept_per_source.get(s, 0)) for s, n in read.items())
    return Deduplicated(tuple(kept), aliases, counts)


# ---------------------------------------------------------------------------------- candidate passages


def _nq_long_passages(gold: list[NqGoldRecord], titles: Mapping[str, str]) -> list[Passage]:
    """The 2889 file has no titles: take the NQ page title of the oracle line with the same question."""
    return [Passage(f"nq-long:{r.example_id}", titles.get(normalize_text(r.question), ""), r.text, "nq_long")
            for r in gold]


def _nq_oracle_passages(oracle: list[NqOracleRecord]) -> list[Passage]:
    return [Passage(f"nq-dpr:{r.line}", r.title, r.text, "nq_oracle") for r in oracle]


def _hotpotqa_passages(data_dir: Path) -> list[Passage]:
    return [Passage(f"hotpotqa:{r.question_id}:{c.context_id}", c.title, c.text, "hotpotqa")
            for r in read_hotpotqa(data_dir / HOTPOTQA_FILE) for c in r.contexts]


def _hagrid_passages(data_dir: Path) -> list[Passage]:
    """HAGRID quotes carry no title; the run file titles some MIRACL docids.

    A MIRACL docid is ``<Wikipedia page id>#<passage number>``, so a title known for one passage of a page is
    the title of all of them (this titles 901 of the 1,978 quotes instead of 609 by exact docid).
    """
    page_titles: dict[str, str] = {}
    for run in read_hagrid_run(data_dir / HAGRID_RUN_FILE):
        for r in run.retrieved:
            if r.title:
                page_titles.setdefault(r.docid.split("#")[0], r.title)
    return [Passage(f"hagrid:{q.docid}", page_titles.get(q.docid.split("#")[0], ""), q.text, "hagrid")
            for r in read_hagrid(data_dir / HAGRID_FILE) for q in r.quotes]


# ---------------------------------------------------------------------------------------- NQ queries


def _nq_queries(gold: list[NqGoldRecord], oracle: list[NqOracleRecord],
                resolve: Mapping[str, str]) -> tuple[Query, ...]:
    """NQ questions of both files, matched by normalised question text; answers are the union over both."""
    oracle_by_question = {normalize_text(r.question): r for r in oracle}
    matched: set[int] = set()
    queries = []
    for g in gold:
        o = oracle_by_question.get(normalize_text(g.question))
        gold_ids = [f"nq-long:{g.example_id}"]
        answers = list(g.answers)
        if o is not None:
            matched.add(o.line)
            gold_ids.append(f"nq-dpr:{o.line}")
            answers.extend(a for a in o.answers if a not in answers)
        queries.append(Query(f"nq:{g.example_id}", g.question, tuple(answers),
                             _unique(resolve.get(i, i) for i in gold_ids), NQ_DATASET))
    queries.extend(Query(f"nq-oracle:{o.line}", o.question, o.answers,
                         (resolve.get(f"nq-dpr:{o.line}", f"nq-dpr:{o.line}"),), NQ_DATASET)
                   for o in oracle if o.line not in matched)
    return tuple(queries)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def build_corpus(data_dir: Path = DATA_DIR) -> Corpus:
    """Build the deduplicated corpus and NQ queries from the files under ``data_dir`` (about a second)."""
    data_dir = Path(data_dir)
    gold = read_nq_open_gold(data_dir / NQ_GOLD_FILE)
    oracle = read_nq_open_oracle(data_dir / NQ_ORACLE_FILE)
    titles = {normalize_text(r.question): r.gold_title or r.title for r in oracle}
    candidates = [
        *_nq_oracle_passages(oracle),  # first: untokenised text with its DPR title wins over the PTB copy
        *_nq_long_passages(gold, titles),
        *_hotpotqa_passages(data_dir),
        *_hagrid_passages(data_dir),
        *read_corpus_2wiki(data_dir / CORPUS_2WIKI_FILE),
        *read_corpus_wiki18(data_dir / CORPUS_WIKI18_FILE),
    ]
    dedup = deduplicate_passages(candidates)
    counts = {c.source: c for c in dedup.source_counts}
    return Corpus(
        passages=dedup.passages,
        nq_queries=_nq_queries(gold, oracle, dedup.aliases),
        aliases=tuple(sorted(dedup.aliases.items())),
        source_counts=tuple(counts[s] for s in SOURCE_ORDER if s in counts),
    )


# ------------------------------------------------------------------------------------ fingerprint, I/O


def passages_per_source(corpus: Corpus) -> dict[str, int]:
    """How many passages of the (deduplicated) corpus each source keeps, by source name
    (``rageval build-corpus`` prints it)."""
    counts: dict[str, int] = {}
    for passage in corpus.passages:
        counts[passage.source] = counts.get(passage.source, 0) + 1
    return dict(sorted(counts.items()))


def _passage_row(p: Passage) -> dict:
    return {"type": "passage", "id": p.passage_id, "title": p.title, "text": p.text, "source": p.source}


def corpus_fingerprint(passages: Corpus | Iterable[Passage]) -> str:
    """SHA-256 (hex) of the passages in order (id, title, text, source), as canonical JSON lines: the one key of
    a corpus' BM25 index, embeddings and reranker (for the shipped corpus or the user's own passages alike).

    Queries and aliases do not enter it: they do not change what an index over the corpus contains, so an index
    cached under this fingerprint stays valid when only the queries change.
    """
    digest = hashlib.sha256()
    for p in passages.passages if isinstance(passages, Corpus) else passages:
        digest.update(json.dumps(_passage_row(p), ensure_ascii=False, sort_keys=True).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def write_corpus(corpus: Corpus, path: str | Path) -> None:
    """Write the corpus as one gzip JSON-lines file, atomically (temp file in the same folder, then rename).

    Line 1 is a header ``{"type": "header", "format", "version", "fingerprint", ...}``; then one line per
    source count, passage, query and alias, each with its ``type``. The bytes depend only on the corpus.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = [{
        "type": "header", "format": CORPUS_FORMAT, "version": CORPUS_VERSION,
        "fingerprint": corpus_fingerprint(corpus), "passages": len(corpus.passages),
        "queries": len(corpus.nq_queries), "aliases": len(corpus.aliases),
    }]
    rows += [{"type": "source_count", "source": c.source, "read": c.read, "kept": c.kept}
             for c in corpus.source_counts]
    rows += [_passage_row(p) for p in corpus.passages]
    rows += [{"type": "query", "id": q.query_id, "text": q.text, "answers": list(q.answers),
              "gold_passage_ids": list(q.gold_passage_ids), "dataset": q.dataset} for q in corpus.nq_queries]
    rows += [{"type": "alias", "id": a, "canonical": c} for a, c in corpus.aliases]
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False).encode("utf-8"))
                out.write(b"\n")
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _str(row: dict, key: str, path: Path, line: int) -> str:
    value = row.get(key)
    if not isinstance(value, str):
        raise DataError(path, f"expected a string, got {type(value).__name__}", line=line, field=key)
    return value


def _strs(row: dict, key: str, path: Path, line: int) -> tuple[str, ...]:
    value = row.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(path, "expected a list of strings", line=line, field=key)
    return tuple(value)


def _count(row: dict, key: str, path: Path, line: int) -> int:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(path, "expected a non-negative integer", line=line, field=key)
    return value


def read_corpus(path: str | Path) -> Corpus:
    """Read a file written by :func:`write_corpus`; checks the header and that the fingerprint still matches."""
    path = Path(path)
    header: dict | None = None
    passages: list[Passage] = []
    queries: list[Query] = []
    aliases: list[tuple[str, str]] = []
    counts: list[SourceCount] = []
    for line, row in iter_jsonl_gz(path):
        kind = row.get("type")
        if header is None:
            if kind != "header" or row.get("format") != CORPUS_FORMAT:
                raise DataError(path, f"not a rageval corpus file (expected a {CORPUS_FORMAT!r} header)",
                                line=line, field="type")
            if row.get("version") != CORPUS_VERSION:
                raise DataError(path, f"unsupported corpus version {row.get('version')!r} "
                                      f"(this rageval reads version {CORPUS_VERSION})", line=line, field="version")
            header = row
        elif kind == "passage":
            passages.append(Passage(_str(row, "id", path, line), _str(row, "title", path, line),
                                    _str(row, "text", path, line), _str(row, "source", path, line)))
        elif kind == "query":
            queries.append(Query(_str(row, "id", path, line), _str(row, "text", path, line),
                                 _strs(row, "answers", path, line), _strs(row, "gold_passage_ids", path, line),
                                 _str(row, "dataset", path, line)))
        elif kind == "alias":
            aliases.append((_str(row, "id", path, line), _str(row, "canonical", path, line)))
        elif kind == "source_count":
            counts.append(SourceCount(_str(row, "source", path, line), _count(row, "read", path, line),
                                      _count(row, "kept", path, line)))
        else:
            raise DataError(path, f"unknown record type {kind!r}", line=line, field="type")
    if header is None:
        raise DataError(path, "empty corpus file (no header)")
    try:
        corpus = Corpus(tuple(passages), tuple(queries), tuple(aliases), tuple(counts))
    except ValueError as exc:
        raise DataError(path, str(exc)) from None
    if corpus_fingerprint(corpus) != header.get("fingerprint"):
        raise DataError(path, "passages do not match the header's fingerprint (file altered or truncated)",
                        line=1, field="fingerprint")
    return corpus
