"""Shared fixtures: a fake LLM and a tiny random-weight model, so generation code is testable without a real model."""

from __future__ import annotations

import pytest

from rageval.generation.base import FakeGenerator


@pytest.fixture(autouse=True)
def no_shipped_runs(monkeypatch):
    """The dashboard lists the shipped demo runs (data/runs) beside the user's runs folder; a test sees only the
    runs it made, unless it asks for the shipped ones (tests/app_helpers.py ``use_shipped_runs``)."""
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", "")


@pytest.fixture(autouse=True)
def no_precision_check(monkeypatch):
    """``dtype="auto"`` (the model settings' default) would time float32 against bfloat16 on a test's tiny model and
    pick by the timing; tests get the device default instead, unless they test the check
    (``monkeypatch.delenv("RAGEVAL_DTYPE_CHECK")``)."""
    monkeypatch.setenv("RAGEVAL_DTYPE_CHECK", "off")


@pytest.fixture(scope="session")
def corpus():
    """The rageval corpus built from the shipped data (a module may define its own ``corpus`` instead)."""
    from rageval.corpus import build_corpus

    return build_corpus()


@pytest.fixture(scope="session")
def passages(corpus):
    """The corpus' passages by id."""
    return {p.passage_id: p for p in corpus.passages}


@pytest.fixture
def fake_generator() -> FakeGenerator:
    """Answers with the first capitalised span of the prompt's first passage; counts ``calls``/``prompts_seen``."""
    return FakeGenerator()


_SPECIALS = ("<pad>", "<bos>", "<eos>")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A 2-layer Gemma 3 (random weights, seed 0) with a byte-level tokenizer whose token id 0 is ``"z"``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

    directory = tmp_path_factory.mktemp("tiny-gemma3")
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet(), key=lambda ch: (ch != "z", ch))
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    vocab.update({tok: len(alphabet) + i for i, tok in enumerate(_SPECIALS)})
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.TemplateProcessing(single="<bos> $A",
                                                           special_tokens=[("<bos>", vocab["<bos>"])])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", bos_token="<bos>",
                                        eos_token="<eos>")
    tokenizer.save_pretrained(directory)

    config = Gemma3TextConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, max_position_embeddings=2048, sliding_window=64,
        pad_token_id=vocab["<pad>"], bos_token_id=vocab["<bos>"], eos_token_id=vocab["<eos>"],
        tie_word_embeddings=False, initializer_range=0.5,  # large init: decisive logits, no near-ties
    )
    torch.manual_seed(0)
    Gemma3ForCausalLM(config).save_pretrained(directory)
    return directory
