"""Shared-prefix reuse: the pure prefix choice, and identical answers with and without reuse (tiny model, real Gemma).

Prompts are real eRAG prompts (:func:`build_qa_prompt` over the first NQ questions with their gold passage from
``data/nq_open``), so the shared prefix is the actual few-shot block.
"""

from __future__ import annotations

import pytest

from rageval.data.loaders import read_nq_open_oracle
from rageval.generation.base import DecodingSettings
from rageval.generation.prefix import (
    PrefixCacheStore,
    choose_prefix,
    common_prefix_length,
    cut_at_line_end,
    starts_with,
)
from rageval.generation.transformers_backend import TransformersGenerator, sample_seed
from rageval.paths import DATA_DIR
from rageval.prompts import build_qa_prompt
from rageval.types import Passage

NEWLINE = 10  # in these pure tests token 10 stands for "\n"


def _ends_line(token: int) -> bool:
    return token == NEWLINE


def _nq_prompts(n: int, start: int = 0) -> list[str]:
    records = read_nq_open_oracle(DATA_DIR / "nq_open" / "nq_open_oracle_psgs_w100.jsonl.gz")[start:start + n]
    return [build_qa_prompt(r.question, [Passage(str(r.line), r.title, r.text)]) for r in records]


def _few_shot_block(prompt: str) -> str:
    """Everything before the final block of a build_qa_prompt prompt, with its blank line."""
    return prompt.rsplit("\n\n", 1)[0] + "\n\n"


# ---------------------------------------------------------------- pure prefix choice


def test_common_prefix_length():
    assert common_prefix_length([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]]) == 2
    assert common_prefix_length([[1, 2, 3]]) == 3
    assert common_prefix_length([[1, 2], []]) == 0
    assert common_prefix_length([]) == 0


def test_cut_at_line_end_and_starts_with():
    ids = [5, NEWLINE, 6, 7, NEWLINE, 8, 9]
    assert cut_at_line_end(ids, 7, _ends_line) == 5
    assert cut_at_line_end(ids, 4, _ends_line) == 2
    assert cut_at_line_end([5, 6, 7], 3, _ends_line) == 3  # no line end at all: keep the whole common prefix
    assert starts_with([1, 2, 3], (1, 2)) and not starts_with([1, 2], (1, 2)) and not starts_with([1, 3, 4], (1, 2))


def test_choose_prefix_prefers_the_longer_of_cached_and_common():
    a = [1, 2, NEWLINE, 3, NEWLINE, 4, 5]
    b = [1, 2, NEWLINE, 3, NEWLINE, 6]
    # Common prefix [1, 2, 10, 3, 10] ends a line: all of it.
    assert choose_prefix([a, b], [], min_tokens=2, ends_line=_ends_line) == (1, 2, NEWLINE, 3, NEWLINE)
    assert choose_prefix([a, b], [], min_tokens=6, ends_line=_ends_line) is None  # too short to be worth it
    assert choose_prefix([a], [], min_tokens=1, ends_line=_ends_line) is None  # one prompt, nothing cached
    assert choose_prefix([a], [(1, 2, NEWLINE)], min_tokens=1, ends_line=_ends_line) == (1, 2, NEWLINE)
    # A cached prefix that not every prompt starts with is not used.
    assert choose_prefix([a, [9, 9]], [(1, 2, NEWLINE)], min_tokens=1, ends_line=_ends_line) is None
    # Identical prompts: the prefix leaves at least one token of each prompt to run.
    assert choose_prefix([[1, 2, 3], [1, 2, 3]], [], min_tokens=1, ends_line=_ends_line) == (1, 2)


def test_prefix_cache_store_computes_once_and_evicts_least_recent():
    store = PrefixCacheStore(max_entries=2)
    assert store.get((1,), lambda p: "one") == "one"
    assert store.get((1,), lambda p: pytest.fail("recomputed")) == "one"
    store.get((2,), lambda p: "two")
    store.get((1,), lambda p: "again")  # (1,) is now the most recent
    store.get((3,), lambda p: "three")  # evicts (2,)
    assert store.prefixes() == [(1,), (3,)] and store.computed == 3


def test_sample_seed_is_stable_and_distinct():
    seeds = {sample_seed(s, j) for s in range(3) for j in range(4)}
    assert len(seeds) == 12 and all(0 <= s < 2**63 for s in seeds)
    assert sample_seed(0, 1) == sample_seed(0, 1)


# ---------------------------------------------------------------- tiny model (tests/conftest.py)


def test_tiny_model_prefix_reuse_gives_the_plain_answers_on_erag_prompts(tiny_model_dir):
    """Long prompts: the tiny model's 64-token sliding window is far exceeded, so the cached prefix is cropped."""
    prompts = _nq_prompts(3)
    settings = DecodingSettings(max_new_tokens=6, stop=())
    plain = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=3, prefix_reuse=False)
    expected = plain.generate(prompts, settings)
    reuse = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=3)
    assert reuse.generate(prompts, settings) == expected
    (prefix,) = reuse.prefix_caches.prefixes()
    assert reuse.tokenizer.decode(prefix, skip_special_tokens=True) == _few_shot_block(prompts[0])
    # A later call, even of one prompt, reuses the cached prefix instead of computing it again.
    assert reuse.generate(prompts[:1], settings) == expected[:1]
    assert reuse.prefix_caches.computed == 1
    assert plain.prefix_caches.computed == 0


