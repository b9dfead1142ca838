"""The keys of the disk cache of LLM calls and a Generator wrapper that consults it (the cache itself, SQLite in WAL
mode, is :class:`rageval.store.llm_cache.LLMCache`, re-exported here for the callers).

An answer depends only on (model, prompt, decoding settings), so eRAG labels computed once are reused by
every later run, retriever and page. The key is the sha256 of a canonical JSON of exactly those three, so a
cached answer is never returned for a different model, prompt or setting.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from rageval.generation.base import DecodingSettings, Generator
from rageval.store.llm_cache import LLMCache, canonical_json


def cache_key(model_id: str, prompt: str, settings: DecodingSettings) -> str:
    """sha256 (hex) of the canonical JSON ``{"model_id": ..., "prompt": ..., "settings": {...}}``.

    Canonical = sorted keys, no whitespace, UTF-8; every field of the settings takes part, so changing the
    model, a single prompt character or any decoding setting changes the key.
    """
    payload = {"model_id": model_id, "prompt": prompt, "settings": settings.as_dict()}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def stopped_key(key: str, gold_answers: Sequence[str]) -> str:
    """The key of an answer stopped by exact-match early stopping (:mod:`rageval.generation.em_stop`): the call's
    ``key`` and the set of normalised gold answers it was stopped against (the same call against other answers may
    stop elsewhere, or not at all)."""
    from rageval.text_metrics import normalize_answer

    golds = sorted({normalize_answer(gold) for gold in gold_answers})
    return hashlib.sha256(canonical_json({"call": key, "em_early_stop": golds}).encode("utf-8")).hexdigest()


class CachedGenerator:
    """Wraps any :class:`Generator`: answers cached prompts from ``cache`` and generates only the misses.

    Misses (deduplicated) go to the wrapped generator in chunks of ``chunk_size`` prompts (one call when there
    are fewer), and each chunk is committed before the next starts, so a killed run keeps what it finished.
    The default chunk is 64 prompts, or the wrapped generator's ``concurrency`` when larger (a server fleet
    answering 512 requests at a time must be sent 512 at a time).
    ``hits`` counts prompts answered from the cache, ``misses`` prompts sent to the wrapped generator;
    a prompt repeated within one call is generated once and its repeats count as hits.

    With ``em_targets`` (exact-match early stopping, passed on when the wrapped generator supports it): a full
    answer in the cache serves the call; an answer stopped early is stored and looked up under
    :func:`stopped_key` (call and gold answers), never under the call's own key, so a later call without early
    stopping never gets a stopped answer.
    """

    def __init__(self, generator: Generator, cache: LLMCache, *, chunk_size: int | None = None):
        if chunk_size is None:
            chunk_size = max(64, getattr(generator, "concurrency", 0))
        if chunk_size < 1:
            raise ValueError(f"CachedGenerator.chunk_size: expected >= 1, got {chunk_size}")
        self.generator = generator
        self.cache = cache
        self.chunk_size = chunk_size
        self.hits = 0
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.generator.model_id

    @property
    def build_prompt(self):
        """The wrapped generator's own prompt builder (e.g. FiD's), or ``None`` for the default QA prompt."""
        return getattr(self.generator, "build_prompt", None)

    @property
    def supports_em_early_stop(self) -> bool:
        return bool(getattr(self.generator, "supports_em_early_stop", False))

    def generate(self, prompts: Sequence[str], settings: DecodingSettings, *,
                 em_targets: Sequence[Sequence[str]] | None = None) -> list[str]:
        from rageval.generation.em_stop import is_stopped

        model_id = self.generator.model_id
        keys = [cache_key(model_id, prompt, settings) for prompt in prompts]
        if em_targets is not None and len(em_targets) != len(prompts):
            raise ValueError(f"generate.em_targets: {len(em_targets)} answer lists for {len(prompts)} prompts")
        # One id per distinct call: the key, or with early stopping the key and the gold answers (two queries may
        # ask the same prompt with different answers).
        ids = keys if em_targets is None else [stopped_key(k, golds) for k, golds in zip(keys, em_targets)]
        full = self.cache.get_many(keys)
        answers = {i: full[k] for i, k in zip(ids, keys) if k in full}
        if em_targets is not None:  # an answer stopped against these gold answers
            answers.update(self.cache.get_many(i for i in ids if i not in answers))
        todo = {i: (k, n) for n, (i, k) in enumerate(zip(ids, keys)) if i not in answers}  # dedup, ordered
        todo_items = list(todo.items())
        early = em_targets is not None and self.supports_em_early_stop
        for start in range(0, len(todo_items), self.chunk_size):
            chunk = todo_items[start:start + self.chunk_size]
            chunk_prompts = [prompts[n] for _, (_, n) in chunk]
            if early:
                outputs = self.generator.generate(chunk_prompts, settings,  # type: ignore[call-arg]
                                                  em_targets=[em_targets[n] for _, (_, n) in chunk])  # type: ignore[index]
            else:
                outputs = self.generator.generate(chunk_prompts, settings)
            if len(outputs) != len(chunk):
                raise RuntimeError(f"generator {model_id!r} returned {len(outputs)} answers for {len(chunk)} prompts")
            # A full answer under the call's key (any later call may use it), a stopped one under its id only.
            self.cache.put_many(model_id, settings, {
                (i if is_stopped(output) else k): output for (i, (k, _)), output in zip(chunk, outputs)})
            answers.update({i: output for (i, _), output in zip(chunk, outputs)})
        self.misses += len(todo_items)
        self.hits += len(prompts) - len(todo_items)
        return [answers[i] for i in ids]
