"""Cross-encoder reranker: training on real NQ triples, save/load, special tokens, truncation, rerank order.

Most tests use a tiny random BERT (2 layers, hidden size 32) built from a config with the real all-MiniLM-L6-v2
WordPiece tokenizer, so training takes a second; one test loads the real MiniLM encoder. The NQ triples are the
first 10 questions of the shipped eRAG run (``data/runs``): the gold passage and the 3 highest BM25 non-gold
passages of its stored top 10.
"""

from __future__ import annotations

import json
import statistics

import pytest

from rageval.corpus import build_corpus, corpus_fingerprint
from rageval.errors import RagevalError
from rageval.paths import RUNS_DIR
from rageval.retrieval.rerank import (
    CONFIG_NAME,
    CrossEncoder,
    CrossEncoderReranker,
    CrossEncoderSettings,
    NqRerankerConfig,
    Reranker,
    build_nq_training_examples,
    load_or_train_nq_reranker,
    minilm_path,
    nq_reranker_dir,
    rerank_with,
    train_cross_encoder,
    two_stage,
)
from rageval.store import RunReader
from rageval.types import Passage, Query, Ranking, ScoredPassage

SHIPPED_RUN = RUNS_DIR / "nq_open-bm25-gemma3_270m.sqlite"
NUM_QUESTIONS = 10
NEGATIVES = 3
IUM_TOKENS = ("[TID_nq]", "[MID_gemma-3-270m]")


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The tiny model is overhead-bound: on 2 busy cores, 2 torch threads waiting on each other made a training
    step ~25x slower than 1 thread (measured: 15 steps 43 s vs 1.8 s under a load of 6)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus():
    return build_corpus()


@pytest.fixture(scope="module")
def nq_run(corpus):
    """Queries, BM25 rankings (top 10, from the shipped run) and the corpus passages by id."""
    if not SHIPPED_RUN.is_file():
        pytest.skip(f"{SHIPPED_RUN} not available")
    with RunReader(SHIPPED_RUN) as reader:
        rankings = reader.rankings()
        query_ids = reader.query_table()["query_id"].tolist()[:NUM_QUESTIONS]
        queries = [reader.query(qid) for qid in query_ids]
    passages = {p.passage_id: p for p in corpus.passages}
    return queries, rankings, passages


