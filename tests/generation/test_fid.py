"""Fusion-in-Decoder on a tiny random T5 (built here from a config, byte-level tokenizer, no download)."""

from __future__ import annotations

import pytest

from rageval.generation.base import DecodingSettings, Generator
from rageval.generation.fid import FiDGenerator, fid_passage_text
from rageval.types import Passage

_SPECIALS = ("<pad>", "</s>", "<unk>")


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory):
    """A 2-layer T5 (random weights, seed 0); token ids 0-2 are <pad>, </s>, <unk>, then the 256 byte symbols."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    directory = tmp_path_factory.mktemp("tiny-t5")
    vocab = {tok: i for i, tok in enumerate(_SPECIALS)}
    vocab.update({ch: len(_SPECIALS) + i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))})
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", vocab["</s>"])])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="</s>",
                                        unk_token="<unk>")
    tokenizer.save_pretrained(directory)
    config = T5Config(
        vocab_size=len(vocab), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=2,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, initializer_factor=5.0,  # decisive logits
    )
    torch.manual_seed(0)
    T5ForConditionalGeneration(config).save_pretrained(directory)
    return directory


PARIS = Passage("1", "France", "Paris is the capital of France.")
ROME = Passage("2", "Italy", "Rome is the capital city of Italy, on the Tiber.")
NILE = Passage("3", "Nile", "The Nile flows north into the Mediterranean Sea.")
SETTINGS = DecodingSettings(max_new_tokens=6, stop=())


def test_fid_passage_text_format():
    assert fid_passage_text("what  is\nit", PARIS) == (
        "question: what is it title: France context: Paris is the capital of France."
    )
    assert fid_passage_text("what is it", None) == "question: what is it"


def test_fid_with_one_passage_equals_the_plain_encoder_decoder_answer(tiny_t5_dir):
    from transformers import GenerationConfig

    fid = FiDGenerator(tiny_t5_dir, device="cpu", model_id="tiny-t5")
    assert isinstance(fid, Generator) and fid.model_id == "tiny-t5"
    questions = ["what is the capital of france", "which city is on the tiber"]
    fused = fid.generate_fid(questions, [[PARIS], [ROME]], SETTINGS)
    texts = [fid_passage_text(questions[0], PARIS), fid_passage_text(questions[1], ROME)]
    assert fid.generate(texts, SETTINGS) == fused  # the Generator path on the same text
    # ... and transformers' own generate on the raw model, one text at a time.
    config = GenerationConfig(max_new_tokens=6, do_sample=False, pad_token_id=0, eos_token_id=1,
                              decoder_start_token_id=0)
    for text, answer in zip(texts, fused):
        out = fid.model.generate(**fid.tokenizer(text, return_tensors="pt"), generation_config=config)
        assert fid.tokenizer.decode(out[0, 1:], skip_special_tokens=True).strip() == answer
    assert any(fused)  # a non-empty answer, so the comparison above is not vacuous


def test_fid_encodes_each_passage_alone_and_decodes_the_concatenation(tiny_t5_dir):
    fid = FiDGenerator(tiny_t5_dir, device="cpu")
    encoder_inputs, cross_lengths = [], []
    fid.model.get_encoder().register_forward_hook(
        lambda module, args, kwargs, out: encoder_inputs.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    fid.model.get_decoder().register_forward_hook(
        lambda module, args, kwargs, out: cross_lengths.append(tuple(kwargs["encoder_hidden_states"].shape[:2])),
        with_kwargs=True)
    question = "what is the capital of france"
    passages = [PARIS, ROME, NILE]
    lengths = [len(fid.tokenizer(fid_passage_text(question, p))["input_ids"]) for p in passages]
    first = fid.generate_fid([question], [passages], SETTINGS)
    # One encoder call, one row per passage (padded to the longest): passages never see each other.
    assert encoder_inputs == [(3, max(lengths))]
    # Every decoder step cross-attends to the three encodings side by side.
    assert cross_lengths and set(cross_lengths) == {(1, 3 * max(lengths))}
    assert fid.generate_fid([question], [passages], SETTINGS) == first  # deterministic


def test_fid_decoder_reads_every_passage_in_any_order(tiny_t5_dir):
    """First-step logits: cross-attention has no positions, so FiD is invariant to passage order, yet adding
    passages changes what the decoder sees (random byte outputs decode lossily, so logits are compared)."""
    import torch

    fid = FiDGenerator(tiny_t5_dir, device="cpu")
    first_logits = []
    fid.model.lm_head.register_forward_hook(lambda module, args, out: first_logits.append(out[:, -1].clone()))
    one_step = DecodingSettings(max_new_tokens=1, stop=())
    question = "what is the capital of france"
    for passages in ([PARIS, ROME, NILE], [NILE, ROME, PARIS], [PARIS]):
        fid.generate_fid([question], [passages], one_step)
    fused, reordered, alone = first_logits
    assert torch.allclose(fused, reordered, atol=1e-5)
    assert not torch.allclose(fused, alone, atol=1e-2)


def test_fid_batches_questions_with_different_passage_counts(tiny_t5_dir):
    fid = FiDGenerator(tiny_t5_dir, device="cpu", batch_size=3)
    questions = ["q one", "q two", "q three"]
    lists = [[PARIS, ROME], [NILE], []]
    batched = fid.generate_fid(questions, lists, SETTINGS)
    assert batched == [fid.generate_fid([q], [ps], SETTINGS)[0] for q, ps in zip(questions, lists)]
    with pytest.raises(ValueError, match="2 questions but 1 passage lists"):
        fid.generate_fid(["a", "b"], [[PARIS]], SETTINGS)


def test_fid_rejects_a_decoder_only_model(tiny_model_dir):
    with pytest.raises(ValueError):
        FiDGenerator(tiny_model_dir, device="cpu")


# --- FiD through the Generator protocol, the LLM-call cache and the CLI ---------------------------------

def test_fid_prompt_round_trip_and_generate_equals_generate_fid(tiny_t5_dir):
    from rageval.generation.fid import build_fid_prompt, parse_fid_prompt

    passages = [PARIS, Passage("2", "Berlin", "Berlin is the capital of Germany.")]
    prompt = build_fid_prompt("what is the capital of france", passages)
    assert parse_fid_prompt(prompt) == ("what is the capital of france", passages)
    assert parse_fid_prompt("question: plain text") is None
    reader = FiDGenerator(tiny_t5_dir, device="cpu", batch_size=2)
    settings = DecodingSettings(max_new_tokens=5, stop=())
    fused = reader.generate_fid(["what is the capital of france", "and germany"], [passages, passages[1:]], settings)
    plain = reader.generate(["question: and germany"], settings)
    # A mixed batch keeps its order: FiD prompts are answered by FiD, the plain prompt by the plain path.
    mixed = reader.generate([prompt, "question: and germany", build_fid_prompt("and germany", passages[1:])],
                            settings)
    assert mixed == [fused[0], plain[0], fused[1]]


def test_erag_cli_reads_passages_with_fid_for_an_encoder_decoder_model(tiny_t5_dir, tmp_path, monkeypatch, capsys):
    from rageval.cli import main
    from rageval.store import RunReader

    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "fid.sqlite"
    code = main(["erag", "--num-queries", "2", "--k", "3", "--model", str(tiny_t5_dir), "--max-new-tokens", "3",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    with RunReader(out) as reader:
        assert reader.counts()["doc_outputs"] == 6 and reader.counts()["e2e_outputs"] == 2
        calls = reader.settings()["llm_calls"]
        assert (calls["cache_hits"], calls["cache_misses"]) == (0, 8)
        # The stored E2E answer is FiD over the stored top-3 passages (recomputed here directly).
        query_id = reader.query_table()["query_id"][0]
        ranking = reader.ranking_table(query_id)
        top = [Passage(r.passage_id, r.title, r.text) for r in ranking.head(3).itertuples()]
        expected = FiDGenerator(tiny_t5_dir, device="cpu").generate_fid(
            [reader.query(query_id).text], [top], DecodingSettings(max_new_tokens=3))
        assert reader.e2e_output(query_id).output == expected[0]
