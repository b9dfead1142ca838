"""The RAG LLM behind one interface: ``Generator.generate(prompts, settings) -> answers``.

Public names: :class:`DecodingSettings`, :class:`Generator` (protocol), :class:`FakeGenerator` (tests),
:class:`TransformersGenerator` (any local HF causal LM), :class:`OpenAIGenerator` (vLLM, Ollama or any
OpenAI-compatible server), :func:`load_gemma_generator` (the default model),
:class:`LLMCache` and :class:`CachedGenerator` (the disk cache of LLM calls). torch and transformers are
imported only when a model is loaded.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names below are imported on first use (__getattr__): importing the package is cheap
    from rageval.generation.base import DecodingSettings, FakeGenerator, Generator, apply_stop, first_capitalised_span
    from rageval.generation.cache import CachedGenerator, LLMCache, cache_key
    from rageval.generation.gemma import gemma_model_id, load_gemma_generator
    from rageval.generation.openai_backend import OpenAIGenerator
    from rageval.generation.transformers_backend import TransformersGenerator

#: Name -> the submodule that defines it, imported when the name is first asked for (PEP 562).
_LAZY = {
    "CachedGenerator": "cache",
    "DecodingSettings": "base",
    "FakeGenerator": "base",
    "Generator": "base",
    "LLMCache": "cache",
    "OpenAIGenerator": "openai_backend",
    "TransformersGenerator": "transformers_backend",
    "apply_stop": "base",
    "cache_key": "cache",
    "first_capitalised_span": "base",
    "gemma_model_id": "gemma",
    "load_gemma_generator": "gemma",
}


def __getattr__(name: str):
    import importlib

    module = _LAZY.get(name)
    if module is None:  # a submodule (``jobs.control``), as the eager imports made it an attribute
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "CachedGenerator",
    "DecodingSettings",
    "FakeGenerator",
    "Generator",
    "LLMCache",
    "OpenAIGenerator",
    "TransformersGenerator",
    "apply_stop",
    "cache_key",
    "first_capitalised_span",
    "gemma_model_id",
    "load_gemma_generator",
]
