"""Retrieval evaluation: gold passages of NQ-open and HotpotQA in the real corpus, measures, systems, run files,
and ``rageval eval-retrieval`` end to end on a tiny slice (5 NQ questions, a ~110-passage corpus)."""

from __future__ import annotations

import math

import pytest

from rageval import cli
from rageval.corpus import Corpus, build_corpus
from rageval.errors import RagevalError
from rageval.retrieval import evaluate as ev
from rageval.retrieval.rerank import rerank_with
from rageval.store import RunReader, write_run
from rageval.types import Passage, Query, Ranking, ScoredPassage


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_corpus()


def ranking(query_id: str, *pids: str) -> Ranking:
    return Ranking(query_id, tuple(ScoredPassage(pid, float(len(pids) - i)) for i, pid in enumerate(pids)))


class DictRetriever:
    """A fake first-stage retriever returning fixed rankings (cut to k)."""

    def __init__(self, rankings: dict[str, Ranking]):
        self.rankings = rankings
        self.calls = 0

    def batch_search(self, queries, k):
        self.calls += 1
        return {q.query_id: Ranking(q.query_id, self.rankings[q.query_id].passages[:k]) for q in queries}


class TableReranker:
    """A fake cross-encoder scoring passages from a table."""

    model_id = "fake-table"

    def __init__(self, scores: dict[str, float]):
        self.scores = scores

    def score(self, query_text, passages):
        return [self.scores[p.passage_id] for p in passages]

    def rerank(self, query, ranking, passages, k):
        return rerank_with(self, query, ranking, passages, k)


# --------------------------------------------------------------------------------------------- datasets


def test_hotpotqa_gold_is_the_two_supporting_paragraphs_as_canonical_corpus_ids(corpus):
    queries = ev.load_queries("hotpotqa", corpus)
    assert len(queries) == 400  # the shipped dev sample has 400 questions
    assert len({q.query_id for q in queries}) == 400
    assert all(q.query_id.startswith("hotpotqa:") and q.dataset == "hotpotqa" for q in queries)
    for q in queries:
        assert q.gold_passage_ids and all(corpus.resolve(pid) == pid and corpus.get(pid) for pid in q.gold_passage_ids)
    # HotpotQA marks exactly 2 supporting paragraphs per question; none of the 400 pairs was merged by dedup
    assert {len(q.gold_passage_ids) for q in queries} == {2}


def test_nq_open_queries_are_the_corpus_queries_in_file_order(corpus):
    queries = ev.load_queries("nq_open", corpus, num_queries=7)
    assert queries == list(corpus.nq_queries[:7])
    assert all(q.gold_passage_ids and all(pid in corpus for pid in q.gold_passage_ids) for q in queries)
    with pytest.raises(ValueError, match="dataset must be one of"):
        ev.load_queries("msmarco", corpus)


# --------------------------------------------------------------------------------------------- measures


def test_retrieval_measures_on_a_hand_made_ranking():
    queries = [Query("q1", "?", gold_passage_ids=("g1", "g2")), Query("q2", "?", gold_passage_ids=("g3",))]
    rankings = {"q1": ranking("q1", "x", "g1", "y", "g2")}  # q2 has no ranking: every measure is 0
    frame = ev.compute_retrieval_measures(rankings, queries)
    values = {(r.query_id, r.measure): r.value for r in frame.itertuples()}
    # q1: gold at ranks 2 and 4 of 2 gold; DCG = 1/log2(3) + 1/log2(5), ideal = 1 + 1/log2(3)
    ndcg = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    expected = {"R@1": 0.0, "R@5": 1.0, "R@10": 1.0, "R@20": 1.0, "R@100": 1.0, "nDCG@10": ndcg, "RR@10": 0.5}
    for measure, value in expected.items():
        assert values[("q1", measure)] == pytest.approx(value)
        assert values[("q2", measure)] == 0.0
    summary = ev.summarize({"sys": frame})
    assert summary.loc["sys", "RR@10"] == pytest.approx(0.25)  # (0.5 + 0) / 2


def test_retrieval_measures_accept_the_measure_grammar():
    assert ev.parse_retrieval_measures(",".join(ev.RETRIEVAL_MEASURES)) == list(ev.RETRIEVAL_MEASURES)
    assert ev.parse_retrieval_measures("MRR@10, P(rel=1,judged_only=True)@5,NumRet") == [
        "RR@10", "P(judged_only=True,rel=1)@5", "NumRet"]
    with pytest.raises(RagevalError, match="--measures: unknown measure 'Prec'"):
        ev.parse_retrieval_measures("R@5,Prec@5")
    with pytest.raises(RagevalError, match="at least one measure"):
        ev.parse_retrieval_measures(" , ")
    queries = [Query("q1", "?", gold_passage_ids=("g1",)), Query("q2", "?", gold_passage_ids=("g2",))]
    rankings = {"q1": ranking("q1", "x", "g1"), "q2": ranking("q2", "g2")}
    frame = ev.compute_retrieval_measures(rankings, queries, ["NumRet", "P@1"])
    summary = ev.summarize({"sys": frame})
    assert summary.loc["sys", "NumRet"] == 3 and summary.loc["sys", "P@1"] == 0.5  # counts are summed


def test_parse_systems_names_what_it_rejects():
    assert ev.parse_systems("bm25, dense,hybrid") == ["bm25", "dense", "hybrid"]
    with pytest.raises(RagevalError, match="splade"):
        ev.parse_systems("bm25,splade")
    with pytest.raises(RagevalError):
        ev.parse_systems("bm25,bm25")


# ---------------------------------------------------------------------------------------------- systems


