"""The user's data, in the formats they already have, as a validated starting :class:`~rageval.store.Run`.

Three sources, each read once:

- **questions**: rageval's queries JSONL (``query_id``, ``text``, ``answers``, optional ``gold_passage_ids``) or
  BEIR's ``queries.jsonl`` as it is (``_id``, ``text``, answers in ``metadata.answers`` or in the field named by
  ``answers_field``, looked up on the record first, then in ``metadata``);
- **passages**: rageval's passages JSONL (``passage_id``, ``title``, ``text``) or BEIR's ``corpus.jsonl``
  (``_id``, ``title``, ``text``);
- **a shipped dataset** instead of files (:func:`load_shipped_inputs`): a slice of the NQ-open test questions or
  of the HotpotQA dev questions over the rageval corpus (:mod:`rageval.corpus`), ranked by a retriever or (HotpotQA)
  by MiniLM over each question's own candidate paragraphs; the shipped demo runs are built from it;
- **candidates**: the user's own lists (a TREC run file, or the one-JSONL upload form) or retrieval over the
  corpus (BM25 with pyserini/Lucene, dense MiniLM + faiss, or hybrid CombSUM of the two); optional qrels (TREC
  ``qid 0 pid rel`` or BEIR's ``qrels/<split>.tsv`` with its header).

BEIR files are recognised by their fields (``_id``) and header, and rewritten line for line into rageval's form
before validation, so every error still names the user's file, line and field. Validation is the upload code's
(:mod:`rageval.upload`): one reader of each format in the code base.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rageval.errors import DataError, RagevalError
from rageval.retrieval.retrievers import RETRIEVERS, Retrievers
from rageval.store import Label, Run
from rageval.types import Passage, Query, Ranking
from rageval.upload.convert import convert_jsonl_upload, convert_trec_upload
from rageval.upload.fields import encoding_problem
from rageval.upload.jsonl import read_passages_file, read_queries_file
from rageval.upload.problems import UploadError, UploadFile, UploadLimits, UploadResult

#: No practical size limit for files named on the command line (the dashboard's upload keeps its own limits).
PIPELINE_LIMITS = UploadLimits(max_file_bytes=64 * 2**30, max_queries=10_000_000, max_passages_per_query=100_000,
                               max_text_chars=10_000_000)
RETRIEVER_DESCRIPTIONS = {
    "bm25": "bm25 (pyserini Lucene, k1=0.9, b=0.4) over {corpus}",
    "dense": "dense (all-MiniLM-L6-v2, exact inner product, faiss) over {corpus}",
    "hybrid": "hybrid: CombSUM of min-max normalised BM25 and dense (MiniLM) top-k over {corpus}",
}


@dataclass(frozen=True)
class SourcePaths:
    """Where the user's data is. ``run`` (given candidate lists) and ``retriever`` exclude each other."""

    queries: Path | None = None
    corpus: Path | None = None
    run: Path | None = None
    qrels: Path | None = None
    retriever: str | None = None
    answers_field: str | None = None


def _read_bytes(path: Path, what: str) -> bytes:
    path = Path(path)
    if not path.exists():
        raise DataError(path, f"no such file (the {what})")
    if path.is_dir():
        raise DataError(path, f"is a folder; expected the {what} file")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise DataError(path, f"not a readable gzip file: {error}") from error
    not_text = encoding_problem(data)
    if not_text:
        raise DataError(path, not_text)
    return data


def _first_record(data: bytes) -> dict | None:
    for line in data.splitlines():
        if line.strip():
            try:
                record = json.loads(line)
            except ValueError:
                return None
            return record if isinstance(record, dict) else None
    return None


def _rewrite_jsonl(data: bytes, convert) -> bytes:
    """Each non-blank JSON line through ``convert`` (a line that is not a JSON object is kept as it is, so the
    validator reports it on the same line number)."""
    lines = []
    for line in data.splitlines():
        try:
            record = json.loads(line) if line.strip() else None
        except ValueError:
            record = None
        lines.append(json.dumps(convert(record), ensure_ascii=False).encode() if isinstance(record, dict) else line)
    return b"\n".join(lines)


