"""One-time conversion of a GGUF model file to a transformers directory (safetensors + tokenizer).

Loading a GGUF file with transformers dequantises every tensor and converts the tokenizer (tens of seconds on a
few CPU cores), so the local GGUF models (:mod:`rageval.generation.gemma`, :mod:`rageval.generation.smollm2`)
are converted once and saved as float32 safetensors (the exact dequantised values) plus the tokenizer under
``cache_dir()/models/<name>/``; later loads read that directory in a few seconds.

A conversion writes everything in a temporary sibling directory ``.<name>.tmp-*`` and renames it to the target
only when complete, the provenance file :data:`PROVENANCE_FILE` being written last: a directory holding it is
complete (:func:`is_complete`), and a killed conversion leaves no half-written model.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path

PROVENANCE_FILE = "rageval_conversion.json"


def is_complete(directory: Path) -> bool:
    """Whether ``directory`` holds a finished conversion (its provenance file, written last, is there)."""
    return (directory / PROVENANCE_FILE).is_file()


def remove_stale_work_dirs(target: Path, max_age_s: float = 3 * 3600) -> None:
    """Delete temp dirs of conversions of ``target`` killed long ago (a live conversion takes about a minute)."""
    now = time.time()
    for stale in target.parent.glob(f".{target.name}.tmp-*"):
        try:
            if now - stale.stat().st_mtime > max_age_s:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass  # removed meanwhile by another process


def convert_gguf(gguf: Path | Callable[[Path], Path], target: Path, provenance: Mapping[str, object]) -> Path:
    """Dequantise a GGUF model with transformers and save model + tokenizer to ``target``; returns ``target``.

    ``gguf`` is the GGUF file, used in place, or a function that writes it inside the given work directory
    (deleted afterwards) and returns its path. ``provenance`` (model id, GGUF file name and checksum, ...) is
    saved as :data:`PROVENANCE_FILE` with the transformers version and the dtype added.

    Everything is written in a temporary sibling directory that is renamed to ``target`` only when complete,
    so a killed conversion leaves no half-written model (only a ``.tmp-*`` directory, removed on failure and,
    if the process was killed, by a later conversion once stale). If another process finished first, its
    result is kept and ours discarded.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_work_dirs(target)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        gguf_path = Path(gguf(work) if callable(gguf) else gguf)
        extra = {"gguf_file": gguf_path.name, "local_files_only": True}
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), **extra)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), dtype=torch.float32, **extra)
        # The weights are now plain float32 tensors; drop the GGUF quantiser marker so that save_pretrained
        # writes them instead of refusing a "quantized" model.
        model.hf_quantizer = None  # type: ignore[assignment]  # torch types Module attributes as Tensor | Module
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "model"
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        record = {**provenance, "transformers": metadata.version("transformers"), "dtype": "float32"}
        (out / PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n")
        try:
            os.rename(out, target)
        except OSError:
            if not is_complete(target):  # not a lost race with another converter: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def ensure_converted(target: Path, convert: Callable[[Path], Path]) -> Path:
    """``target`` once it holds a complete conversion, running ``convert(target)`` first when it does not.

    A ``target`` without the provenance file (left by an older, interrupted layout) is not trusted: removed."""
    if not is_complete(target):
        if target.exists():
            shutil.rmtree(target)
        convert(target)
    return target