def test_systems_share_components_fuse_and_rerank_only_the_head():
    queries = [Query("q", "question")]
    bm25 = DictRetriever({"q": ranking("q", "a", "b", "c", "d")})
    dense = DictRetriever({"q": ranking("q", "c", "e", "a")})
    passages = {pid: Passage(pid, "", pid) for pid in "abcde"}
    reranker = TableReranker({"a": 0.1, "b": 0.9, "c": 0.5, "d": 5.0})
    runs = ev.run_systems(list(ev.SYSTEMS), queries, k=4, bm25=bm25, dense=dense, reranker=reranker,
                          passages=passages, rerank_depth=2)
    assert bm25.calls == 1 and dense.calls == 1  # hybrids and rerank reuse the first-stage rankings
    # RRF: a = 1/61 + 1/63, c = 1/63 + 1/61 (tie: a first), b = 1/62, e = 1/62 (tie: b first), d = 1/64 (cut at 4)
    assert runs["hybrid-rrf"].rankings["q"].passage_ids == ("a", "c", "b", "e")
    # CombSUM of min-max: BM25 scores 4,3,2,1 -> a=1, b=2/3, c=1/3, d=0; dense 3,2,1 -> c=1, e=.5, a=0
    # a = 1, c = 4/3, b = 2/3, e = .5, d = 0
    assert runs["hybrid"].rankings["q"].passage_ids == ("c", "a", "b", "e")
    # top 2 (a, b) re-scored -> b (0.9), a (0.1); then c, d in BM25 order although d's table score is higher
    assert runs["bm25+rerank"].rankings["q"].passage_ids == ("b", "a", "c", "d")
    assert runs["bm25+rerank"].details == {"reranker": "fake-table", "rerank_depth": 2}


def test_rerank_without_a_reranker_is_an_error():
    queries = [Query("q", "question")]
    with pytest.raises(RagevalError, match="needs a reranker"):
        ev.run_systems(["bm25+rerank"], queries, k=3, bm25=DictRetriever({"q": ranking("q", "a")}))


def test_run_file_keeps_the_top_stored_depth_and_the_measures_of_the_full_ranking(tmp_path):
    queries = [Query("q", "question", ("answer",), ("g",), "nq_open")]
    passages = {pid: Passage(pid, "T", f"text {pid}") for pid in ["g", *(f"p{i:02d}" for i in range(30))]}
    full = ranking("q", *(f"p{i:02d}" for i in range(25)), "g")  # gold at rank 26: in R@100, not in the top 20
    system_run = ev.SystemRun("bm25", {"q": full}, 1.25, ev.SYSTEM_DESCRIPTIONS["bm25"])
    per_query = ev.compute_retrieval_measures({"q": full}, queries)
    run = ev.build_retrieval_run("nq_open", system_run, queries, passages, per_query, {"k": 100}, stored_depth=20)
    path = write_run(run, tmp_path / ev.run_file_name("nq_open", "bm25+rerank"))
    assert path.name == "retrieval-nq_open-bm25_rerank.sqlite"
    with RunReader(path) as reader:
        settings = reader.settings()
        assert settings["system"] == "bm25" and settings["stored_depth"] == 20 and settings["k"] == 100
        stored = reader.rankings()["q"]
        assert stored.passage_ids == full.passage_ids[:20]
        assert reader.counts()["passages"] == 21  # the 20 stored passages and the gold one
        assert reader.labels("gold")[["query_id", "passage_id", "value"]].values.tolist() == [["q", "g", 1.0]]
        measures = reader.measure_table().set_index("measure")["value"]
        assert measures["R@100"] == 1.0 and measures["R@20"] == 0.0


# -------------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def tiny_corpus(corpus) -> Corpus:
    """The first 5 NQ-open questions, their gold passages and every 160th other passage of the corpus."""
    queries = corpus.nq_queries[:5]
    gold = [corpus.passage(pid) for q in queries for pid in q.gold_passage_ids]
    others = [p for p in corpus.passages[::160] if p not in gold]
    return Corpus(tuple(dict.fromkeys(gold + others)), tuple(queries))


def test_eval_retrieval_cli_writes_one_readable_run_per_system(tiny_corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("rageval.corpus.build_corpus", lambda data_dir=None: tiny_corpus)
    out = tmp_path / "runs"
    status = cli.main(["eval-retrieval", "--dataset", "nq_open", "--systems", "bm25,dense,hybrid", "--k", "20",
                       "--num-queries", "5", "--stored-depth", "10", "--out-dir", str(out)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "nq_open: 5 queries" in printed and "hybrid" in printed
    assert sorted(p.name for p in out.iterdir()) == [
        "retrieval-nq_open-bm25.sqlite", "retrieval-nq_open-dense.sqlite", "retrieval-nq_open-hybrid.sqlite"]
    for system in ("bm25", "dense", "hybrid"):
        with RunReader(out / ev.run_file_name("nq_open", system)) as reader:
            settings = reader.settings()
            assert settings["system"] == system and settings["num_queries"] == 5
            assert settings["corpus"]["passages"] == len(tiny_corpus)
            assert "easier than over full Wikipedia" in settings["notes"]
            rankings = reader.rankings()
            assert len(rankings) == 5 and all(1 <= len(r.passages) <= 10 for r in rankings.values())
            table = reader.measure_table()
            assert set(table["measure"]) == set(ev.RETRIEVAL_MEASURES) and len(table) == 5 * 7
            # every gold passage is among ~110 passages: the top 20 of a sane retriever finds most of them
            assert table[table["measure"] == "R@20"]["value"].mean() >= 0.5
            assert reader.ranking_table(tiny_corpus.nq_queries[0].query_id)["text"].notna().all()
