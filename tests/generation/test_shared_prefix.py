"""Greedy decoding after a shared prefix (:mod:`rageval.generation.shared_prefix`): the plain path's answers on tiny
models (rows of different lengths, inside and past a sliding window, early end-of-sequence, grouped under a memory
budget), one prefix copy for all rows, finished rows leaving the batch."""

from __future__ import annotations

import shutil

import pytest

from rageval.generation import shared_prefix
from rageval.generation.base import DecodingSettings
from rageval.generation.shared_prefix import plan_groups
from rageval.generation.transformers_backend import TransformersGenerator

# 105 byte-level tokens with <bos>: longer than the tiny Gemma's 64-token sliding window, so its sliding layers keep
# only the prefix's last 63 tokens.
PREFIX = ("Answer with a short phrase.\nQ: capital of Peru?\nA: Lima\nQ: largest planet?\nA: Jupiter\n"
          "Q: who wrote Hamlet?\n")
QUESTIONS = [
    "Q: x?\nA:",
    "Q: capital of Chile?\nA:",
    "Q: a question long enough that the row's own tokens run past the sliding window by themselves, so "
    "that its early keys fall out of sight while it decodes?\nA:",
    "Q: who painted the ceiling?\nA:",
    "Q: ?\nA:",
    "Q: an in-between question of some length, near the window?\nA:",
]
PROMPTS = [PREFIX + q for q in QUESTIONS]


def _pair(model_dir, batch_size=6, **options):
    plain = TransformersGenerator(model_dir, device="cpu", batch_size=batch_size, prefix_reuse=False, **options)
    shared = TransformersGenerator(model_dir, device="cpu", batch_size=batch_size, prefix=PREFIX,
                                   min_prefix_tokens=8, **options)
    return plain, shared


