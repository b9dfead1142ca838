"""Labels from a serving fleet: the OpenAI-compatible backend over several of our servers on loopback (replicas
of one fake model). Requests are spread over the endpoints, a dead or failing endpoint is survived, the rate
limits hold (the buckets on a fake clock; the whole client with lower bounds on real time, never an upper
bound), and the LLM-call cache, whose key holds no endpoint, resumes a run on other replicas without a call."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from rageval.cli.common import add_server_arguments
from rageval.errors import RagevalError
from rageval.generation.base import DecodingSettings, FakeGenerator
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.generation.endpoints import EndpointPool
from rageval.generation.factory import ModelError, ModelSettings, expected_model_id, load_generator
from rageval.generation.openai_backend import OpenAIGenerator
from rageval.generation.rate_limit import RateLimiter, TokenBucket, estimate_tokens
from rageval.generation.server import serve
from rageval.jobs.spec import JobSpec
from rageval.paths import REPO_ROOT
from tests.pipeline.test_pipeline import dataset  # noqa: F401 (a fixture: a small set of questions, corpus and run)

MODEL = "fleet-fake"
GREEDY = DecodingSettings(max_new_tokens=8)
PROMPTS = [f"Question: who is number {i}?\nPassage: Person {i} is number {i}." for i in range(60)]


class SlowFake(FakeGenerator):
    """The fake model, ``delay_s`` per call (the server generates one call at a time)."""

    def __init__(self, delay_s: float):
        super().__init__()
        self.delay_s = delay_s

    def generate(self, prompts, settings):
        time.sleep(self.delay_s)
        return super().generate(prompts, settings)


class Failing(FakeGenerator):
    def generate(self, prompts, settings):
        raise RuntimeError("CUDA out of memory")


def fleet(*generators):
    """Our server over each generator, all serving ``MODEL``."""
    return [serve(g, model_name=MODEL) for g in generators]


def requests_to(server) -> int:
    return server.request_counts["/v1/completions"]


def client(urls, **kwargs) -> OpenAIGenerator:
    return OpenAIGenerator(urls, MODEL, **{"timeout_s": 10.0, "max_retries": 3, "backoff_s": 0.01,
                                           "concurrency": 4, **kwargs})


def dead_url() -> str:
    with socket.socket() as sock:  # a port nothing listens on once this closes
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.fixture
def three():
    servers = fleet(FakeGenerator(), FakeGenerator(), FakeGenerator())
    yield servers
    for server in servers:
        server.close()


# ---------------------------------------------------------------- spreading the requests


def test_round_robin_gives_every_endpoint_its_share_and_answers_come_in_prompt_order(three):
    urls = ",".join(s.base_url for s in three)
    with client(urls, balance="round-robin") as generator:
        answers = generator.generate(PROMPTS, GREEDY)
    assert answers == FakeGenerator().generate(PROMPTS, GREEDY)
    assert [requests_to(s) for s in three] == [20, 20, 20]
    assert [e["sent"] for e in generator.endpoint_stats()] == [20, 20, 20]


def test_least_in_flight_sends_less_to_a_slow_replica():
    fast_a, fast_b, slow = servers = fleet(FakeGenerator(), FakeGenerator(), SlowFake(0.5))
    try:
        with client([s.base_url for s in servers], concurrency=6) as generator:
            assert generator.generate(PROMPTS, GREEDY) == FakeGenerator().generate(PROMPTS, GREEDY)
        counts = [requests_to(s) for s in servers]
        assert sum(counts) == len(PROMPTS)
        # A round would give it 20; waiting on its answers it has requests in flight, so the others are chosen.
        assert requests_to(slow) < min(requests_to(fast_a), requests_to(fast_b)) and requests_to(slow) < 20
    finally:
        for server in servers:
            server.close()


# ---------------------------------------------------------------- surviving a dead or failing endpoint


def test_a_dead_and_a_failing_endpoint_are_survived_and_marked_down(three):
    failing = serve(Failing(), model_name=MODEL)
    try:
        urls = [dead_url(), three[0].base_url, failing.base_url, three[1].base_url]
        with client(urls, balance="round-robin", concurrency=4) as generator:
            assert generator.generate(PROMPTS, GREEDY) == FakeGenerator().generate(PROMPTS, GREEDY)
            stats = generator.endpoint_stats()
        assert requests_to(three[0]) + requests_to(three[1]) == len(PROMPTS)
        for bad in (stats[0], stats[2]):
            assert bad["down"] and bad["failures"] == bad["sent"] >= 1
            assert bad["sent"] <= 8  # a few: those sent before its first failure came back and marked it down
        assert stats[1]["failures"] == stats[3]["failures"] == 0
    finally:
        failing.close()


def test_a_replica_that_goes_away_between_calls_is_survived(three):
    # A server process, killed between two calls: its kept-alive connections die with it (an in-process server's
    # handler threads would go on answering on them).
    process = subprocess.Popen([sys.executable, "-m", "rageval", "serve-model", "--model", "fake",
                                "--served-model-name", MODEL, "--port", "0", "--quiet"],
                               env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline() if process.stderr else ""
        url = line.split(" at ", 1)[1].split()[0]
        with client([three[0].base_url, three[1].base_url, url], balance="round-robin") as generator:
            first = generator.generate(PROMPTS[:30], GREEDY)
            assert generator.endpoint_stats()[2]["sent"] == 10
            process.kill()
            process.wait(timeout=30)
            second = generator.generate(PROMPTS[30:], GREEDY)
            stats = generator.endpoint_stats()
    finally:
        process.kill()
        process.wait(timeout=30)
    assert first + second == FakeGenerator().generate(PROMPTS, GREEDY)
    assert stats[2]["down"] and stats[2]["failures"] >= 1
    assert requests_to(three[0]) + requests_to(three[1]) == len(PROMPTS) - 10


def test_a_fleet_that_is_all_down_is_one_error_naming_every_server():
    urls = [dead_url(), dead_url()]
    with pytest.raises(RagevalError, match=r"cannot reach the OpenAI-compatible server at any of the 2 servers") \
            as info, client(urls, max_retries=2) as generator:
        generator.generate(["q"], GREEDY)
    assert all(url in str(info.value) for url in urls) and "3 attempts" in str(info.value)


def test_endpoint_pool_skips_down_endpoints_and_uses_the_soonest_back_when_all_are_down():
    now = [0.0]
    pool = EndpointPool(["a", "b", "c"], "round-robin", down_s=10.0, clock=lambda: now[0])
    first = pool.acquire()
    pool.release(first, failed=True)
    picked = []
    for _ in range(4):
        endpoint = pool.acquire()
        picked.append(endpoint.base_url)
        pool.release(endpoint)
    assert first.base_url == "a" and picked == ["b", "c", "b", "c"]
    now[0] = 10.0  # a is back
    assert pool.acquire().base_url == "a"
    for url, at in (("a", 5.0), ("b", 3.0), ("c", 7.0)):
        endpoint = next(e for e in pool.endpoints if e.base_url == url)
        endpoint.down_until = now[0] + at
    assert pool.acquire().base_url == "b"  # every one down: the soonest back
    b = next(e for e in pool.endpoints if e.base_url == "b")
    b.down_until = 0.0
    assert pool.acquire(avoid=[b]).base_url == "b"  # the only one up, though this request failed on it


# ---------------------------------------------------------------- rate limits


def windows_hold(times: list[float], amounts: list[float], per_minute: float, capacity: float) -> bool:
    """Whether every window [t, t + 60 s) starting at an admission holds at most capacity + per_minute."""
    pairs = sorted(zip(times, amounts))
    for i, (start, _) in enumerate(pairs):
        inside = sum(amount for at, amount in pairs[i:] if at < start + 60.0)
        if inside > capacity + per_minute + 1e-9:
            return False
    return True


@pytest.mark.parametrize("gap_s", [0.0, 0.3, 0.6])  # 600 callers at once, faster than the limit, slower
def test_the_request_bucket_lets_no_window_exceed_the_limit(gap_s):
    now = [0.0]
    bucket = TokenBucket(120, clock=lambda: now[0])  # 2 a second, 2 at once
    arrivals = [i * gap_s for i in range(600)]
    admitted = []
    for arrival in arrivals:
        now[0] = arrival
        admitted.append(arrival + bucket.reserve(1))
    assert windows_hold(admitted, [1] * len(admitted), 120, bucket.capacity)
    assert admitted == sorted(admitted)  # served in the order they reserved
    if gap_s > 0.5:
        assert admitted == arrivals  # under the limit: nobody waits
    else:
        assert max(admitted) == pytest.approx((600 - bucket.capacity) / 2)  # at the limit from the start


def test_token_reservations_are_settled_with_the_servers_count():
    now = [0.0]
    slept: list[float] = []
    limiter = RateLimiter(tokens_per_minute=6000, clock=lambda: now[0], sleep=slept.append)  # 100 tokens a second
    for _ in range(50):  # each request estimated at 10 tokens, counted at 40 by the server
        limiter.acquire(10)
        now[0] += slept.pop() if slept else 0.0
        limiter.settle(10, 40)
    assert now[0] == pytest.approx((50 * 40 - 100 - 30) / 100, abs=0.01)  # the counts, not the estimates, set the pace
    limiter.settle(10, None)  # no count from the server: the estimate stands
    assert estimate_tokens("x" * 400, 16) == 116


def test_the_request_limit_holds_for_the_whole_client(three):
    per_minute = 1200  # 20 a second, at most 20 at once
    with client([s.base_url for s in three[:2]], concurrency=8, max_requests_per_minute=per_minute) as generator:
        started = time.monotonic()
        generator.generate(PROMPTS, GREEDY)
        elapsed = time.monotonic() - started
    assert requests_to(three[0]) + requests_to(three[1]) == len(PROMPTS)
    assert elapsed >= (len(PROMPTS) - 20) / 20 * 0.95  # 2 s at least: the limit, shared by the 8 threads


def test_the_token_limit_follows_the_usage_the_servers_report(three):
    prompts = [" ".join(["a"] * 200) + f" {i}" for i in range(15)]  # 2 characters a token: estimated too low
    estimates = [estimate_tokens(p, GREEDY.max_new_tokens) for p in prompts]
    used = [len(p.split()) + 1 for p in prompts]  # our server counts words: the prompt's and the answer's ("7")
    with client([s.base_url for s in three[:2]], concurrency=4, max_tokens_per_minute=60_000) as generator:
        started = time.monotonic()
        assert generator.generate(prompts, GREEDY) == [str(i) for i in range(15)]
        elapsed = time.monotonic() - started
    # 1,000 tokens a second, 1,000 at once. Paced by the estimates it could end after 0.6 s; paced by the servers'
    # counts it cannot end before all but the 4 requests in flight are settled: 1.6 s.
    assert (sum(estimates) - 1000) / 1000 < 0.7
    unsettled = 4 * max(u - e for u, e in zip(used, estimates))
    assert elapsed >= (sum(used) - 1000 - unsettled) / 1000 * 0.95 > 1.5


# ---------------------------------------------------------------- resuming through the LLM-call cache


def test_a_run_resumed_on_other_replicas_makes_no_repeated_call(tmp_path):
    a, b, c = servers = fleet(FakeGenerator(), FakeGenerator(), FakeGenerator())
    try:
        with LLMCache(tmp_path / "llm.sqlite") as cache:
            with client([a.base_url, b.base_url]) as first:
                cached = CachedGenerator(first, cache)
                cached.generate(PROMPTS[:25], GREEDY)  # the run stops after 25 prompts
            assert requests_to(a) + requests_to(b) == 25
            with client(f"{c.base_url},{b.base_url}") as second:  # resumed on another set of replicas
                resumed = CachedGenerator(second, cache)
                answers = resumed.generate(PROMPTS, GREEDY)
            assert answers == FakeGenerator().generate(PROMPTS, GREEDY)
            assert (resumed.hits, resumed.misses) == (25, 35)
            assert sum(requests_to(s) for s in servers) == len(PROMPTS)  # each prompt asked exactly once
    finally:
        for server in servers:
            server.close()


# ---------------------------------------------------------------- the settings, from flags to the generator


def test_base_url_flags_repeat_and_split_on_commas():
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    assert parser.parse_args([]).base_url == "http://127.0.0.1:8000/v1"
    args = parser.parse_args(["--base-url", "http://a:1", "--base-url", "http://b:2/v1, http://c:3",
                              "--max-requests-per-minute", "600", "--balance", "round-robin"])
    assert args.base_url == "http://a:1,http://b:2/v1,http://c:3"
    assert (args.max_requests_per_minute, args.max_tokens_per_minute, args.balance) == (600.0, None, "round-robin")


def test_model_settings_and_job_specs_carry_the_fleet_settings(tmp_path):
    settings = ModelSettings(MODEL, "openai", base_url="http://a:1,http://b:2", batch_size=16, balance="round-robin",
                             max_requests_per_minute=600, max_tokens_per_minute=1e6)
    generator = load_generator(settings)
    assert generator.base_urls == ("http://a:1/v1", "http://b:2/v1") and generator.concurrency == 16
    assert generator.endpoints.balance == "round-robin"
    assert generator.rate_limiter.requests is not None and generator.rate_limiter.requests.rate == 10
    assert expected_model_id(settings) == generator.model_id == f"openai-compatible:{MODEL}"
    for wrong in ({"balance": "random"}, {"max_requests_per_minute": 0}, {"max_tokens_per_minute": -5}):
        with pytest.raises(ModelError):
            ModelSettings(MODEL, "openai", **wrong)
    run = tmp_path / "run.sqlite"
    spec = JobSpec.from_flat(str(run), model=MODEL, backend="openai", base_url="http://a:1,http://b:2",
                             max_requests_per_minute=600, balance="round-robin")
    assert JobSpec.from_json(spec.to_json()) == spec
    assert spec.model_settings.max_requests_per_minute == 600 and spec.model_settings.base_url == "http://a:1,http://b:2"
    older = {k: v for k, v in json.loads(spec.to_json()).items()
             if k not in ("balance", "max_requests_per_minute", "max_tokens_per_minute")}
    # a job stored before these fields
    assert JobSpec.from_json(json.dumps(older)).model_settings.max_requests_per_minute is None


def test_threads_reserving_at_once_get_one_slot_each():
    bucket = TokenBucket(60, clock=lambda: 0.0)  # 1 a second; the clock stands still: only reservations count
    waits: list[float] = []
    lock = threading.Lock()

    def reserve():
        wait = bucket.reserve(1)
        with lock:
            waits.append(wait)

    threads = [threading.Thread(target=reserve) for _ in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(waits) == [float(i) for i in range(30)]  # one slot a second each, none given twice


def test_evaluate_labels_through_two_replicas_and_stores_them_in_the_config(dataset, tmp_path, monkeypatch,  # noqa: F811
                                                                            capsys):
    from rageval.cli import main

    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    servers = fleet(FakeGenerator(), FakeGenerator())
    out = tmp_path / "fleet.sqlite"
    try:
        code = main(["evaluate", "--queries", str(dataset["queries"]), "--corpus", str(dataset["corpus"]),
                     "--run", str(dataset["run"]), "--methods", "erag,e2e", "--label-metrics", "em", "--k", "1,3",
                     "--backend", "openai", "--model", MODEL, "--base-url", servers[0].base_url,
                     "--base-url", servers[1].base_url, "--max-requests-per-minute", "60000",
                     "--balance", "round-robin", "--out", str(out)])
        assert code == 0, capsys.readouterr().err
        counts = [requests_to(s) for s in servers]
        assert counts == [10, 10]  # 15 eRAG + 5 E2E calls (E2E at k=1 is eRAG's prompt: cached), in turn
        assert main(["info", str(out), "--config"]) == 0
        config = capsys.readouterr().out
        assert f'base_url = "{servers[0].base_url},{servers[1].base_url}"' in config
        assert "max_requests_per_minute = 60000.0" in config and 'balance = "round-robin"' in config
    finally:
        for server in servers:
            server.close()


def test_the_cache_sends_a_fleet_as_many_prompts_at_once_as_it_has_requests_in_flight(tmp_path):
    class Wide(FakeGenerator):
        concurrency = 200

    wide = Wide()
    with LLMCache(tmp_path / "llm.sqlite") as cache:
        CachedGenerator(wide, cache).generate([f"Passage: P {i}" for i in range(150)], GREEDY)
        assert wide.calls == 1  # one call of 150, not chunks of 64 (which would cap a fleet at 64 in flight)
        narrow = FakeGenerator()
        CachedGenerator(narrow, cache).generate([f"Passage: Q {i}" for i in range(150)], GREEDY)
        assert narrow.calls == 3  # a local model: chunks of 64, each committed before the next