def is_beir_record(record: Mapping | None) -> bool:
    return isinstance(record, Mapping) and "_id" in record


def _beir_question(record: dict, answers_field: str | None) -> dict:
    metadata = record.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    field = answers_field or "answers"
    answers = record.get(field, metadata.get(field))
    if isinstance(answers, str):
        answers = [answers]
    native = {"query_id": record["_id"], "text": record.get("text")}
    if answers is not None:
        native["answers"] = answers
    gold = record.get("gold_passage_ids", metadata.get("gold_passage_ids"))
    if gold is not None:
        native["gold_passage_ids"] = gold
    return native


def _named_answers(record: dict, answers_field: str) -> dict:
    if answers_field in record:
        record = dict(record)
        value = record.pop(answers_field)
        record["answers"] = [value] if isinstance(value, str) else value
    return record


def _questions_bytes(path: Path, answers_field: str | None) -> bytes:
    """The questions file in rageval's form (BEIR's, or answers under another field, rewritten line for line)."""
    data = _read_bytes(path, "questions")
    if is_beir_record(_first_record(data)):
        data = _rewrite_jsonl(data, lambda r: _beir_question(r, answers_field))
    elif answers_field and answers_field != "answers":
        data = _rewrite_jsonl(data, lambda r: _named_answers(r, answers_field))
    return data


def read_questions(path: Path, answers_field: str | None = None,
                   limits: UploadLimits = PIPELINE_LIMITS) -> dict[str, tuple[int, Query]]:
    """The questions of ``path`` (rageval or BEIR form, see the module docstring) with their line numbers, by id
    in file order."""
    try:
        return read_queries_file(UploadFile(str(path), _questions_bytes(path, answers_field)), limits)
    except UploadError as error:
        raise _data_error(path, error) from error


def _beir_passage(record: dict) -> dict:
    return {"passage_id": record["_id"], "title": record.get("title") or "", "text": record.get("text")}


def _corpus_bytes(path: Path) -> bytes:
    data = _read_bytes(path, "corpus")
    if is_beir_record(_first_record(data)):
        data = _rewrite_jsonl(data, _beir_passage)
    return data


def read_corpus(path: Path, limits: UploadLimits = PIPELINE_LIMITS) -> dict[str, Passage]:
    """The passages of ``path`` (rageval or BEIR form), by id in file order."""
    try:
        return read_passages_file(UploadFile(str(path), _corpus_bytes(path)), limits)
    except UploadError as error:
        raise _data_error(path, error) from error


def _qrels_bytes(path: Path) -> bytes:
    """TREC qrels as they are; BEIR's TSV (``query-id corpus-id score``, with a header line) rewritten line for
    line into TREC's four fields (the header becomes a blank line)."""
    data = _read_bytes(path, "qrels")
    lines = data.splitlines()
    first = next((line for line in lines if line.strip()), b"")
    fields = first.split()
    if len(fields) == 3 or (fields and fields[0].lower() in (b"query-id", b"query_id", b"qid")):
        rewritten = []
        for number, line in enumerate(lines):
            parts = line.split()
            if not parts or (number == lines.index(first) and not _is_number(parts[-1])):
                rewritten.append(b"")
            elif len(parts) == 3:
                rewritten.append(b" ".join([parts[0], b"0", parts[1], parts[2]]))
            else:
                rewritten.append(line)
        data = b"\n".join(rewritten)
    return data


def _is_number(text: bytes) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _data_error(path: Path, error: UploadError) -> DataError:
    message = str(error)
    prefix = f"{path}: "
    return DataError(path, message[len(prefix):] if message.startswith(prefix) else message)


