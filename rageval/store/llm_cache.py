"""The LLM-call cache's SQLite file (kind "RAGC", :data:`~rageval.store.schemas.LLM_CACHE`): one row per call, keyed
by the sha256 of (model, prompt, decoding settings) (:func:`rageval.generation.cache.cache_key`), only ever inserted.
:class:`rageval.generation.cache.CachedGenerator` consults it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from rageval.errors import StoreError
from rageval.store.files import checked_reads, open_for_write, stamp
from rageval.store.schemas import LLM_CACHE, LLM_CACHE_SCHEMA

SCHEMA_VERSION = LLM_CACHE.version
_LOOKUP_CHUNK = 500  # stays under SQLite's bound-parameter limit (999 on old builds)


class DecodingSettingsLike(Protocol):
    """What the cache stores of a call's decoding settings (:class:`rageval.generation.base.DecodingSettings`)."""

    def as_dict(self) -> dict[str, Any]: ...


def canonical_json(value) -> str:
    """Sorted keys, no whitespace, UTF-8: the one JSON form a cache key and a stored setting are made of."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


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

    def put_many(self, model_id: str, settings: DecodingSettingsLike, outputs: Mapping[str, str]) -> None:
        """Insert ``{key: output}`` computed with ``model_id`` and ``settings`` in one committed transaction."""
        now = time.time()
        settings_json = canonical_json(settings.as_dict())
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