@pytest.fixture(scope="module")
def nq_triples(nq_run):
    queries, rankings, passages = nq_run
    examples = []
    for query in queries:
        # the depth holding exactly 3 non-gold passages: sampling 3 of 3 takes the 3 best BM25 non-gold passages
        ranked = rankings[query.query_id].passage_ids
        non_gold = [i for i, pid in enumerate(ranked) if pid not in query.gold_passage_ids]
        examples += build_nq_training_examples([query], rankings, passages, NEGATIVES, non_gold[NEGATIVES - 1] + 1)
    assert len(examples) == NUM_QUESTIONS * (1 + NEGATIVES)
    return examples


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    """A 2-layer BERT (hidden 32, random weights, seed 0) with the real all-MiniLM-L6-v2 tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    directory = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    tokenizer.save_pretrained(directory)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(directory)
    return directory


def tiny_reranker(directory, **settings) -> CrossEncoderReranker:
    return CrossEncoderReranker.from_encoder(directory, CrossEncoderSettings(**settings), model_id="tiny", seed=0,
                                             device="cpu")


def gold_first_share(model: CrossEncoder, examples) -> float:
    """Share of questions whose gold passage outscores all of its negatives (examples grouped per question)."""
    scores = model.score_pairs([(a, b) for a, b, _ in examples])
    wins = []
    for start in range(0, len(examples), 1 + NEGATIVES):
        group = list(zip(scores[start:start + 1 + NEGATIVES], (y for _, _, y in examples[start:start + 1 + NEGATIVES])))
        gold = [s for s, y in group if y == 1.0]
        wins.append(all(g > s for g in gold for s, y in group if y == 0.0))
    return sum(wins) / len(wins)


# ------------------------------------------------------------------------------------------------ training


def test_training_examples_hold_one_gold_and_bm25_negatives(nq_run, nq_triples):
    queries, rankings, passages = nq_run
    for number, query in enumerate(queries):
        group = nq_triples[number * (1 + NEGATIVES):(number + 1) * (1 + NEGATIVES)]
        assert [y for _, _, y in group] == [1.0] + [0.0] * NEGATIVES
        assert all(a == query.text for a, _, _ in group)
        golds = {passages[pid].as_document() for pid in query.gold_passage_ids if pid in passages}
        assert group[0][1] in golds
        top = [passages[pid].as_document() for pid in rankings[query.query_id].passage_ids
               if pid not in query.gold_passage_ids][:NEGATIVES]
        assert sorted(b for _, b, _ in group[1:]) == sorted(top)


def test_training_lowers_the_loss_and_learns_the_training_pairs(tiny_bert_dir, nq_triples):
    model = tiny_reranker(tiny_bert_dir)
    before = gold_first_share(model, nq_triples)
    model, log = train_cross_encoder(model, nq_triples, epochs=15, lr=2e-3, batch_size=8, seed=0)
    steps_per_epoch = 5  # 40 triples / batch 8
    assert log.steps == 15 * steps_per_epoch and log.examples == 40
    first, last = statistics.mean(log.losses[:steps_per_epoch]), statistics.mean(log.losses[-steps_per_epoch:])
    assert first > 0.5 and last < 0.5 * first  # BCE of a near-random head starts near ln 2 = 0.693
    after = gold_first_share(model, nq_triples)
    # observed: 0.5 of the 10 questions before training, 1.0 after (the tiny model memorises its 40 pairs);
    # mean loss 0.645 over the first 5 steps, 0.155 over the last 5
    assert after >= 0.8 and after > before
    assert not model.network.training


def test_training_is_repeatable_with_a_seed(tiny_bert_dir, nq_triples):
    subset = nq_triples[:16]
    runs = [train_cross_encoder(tiny_reranker(tiny_bert_dir), subset, epochs=2, batch_size=8, seed=3)
            for _ in range(2)]
    assert runs[0][1].losses == runs[1][1].losses
    pairs = [(a, b) for a, b, _ in subset[:4]]
    assert runs[0][0].score_pairs(pairs) == runs[1][0].score_pairs(pairs)
    other = train_cross_encoder(tiny_reranker(tiny_bert_dir), subset, epochs=2, batch_size=8, seed=4)
    assert other[1].losses != runs[0][1].losses  # the seed shuffles the batches and drives dropout


class _Stop(Exception):
    pass


def test_a_killed_training_resumes_from_its_checkpoint_and_ends_as_an_uninterrupted_run(tiny_bert_dir, nq_triples,
                                                                                       tmp_path):
    subset = nq_triples[:24]
    settings = {"epochs": 2, "batch_size": 4, "seed": 5, "lr": 1e-3}  # 12 steps
    plain_model, plain_log = train_cross_encoder(tiny_reranker(tiny_bert_dir), subset, **settings)
    checkpoint = tmp_path / "train.ckpt"

    def stop_at_seven(done: int, total: int) -> None:
        if done == 7:
            raise _Stop  # as if the process were killed after step 7 (the checkpoint holds step 6)

    with pytest.raises(_Stop):
        train_cross_encoder(tiny_reranker(tiny_bert_dir), subset, **settings, progress=stop_at_seven,
                            checkpoint=checkpoint, checkpoint_every=3)
    assert checkpoint.is_file()
    seen: list[int] = []
    resumed_model, resumed_log = train_cross_encoder(tiny_reranker(tiny_bert_dir), subset, **settings,
                                                     progress=lambda done, total: seen.append(done),
                                                     checkpoint=checkpoint, checkpoint_every=3)
    assert seen[0] == 7  # steps 1-6 came from the checkpoint
    assert resumed_log.losses == plain_log.losses
    pairs = [(a, b) for a, b, _ in subset[:4]]
    assert resumed_model.score_pairs(pairs) == plain_model.score_pairs(pairs)
    assert not checkpoint.exists()  # removed once training ended


def test_a_checkpoint_of_other_examples_is_not_resumed(tiny_bert_dir, nq_triples, tmp_path):
    checkpoint = tmp_path / "train.ckpt"
    with pytest.raises(_Stop):
        train_cross_encoder(tiny_reranker(tiny_bert_dir), nq_triples[:24], epochs=1, batch_size=4, seed=5,
                            checkpoint=checkpoint, checkpoint_every=2,
                            progress=lambda done, total: (_ for _ in ()).throw(_Stop) if done == 5 else None)
    seen: list[int] = []
    train_cross_encoder(tiny_reranker(tiny_bert_dir), nq_triples[8:32], epochs=1, batch_size=4, seed=5,
                        checkpoint=checkpoint, progress=lambda done, total: seen.append(done))
    assert seen == list(range(1, 7))


def test_trainable_layers_freeze_the_rest(tiny_bert_dir, nq_triples):
    import torch

    model = tiny_reranker(tiny_bert_dir)
    before = {name: p.detach().clone() for name, p in model.network.named_parameters()}
    train_cross_encoder(model, nq_triples[:8], epochs=1, batch_size=8, trainable_layers=1)
    changed = {name for name, p in model.network.named_parameters() if not torch.equal(p, before[name])}
    assert changed and all(n.startswith(("head.", "encoder.encoder.layer.1.", "encoder.pooler.")) for n in changed)
    assert any(n.startswith("encoder.encoder.layer.1.") for n in changed) and "head.weight" in changed
    assert all(p.requires_grad for p in model.network.parameters())  # unfrozen again afterwards


def test_training_rejects_labels_outside_zero_one(tiny_bert_dir):
    with pytest.raises(ValueError, match="example 1: label 2"):
        train_cross_encoder(tiny_reranker(tiny_bert_dir), [("q", "d", 1.0), ("q", "e", 2.0)])


# --------------------------------------------------------------------------------------- save, load, tokens


def test_save_load_round_trip_gives_identical_scores_and_keeps_special_tokens(tiny_bert_dir, nq_triples, tmp_path):
    model = tiny_reranker(tiny_bert_dir, special_tokens=IUM_TOKENS)
    vocab = model.tokenizer.get_vocab()
    assert all(token in vocab for token in IUM_TOKENS)
    assert model.network["encoder"].get_input_embeddings().weight.shape[0] == len(model.tokenizer) == 30522 + 2
    model, _ = train_cross_encoder(model, nq_triples[:8], epochs=1, batch_size=4)
    pairs = [(f"{IUM_TOKENS[0]} {IUM_TOKENS[1]} {a}", b) for a, b, _ in nq_triples[:6]]
    saved = model.save(tmp_path / "reranker")
    assert {CONFIG_NAME, "config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in saved.iterdir()}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # the temporary folder is gone
    loaded = CrossEncoderReranker.load(saved, device="cpu")
    assert loaded.score_pairs(pairs) == model.score_pairs(pairs)
    assert loaded.settings == model.settings and loaded.model_id == "tiny"
    ids = loaded.encode_pairs([(f"{IUM_TOKENS[0]} {IUM_TOKENS[1]} who", "x")])[0]
    assert ids[1:3] == [loaded.tokenizer.convert_tokens_to_ids(t) for t in IUM_TOKENS]  # after [CLS], unsplit
    model.save(saved)  # replacing an existing model works and leaves no stray folder
    assert CrossEncoderReranker.load(saved).score_pairs(pairs) == model.score_pairs(pairs)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_load_names_the_folder_without_a_model(tmp_path):
    with pytest.raises(RagevalError, match=f"no {CONFIG_NAME}"):
        CrossEncoder.load(tmp_path)
    (tmp_path / CONFIG_NAME).write_text(json.dumps({"format": "other"}))
    with pytest.raises(RagevalError, match="expected format"):
        CrossEncoder.load(tmp_path)


# ------------------------------------------------------------------------------------------------ truncation


def test_truncation_keeps_the_query_and_cuts_the_passage(tiny_bert_dir):
    model = tiny_reranker(tiny_bert_dir, max_length=32, max_a_tokens=8)
    tokenizer = model.tokenizer
    query, passage = "who wrote the song", "the lyrics were written by " + "someone else " * 40
    ids = model.encode_pairs([(query, passage)])[0]
    query_ids = tokenizer(query, add_special_tokens=False)["input_ids"]
    assert len(ids) == 32
    assert ids[:len(query_ids) + 2] == [tokenizer.cls_token_id, *query_ids, tokenizer.sep_token_id]
    assert ids[-1] == tokenizer.sep_token_id
    long_query = " ".join(f"word{i}" for i in range(40))
    ids = model.encode_pairs([(long_query, passage)])[0]
    long_ids = tokenizer(long_query, add_special_tokens=False)["input_ids"]
    assert len(ids) == 32 and ids[1:9] == long_ids[:8] and ids[9] == tokenizer.sep_token_id
    assert model.encode_pairs([("short", "tiny")])[0] == tokenizer("short", "tiny")["input_ids"]  # no cut needed


def test_real_minilm_scores_and_keeps_the_query_of_a_long_passage(corpus):
    model = CrossEncoderReranker.from_encoder(minilm_path(), model_id="minilm", device="cpu")
    longest = max(corpus.passages[:2000], key=lambda p: len(p.text))
    query = "who was the first person to walk on the moon"
    ids = model.encode_pairs([(query, longest.as_document())])[0]
    query_ids = model.tokenizer(query, add_special_tokens=False)["input_ids"]
    assert len(ids) == 256 and ids[1:1 + len(query_ids)] == query_ids
    scores = model.score(query, [longest, corpus.passages[0]])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores) and scores[0] != scores[1]


# ---------------------------------------------------------------------------------------- rerank, two stage


class FixedReranker:
    """Scores a passage by a fixed table of its id (ties on purpose)."""

    model_id = "fixed"

    def __init__(self, table):
        self.table = table
        self.seen: list[int] = []

    def score(self, query_text, passages):
        self.seen.append(len(passages))
        return [self.table[p.passage_id] for p in passages]

    def rerank(self, query, ranking, passages, k):
        return rerank_with(self, query, ranking, passages, k)


def _passages(*ids):
    return {pid: Passage(pid, "", f"text of {pid}") for pid in ids}


def test_rerank_sorts_by_score_and_breaks_ties_by_passage_id():
    passages = _passages("a", "b", "c", "d", "e")
    reranker = FixedReranker({"a": 0.1, "b": 2.0, "c": 0.5, "d": 0.5, "e": 9.0})
    assert isinstance(reranker, Reranker)
    ranking = Ranking("q", tuple(ScoredPassage(pid, 10.0 - i) for i, pid in enumerate(["d", "a", "c", "b", "e"])))
    out = reranker.rerank(Query("q", "question"), ranking, passages, k=4)  # "e" is below the cut
    assert out.passage_ids == ("b", "c", "d", "a") and out.query_id == "q"
    assert [p.score for p in out.passages] == [2.0, 0.5, 0.5, 0.1]
    with pytest.raises(RagevalError, match="'zz'"):
        reranker.rerank(Query("q", "question"), Ranking("q", (ScoredPassage("zz", 1.0),)), passages, k=1)


def test_cross_encoder_rerank_orders_by_its_own_scores(tiny_bert_dir, nq_run):
    queries, rankings, passages = nq_run
    model = tiny_reranker(tiny_bert_dir)
    query = queries[0]
    out = model.rerank(query, rankings[query.query_id], passages, k=5)
    candidates = rankings[query.query_id].passage_ids[:5]
    expected = sorted(zip(candidates, model.score(query.text, [passages[p] for p in candidates])),
                      key=lambda item: (-item[1], item[0]))
    assert [(p.passage_id, p.score) for p in out.passages] == expected
    assert isinstance(model, Reranker)


class FakeBM25:
    def __init__(self, ranked_ids):
        self.ranked_ids = ranked_ids

    def batch_search(self, queries, k):
        return {q.query_id: Ranking(q.query_id, tuple(ScoredPassage(pid, -i) for i, pid in
                                                      enumerate(self.ranked_ids[:k]))) for q in queries}


def test_two_stage_reranks_the_first_k_and_keeps_the_top_k():
    passages = _passages("a", "b", "c", "d", "e")
    reranker = FixedReranker({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0})
    queries = [Query("q1", "one"), Query("q2", "two")]
    out = two_stage(FakeBM25(["a", "b", "c", "d", "e"]), reranker, queries, passages, first_k=4, k=2)
    assert list(out) == ["q1", "q2"] and out["q1"].passage_ids == ("d", "c") and reranker.seen == [4, 4]
    with pytest.raises(ValueError, match="first_k"):
        two_stage(FakeBM25([]), reranker, queries, passages, first_k=2, k=3)


# ------------------------------------------------------------------------------------------------ NQ cache


def test_nq_reranker_is_loaded_from_its_cache_without_training(tiny_bert_dir, corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path))
    config = NqRerankerConfig()
    fingerprint = corpus_fingerprint(corpus)
    directory = nq_reranker_dir(config, fingerprint)
    assert directory == tmp_path / "models" / f"reranker-nq-minilm-{config.digest(fingerprint)}"
    assert NqRerankerConfig(seed=1).digest(fingerprint) != config.digest(fingerprint)
    assert config.digest("0" * 64) != config.digest(fingerprint)
    tiny_reranker(tiny_bert_dir).save(directory)
    loaded = load_or_train_nq_reranker(config, corpus=corpus, bm25="never used when cached")
    assert isinstance(loaded, CrossEncoderReranker) and loaded.model_id == "tiny"
    with pytest.raises(ValueError, match="kept for"):
        from rageval.retrieval.rerank import train_nq_reranker

        train_nq_reranker(corpus, None, NqRerankerConfig(first_query=10))


def test_train_reranker_checks_the_held_out_slice_before_training(tmp_path):
    """``rageval train-reranker --eval-offset 995 --eval-queries 10`` asks for queries that may be trained on: an
    error before anything is loaded or trained (the corpus and index are never read)."""
    from rageval.retrieval.rerank import train_reranker

    with pytest.raises(RagevalError, match=r"evaluation queries must come from the first 1000 \(held out\)"):
        train_reranker("never read", tmp_path / "no-index", eval_queries=10, eval_offset=995)


def test_train_reranker_cli_defaults_are_the_config_defaults():
    from rageval.cli import build_parser

    args = build_parser("train-reranker").parse_args(["train-reranker"])
    config = NqRerankerConfig()
    assert (args.num_queries, args.negatives, args.epochs, args.lr, args.batch_size, args.seed) == (
        config.num_queries, config.negatives_per_query, config.epochs, config.lr, config.batch_size, config.seed)
    assert (None if args.trainable_layers < 0 else args.trainable_layers) == config.trainable_layers


def test_only_the_special_token_rows_of_the_embeddings_train_with_train_special_tokens(tiny_bert_dir, nq_triples):
    import torch

    from rageval.retrieval.rerank import add_special_tokens

    tokens = ("[task:nq]", "[model:m]")
    examples = [(f"{tokens[0]} {tokens[1]} {a}", b, y) for a, b, y in nq_triples[:16]]

    def trained(flag: bool):
        model = add_special_tokens(tiny_reranker(tiny_bert_dir), tokens, seed=1)
        before = model.network["encoder"].get_input_embeddings().weight.detach().clone()
        train_cross_encoder(model, examples, epochs=1, lr=1e-2, batch_size=8, seed=0, trainable_layers=1,
                            train_special_tokens=flag)
        after = model.network["encoder"].get_input_embeddings().weight.detach()
        ids = model.tokenizer.convert_tokens_to_ids(list(tokens))
        others = torch.ones(len(before), dtype=torch.bool)
        others[ids] = False
        return before, after, ids, others, model

    before, after, ids, others, model = trained(True)
    assert not torch.equal(before[ids], after[ids])  # the id tokens learned
    assert torch.equal(before[others], after[others])  # no other row moved, weight decay included
    assert all(p.requires_grad for p in model.network.parameters())  # and nothing is left frozen or hooked
    before, after, ids, _, _ = trained(False)
    assert torch.equal(before, after)  # the default: embeddings frozen with trainable_layers