SHORT_PREFIX = "Q: capital of Peru?\nA: Lima\n"


@pytest.mark.parametrize("batch_size", [1, 3])
def test_tiny_model_prefix_reuse_with_padded_suffixes(tiny_model_dir, batch_size):
    """Short prompts inside the sliding window: suffixes of different lengths share one batch."""
    prefix = SHORT_PREFIX
    prompts = [prefix + "Q: capital of X?\nA:", prefix + "Q: a much longer one?\nA:", prefix + "Q: y?\nA:"]
    settings = DecodingSettings(max_new_tokens=6, stop=())
    plain = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=batch_size, prefix_reuse=False)
    reuse = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=batch_size, prefix=prefix,
                                  min_prefix_tokens=8)
    lengths = [len(ids) for ids in reuse.tokenizer(prompts)["input_ids"]]
    assert max(lengths) + settings.max_new_tokens <= 64 and len(set(lengths)) == 3  # padded, inside the window
    forwards = []
    reuse.model.register_forward_hook(lambda module, args, kwargs, out: forwards.append(kwargs["input_ids"].shape),
                                      with_kwargs=True)
    assert reuse.generate(prompts, settings) == plain.generate(prompts, settings)
    assert reuse.prefix_caches.computed == 1
    n_prefix = len(reuse.tokenizer(prefix)["input_ids"])
    assert forwards[0] == (1, n_prefix)  # the prefix, run once
    # Then each group's suffixes packed into one sequence (no padding, never the prefix again), then decode steps
    # of one token per row.
    packed = [shape for shape in forwards[1:] if shape[1] > 1]
    assert len(packed) == -(-len(prompts) // batch_size) and all(shape[0] == 1 for shape in packed)
    assert sum(shape[1] for shape in packed) == sum(lengths) - len(prompts) * n_prefix


def test_tiny_model_sampling_is_unchanged_by_prefix_reuse(tiny_model_dir):
    """Same batches (one of 3, inside the window) draw the same random numbers: same samples."""
    prompts = [SHORT_PREFIX + q for q in ("Q: capital of X?\nA:", "Q: a much longer one?\nA:", "Q: y?\nA:")]
    sampled = DecodingSettings(max_new_tokens=8, temperature=1.0, stop=(), seed=3)
    plain = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=3, prefix_reuse=False)
    reuse = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=3, min_prefix_tokens=8)
    assert reuse.generate(prompts, sampled) == plain.generate(prompts, sampled)
    assert reuse.prefix_caches.computed == 1


def test_generate_samples_is_seeded_and_varied(tiny_model_dir):
    import dataclasses

    gen = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=2)
    prompts = ["Question: who wrote hamlet\nAnswer:", "Hi"]
    hot = DecodingSettings(max_new_tokens=6, temperature=5.0, stop=(), seed=7)
    samples = gen.generate_samples(prompts, hot, n=4)
    assert len(samples) == 2 and all(len(row) == 4 for row in samples)
    assert gen.generate_samples(prompts, hot, n=4) == samples  # deterministic
    assert all(len(set(row)) > 1 for row in samples)  # a high temperature gives different samples
    # Sample j is exactly a plain call with the derived seed, so samples are cacheable one by one.
    assert [row[2] for row in samples] == gen.generate(prompts, dataclasses.replace(hot, seed=sample_seed(7, 2)))
    assert gen.generate_samples(prompts, dataclasses.replace(hot, seed=8), n=4) != samples
    with pytest.raises(ValueError, match="temperature"):
        gen.generate_samples(prompts, DecodingSettings(), n=2)
    with pytest.raises(ValueError, match="n"):
        gen.generate_samples(prompts, hot, n=0)


# ---------------------------------------------------------------- the real Gemma 3 270M


@pytest.mark.model
def test_gemma_prefix_reuse_gives_the_plain_answers():
    """Real model, 3 NQ prompts decoded as one batch of padded suffixes: same greedy answers as without reuse."""
    from rageval.generation.gemma import load_gemma_generator

    prompts = _nq_prompts(3)
    gemma = load_gemma_generator(device="cpu", batch_size=3)
    settings = DecodingSettings()
    gemma.prefix_reuse = False
    plain = gemma.generate(prompts, settings)
    gemma.prefix_reuse = True
    assert gemma.generate(prompts, settings) == plain
    assert gemma.prefix_caches.computed == 1
    (prefix,) = gemma.prefix_caches.prefixes()
    assert gemma.tokenizer.decode(prefix, skip_special_tokens=True) == _few_shot_block(prompts[0])
    # An explicit prefix that ends inside a token (Gemma merges "\n\n" into one token) matches no prompt's
    # tokenisation: every prompt takes the plain path rather than being fed different tokens.
    gemma.prefix = _few_shot_block(prompts[0])[:-1]
    assert gemma.generate(prompts[:1], settings) == plain[:1]
    assert gemma.prefix_caches.computed == 1  # no cache computed for that prefix
