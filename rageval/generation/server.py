"""A small OpenAI-compatible HTTP server over any rageval :class:`~rageval.generation.base.Generator`.

For tests and for trying :class:`~rageval.generation.openai_backend.OpenAIGenerator` without vLLM or Ollama::

    rageval serve-model --model gemma-3-270m --port 8000   # then --base-url http://127.0.0.1:8000/v1
    rageval serve-model --model fake --port 8001           # answers at once (benchmarks/)

``--model fake`` serves :class:`~rageval.generation.base.FakeGenerator`: no model, each answer is the first
capitalised words of the prompt's passage, so what is measured is the HTTP path alone.

Routes: ``GET /v1/models``, ``POST /v1/completions`` (``prompt``: a string or a list of strings, one choice
each) and ``POST /v1/chat/completions`` (``messages``). Bodies are validated; a bad one gets HTTP 400 with an
OpenAI-shaped ``{"error": {"message", "type", "param", "code"}}``, an unknown model 404, a generator failure 500.

Differences from OpenAI, by design of the :class:`Generator` interface:

- ``text``/``content`` is the generator's answer: stop strings applied (after leading whitespace, see
  :func:`~rageval.generation.base.apply_stop`) and surrounding whitespace stripped.
- ``finish_reason`` and ``usage`` are recounted from the answer with the generator's tokenizer (whitespace
  words when it has none): ``"length"`` when the answer has ``max_tokens`` tokens or more, else ``"stop"``.
- Chat messages are rendered with the tokenizer's chat template when the generator has a tokenizer with one
  (``add_generation_prompt=True``), else joined as ``"role: content"`` lines followed by ``"assistant:"``.
- Requests are served concurrently but generated one at a time (one lock around ``generate``): a torch model
  and its seeded RNG are not safe to share between threads. No streaming, ``n`` must be 1.
- Defaults when a field is absent: ``max_tokens`` 16, ``temperature`` 1, ``top_p`` 1, ``seed`` 0, no stop.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rageval.generation.base import DecodingSettings, FakeGenerator, Generator

_MAX_BODY_BYTES = 16 * 1024 * 1024
FAKE_MODEL = "fake"


class RequestError(Exception):
    """An error answer: HTTP ``status`` (400 unless said), an OpenAI error ``type`` and the offending ``param``."""

    def __init__(self, message: str, param: str | None = None, *, status: int = 400,
                 error_type: str = "invalid_request_error"):
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.error_type = error_type


def error_body(message: str, error_type: str = "invalid_request_error", param: str | None = None) -> dict:
    """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": error_type, "param": param, "code": None}}


def _number(body: dict, key: str, default: float, *, integer: bool = False) -> Any:
    value = body.get(key)
    if value is None:
        return default
    # bool is an int subclass in Python, but true/false is never a valid number here.
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise RequestError(f"'{key}' must be {'an integer' if integer else 'a number'}, got {json.dumps(value)}", key)
    return value


def _stop(body: dict) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise RequestError("'stop' must be a non-empty string or a list of non-empty strings", "stop")
    return tuple(stops)


def parse_decoding(body: dict) -> DecodingSettings:
    """The :class:`DecodingSettings` of a request body (defaults in the module docstring); RequestError if invalid."""
    if body.get("stream"):
        raise RequestError("streaming is not supported by this server; send 'stream': false", "stream")
    if _number(body, "n", 1, integer=True) != 1:
        raise RequestError("'n' must be 1: this server returns one choice per prompt", "n")
    # Chat clients may send the newer name 'max_completion_tokens'.
    max_tokens_key = "max_completion_tokens" if body.get("max_tokens") is None else "max_tokens"
    params = {"max_new_tokens": max_tokens_key, "temperature": "temperature", "top_p": "top_p", "seed": "seed"}
    values = {
        "max_new_tokens": _number(body, max_tokens_key, 16, integer=True),
        "temperature": _number(body, "temperature", 1.0),
        "top_p": _number(body, "top_p", 1.0),
        "seed": _number(body, "seed", 0, integer=True),
    }
    try:
        return DecodingSettings(**values, stop=_stop(body))
    except ValueError as exc:  # DecodingSettings' own range checks, e.g. "DecodingSettings.top_p: expected ..."
        param = next((params[name] for name in params if f"DecodingSettings.{name}:" in str(exc)), None)
        reason = str(exc).split(": ", 1)[-1]
        raise RequestError(f"'{param}': {reason}" if param else str(exc), param) from None