@dataclass(frozen=True)
class LoadedInputs:
    """The starting run (queries, the passages it touches, rankings, qrels labels) and the corpus size."""

    run: Run
    corpus_size: int
    description: dict
    questions_file: Path | None = None
    question_lines: Mapping[str, int] | None = None
    timing_s: Mapping[str, float] = field(default_factory=dict)  # the shipped source's time to rank
    shipped: bool = False  # the questions and candidates of a shipped dataset (load_shipped_inputs)

    def require_answers(self, why: str) -> None:
        """A :class:`DataError` naming the questions file, line and field for the first query without answers."""
        for query in self.run.queries:
            if not query.answers:
                line = (self.question_lines or {}).get(query.query_id)
                raise DataError(self.questions_file or "the run file", f"query {query.query_id!r} has no answers; "
                                f"{why}", line=line, field="answers")


def load_inputs(paths: SourcePaths, k: int, *, dataset: str = "", log=lambda message: None) -> LoadedInputs:
    """Read and validate the user's files and produce the candidate lists (given or retrieved) as a
    :class:`Run` with no LLM output yet. Raises :class:`DataError` naming the file, line and field."""
    if (paths.run is None) == (paths.retriever is None):
        raise RagevalError("give the candidate lists (--run R.trec or R.jsonl) or a retriever "
                           f"(--retriever {'|'.join(RETRIEVERS)}), not both and not neither")
    named_by = paths.queries or paths.run  # (a retriever without questions is refused below)
    dataset = dataset or (Path(named_by).stem if named_by else "")
    if paths.run is not None and _first_record(_read_bytes(paths.run, "run")) is not None:
        return _from_jsonl_run(paths, dataset)
    if paths.queries is None or paths.corpus is None:
        raise RagevalError("--queries and --corpus are required (the corpus gives the passage texts), unless --run "
                           "is the one-JSONL form whose records carry their passages")
    lines = read_questions(paths.queries, paths.answers_field)
    queries = {qid: query for qid, (_, query) in lines.items()}
    question_lines = {qid: number for qid, (number, _) in lines.items()}
    if paths.run is not None:  # (given lists, so no retriever: checked above)
        corpus = _corpus_bytes(paths.corpus)
        result = convert_trec_upload(
            UploadFile(str(paths.run), _read_bytes(paths.run, "run")),
            UploadFile(str(paths.queries), _questions_bytes(paths.queries, paths.answers_field)),
            UploadFile(str(paths.corpus), corpus),
            UploadFile(str(paths.qrels), _qrels_bytes(paths.qrels)) if paths.qrels else None,
            dataset=dataset, limits=PIPELINE_LIMITS)
        run = _raise_errors(result)
        corpus_size = sum(1 for line in corpus.splitlines() if line.strip())  # validated: one passage a line
        description = {"retriever": run.settings["retriever"] or f"given lists ({Path(paths.run).name})",
                       "candidates": f"the user's run file {paths.run}"}
        return LoadedInputs(_only_inputs(run), corpus_size, description, Path(paths.queries), question_lines)

    assert paths.retriever is not None  # (no run file, so a retriever: checked above)
    passages = read_corpus(paths.corpus)
    qrels = _read_qrels(paths.qrels, queries) if paths.qrels else {}
    queries = {qid: replace(q, dataset=dataset, gold_passage_ids=tuple(p for p, v in qrels[qid].items() if v > 0))
               if qid in qrels else replace(q, dataset=dataset) for qid, q in queries.items()}
    _check_gold_ids(queries, passages, paths.queries)
    rankings = Retrievers(passages.values(), log=log).search(paths.retriever, list(queries.values()), k)
    labels = [Label("qrels", qid, pid, float(v)) for qid, judged in qrels.items() if qid in queries
              for pid, v in judged.items()]
    used = dict.fromkeys([p for r in rankings.values() for p in r.passage_ids]
                         + [p for q in queries.values() for p in q.gold_passage_ids] + [x.passage_id for x in labels])
    run = Run(settings={"dataset": dataset}, queries=list(queries.values()),
              passages=[passages[p] for p in used if p in passages],
              rankings=[rankings[qid] for qid in queries], labels=labels)
    description = {"retriever": RETRIEVER_DESCRIPTIONS[paths.retriever].format(
        corpus=f"{Path(paths.corpus).name} ({len(passages):,} passages)"), "retriever_name": paths.retriever,
        "candidates": f"retrieved by {paths.retriever} from {paths.corpus}"}
    return LoadedInputs(run, len(passages), description, Path(paths.queries), question_lines)


