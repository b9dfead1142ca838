"""The RAG LLM behind one interface: ``Generator.generate(prompts, settings) -> answers``.

The submodules (the package re-exports nothing: import each name from the one that defines it): ``base``
(:class:`DecodingSettings`, the :class:`Generator` protocol, :class:`FakeGenerator` for tests), ``factory``
(:class:`ModelSettings` and the one place a generator is built from them), ``transformers_backend`` (any local HF
causal LM), ``openai_backend`` (vLLM, Ollama or any OpenAI-compatible server; ``endpoints`` and ``rate_limit``
spread and pace its requests), ``gemma`` and ``smollm2`` (the packaged models), ``gguf``, ``cache`` (the disk cache
of LLM calls: :class:`LLMCache`, :class:`CachedGenerator`), ``prefix``, ``shared_prefix``, ``em_stop`` and
``fid`` (decoding shortcuts), ``precision`` (the dtype check), ``server`` (the OpenAI-compatible test server).
torch and transformers are imported only when a model is loaded.
"""