@pytest.fixture(scope="module")
def tiny_llama_dir(tmp_path_factory, tiny_model_dir):
    """A 2-layer Llama (SmolLM2's architecture) with grouped queries (4 heads, 2 key/value heads) and no sliding
    window, on the tiny Gemma's tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    directory = tmp_path_factory.mktemp("tiny-llama")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (tiny_model_dir / name).exists():
            shutil.copy(tiny_model_dir / name, directory / name)
    vocab = len(__import__("json").loads((tiny_model_dir / "tokenizer.json").read_text())["model"]["vocab"])
    config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         pad_token_id=vocab - 3, bos_token_id=vocab - 2, eos_token_id=vocab - 1,
                         tie_word_embeddings=False, initializer_range=0.5)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


def test_plan_groups_fits_the_budget_in_order():
    lengths = [10, 8, 3, 3, 1]
    costs = [(n + 2) * 10 + 5 for n in lengths]  # (length + max_new_tokens) * bytes a token + logits: 125, 105, 55...
    assert plan_groups(lengths, 2, 10, 5, memory_bytes=10**6, max_rows=10) == [[0, 1, 2, 3, 4]]
    assert plan_groups(lengths, 2, 10, 5, memory_bytes=costs[0] + costs[1], max_rows=10) == [[0, 1], [2, 3, 4]]
    assert plan_groups(lengths, 2, 10, 5, memory_bytes=10**6, max_rows=2) == [[0, 1], [2, 3], [4]]
    assert plan_groups(lengths, 2, 10, 5, memory_bytes=1, max_rows=10) == [[0], [1], [2], [3], [4]]  # 1 a group


def test_same_answers_as_the_plain_path_rows_of_every_length(tiny_model_dir):
    """No stop: every row runs to max_new_tokens; suffixes from 9 to 158 tokens, inside and past the window.

    float32: in bfloat16 any change in the order of a computation (packing, batching, splitting attention) flips
    the odd answer, the old merged-cache path as well (measured on Gemma: docs in DEVELOPERS.md)."""
    plain, shared = _pair(tiny_model_dir)
    settings = DecodingSettings(max_new_tokens=12, stop=())
    n_prefix = len(shared.tokenizer(PREFIX)["input_ids"])
    suffixes = [len(ids) - n_prefix for ids in shared.tokenizer(PROMPTS)["input_ids"]]
    # Rows whose own tokens and answer fit in the 64-token window, and a row whose own tokens alone do not.
    assert min(suffixes) + settings.max_new_tokens < 64 < max(suffixes)
    assert shared.generate(PROMPTS, settings) == plain.generate(PROMPTS, settings)
    assert shared.prefix_caches.computed == 1 and shared.decode_groups == 1


def test_same_answers_with_early_end_of_sequence_and_finished_rows_leave(tiny_model_dir):
    plain, shared = _pair(tiny_model_dir)
    settings = DecodingSettings(max_new_tokens=12, stop=())
    free = plain.generate(PROMPTS, settings)
    # A character the first answer generates early but some other answer never does becomes end-of-sequence:
    # rows stop at different steps.
    early = next(ch for ch in free[0][1:4] if any(ch not in answer for answer in free[1:]))
    eos = shared.tokenizer.convert_tokens_to_ids(early)
    for generator in (plain, shared):
        generator.model.generation_config.eos_token_id = [generator.model.generation_config.eos_token_id, eos]
    batch_rows = []
    shared.model.register_forward_hook(
        lambda module, args, kwargs, out: batch_rows.append(kwargs["input_ids"].shape), with_kwargs=True)
    expected = plain.generate(PROMPTS, settings)
    assert any(len(answer) < len(free_answer) for answer, free_answer in zip(expected, free))
    assert shared.generate(PROMPTS, settings) == expected
    decode_rows = [shape[0] for shape in batch_rows if shape[1] == 1]
    assert decode_rows[0] <= len(PROMPTS) and decode_rows == sorted(decode_rows, reverse=True)
    assert decode_rows[-1] < decode_rows[0]  # rows that finished were dropped from the batch


def test_stop_strings_and_one_token_answers(tiny_model_dir):
    plain, shared = _pair(tiny_model_dir)
    for settings in (DecodingSettings(max_new_tokens=1, stop=()), DecodingSettings(max_new_tokens=10)):
        assert shared.generate(PROMPTS, settings) == plain.generate(PROMPTS, settings)


def test_memory_budget_splits_rows_into_groups_with_the_same_answers(tiny_model_dir):
    plain, shared = _pair(tiny_model_dir, decode_memory_mb=0.001)  # every row its own group
    settings = DecodingSettings(max_new_tokens=8, stop=())
    assert shared.generate(PROMPTS, settings) == plain.generate(PROMPTS, settings)
    assert shared.decode_groups == len(PROMPTS)
    shared.decode_memory_mb, shared.batch_size, shared.decode_groups = 1000, 4, 0  # at most 4 rows a group
    assert shared.generate(PROMPTS, settings) == plain.generate(PROMPTS, settings)
    assert shared.decode_groups == 2


def test_rows_hold_only_their_own_tokens_and_share_the_prefix(tiny_model_dir, monkeypatch):
    """No row gets a copy of the prefix: the prefix tensors are the stored cache's own, and each row's buffer holds
    its suffix and answer slots only."""
    _, shared = _pair(tiny_model_dir)
    batches = []
    original = shared_prefix.RowBatch.__init__

    def spy(self, prefix, capacities):
        original(self, prefix, capacities)
        batches.append(self)

    monkeypatch.setattr(shared_prefix.RowBatch, "__init__", spy)
    settings = DecodingSettings(max_new_tokens=5, stop=())
    shared.generate(PROMPTS, settings)
    (batch,) = batches
    (prefix,) = shared.prefix_caches.prefixes()
    cache = shared.prefix_caches.get(prefix, lambda p: pytest.fail("recomputed"))
    assert all(mine is theirs.keys for mine, theirs in zip(batch.prefix.keys, cache.layers))
    suffix_lengths = [len(ids) - len(prefix) for ids in shared.tokenizer(PROMPTS)["input_ids"]]
    assert sorted(batch.capacities) == sorted(n + settings.max_new_tokens for n in suffix_lengths)
    assert all(buffer.shape[2] == capacity for row, capacity in zip(batch.keys, batch.capacities) for buffer in row)
    # Outside the decoder the model is back on its own attention.
    assert shared.model.config._attn_implementation != shared_prefix.ATTENTION_NAME


def test_grouped_query_model_without_window(tiny_llama_dir):
    plain, shared = _pair(tiny_llama_dir)
    settings = DecodingSettings(max_new_tokens=10, stop=())
    assert shared.generate(PROMPTS, settings) == plain.generate(PROMPTS, settings)
    assert shared.decode_groups == 1