def parse_prompts(body: dict) -> list[str]:
    """``prompt`` of a completions request as a list: a string gives one prompt, a list of strings several."""
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        return list(prompt)
    raise RequestError("'prompt' is required: a string or a non-empty list of strings "
                     "(token-id prompts are not supported)", "prompt")


def parse_messages(body: dict) -> list[dict[str, str]]:
    """``messages`` of a chat request: a non-empty list of ``{"role": str, "content": str}``."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' is required: a non-empty list of {'role', 'content'} objects", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RequestError(f"'messages[{i}]' must be an object", f"messages[{i}]")
        for key in ("role", "content"):
            if not isinstance(message.get(key), str):
                raise RequestError(f"'messages[{i}].{key}' must be a string", f"messages[{i}].{key}")
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def render_chat(messages: Sequence[dict[str, str]], tokenizer=None) -> str:
    """One prompt for ``messages``: the tokenizer's chat template if it has one, else ``role: content`` lines.

    The plain form ends with an ``"assistant:"`` line so that the model continues as the assistant. A template's
    leading BOS text is dropped when the tokenizer adds BOS itself on encoding, so it is not doubled.
    """
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        bos = getattr(tokenizer, "bos_token", None)
        if bos and text.startswith(bos) and tokenizer("", add_special_tokens=True)["input_ids"]:
            text = text[len(bos):]
        return text
    return "\n".join([f"{m['role']}: {m['content']}" for m in messages] + ["assistant:"])


def count_tokens(text: str, tokenizer=None) -> int:
    """Tokens of ``text`` without special tokens, or its whitespace-separated words when there is no tokenizer."""
    if tokenizer is None:
        return len(text.split())
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


class _App:
    """The routes over one generator; shared by all handler threads."""

    def __init__(self, generator: Generator, model_name: str):
        self.generator = generator
        self.model_name = model_name
        self.tokenizer = getattr(generator, "tokenizer", None)
        self._generate_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self.request_counts: Counter[str] = Counter()
        self.created = int(time.time())

    def count(self, route: str) -> None:
        with self._count_lock:
            self.request_counts[route] += 1

    def models(self) -> dict:
        return {"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": self.created, "owned_by": "rageval"}]}

    def complete(self, body: Any, chat: bool) -> dict:
        if not isinstance(body, dict):
            raise RequestError("the request body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str):
            raise RequestError("'model' is required: a string", "model")
        if model != self.model_name:
            raise RequestError(f"The model {model!r} does not exist; this server serves {self.model_name!r}",
                               "model", status=404, error_type="model_not_found")
        messages = parse_messages(body) if chat else []
        prompts = [] if chat else parse_prompts(body)
        settings = parse_decoding(body)
        # The tokenizer is used under the lock too: a fast tokenizer raises "Already borrowed" when one thread
        # encodes while another changes its padding settings (as generate does).
        with self._generate_lock:
            if chat:
                prompts = [render_chat(messages, self.tokenizer)]
            try:
                answers = self.generator.generate(prompts, settings)
            except Exception as exc:
                raise RequestError(f"the generator failed: {type(exc).__name__}: {exc}", status=500,
                                   error_type="server_error") from exc
            return self._response(prompts, answers, settings, chat)

    def _response(self, prompts: list[str], answers: list[str], settings: DecodingSettings, chat: bool) -> dict:
        choices, completion_tokens = [], 0
        for index, answer in enumerate(answers):
            tokens = count_tokens(answer, self.tokenizer)
            completion_tokens += tokens
            finish = "length" if tokens >= settings.max_new_tokens else "stop"
            if chat:
                choices.append({"index": index, "message": {"role": "assistant", "content": answer},
                                "finish_reason": finish})
            else:
                choices.append({"index": index, "text": answer, "logprobs": None, "finish_reason": finish})
        prompt_tokens = sum(count_tokens(p, self.tokenizer) for p in prompts)
        created = int(time.time())
        return {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-rageval-{time.time_ns():x}",
            "object": "chat.completion" if chat else "text_completion",
            "created": created,
            "model": self.model_name,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so a pooled client reuses its connections
    # Headers and body leave in one write, without waiting: unbuffered, they went as two small writes, and Nagle's
    # algorithm held the second until the client's delayed ACK, 40 ms later (measured: 20 answers/s at
    # concurrency 1; benchmarks/bench_http_backend.py). handle_one_request flushes after each request.
    wbufsize = -1
    disable_nagle_algorithm = True
    server: _Server

    def do_GET(self) -> None:
        route = self.path.split("?", 1)[0].rstrip("/")
        self.server.app.count(route)
        if route == "/v1/models":
            self._send(200, self.server.app.models())
        elif route in ("/v1/completions", "/v1/chat/completions"):
            self._send(405, error_body(f"{route} takes POST"))
        else:
            self._send(404, error_body(f"no route {route}; try /v1/models, /v1/completions, /v1/chat/completions"))

    def do_POST(self) -> None:
        route = self.path.split("?", 1)[0].rstrip("/")
        app = self.server.app
        app.count(route)
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or int(length) > _MAX_BODY_BYTES:
            self.close_connection = True  # the body cannot be skipped, so the connection is unusable after it
            self._send(411 if length is None else 400,
                       error_body(f"a Content-Length of at most {_MAX_BODY_BYTES} bytes is required"))
            return
        raw = self.rfile.read(int(length))
        if route not in ("/v1/completions", "/v1/chat/completions"):
            self._send(404, error_body(f"no route {route}; try /v1/completions or /v1/chat/completions"))
            return
        try:
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise RequestError(f"the request body is not valid JSON: {exc}") from None
            self._send(200, app.complete(body, chat=route == "/v1/chat/completions"))
        except RequestError as exc:
            self._send(exc.status, error_body(exc.message, exc.error_type, exc.param))

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:
        if self.server.verbose:
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # idle keep-alive connections must not keep the process alive
    request_queue_size = 256  # socketserver's 5 reset connections when 32 clients connected at once
    server_address: tuple[str, int]  # an IPv4 socket's (host, port) once bound (typeshed allows any address form)

    def __init__(self, address: tuple[str, int], app: _App, verbose: bool):
        self.app = app
        self.verbose = verbose
        super().__init__(address, _Handler)


class RunningServer:
    """A server started by :func:`serve`, answering in a background thread until :meth:`close`.

    ``base_url`` (``http://host:port/v1``) is what :class:`OpenAIGenerator` takes; ``request_counts`` counts
    requests per route (``"/v1/completions"``, ...), so tests can see what reached the server.
    """

    def __init__(self, httpd: _Server, thread: threading.Thread):
        self._httpd = httpd
        self._thread = thread

    @property
    def host(self) -> str:
        return self._httpd.server_address[0]

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model_name(self) -> str:
        return self._httpd.app.model_name

    @property
    def request_counts(self) -> Counter[str]:
        return self._httpd.app.request_counts

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def make_server(generator: Generator, host: str = "127.0.0.1", port: int = 0, *, model_name: str | None = None,
                verbose: bool = False) -> _Server:
    """A bound, not yet running server for ``generator`` (``serve_forever()`` runs it); see :func:`serve`."""
    return _Server((host, port), _App(generator, model_name or generator.model_id), verbose)


def serve(generator: Generator, host: str = "127.0.0.1", port: int = 0, *, model_name: str | None = None,
          verbose: bool = False) -> RunningServer:
    """Serve ``generator`` on ``host:port`` (0 = a free port) in a daemon thread and return at once.

    Clients must name ``model_name`` (default: ``generator.model_id``) in their requests, as with vLLM.
    ``verbose`` logs each request to stderr.
    """
    httpd = make_server(generator, host, port, model_name=model_name, verbose=verbose)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.1,),  # 0.1 s poll: a quick close()
                              name=f"rageval-server-{httpd.server_address[1]}", daemon=True)
    thread.start()
    return RunningServer(httpd, thread)


def serve_model_forever(model: str, *, host: str = "127.0.0.1", port: int = 8000, batch_size: int = 8,
                        served_model_name: str | None = None, verbose: bool = True, announce=print) -> int:
    """``rageval serve-model``: load ``model`` (:data:`FAKE_MODEL` serves :class:`FakeGenerator`, no model) and
    serve it on ``host:port`` until interrupted; ``announce`` gets the one line saying where."""
    from rageval.generation.factory import ModelSettings, load_generator

    generator: Generator = FakeGenerator() if model == FAKE_MODEL else \
        load_generator(ModelSettings(model=model, batch_size=batch_size))
    httpd = make_server(generator, host, port, model_name=served_model_name or model, verbose=verbose)
    bound_host, bound_port = httpd.server_address[:2]
    announce(f"serving {httpd.app.model_name!r} ({generator.model_id}) at http://{bound_host}:{bound_port}/v1 "
             "(Ctrl-C stops)")
    with httpd, contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever()
    return 0