def load_retrieval_inputs(queries_path: Path | None, corpus_path: Path | None, qrels_path: Path | None = None,
                          num_queries: int | None = None) -> tuple[str, list[Query], dict[str, Passage], str]:
    """Questions (with gold passages from the questions or the qrels), the corpus and its fingerprint, for
    evaluating retrievers on the user's own data (``rageval eval-retrieval --queries Q --corpus C``)."""
    if queries_path is None or corpus_path is None:
        raise RagevalError("--queries and --corpus go together (your questions and the passages to retrieve from)")
    queries = {qid: q for qid, (_, q) in read_questions(queries_path).items()}
    passages = read_corpus(corpus_path)
    qrels = _read_qrels(qrels_path, queries) if qrels_path else {}
    dataset = Path(queries_path).stem
    queries = {qid: replace(q, dataset=dataset, gold_passage_ids=tuple(p for p, v in qrels[qid].items() if v > 0))
               if qid in qrels else replace(q, dataset=dataset) for qid, q in queries.items()}
    _check_gold_ids(queries, passages, queries_path)
    chosen = list(queries.values())[:num_queries] if num_queries else list(queries.values())
    from rageval.corpus import corpus_fingerprint

    return dataset, chosen, passages, corpus_fingerprint(passages.values())


def _read_qrels(path: Path, queries: Mapping[str, Query]) -> dict[str, dict[str, float]]:
    return read_qrels(path)


def read_qrels(path: Path) -> dict[str, dict[str, float]]:
    """The qrels judgments ``{query: {passage: relevance}}`` (TREC qrels or BEIR's TSV), validated by the upload's
    TREC qrels reader (the one TREC line rule, :mod:`rageval.trec`); the first error raises :class:`DataError`
    naming the file and line."""
    from rageval.upload.problems import DEFAULT_LIMITS, ERROR, Problems
    from rageval.upload.trec import read_trec_qrels

    problems = Problems(DEFAULT_LIMITS.max_problems_per_file)
    judged = read_trec_qrels(UploadFile(str(path), _qrels_bytes(path)), problems, PIPELINE_LIMITS)
    first = next((problem for problem in problems.result() if problem.severity == ERROR), None)
    if first is not None:
        raise DataError(path, first.message, line=first.line)
    return {qid: values for qid, (_, values) in judged.items()}


def _check_gold_ids(queries: Mapping[str, Query], passages: Mapping[str, Passage], path: Path) -> None:
    for query in queries.values():
        missing = [p for p in query.gold_passage_ids if p not in passages]
        if missing:
            raise DataError(path, f"gold passage {missing[0]!r} is not in the corpus", record=query.query_id,
                            field="gold_passage_ids")


def _raise_errors(result: UploadResult) -> Run:
    """The converted run; the first error (with the count of the others) raises :class:`DataError`."""
    if result.errors:
        first = result.errors[0]
        more = f" ({len(result.errors) - 1} more problems)" if len(result.errors) > 1 else ""
        raise DataError(first.file, first.message + more, line=first.line)
    assert result.run is not None  # a result without errors has its run
    return result.run


