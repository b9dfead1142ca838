"""The RAG LLM behind one interface: ``Generator.generate(prompts, settings) -> answers``.

Public names: :class:`DecodingSettings`, :class:`Generator` (protocol), :class:`FakeGenerator` (tests),
:class:`TransformersGenerator` (any local HF causal LM), :class:`OpenAIGenerator` (vLLM, Ollama or any
OpenAI-compatible server), :func:`load_gemma_generator` (the default model),
:class:`LLMCache` and :class:`CachedGenerator` (the disk cache of LLM calls). torch and transformers are
imported only when a model is loaded.
"""

from typing import TYPE_CHECKING

from rageval.lazy import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


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
