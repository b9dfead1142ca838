"""A tiny random-weight model built from a config (no download): the ``tiny_model_dir`` fixture of
tests/conftest.py, and benchmarks that need a model a job can load in a second."""

from __future__ import annotations

from pathlib import Path

_SPECIALS = ("<pad>", "<bos>", "<eos>")


def build_tiny_gemma(directory: Path) -> Path:
    """Write to ``directory`` a 2-layer Gemma 3 (random weights, seed 0) with a byte-level tokenizer whose token id 0
    is ``"z"``; return ``directory``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast

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