def _only_inputs(run: Run) -> Run:
    """The inputs of a converted upload: queries, passages, rankings and given labels (no measures yet)."""
    return Run(settings={"dataset": run.settings.get("dataset", "")}, queries=run.queries, passages=run.passages,
               rankings=run.rankings, labels=run.labels, doc_outputs=run.doc_outputs, e2e_outputs=run.e2e_outputs)


def _from_jsonl_run(paths: SourcePaths, dataset: str) -> LoadedInputs:
    """The one-JSONL upload form as candidates: each record carries its question, answers and ranked passages."""
    assert paths.run is not None  # (the caller found a JSON record in it)
    result = convert_jsonl_upload(UploadFile(str(paths.run), _read_bytes(paths.run, "run")), dataset=dataset,
                                  limits=PIPELINE_LIMITS)
    run = _raise_errors(result)
    if paths.queries is not None:  # the questions file's answers and gold ids win over the records'
        queries = {qid: query for qid, (_, query) in read_questions(paths.queries, paths.answers_field).items()}
        missing = [q.query_id for q in run.queries if q.query_id not in queries]
        if missing:
            raise DataError(paths.run, f"query {missing[0]!r} is not in {paths.queries}", record=missing[0])
        run = replace(run, queries=[replace(queries[q.query_id], dataset=dataset) for q in run.queries])
    description = {"retriever": run.settings.get("retriever") or "given lists",
                   "candidates": f"the user's run file {paths.run} (one-JSONL form)"}
    return LoadedInputs(_only_inputs(run), len(run.passages), description, Path(paths.queries or paths.run))


# ------------------------------------------------------------------------------------ the shipped datasets

#: The shipped question sets: ``dataset`` without ``queries`` (the rageval corpus gives the passages).
SHIPPED_DATASETS = {"nq_open": "NQ-open test", "hotpotqa": "HotpotQA dev (distractor)"}
#: Candidates of a shipped dataset: a retriever over the rageval corpus, or HotpotQA's own candidate paragraphs.
SHIPPED_RETRIEVERS = (*RETRIEVERS, "candidates")
SHIPPED_RETRIEVER_DESCRIPTIONS = {
    "bm25": "bm25 (pyserini Lucene, k1=0.9, b=0.4) over the rageval corpus",
    "dense": "dense (all-MiniLM-L6-v2, exact inner product) over the rageval corpus",
    "hybrid": "hybrid: CombSUM of min-max normalised BM25 and dense (MiniLM) top-k over the rageval corpus",
    "candidates": "HotpotQA's own ~10 candidate paragraphs (2 supporting + distractors), ordered by MiniLM cosine",
}
CORPUS_NOTE = ("The rageval corpus is the deduplicated union of the shipped passages (16,507), not the 21M-passage "
               "Wikipedia of the papers: retrieval is easier and gold passages rank higher than in the papers.")


class ShippedData:
    """The rageval corpus (:func:`rageval.corpus.build_corpus`) and its :class:`Retrievers`, built on first use and
    shared by every run of a build (``rageval demo-runs``)."""

    def __init__(self, corpus=None, retrievers: Retrievers | None = None):
        self._corpus = corpus
        self._retrievers = retrievers

    @property
    def corpus(self):
        if self._corpus is None:
            from rageval.corpus import build_corpus

            self._corpus = build_corpus()
        return self._corpus

    @property
    def retrievers(self) -> Retrievers:
        if self._retrievers is None:
            from rageval.corpus import corpus_fingerprint

            self._retrievers = Retrievers(self.corpus.passages, corpus_fingerprint(self.corpus))
        return self._retrievers


def shipped_queries(dataset: str, shipped: ShippedData, offset: int = 0,
                    num_queries: int | None = None) -> list[Query]:
    """Questions ``offset .. offset + num_queries - 1`` (file order) of a shipped dataset, with gold ids."""
    from rageval.retrieval.evaluate import hotpotqa_queries, nq_open_queries

    if dataset == "nq_open":
        return nq_open_queries(shipped.corpus, num_queries, offset)
    if dataset == "hotpotqa":
        end = None if num_queries is None else offset + num_queries
        return hotpotqa_queries(shipped.corpus, num_queries=end)[offset:]
    raise RagevalError(f"dataset {dataset!r}: without --queries, expected a shipped dataset "
                       f"({' or '.join(SHIPPED_DATASETS)})")


