"""The HAGRID attributed-answer run: scenarios G, RTG-gold, RTG-vanilla, RTG-monot5, RTG-query-gen and GTR, plus
HAGRID's own gold answers, scored by NLI and stored in one run file (Djeddal et al., CIKM 2024; SPEC §3; issue 5).

Scenarios (k = 2 input passages for the retrieval ones, as the paper fixes it; citations are the passage numbers):

* **G**: closed-book answer, no citations (correctness only).
* **RTG-gold**: the query's HAGRID quotes (its human-assessed relevant MIRACL passages), numbered by quote index.
* **RTG-vanilla**: the top k of ``vanilla_system`` over the rageval corpus (every HAGRID quote of every query, plus
  ~14k other Wikipedia passages): BM25 by default, or ``bm25+rerank`` (the MiniLM cross-encoder re-scores BM25's top
  ``depth``; the paper's two-stage BM25 + MonoT5). Our cross-encoder is trained on NQ and halves BM25's P@1 here
  (Table 3 in docs/results.md), so the default is BM25.
* **RTG-monot5**: the top 2 of the shipped real BM25 + MonoT5 run over MIRACL-en (the paper's own retrieval).
* **RTG-query-gen**: the LLM writes up to 3 sub-queries; the user query and each retrieve their BM25 top ``depth``;
  the lists are fused (Sort, CombSUM, CombMNZ, PM2, Rerank; MAX is the per-query oracle over the single lists) and
  the generator reads the top k of ``generation_fusion``: CombSUM by default (the paper uses Rerank with MonoT5; our
  NQ-trained cross-encoder ranks far below CombSUM here, see Table 3).
* **GTR**: the G answer split into statements; each statement retrieves one passage (BM25 top ``depth`` → the
  cross-encoder → top 1), which becomes its citation.
* **gold-answer**: every HAGRID dev answer (all queries, not only the sampled ones) with its own citations to the
  quotes, scored sentence by sentence as HAGRID's annotators labelled them: the human-agreement rows.

Retrieval (Table 3) is judged against the quotes: a passage is relevant when it is one of the query's quotes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rageval.attribution.metrics import InputPassage
from rageval.attribution.nli import checker_threshold
from rageval.attribution.prompts import (
    ANSWER_DECODING,
    CITATION_FEW_SHOT,
    CLOSED_BOOK_FEW_SHOT,
    build_attributed_prompt,
    build_closed_book_prompt,
)
from rageval.attribution.scoring import AnswerRecord, StatementRecord, human_agreement, score_answers
from rageval.attribution.statements import parse_citations, split_statements
from rageval.data.loaders import HagridRecord, HagridRunRecord
from rageval.types import Passage, Query, Ranking, ScoredPassage

GENERATED_SCENARIOS = ("G", "RTG-gold", "RTG-vanilla", "RTG-monot5", "RTG-query-gen", "GTR")
GOLD_SCENARIO = "gold-answer"
#: The scenarios whose answers carry citations (G is closed-book: correctness only, ``score_citations=False``).
CITING_SCENARIOS = ("RTG-gold", "RTG-vanilla", "RTG-monot5", "RTG-query-gen", "GTR", GOLD_SCENARIO)
TABLE3_FUSIONS = ("sort", "combsum", "combmnz", "pm2", "rerank")
TABLE3_MEASURES = ("P@1", "R@1", "P@10", "R@10", "nDCG@10")
Log = Callable[[str], None]


@dataclass(frozen=True)
class AttributionPlan:
    """What one HAGRID run computes. ``num_queries`` HAGRID dev queries from ``first_query`` (file order) get the
    generated scenarios; the gold answers of every query are always scored."""

    name: str = "hagrid-gemma3_270m"
    num_queries: int = 100
    first_query: int = 0
    k: int = 2
    depth: int = 10
    vanilla_system: str = "bm25"
    generation_fusion: str = "combsum"
    nli_backend: str = "trained"

    @property
    def file_name(self) -> str:
        return f"{self.name}.sqlite"


def hagrid_query_id(record: HagridRecord) -> str:
    return f"hagrid:{record.query_id}"


def quote_passage_id(docid: str) -> str:
    return f"hagrid:{docid}"


def quote_numbers(record: HagridRecord) -> dict[int, str]:
    """The citation number of each quote (-> its passage id): its ``idx``, or ``idx + 1`` for 0-based records.

    91 of the 716 shipped records (file lines 626-716) number their quotes from 0 while their answers cite from 1:
    no answer there cites ``[0]`` and 76 of their 236 citations name ``max idx + 1``. A record whose quotes start at
    0 and whose answers never cite 0 is read as 1-based (``[n]`` = quote ``idx`` n - 1).
    """
    indices = [q.idx for q in record.quotes]
    cited = {n for a in record.answers for n in parse_citations(a.text)[1]}
    offset = 1 if indices and min(indices) == 0 and 0 not in cited else 0
    return {q.idx + offset: quote_passage_id(q.docid) for q in record.quotes}


def quote_inputs(record: HagridRecord, titles: Mapping[str, str]) -> dict[int, InputPassage]:
    """The query's quotes as input passages under the number answers cite them by (:func:`quote_numbers`)."""
    texts = {quote_passage_id(q.docid): q.text for q in record.quotes}
    return {n: InputPassage(n, pid, titles.get(pid, ""), texts[pid]) for n, pid in quote_numbers(record).items()}


