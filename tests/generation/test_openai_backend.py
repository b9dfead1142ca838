"""The OpenAI-compatible HTTP backend against real local servers.

Our own server (``rageval.generation.server``) serves the tiny random Gemma 3 of ``conftest.py`` through the
OpenAI routes, so every answer that comes back over HTTP can be compared with the same generator called
directly. Failure modes (drops, timeouts, 5xx, 4xx, malformed bodies) come from a scripted raw HTTP server.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from rageval.data.loaders import read_nq_open_oracle
from rageval.errors import RagevalError
from rageval.generation.base import DecodingSettings, FakeGenerator, Generator, apply_stop
from rageval.generation.cache import CachedGenerator, LLMCache
from rageval.generation.openai_backend import (
    OpenAIGenerator,
    build_request_body,
    normalize_base_url,
    server_stop_strings,
)
from rageval.generation.server import render_chat, serve
from rageval.generation.transformers_backend import TransformersGenerator
from rageval.paths import DATA_DIR
from rageval.prompts import QA_FEW_SHOT, build_qa_prompt
from rageval.types import Passage

MODEL = "tiny"


@pytest.fixture(scope="module")
def tiny_generator(tiny_model_dir) -> TransformersGenerator:
    return TransformersGenerator(tiny_model_dir, device="cpu", model_id=MODEL)


@pytest.fixture(scope="module")
def server(tiny_generator):
    with serve(tiny_generator) as running:
        yield running


@pytest.fixture(scope="module")
def nq_prompts() -> list[str]:
    """eRAG prompts (one gold passage each) for the first 6 questions of the shipped NQ-open oracle file.

    Without the few-shot examples, so every prompt stays within the tiny model's 2,048 positions (bytes).
    """
    template = replace(QA_FEW_SHOT, examples=())
    records = read_nq_open_oracle(DATA_DIR / "nq_open" / "nq_open_oracle_psgs_w100.jsonl.gz")[:6]
    return [build_qa_prompt(r.question, [Passage(f"nq_oracle:{r.line - 1}", r.title, r.text, "nq_oracle")], template)
            for r in records]


GREEDY = DecodingSettings(max_new_tokens=8)
HANG_GUARD_S = 60  # a bound for a broken test, not a timing assumption


# ---------------------------------------------------------------- a scripted raw HTTP server for failure modes

class Scripted:
    """Answers the n-th POST with ``script[n]`` (the last entry repeats) and records every request body.

    An entry is ``(status, body)`` (a dict is sent as JSON, a str as is), optionally with a headers dict,
    or ``"drop"`` (close the connection without answering) or ``"hang"`` (answer nothing until the ``with`` block
    ends: the client's timeout, however short, always comes first).
    """

    def __init__(self, script):
        self.script = list(script)
        self.bodies: list[dict] = []
        self.authorizations: list[str | None] = []
        self.released = threading.Event()
        self.received = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                with outer.received:
                    outer.bodies.append(json.loads(raw))
                    outer.authorizations.append(self.headers.get("Authorization"))
                    entry = outer.script[min(len(outer.bodies), len(outer.script)) - 1]
                    outer.received.notify_all()
                if entry in ("drop", "hang"):
                    if entry == "hang":
                        outer.released.wait()
                    self.close_connection = True
                    return
                status, body, *headers = entry
                data = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(status)
                for name, value in (headers[0] if headers else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def wait_for_requests(self, count: int) -> list[dict]:
        """The bodies once ``count`` requests have been read (a client that gave up has sent its request, but the
        server thread may not have read it yet)."""
        with self.received:
            self.received.wait_for(lambda: len(self.bodies) >= count, timeout=HANG_GUARD_S)
            return list(self.bodies)


def completion(text: str) -> dict:
    return {"object": "text_completion", "choices": [{"index": 0, "text": text, "finish_reason": "stop"}]}


def fast_client(url: str, **kwargs) -> OpenAIGenerator:
    return OpenAIGenerator(url, MODEL, **{"timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.01, **kwargs})


# ---------------------------------------------------------------- answers through our server equal direct answers

def test_http_answers_equal_the_direct_generator_in_prompt_order(server, tiny_generator, nq_prompts):
    direct = tiny_generator.generate(nq_prompts, GREEDY)
    assert len(set(direct)) > 1  # distinct answers, so a reordering would be caught

    before = server.request_counts["/v1/completions"]
    client = OpenAIGenerator(server.base_url, MODEL, concurrency=4)
    assert isinstance(client, Generator)
    assert client.generate(nq_prompts, GREEDY) == direct
    assert server.request_counts["/v1/completions"] - before == len(nq_prompts)  # one request per prompt
    assert client.generate([], GREEDY) == []


def test_seeded_sampling_goes_through(server, tiny_generator, nq_prompts):
    sampled = DecodingSettings(max_new_tokens=10, temperature=1.0, top_p=0.9, seed=3, stop=())
    client = OpenAIGenerator(server.base_url, MODEL)
    # One prompt per call: the direct generator seeds its RNG once per call, the server once per request.
    assert client.generate(nq_prompts[:1], sampled) == tiny_generator.generate(nq_prompts[:1], sampled)
    assert client.generate(nq_prompts[:1], sampled) != client.generate(
        nq_prompts[:1], DecodingSettings(max_new_tokens=10, temperature=1.0, top_p=0.9, seed=4, stop=()))


def test_stop_strings_cut_the_answer_like_the_direct_generator(server, tiny_generator, nq_prompts):
    long = tiny_generator.generate(nq_prompts[:1], DecodingSettings(max_new_tokens=12, stop=()))[0]
    stop = next(long[i:i + 2] for i in range(2, len(long) - 1) if not long[i].isspace())
    settings = DecodingSettings(max_new_tokens=12, stop=(stop,))
    expected = apply_stop(long, (stop,))
    assert len(expected) < len(long)
    assert tiny_generator.generate(nq_prompts[:1], settings) == [expected]
    assert OpenAIGenerator(server.base_url, MODEL).generate(nq_prompts[:1], settings) == [expected]


def test_stop_strings_are_applied_client_side_and_leading_whitespace_ones_not_sent():
    with Scripted([(200, completion("\n Paris\nLondon"))]) as scripted:
        answers = fast_client(scripted.url).generate(["q"], DecodingSettings(stop=("\n", "Lon")))
    assert answers == ["Paris"]  # the leading newline is skipped, then "\n" cuts before "London"
    assert scripted.bodies[0]["stop"] == ["Lon"]


def test_chat_route_renders_role_lines_or_the_chat_template(server, tiny_generator):
    client = OpenAIGenerator(server.base_url, MODEL, api="chat")
    plain = render_chat([{"role": "user", "content": "who wrote hamlet"}])
    assert plain == "user: who wrote hamlet\nassistant:"
    assert client.generate(["who wrote hamlet"], GREEDY) == tiny_generator.generate([plain], GREEDY)

    tokenizer = tiny_generator.tokenizer
    tokenizer.chat_template = ("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}")
    try:
        templated = render_chat([{"role": "user", "content": "who wrote hamlet"}], tokenizer)
        # The tokenizer adds <bos> itself, so the template's own <bos> is dropped rather than doubled.
        assert templated == "<user>who wrote hamlet\n<assistant>"
        assert client.generate(["who wrote hamlet"], GREEDY) == tiny_generator.generate([templated], GREEDY)
    finally:
        tokenizer.chat_template = None
    assert server.request_counts["/v1/chat/completions"] >= 2


def test_cached_generator_answers_the_second_call_without_any_request(server, nq_prompts, tmp_path):
    client = OpenAIGenerator(server.base_url, MODEL, concurrency=3)
    with LLMCache(tmp_path / "llm.sqlite") as cache:
        cached = CachedGenerator(client, cache)
        before = server.request_counts["/v1/completions"]
        first = cached.generate(nq_prompts[:4], GREEDY)
        assert server.request_counts["/v1/completions"] - before == 4
        assert cached.generate(nq_prompts[:4], GREEDY) == first
        assert server.request_counts["/v1/completions"] - before == 4  # all hits: no new request
        assert (cached.hits, cached.misses) == (4, 4)


# ---------------------------------------------------------------- failures: unreachable, retried, rejected, malformed

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_server_fails_with_the_url_and_a_hint():
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(RagevalError) as info:
        fast_client(url).generate(["q"], GREEDY)
    message = str(info.value)
    assert f"{url}/v1/completions" in message and "3 attempts" in message and "vLLM/Ollama" in message


def test_dropped_connections_are_retried_then_reported():
    with Scripted(["drop"]) as scripted, pytest.raises(RagevalError, match=r"cannot reach .* 3 attempts"):
        fast_client(scripted.url).generate(["q"], GREEDY)
    assert len(scripted.bodies) == 3  # max_retries=2 -> 3 attempts


def test_timeouts_are_retried_then_reported():
    with Scripted(["hang"]) as scripted:
        with pytest.raises(RagevalError, match=r"timeout_s=0\.2; 2 attempts"):
            fast_client(scripted.url, timeout_s=0.2, max_retries=1).generate(["q"], GREEDY)
        assert len(scripted.wait_for_requests(2)) == 2


def test_server_errors_and_429_are_retried_until_success():
    error = {"error": {"message": "overloaded"}}
    script = [(500, error), (503, error), (429, error, {"Retry-After": "0"}), (200, completion(" Paris\n"))]
    with Scripted(script) as scripted:
        assert fast_client(scripted.url, max_retries=3).generate(["q"], GREEDY) == ["Paris"]
    assert len(scripted.bodies) == 4


def test_persistent_server_errors_report_the_last_message():
    with (Scripted([(500, {"error": {"message": "CUDA out of memory"}})]) as scripted,
          pytest.raises(RagevalError, match=r"HTTP 500: CUDA out of memory \(after 3 attempts\)")):
        fast_client(scripted.url).generate(["q"], GREEDY)


@pytest.mark.parametrize("body", [
    {"error": {"message": "prompt is too long", "type": "invalid_request_error"}},  # OpenAI
    {"object": "error", "message": "prompt is too long", "type": "BadRequestError", "code": 400},  # vLLM
    {"error": "prompt is too long"},  # Ollama
    "prompt is too long",  # plain text
])
def test_client_errors_surface_the_server_message_without_retrying(body):
    with Scripted([(400, body)]) as scripted, pytest.raises(RagevalError, match="HTTP 400: prompt is too long"):
        fast_client(scripted.url).generate(["q"], GREEDY)
    assert len(scripted.bodies) == 1


@pytest.mark.parametrize(("api", "body", "field"), [
    ("completions", {"choices": [{"txt": "Paris"}]}, "choices[0].text"),
    ("completions", {"choices": []}, "choices"),
    ("completions", {"choices": [{"text": 7}]}, "choices[0].text"),
    ("chat", {"choices": [{"text": "Paris"}]}, "choices[0].message"),
    ("chat", {"choices": [{"message": {"role": "assistant"}}]}, "choices[0].message.content"),
])
def test_malformed_answers_name_the_field(api, body, field):
    with (Scripted([(200, body)]) as scripted,
          pytest.raises(RagevalError, match=f"malformed answer.*field '{re.escape(field)}'")):
        fast_client(scripted.url, api=api).generate(["q"], GREEDY)


def test_a_non_json_answer_is_reported():
    with (Scripted([(200, "<html>proxy login</html>")]) as scripted,
          pytest.raises(RagevalError, match="is not JSON: '<html>proxy login")):
        fast_client(scripted.url).generate(["q"], GREEDY)


def test_concurrent_failure_is_raised_and_queued_prompts_are_not_sent():
    with (Scripted([(400, {"error": {"message": "bad prompt"}})]) as scripted,
          pytest.raises(RagevalError, match="bad prompt")):
        fast_client(scripted.url, concurrency=2).generate([f"q{i}" for i in range(20)], GREEDY)
    assert len(scripted.bodies) < 20


# ---------------------------------------------------------------- the request and our server's validation

def test_request_body_maps_the_decoding_settings():
    settings = DecodingSettings(max_new_tokens=5, temperature=0.7, top_p=0.9, seed=11,
                                stop=("\n", "Question:", " x", "a", "b", "c", "d"))
    body = build_request_body("m", "Q?", settings)
    assert body == {"model": "m", "prompt": "Q?", "max_tokens": 5, "temperature": 0.7, "top_p": 0.9, "seed": 11,
                    "n": 1, "stream": False, "stop": ["Question:", "a", "b", "c"]}
    assert build_request_body("m", "Q?", settings, "chat")["messages"] == [{"role": "user", "content": "Q?"}]
    assert "stop" not in build_request_body("m", "Q?", DecodingSettings())  # only "\n": client-side only
    assert server_stop_strings(("\t;", ";")) == [";"]


def test_base_url_and_model_id():
    assert normalize_base_url("http://localhost:8000") == "http://localhost:8000/v1"
    assert normalize_base_url("http://localhost:11434/v1/") == "http://localhost:11434/v1"
    with pytest.raises(RagevalError, match="localhost:8000"):
        normalize_base_url("localhost:8000")
    # The served model and the route, never the endpoint: replicas (or a moved server) share the cached answers.
    assert OpenAIGenerator("http://h:1/", "qwen").model_id == "openai-compatible:qwen"
    assert OpenAIGenerator("http://h:1,http://h:2/v1", "qwen").model_id == "openai-compatible:qwen"
    assert OpenAIGenerator("http://h:1", "qwen", api="chat").model_id == "openai-compatible:qwen#chat"
    assert OpenAIGenerator(["http://h:1", "http://h:2/", "http://h:1/v1"], "q").base_urls == ("http://h:1/v1",
                                                                                           "http://h:2/v1")
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIGenerator("http://h:1", "qwen", concurrency=0)


def test_factory_loads_the_openai_backend_with_the_key_from_the_environment(monkeypatch):
    from rageval.generation.factory import ModelSettings, expected_model_id, load_generator

    monkeypatch.setenv("RAGEVAL_TEST_KEY", "sk-local")
    with Scripted([(200, completion("Paris"))]) as scripted:
        settings = ModelSettings("qwen", "openai", base_url=scripted.url, api_key_env="RAGEVAL_TEST_KEY", batch_size=3)
        generator = load_generator(settings)
        assert generator.model_id == "openai-compatible:qwen" and generator.concurrency == 3
        assert expected_model_id(settings) == generator.model_id  # what --dry-run looks the cache up with
        assert generator.generate(["q"], GREEDY) == ["Paris"]
    assert scripted.authorizations == ["Bearer sk-local"] and scripted.bodies[0]["model"] == "qwen"
    monkeypatch.delenv("RAGEVAL_TEST_KEY")
    with pytest.raises(RagevalError, match="RAGEVAL_TEST_KEY"):
        load_generator(settings)


def test_an_unknown_model_is_a_404_naming_the_served_one(server):
    with pytest.raises(RagevalError, match="HTTP 404: The model 'gpt-4' does not exist; this server serves 'tiny'"):
        OpenAIGenerator(server.base_url, "gpt-4").generate(["q"], GREEDY)


def test_a_failing_generator_is_a_retried_500_with_its_message():
    def broken(prompt: str) -> str:
        raise RuntimeError("model weights missing")

    with serve(FakeGenerator(broken, model_id="broken")) as running:
        with pytest.raises(RagevalError, match=r"HTTP 500: the generator failed: RuntimeError: model weights missing "
                                               r"\(after 3 attempts\)"):
            OpenAIGenerator(running.base_url, "broken", max_retries=2, backoff_s=0.01).generate(["q"], GREEDY)
        assert running.request_counts["/v1/completions"] == 3


def test_models_route_lists_the_served_model(server):
    listing = httpx.get(f"{server.base_url}/models").json()
    assert [m["id"] for m in listing["data"]] == [MODEL]


def test_completion_response_is_openai_shaped(server, tiny_generator):
    response = httpx.post(f"{server.base_url}/completions",
                          json={"model": MODEL, "prompt": ["Hi", "Question: who wrote hamlet\nAnswer:"],
                                "max_tokens": 4, "temperature": 0})
    assert response.status_code == 200
    body = response.json()
    answers = tiny_generator.generate(["Hi", "Question: who wrote hamlet\nAnswer:"],
                                      DecodingSettings(max_new_tokens=4, stop=()))
    assert [c["text"] for c in body["choices"]] == answers and [c["index"] for c in body["choices"]] == [0, 1]
    assert {c["finish_reason"] for c in body["choices"]} <= {"stop", "length"}
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # The byte-level tokenizer has one token per byte: "Hi" is 2, the question line 34.
    assert usage["prompt_tokens"] == 2 + len(b"Question: who wrote hamlet\nAnswer:")


@pytest.mark.parametrize(("route", "body", "param"), [
    ("completions", {"model": MODEL}, "prompt"),
    ("completions", {"model": MODEL, "prompt": [1, 2]}, "prompt"),
    ("completions", {"prompt": "q"}, "model"),
    ("completions", {"model": MODEL, "prompt": "q", "max_tokens": "8"}, "max_tokens"),
    ("completions", {"model": MODEL, "prompt": "q", "max_tokens": 0}, "max_tokens"),
    ("completions", {"model": MODEL, "prompt": "q", "top_p": 1.5}, "top_p"),
    ("completions", {"model": MODEL, "prompt": "q", "temperature": True}, "temperature"),
    ("completions", {"model": MODEL, "prompt": "q", "stop": ["", "x"]}, "stop"),
    ("completions", {"model": MODEL, "prompt": "q", "stream": True}, "stream"),
    ("completions", {"model": MODEL, "prompt": "q", "n": 2}, "n"),
    ("chat/completions", {"model": MODEL, "messages": []}, "messages"),
    ("chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": None}]}, "messages[0].content"),
    ("chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}, "x"]}, "messages[1]"),
])
def test_invalid_requests_get_an_openai_shaped_400(server, route, body, param):
    response = httpx.post(f"{server.base_url}/{route}", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error" and error["message"]


def test_non_json_bodies_and_unknown_routes(server):
    response = httpx.post(f"{server.base_url}/completions", content=b"{not json")
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]
    assert httpx.post(f"{server.base_url}/embeddings", json={}).status_code == 404
    assert httpx.get(f"{server.base_url}/completions").status_code == 405
