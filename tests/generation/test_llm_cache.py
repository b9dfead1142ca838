"""The SQLite LLM-call cache: keys, hits and misses, persistence, and two processes writing at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rageval.errors import StoreError
from rageval.generation.base import DecodingSettings, FakeGenerator
from rageval.generation.cache import CachedGenerator, LLMCache, cache_key
from rageval.paths import REPO_ROOT

SETTINGS = DecodingSettings()
PROMPTS = ["Passage: Paris is big.\nQuestion: q\nAnswer:", "Passage: Rome is old.\nQuestion: q\nAnswer:"]


def test_cache_key_changes_with_model_prompt_and_each_setting():
    base = cache_key("m1", "prompt", SETTINGS)
    assert base == cache_key("m1", "prompt", DecodingSettings())  # deterministic
    assert len(base) == 64  # sha256 hex
    variants = [
        cache_key("m2", "prompt", SETTINGS),
        cache_key("m1", "prompt ", SETTINGS),
        cache_key("m1", "prompt", DecodingSettings(max_new_tokens=17)),
        cache_key("m1", "prompt", DecodingSettings(temperature=0.7)),
        cache_key("m1", "prompt", DecodingSettings(top_p=0.9)),
        cache_key("m1", "prompt", DecodingSettings(seed=1)),
        cache_key("m1", "prompt", DecodingSettings(stop=("\n", "."))),
    ]
    assert len({base, *variants}) == 1 + len(variants)


def test_cached_generator_generates_only_misses(tmp_path):
    fake = FakeGenerator()
    with LLMCache(tmp_path / "c.sqlite") as cache:
        cached = CachedGenerator(fake, cache)
        assert cached.model_id == fake.model_id
        first = cached.generate(PROMPTS[:1], SETTINGS)
        assert first == ["Paris"]
        assert (fake.calls, fake.prompts_seen, cached.hits, cached.misses) == (1, 1, 0, 1)
        # One cached + one new prompt (twice): one underlying call with just the one new prompt.
        second = cached.generate([PROMPTS[1], PROMPTS[0], PROMPTS[1]], SETTINGS)
        assert second == ["Rome", "Paris", "Rome"]
        assert (fake.calls, fake.prompts_seen, cached.hits, cached.misses) == (2, 2, 2, 2)
        cached.generate(PROMPTS, SETTINGS)
        assert (fake.calls, cached.hits) == (2, 4)
        assert len(cache) == 2


def test_cache_never_answers_for_another_model_or_setting(tmp_path):
    with LLMCache(tmp_path / "c.sqlite") as cache:
        CachedGenerator(FakeGenerator(rule=lambda p: "from model A", model_id="A"), cache).generate(PROMPTS, SETTINGS)
        other_model = FakeGenerator(rule=lambda p: "from model B", model_id="B")
        assert CachedGenerator(other_model, cache).generate(PROMPTS, SETTINGS) == ["from model B"] * 2
        same_model_new_setting = FakeGenerator(rule=lambda p: "A again", model_id="A")
        out = CachedGenerator(same_model_new_setting, cache).generate(PROMPTS, DecodingSettings(seed=3))
        assert out == ["A again"] * 2
        assert same_model_new_setting.calls == 1
        assert len(cache) == 6


def test_cache_persists_across_connections_and_chunks_commit(tmp_path):
    path = tmp_path / "c.sqlite"
    prompts = [f"Passage: Item{i} here.\nQuestion: q\nAnswer:" for i in range(5)]
    fake = FakeGenerator()
    with LLMCache(path) as cache:
        CachedGenerator(fake, cache, chunk_size=2).generate(prompts, SETTINGS)
    assert fake.calls == 3  # 5 misses in chunks of 2 -> 2 + 2 + 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = conn.execute("SELECT model_id, settings, output, created FROM llm_calls ORDER BY output").fetchall()
    assert [r[2] for r in rows] == [f"Item{i}" for i in range(5)]
    assert all(r[0] == fake.model_id and r[3] > 0 for r in rows)
    reopened_fake = FakeGenerator()
    with LLMCache(path) as cache:
        assert CachedGenerator(reopened_fake, cache).generate(prompts, SETTINGS) == [f"Item{i}" for i in range(5)]
    assert reopened_fake.calls == 0


def test_a_failed_chunk_keeps_the_committed_ones(tmp_path):
    def rule(prompt):
        if "Boom" in prompt:
            raise RuntimeError("model crashed")
        return "ok"

    prompts = ["Passage: A\nQuestion: q\nAnswer:", "Passage: B\nQuestion: q\nAnswer:",
               "Passage: Boom\nQuestion: q\nAnswer:"]
    with LLMCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(RuntimeError, match="model crashed"):
            CachedGenerator(FakeGenerator(rule=rule), cache, chunk_size=2).generate(prompts, SETTINGS)
        assert len(cache) == 2  # the first chunk (A, B) was committed before the third prompt failed


def test_not_a_database_is_a_store_error(tmp_path):
    bad = tmp_path / "llm_cache.sqlite"
    bad.write_text("this is not sqlite " * 100)
    with pytest.raises(StoreError, match=r"llm_cache\.sqlite"):
        LLMCache(bad)


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "c.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version=99")
    with pytest.raises(StoreError, match="schema version 99"):
        LLMCache(path)


_WRITER = textwrap.dedent(
    """
    import sys
    from rageval.generation.base import DecodingSettings
    from rageval.generation.cache import LLMCache, cache_key
    path, tag = sys.argv[1], sys.argv[2]
    settings = DecodingSettings()
    with LLMCache(path) as cache:
        for i in range(150):  # one transaction per entry: maximal lock contention
            prompt = f"shared {i}" if i % 3 == 0 else f"{tag} {i}"
            cache.put_many("m", settings, {cache_key("m", prompt, settings): prompt})
            cache.get_many([cache_key("m", f"shared {i}", settings)])
    """
)


def test_two_processes_write_at_once(tmp_path):
    path = tmp_path / "c.sqlite"
    LLMCache(path).close()  # create the schema first so both writers start alike
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag], env=env, stderr=subprocess.PIPE, text=True)
        for tag in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with LLMCache(path) as cache:
        # each process writes 100 own prompts (i % 3 != 0 of 0..149) + 50 shared ones written by both
        assert len(cache) == 2 * 100 + 50
        settings = DecodingSettings()
        assert cache.get_many([cache_key("m", "a 1", settings)]) == {cache_key("m", "a 1", settings): "a 1"}


def test_two_connections_in_one_process(tmp_path):
    path = Path(tmp_path / "c.sqlite")
    with LLMCache(path) as one, LLMCache(path) as two:
        k = cache_key("m", "p", SETTINGS)
        one.put_many("m", SETTINGS, {k: "first"})
        two.put_many("m", SETTINGS, {k: "second"})  # insert-or-ignore: the first answer stays
        assert two.get_many([k]) == {k: "first"}