def hotpotqa_candidate_rankings(queries: Sequence[Query], shipped: ShippedData) -> dict[str, Ranking]:
    """Each HotpotQA question's own candidate paragraphs (canonical corpus ids), ordered by the MiniLM cosine
    between question and paragraph (ties keep the file order)."""
    import numpy as np

    from rageval.data import HOTPOTQA_FILE, read_hotpotqa
    from rageval.paths import DATA_DIR
    from rageval.types import ScoredPassage

    records = {f"hotpotqa:{r.question_id}": r for r in read_hotpotqa(DATA_DIR / HOTPOTQA_FILE)}
    corpus, retrievers, rankings = shipped.corpus, shipped.retrievers, {}
    for query in queries:
        record = records[query.query_id]
        ids = list(dict.fromkeys(corpus.resolve(f"hotpotqa:{record.question_id}:{c.context_id}")
                                 for c in record.contexts))
        vectors = retrievers.encoder.encode([query.text] + [retrievers.passages[i].as_document() for i in ids])
        scores = vectors[1:] @ vectors[0]
        order = np.argsort(-scores, kind="stable")
        rankings[query.query_id] = Ranking(query.query_id,
                                           tuple(ScoredPassage(ids[i], float(scores[i])) for i in order))
    return rankings


def load_shipped_inputs(dataset: str, retriever: str, k: int, shipped: ShippedData, *, offset: int = 0,
                        num_queries: int | None = None, log=lambda message: None) -> LoadedInputs:
    """A slice of a shipped dataset (:data:`SHIPPED_DATASETS`) and its candidates (:data:`SHIPPED_RETRIEVERS`),
    the top ``k`` of each, as a starting :class:`Run` (what ``rageval demo-runs`` and ``rageval erag`` evaluate)."""
    if retriever not in SHIPPED_RETRIEVERS or (retriever == "candidates" and dataset != "hotpotqa"):
        raise RagevalError(f"retriever {retriever!r}: expected one of {', '.join(RETRIEVERS)} (or candidates, with "
                           "the hotpotqa dataset)")
    started = time.perf_counter()
    queries = shipped_queries(dataset, shipped, offset, num_queries)
    if not queries:
        name = {"nq_open": "NQ-open", "hotpotqa": "HotpotQA"}[dataset]
        raise RagevalError(f"no {name} queries in the slice offset={offset}, n={num_queries}")
    rankings = (hotpotqa_candidate_rankings(queries, shipped) if retriever == "candidates"
                else shipped.retrievers.search(retriever, queries, k))
    passages = shipped.retrievers.passages
    used = dict.fromkeys([pid for q in queries for pid in rankings[q.query_id].passage_ids[:k]]
                         + [pid for q in queries for pid in q.gold_passage_ids])
    run = Run(settings={"dataset": dataset}, queries=queries, passages=[passages[p] for p in used if p in passages],
              rankings=[Ranking(q.query_id, rankings[q.query_id].passages[:k]) for q in queries])
    description = {
        "dataset_slice": f"questions {offset}..{offset + len(queries) - 1} of the shipped "
                         f"{SHIPPED_DATASETS[dataset]} file, in file order",
        "retriever": SHIPPED_RETRIEVER_DESCRIPTIONS[retriever], "retriever_name": retriever,
        "corpus": {"passages": len(shipped.corpus.passages)}, "notes": CORPUS_NOTE}
    seconds = round(time.perf_counter() - started, 1)
    log(f"rankings: {seconds} s")
    return LoadedInputs(run, len(shipped.corpus.passages), description, timing_s={"rankings": seconds},
                        shipped=True)
