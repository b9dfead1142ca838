"""The RAG LLM behind one interface: ``Generator.generate(prompts, settings) -> answers``.

Public names: :class:`DecodingSettings`, :class:`Generator` (protocol), :class:`FakeGenerator` (tests),
:class:`TransformersGenerator` (any local HF causal LM), :class:`OpenAIGenerator` (vLLM, Ollama or any
OpenAI-compatible server), :func:`load_gemma_generator` (the default model),
:class:`LLMCache` and :class:`CachedGenerator` (the disk cache of LLM calls). torch and transformers are
imported only when a model is loaded.
"""

from rageval.generation.base import DecodingSettings, FakeGenerator, Generator, apply_stop, first_capitalised_span
from rageval.generation.cache import CachedGenerator, LLMCache, cache_key
from rageval.generation.gemma import gemma_model_id, load_gemma_generator
from rageval.generation.openai_backend import OpenAIGenerator
from rageval.generation.transformers_backend import TransformersGenerator

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
