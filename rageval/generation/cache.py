"""A disk cache of LLM calls (SQLite, WAL mode) and a Generator wrapper that consults it.

An answer depends only on (model, prompt, decoding settings), so eRAG labels computed once are reused by
every later run, retriever and page. The key is the sha256 of a canonical JSON of exactly those three, so a
cached answer is never returned for a different model, prompt or setting.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from rageval.errors import StoreError
from rageval.generation.base import DecodingSettings, Generator
from rageval.store.files import checked_reads, open_for_write, stamp
from rageval.store.schemas import LLM_CACHE, LLM_CACHE_SCHEMA

SCHEMA_VERSION = LLM_CACHE.version
_LOOKUP_CHUNK = 500  # stays under SQLite's bound-parameter limit (999 on old builds)


def _canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def cache_key(model_id: str, prompt: str, settings: DecodingSettings) -> str:
    """sha256 (hex) of the canonical JSON ``{"model_id": ..., "prompt": ..., "settings": {...}}``.

    Canonical = sorted keys, no whitespace, UTF-8; every field of the settings takes part, so changing the
    model, a single prompt character or any decoding setting changes the key.
    """
    payload = {"model_id": model_id, "prompt": prompt, "settings": settings.as_dict()}
    return hashlib.sha256(_canonical_json(payload).encode("utf-8")).hexdigest()


def stopped_key(key: str, gold_answers: Sequence[str]) -> str:
    """The key of an answer stopped by exact-match early stopping (:mod:`rageval.generation.em_stop`): the call's
    ``key`` and the set of normalised gold answers it was stopped against (the same call against other answers may
    stop elsewhere, or not at all)."""
    from rageval.text_metrics import normalize_answer

    golds = sorted({normalize_answer(gold) for gold in gold_answers})
    return hashlib.sha256(_canonical_json({"call": key, "em_early_stop": golds}).encode("utf-8")).hexdigest()


def default_cache_path() -> Path:
    from rageval.paths import cache_dir

    return cache_dir() / "llm_cache.sqlite"


@checked_reads(LLM_CACHE)
class LLMCache:
    """The SQLite store behind :class:`CachedGenerator`; safe to share between threads and processes (a damaged
    file is a StoreError naming it, on opening or on any later read).

    WAL mode lets readers proceed while one process writes; a busy timeout makes a second writer wait for
    the lock instead of failing. Rows are only ever inserted (``INSERT OR IGNORE``), never changed.
    """

    def __init__(self, path: str | Path | None = None, *, timeout_s: float = 60.0):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = open_for_write(self.path, LLM_CACHE, create=True, timeout_s=timeout_s,
                                        check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            with self._transaction():
                self._conn.execute(LLM_CACHE_SCHEMA)
                stamp(self._conn, LLM_CACHE)
        except (sqlite3.DatabaseError, StoreError) as exc:
            if hasattr(self, "_conn"):
                self._conn.close()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"{self.path}: not a usable LLM cache (SQLite said: {exc})") from exc

    @contextmanager
    def _transaction(self):
        # BEGIN IMMEDIATE takes the write lock up front, so two writers queue instead of deadlocking
        # on a read-to-write lock upgrade.
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def get_many(self, keys: Iterable[str]) -> dict[str, str]:
        """The cached outputs of those ``keys`` that are present (missing keys are simply absent)."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._lock:
            for i in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[i:i + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(f"SELECT key, output FROM llm_calls WHERE key IN ({marks})", chunk)
                found.update(rows.fetchall())
        return found

    def put_many(self, model_id: str, settings: DecodingSettings, outputs: Mapping[str, str]) -> None:
        """Insert ``{key: output}`` computed with ``model_id`` and ``settings`` in one committed transaction."""
        now = time.time()
        settings_json = _canonical_json(settings.as_dict())
        rows = [(key, model_id, settings_json, output, now) for key, output in outputs.items()]
        with self._lock, self._transaction():
            self._conn.executemany(
                "INSERT OR IGNORE INTO llm_calls (key, model_id, settings, output, created) VALUES (?,?,?,?,?)",
                rows,
            )

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> LLMCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