def ranked_inputs(passage_ids: Sequence[str], passages: Mapping[str, Passage]) -> dict[int, InputPassage]:
    """Passages of a ranking numbered 1, 2, ... in rank order."""
    return {n: InputPassage(n, pid, passages[pid].title, passages[pid].text)
            for n, pid in enumerate(passage_ids, start=1)}


def gold_citation_ids(record: HagridRecord) -> tuple[str, ...]:
    """The quote passage ids cited by any of the query's gold answers (C_gold of the overlap metric)."""
    by_index = quote_numbers(record)
    cited = [by_index[n] for a in record.answers for n in parse_citations(a.text)[1] if n in by_index]
    return tuple(dict.fromkeys(cited))


def reference_answers(record: HagridRecord) -> tuple[str, ...]:
    """The gold answers without their citation markers (references of the correctness metrics)."""
    return tuple(dict.fromkeys(t for t in (parse_citations(a.text)[0] for a in record.answers) if t))


def answer_targets(scenario: str, record: HagridRecord,
                   canonical: Callable[[str], str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(gold citations, references)`` an answer of ``scenario`` to ``record`` is scored against.

    HAGRID's own answers get neither; G gets the references only (it has no citations to score); RTG-gold compares
    its citations with the quote ids it was given, every other scenario with their corpus ids (``canonical``: a
    quote deduplicated against an identical corpus passage keeps that passage's id). The one rule of the build and
    of :mod:`rageval.attribution.rescore`.
    """
    if scenario == GOLD_SCENARIO:
        return (), ()
    references = reference_answers(record)
    if scenario not in CITING_SCENARIOS:
        return (), references
    gold = gold_citation_ids(record)
    return (gold if scenario == "RTG-gold" else tuple(canonical(pid) for pid in gold)), references


def statements_of(text: str, tokenizer) -> tuple[StatementRecord, ...]:
    return tuple(StatementRecord(s.text, s.citations, s.raw) for s in split_statements(text, tokenizer))


def gold_answer_records(record: HagridRecord, titles: Mapping[str, str]) -> list[AnswerRecord]:
    """HAGRID's answers to ``record``: statements are the annotated sentences, with their human labels (no overlap
    is computed: against their own citations it is trivial, the paper's "-")."""
    passages = quote_inputs(record, titles)
    answers = []
    for number, answer in enumerate(record.answers):
        statements = []
        for sentence in answer.sentences:
            text, citations = parse_citations(sentence.text)
            if text:
                statements.append(StatementRecord(text, citations, sentence.text, sentence.attributable))
        answers.append(AnswerRecord(GOLD_SCENARIO, hagrid_query_id(record), str(number), answer.text,
                                    tuple(statements), passages, (), (), answer.attributable, answer.informative))
    return answers


def attribute_after_generation(answer: str, tokenizer, retrieve_one: Callable[[str], str],
                               passages: Mapping[str, Passage]) -> tuple[str, tuple[StatementRecord, ...],
                                                                          dict[int, InputPassage]]:
    """GTR: each statement of ``answer`` cites the passage ``retrieve_one(statement)`` returns.

    Distinct passages are numbered in first-citation order; returns the cited answer text, its statements and the
    numbered passages.
    """
    numbers: dict[str, int] = {}
    statements, sentences = [], []
    for statement in split_statements(answer, tokenizer):
        passage_id = retrieve_one(statement.text)
        number = numbers.setdefault(passage_id, len(numbers) + 1)
        raw = f"{statement.text} [{number}]"
        statements.append(StatementRecord(statement.text, (number,), raw))
        sentences.append(raw)
    inputs = {n: InputPassage(n, pid, passages[pid].title, passages[pid].text) for pid, n in numbers.items()}
    return " ".join(sentences), tuple(statements), inputs


def citation_usability(records: Sequence[AnswerRecord]) -> dict[str, float]:
    """How usable a scenario's citations are: answers with a statement, with any valid citation, statements cited,
    citations naming a passage that was not given."""
    with_text = [r for r in records if r.statements]
    statements = [s for r in with_text for s in r.statements]
    citations = [(n, r) for r in with_text for s in r.statements for n in s.citations]
    valid = sum(n in r.passages for n, r in citations)
    return {
        "answers": len(records),
        "non_empty_answers": len(with_text),
        "answers_with_valid_citation": sum(any(n in r.passages for s in r.statements for n in s.citations)
                                           for r in with_text),
        "statements": len(statements),
        "cited_statements": sum(bool(s.citations) for s in statements),
        "citations": len(citations),
        "invalid_citations": len(citations) - valid,
    }


class AttributionResources:
    """HAGRID data, corpus, retrievers, reranker, generator, NLI model and BERTScore, loaded once."""

    def __init__(self, corpus, generator, nli, reranker, bert_scorer, hagrid: Sequence[HagridRecord],
                 hagrid_run: Sequence[HagridRunRecord], bm25=None, tokenizer=None):
        from rageval.retrieval.retrievers import Retrievers

        self.shared = Retrievers(corpus.passages)  # passages by id and the cached BM25 index, as the eRAG runs use
        self.corpus = corpus
        self.passages: dict[str, Passage] = self.shared.passages
        self.generator = generator
        self.nli = nli
        self.reranker = reranker
        self.bert_scorer = bert_scorer
        self.hagrid = list(hagrid)
        self.hagrid_run = {f"hagrid:{r.query_id}": r for r in hagrid_run}
        self._bm25 = bm25
        self._tokenizer = tokenizer

    @property
    def bm25(self):
        """The given retriever, else BM25 over the corpus' cached index."""
        return self._bm25 if self._bm25 is not None else self.shared.bm25

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from rageval.attribution.statements import sentence_tokenizer

            self._tokenizer = sentence_tokenizer(self.corpus)
        return self._tokenizer

    def canonical(self, passage_id: str) -> str:
        """The corpus id of a passage (a HAGRID quote deduplicated against an identical passage keeps one id)."""
        return self.corpus.resolve(passage_id) if passage_id in self.corpus else passage_id

    def titles(self) -> dict[str, str]:
        """Titles of HAGRID quotes by quote passage id (from the corpus; empty when unknown)."""
        return {pid: self.passages[self.canonical(pid)].title
                for r in self.hagrid for pid in (quote_passage_id(q.docid) for q in r.quotes)
                if self.canonical(pid) in self.passages}


def _rerank(resources: AttributionResources, query_id: str, text: str, ranking: Ranking, k: int) -> Ranking:
    """Every candidate of ``ranking`` re-scored by the cross-encoder for ``text``; the top ``k`` kept."""
    reranked = resources.reranker.rerank(Query(query_id, text), ranking, resources.passages,
                                         max(1, len(ranking.passages)))
    return Ranking(reranked.query_id, reranked.passages[:k])


def build_attribution_run(plan: AttributionPlan, resources: AttributionResources, out_path: Path,
                          log: Log = print, command: str = "") -> Path:
    """Generate, retrieve, score and store every scenario of ``plan`` into ``out_path`` (see the module docstring).

    Every LLM call goes through the generator (use a cached one: a killed build resumes from its cache).
    """
    from rageval.measures import compute_measures
    from rageval.retrieval.fusion import rerank_fusion
    from rageval.retrieval.subqueries import SUBQUERY_DECODING, fuse, generate_subqueries, subquery_rankings
    from rageval.store.attribution import AttributionRun, write_attribution_run

    started = time.perf_counter()
    records = resources.hagrid[plan.first_query:plan.first_query + plan.num_queries]
    if not records:
        raise ValueError(f"no HAGRID queries from {plan.first_query} (the file has {len(resources.hagrid)})")
    titles = resources.titles()
    queries = [Query(hagrid_query_id(r), r.query) for r in records]
    qrels = {hagrid_query_id(r): {resources.canonical(quote_passage_id(q.docid)): 1 for q in r.quotes}
             for r in records}
    bm25 = resources.bm25

    # Retrieval: user query, sub-queries, fusions (Table 3) and the two-stage vanilla ranking.
    subqueries = generate_subqueries(resources.generator, [q.text for q in queries], SUBQUERY_DECODING)
    log(f"sub-queries: {sum(map(len, subqueries))} for {len(queries)} queries ({time.perf_counter() - started:.0f} s)")
    systems: dict[str, dict[str, Ranking]] = {name: {} for name in
                                              ("bm25", "bm25+rerank", "monot5-run", *TABLE3_FUSIONS)}
    single_lists: dict[str, dict[str, Ranking]] = {}
    for query, subs in zip(queries, subqueries):
        lists = subquery_rankings(bm25, query.text, subs, plan.depth)
        systems["bm25"][query.query_id] = lists[0]
        systems["bm25+rerank"][query.query_id] = _rerank(resources, query.query_id, query.text, lists[0], plan.depth)
        for method in TABLE3_FUSIONS:
            systems[method][query.query_id] = (
                rerank_fusion(resources.reranker, query, lists, resources.passages, plan.depth) if method == "rerank"
                else fuse(lists, method, plan.depth, query.query_id))
        for position, ranking in enumerate(lists):
            single_lists.setdefault(f"list-{position}", {})[query.query_id] = ranking
        run_record = resources.hagrid_run.get(query.query_id)
        systems["monot5-run"][query.query_id] = Ranking(query.query_id, tuple(
            ScoredPassage(resources.canonical(quote_passage_id(r.docid)), r.score) for r in run_record.retrieved)
        ) if run_record else Ranking(query.query_id, ())
    fed = (f"P@{plan.k}", f"R@{plan.k}", f"nDCG@{plan.k}")  # of the passages the generator reads
    measures = _retrieval_measures({**systems, **single_lists}, qrels, [q.query_id for q in queries],
                                   compute_measures, tuple(dict.fromkeys((*TABLE3_MEASURES, *fed))))
    log(f"retrieval: {len(systems)} systems ({time.perf_counter() - started:.0f} s)")

    # Generation: closed-book once (G and GTR share it), one citation prompt per RTG scenario.
    run_passages = {quote_passage_id(r.docid): Passage(quote_passage_id(r.docid), r.title, r.text, "hagrid-run")
                    for rr in resources.hagrid_run.values() for r in rr.retrieved}
    lookup = {**run_passages, **resources.passages}
    inputs: dict[str, list[dict[int, InputPassage]]] = {
        "RTG-gold": [quote_inputs(r, titles) for r in records],
        "RTG-vanilla": [ranked_inputs(systems[plan.vanilla_system][q.query_id].passage_ids[:plan.k], lookup)
                        for q in queries],
        "RTG-monot5": [ranked_inputs([p.passage_id for p in systems["monot5-run"][q.query_id].passages[:plan.k]]
                                     if q.query_id in resources.hagrid_run else [], lookup) for q in queries],
        "RTG-query-gen": [ranked_inputs(systems[plan.generation_fusion][q.query_id].passage_ids[:plan.k], lookup)
                          for q in queries],
    }
    closed_book = resources.generator.generate([build_closed_book_prompt(q.text) for q in queries], ANSWER_DECODING)
    log(f"G: {len(closed_book)} answers ({time.perf_counter() - started:.0f} s)")
    generated: dict[str, list[str]] = {"G": closed_book}
    for scenario, per_query in inputs.items():
        prompts = [build_attributed_prompt(q.text, [(p.title, p.text) for _, p in sorted(numbered.items())])
                   for q, numbered in zip(queries, per_query)]
        generated[scenario] = resources.generator.generate(prompts, ANSWER_DECODING)
        log(f"{scenario}: {len(prompts)} answers ({time.perf_counter() - started:.0f} s)")

    answers: list[AnswerRecord] = []
    for i, (record, query) in enumerate(zip(records, queries)):
        def targets(scenario: str, record: HagridRecord = record) -> tuple[tuple[str, ...], tuple[str, ...]]:
            return answer_targets(scenario, record, resources.canonical)

        answers.append(AnswerRecord("G", query.query_id, "0", closed_book[i],
                                    statements_of(closed_book[i], resources.tokenizer), {}, *targets("G"),
                                    score_citations=False))
        for scenario, per_query in inputs.items():
            text = generated[scenario][i].strip()
            answers.append(AnswerRecord(scenario, query.query_id, "0", text,
                                        statements_of(text, resources.tokenizer), per_query[i], *targets(scenario)))

        def retrieve_one(statement: str, query_id: str = query.query_id) -> str:
            ranking = bm25.search(statement, plan.depth)
            return _rerank(resources, query_id, statement, ranking, 1).passage_ids[0]

        text, statements, cited = attribute_after_generation(closed_book[i], resources.tokenizer, retrieve_one,
                                                             resources.passages)
        answers.append(AnswerRecord("GTR", query.query_id, "0", text, statements, cited, *targets("GTR")))
    gold_answers = [a for r in resources.hagrid for a in gold_answer_records(r, titles)]
    log(f"scoring {len(answers)} generated and {len(gold_answers)} gold answers with {resources.nli.model_id}")
    scored = score_answers(answers, resources.nli, resources.bert_scorer)
    scored_gold = score_answers(gold_answers, resources.nli)
    log(f"scored ({time.perf_counter() - started:.0f} s)")

    usability = {scenario: citation_usability([a for a in answers if a.scenario == scenario])
                 for scenario in GENERATED_SCENARIOS}
    settings = {
        "kind": "attribution", "dataset": "hagrid-dev", "plan": dataclasses.asdict(plan),
        "generator": resources.generator.model_id, "nli": resources.nli.model_id,
        "nli_threshold": checker_threshold(resources.nli),
        "reranker": resources.reranker.model_id, "bertscore": getattr(resources.bert_scorer, "model_id", ""),
        "prompts": {"citation": CITATION_FEW_SHOT.identifier, "closed_book": CLOSED_BOOK_FEW_SHOT.identifier},
        "decoding": ANSWER_DECODING.as_dict(), "queries": len(records), "gold_answers": len(gold_answers),
        "usability": usability, "command": command, "seconds": round(time.perf_counter() - started, 1),
        "retriever": "BM25 (Lucene, k1=0.9, b=0.4) over the rageval corpus; cross-encoder " +
                     resources.reranker.model_id,
    }
    run = AttributionRun(
        settings=settings,
        queries=[(q.query_id, q.text, sorted(qrels[q.query_id])) for q in queries],
        scored=[*scored, *scored_gold],
        retrieval_rankings={name: {qid: [(p.passage_id, p.score) for p in ranking.passages]
                                   for qid, ranking in per_query.items()} for name, per_query in systems.items()},
        retrieval_measures=measures,
        subqueries={q.query_id: subs for q, subs in zip(queries, subqueries)},
        agreement=human_agreement(scored_gold),
    )
    return write_attribution_run(run, out_path)


def build_hagrid_attribution_run(plan: AttributionPlan, out_path: Path, load_checker: Callable[..., object], *,
                                 data_dir: Path, batch_size: int = 8, dtype: str | None = "bfloat16",
                                 cache_path: Path | None = None, log: Log = print, command: str = "") -> Path:
    """``rageval attribution``: load what :func:`build_attribution_run` needs (the shipped corpus, Gemma through the
    LLM-call cache at ``cache_path`` (default: the user cache), the checker ``load_checker(generator)`` returns, the
    NQ reranker, BERTScore and the HAGRID files under ``data_dir``), then build ``plan`` into ``out_path``."""
    from rageval.bertscore import BertScorer
    from rageval.corpus import build_corpus
    from rageval.data import HAGRID_FILE, HAGRID_RUN_FILE, read_hagrid, read_hagrid_run
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.generation.gemma import load_gemma_generator
    from rageval.retrieval.rerank import load_or_train_nq_reranker

    corpus = build_corpus(data_dir)
    generator = CachedGenerator(load_gemma_generator(batch_size=batch_size, dtype=dtype),
                                LLMCache(cache_path) if cache_path else LLMCache())
    resources = AttributionResources(
        corpus, generator, load_checker(generator), load_or_train_nq_reranker(corpus=corpus), BertScorer(),
        read_hagrid(data_dir / HAGRID_FILE), read_hagrid_run(data_dir / HAGRID_RUN_FILE))
    return build_attribution_run(plan, resources, out_path, log=log, command=command)


def _retrieval_measures(systems: Mapping[str, Mapping[str, Ranking]], qrels, query_ids: Sequence[str],
                        compute_measures, measure_names: Sequence[str]):
    """Per-query Table 3 measures of every system, plus MAX: per query and measure the best single list."""
    import pandas as pd

    frames = []
    for name, rankings in systems.items():
        frame = compute_measures(measure_names, {qid: r.passage_ids for qid, r in rankings.items()},
                                 {qid: qrels[qid] for qid in query_ids}, queries=query_ids)
        frames.append(frame.assign(system=name))
    table = pd.concat(frames, ignore_index=True)
    singles = table[table["system"].str.startswith("list-")]
    best = singles.groupby(["query_id", "measure"], as_index=False)["value"].max().assign(system="MAX")
    return pd.concat([table[~table["system"].str.startswith("list-")], best], ignore_index=True)
