"""A :class:`~rageval.generation.base.Generator` over any OpenAI-compatible HTTP server (vLLM, Ollama, ...), or a
fleet of them serving one model.

One HTTP request per prompt, to ``/v1/completions`` (the prompt as is, for base models and our few-shot QA
prompt) or ``/v1/chat/completions`` (the prompt as one user message, rendered by the server's chat template),
sent concurrently by a thread pool and returned in prompt order. Only ``httpx`` is used, no OpenAI SDK. Several
base URLs share the requests (:mod:`~rageval.generation.endpoints`); a rate limit in requests and tokens per
minute holds for all threads together (:mod:`~rageval.generation.rate_limit`).

Route conventions: vLLM (``vllm serve <model>``, base URL ``http://localhost:8000/v1``) and Ollama
(``ollama serve``, base URL ``http://localhost:11434/v1``) both serve the OpenAI routes under ``/v1``; a base
URL given without the ``/v1`` suffix gets it appended. ``rageval serve-model`` serves any
rageval Generator the same way, for trying this backend without either.

Decoding: ``max_new_tokens`` -> ``max_tokens``, ``temperature`` (0 = greedy on vLLM and Ollama), ``top_p``,
``seed``, ``stop``. Stop strings are applied again client-side with :func:`apply_stop`, which ignores leading
whitespace; a server cuts at the first match anywhere, so stop strings that *start* with whitespace (the
default ``"\\n"``) are applied client-side only, else an answer opening with a newline would come back empty
(the server then generates up to ``max_tokens``, a few extra tokens). At most 4 stop strings go to the server
(OpenAI's limit); all of them are applied client-side.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

from rageval.errors import RagevalError
from rageval.generation.base import DecodingSettings, apply_stop
from rageval.generation.endpoints import Endpoint, EndpointPool
from rageval.generation.rate_limit import RateLimiter, estimate_tokens

APIS = ("completions", "chat")
_ROUTES = {"completions": "completions", "chat": "chat/completions"}
_MAX_SERVER_STOPS = 4  # OpenAI rejects more; vLLM and Ollama accept them, but the client-side cut is exact anyway
_MAX_RETRY_AFTER_S = 60.0
_UNREACHABLE_HINT = ("is vLLM/Ollama (or `rageval serve-model`) running there, "
                     "and is the base URL right?")


class MalformedResponse(RagevalError):
    """A 200 answer whose JSON lacks a field we need; ``field`` is its path, e.g. ``choices[0].text``."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"field {field!r}: {message}")


def served_model_id(model: str, api: str = "completions") -> str:
    """``openai-compatible:<model>``, plus ``#chat`` for the chat route (its chat template changes the answers, so
    they are cached apart). The endpoints are not part of it: replicas serve the same model."""
    return f"openai-compatible:{model}{'#chat' if api == 'chat' else ''}"


def split_base_urls(base_urls: str | Sequence[str]) -> tuple[str, ...]:
    """Every base URL of ``base_urls`` (one, several separated by commas, or a list of such), normalised
    (:func:`normalize_base_url`), duplicates dropped, in order."""
    parts = [base_urls] if isinstance(base_urls, str) else list(base_urls)
    urls = [normalize_base_url(url) for part in parts for url in part.split(",") if url.strip()]
    if not urls:
        raise RagevalError("OpenAI-compatible base URL: none given; expected http://host:port[/v1], several "
                           "separated by commas")
    return tuple(dict.fromkeys(urls))


def normalize_base_url(base_url: str) -> str:
    """``base_url`` without a trailing slash, ending in ``/v1`` (appended when missing).

    ``http://localhost:8000``, ``http://localhost:8000/`` and ``http://localhost:8000/v1`` all give
    ``http://localhost:8000/v1``.
    """
    url = base_url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise RagevalError(f"OpenAI-compatible base URL {base_url!r}: expected http://host:port[/v1] "
                           "(vLLM: http://localhost:8000/v1, Ollama: http://localhost:11434/v1)")
    return url if url.endswith("/v1") else url + "/v1"


def server_stop_strings(stop: Sequence[str]) -> list[str]:
    """The stop strings safe to send to a server: those not starting with whitespace, at most 4.

    A server cuts at the first occurrence anywhere, :func:`apply_stop` only after leading whitespace; for a
    stop string starting with a non-space character the two cuts coincide, so the server may stop early.
    """
    return [s for s in stop if not s[0].isspace()][:_MAX_SERVER_STOPS]


def build_request_body(model: str, prompt: str, settings: DecodingSettings, api: str = "completions") -> dict:
    """The JSON body of one request: ``prompt`` (completions) or one user message (chat), plus the decoding."""
    body: dict[str, Any] = {"model": model}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    body.update(max_tokens=settings.max_new_tokens, temperature=settings.temperature, top_p=settings.top_p,
                seed=settings.seed, n=1, stream=False)
    stops = server_stop_strings(settings.stop)
    if stops:
        body["stop"] = stops
    return body


def extract_text(body: Any, api: str = "completions") -> str:
    """The generated text of a response body: ``choices[0].text`` or ``choices[0].message.content``.

    Raises :class:`MalformedResponse` naming the first missing or mistyped field.
    """
    if not isinstance(body, dict):
        raise MalformedResponse("(body)", f"expected a JSON object, got {type(body).__name__}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse("choices", "missing or not a non-empty list")
    first = choices[0]
    if not isinstance(first, dict):
        raise MalformedResponse("choices[0]", "expected an object")
    if api == "chat":
        message = first.get("message")
        if not isinstance(message, dict):
            raise MalformedResponse("choices[0].message", "missing or not an object")
        text, field = message.get("content"), "choices[0].message.content"
    else:
        text, field = first.get("text"), "choices[0].text"
    if not isinstance(text, str):
        raise MalformedResponse(field, "missing" if text is None else f"expected a string, got {type(text).__name__}")
    return text


def server_error_message(response) -> str:
    """The error text of a non-2xx response, from the shapes servers use, else the start of the raw body.

    OpenAI and our server: ``{"error": {"message": ...}}``; vLLM: ``{"message": ...}``; Ollama:
    ``{"error": "..."}``; FastAPI: ``{"detail": ...}``.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for value in (error, body.get("message"), body.get("detail")):
            if value:
                return str(value)
    text = response.text.strip()
    return text[:300] if text else "(empty body)"


def _retry_after_s(response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(float(value), _MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None  # an HTTP date; the exponential back-off applies


def usage_tokens(body: Any) -> int | None:
    """``usage.total_tokens`` of a response body (what the request cost the server), or None when absent."""
    usage = body.get("usage") if isinstance(body, dict) else None
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


class OpenAIGenerator:
    """Answers through one or several OpenAI-compatible servers, one request per prompt, ``concurrency`` at a time.

    ``base_url``: one URL, several separated by commas, or a list: the replicas of one served model, chosen per
    request by ``balance`` (:mod:`~rageval.generation.endpoints`: ``least-in-flight`` or ``round-robin``).
    Connection errors, timeouts, HTTP 429 and 5xx are retried ``max_retries`` times: on another endpoint at once
    when one is up (the failed one is down for ``endpoint_down_s``), else after ``backoff_s * 2**(attempt - 1)``
    seconds (or the server's numeric ``Retry-After``, at most 60 s); any other 4xx fails at once with the server's
    message. ``timeout_s`` bounds each request. ``api_key`` is sent as ``Authorization: Bearer``.
    ``max_requests_per_minute`` / ``max_tokens_per_minute`` limit what all worker threads send together
    (:mod:`~rageval.generation.rate_limit`; a retry is a request too). The HTTP client and the worker threads are
    kept between calls (:meth:`close` ends them).
    """

    def __init__(
        self,
        base_url: str | Sequence[str],
        model: str,
        api: str = "completions",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        concurrency: int = 4,
        api_key: str | None = None,
        *,
        balance: str = "least-in-flight",
        endpoint_down_s: float = 30.0,
        max_requests_per_minute: float | None = None,
        max_tokens_per_minute: float | None = None,
    ):
        if api not in APIS:
            raise ValueError(f"OpenAIGenerator.api: expected one of {APIS}, got {api!r}")
        if concurrency < 1:
            raise ValueError(f"OpenAIGenerator.concurrency: expected >= 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"OpenAIGenerator.max_retries: expected >= 0, got {max_retries}")
        if timeout_s <= 0 or backoff_s < 0:
            raise ValueError(f"OpenAIGenerator: expected timeout_s > 0 and backoff_s >= 0, "
                             f"got {timeout_s} and {backoff_s}")
        self.base_urls = split_base_urls(base_url)
        self.base_url = self.base_urls[0]
        self.model = model
        self.api = api
        self.url = f"{self.base_url}/{_ROUTES[api]}"
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.concurrency = concurrency
        self.endpoints = EndpointPool(self.base_urls, balance, down_s=endpoint_down_s)
        self.rate_limiter = RateLimiter(max_requests_per_minute, max_tokens_per_minute)
        self._api_key = api_key
        self._client: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._start_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """:func:`served_model_id`: the served model and the route, never the endpoints (the LLM-call cache keys
        on it, so a run resumed on other replicas, or more of them, reuses every answer)."""
        return served_model_id(self.model, self.api)

    def endpoint_stats(self) -> list[dict]:
        """Per endpoint: base URL, requests sent, failures, whether it is down now."""
        return self.endpoints.stats()

    def _started(self):
        """The HTTP client and the worker threads, made on first use and kept (connections stay open)."""
        import httpx

        with self._start_lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                # At most `concurrency` requests are in flight (the threads); each endpoint may keep that many idle
                # connections, so moving between endpoints never closes one to open another.
                limits = httpx.Limits(max_connections=None,
                                      max_keepalive_connections=self.concurrency * len(self.base_urls))
                self._client = httpx.Client(timeout=self.timeout_s, headers=headers, limits=limits)
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="rageval-openai")
            return self._client, self._pool

    def close(self) -> None:
        """Close the connections and end the worker threads (a later call starts them again)."""
        with self._start_lock:
            if self._client is not None:
                self._client.close()
                assert self._pool is not None
                self._pool.shutdown(wait=True, cancel_futures=True)
            self._client = self._pool = None

    def __enter__(self) -> OpenAIGenerator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def generate(self, prompts: Sequence[str], settings: DecodingSettings) -> list[str]:
        if not prompts:
            return []
        client, pool = self._started()
        if self.concurrency == 1 or len(prompts) == 1:
            texts = [self._complete(client, prompt, settings) for prompt in prompts]
        else:
            texts = self._complete_concurrently(client, pool, prompts, settings)
        return [apply_stop(text, settings.stop) for text in texts]

    def _complete_concurrently(self, client, pool: ThreadPoolExecutor, prompts: Sequence[str],
                               settings: DecodingSettings) -> list[str]:
        futures = [pool.submit(self._complete, client, prompt, settings) for prompt in prompts]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        except BaseException:  # a cancelled job (SIGTERM) or Ctrl-C: send nothing more
            for future in futures:
                future.cancel()
            raise
        failed = [error for f in futures if f in done and (error := f.exception()) is not None]
        if failed:
            # Stop queued prompts on the first failure; requests already in flight finish (bounded by the timeout).
            for future in futures:
                future.cancel()
            wait(futures)
            raise failed[0]
        return [f.result() for f in futures]

    def _complete(self, client, prompt: str, settings: DecodingSettings) -> str:
        import httpx

        body = build_request_body(self.model, prompt, settings, self.api)
        estimated = estimate_tokens(prompt, settings.max_new_tokens)
        attempts = self.max_retries + 1
        last_failure, reachable, delay = "", False, 0.0
        failed_on: list[Endpoint] = []
        for attempt in range(attempts):
            if attempt and not self.endpoints.has_fresh(failed_on):
                time.sleep(delay)  # no other endpoint to try at once: back off
            delay = self.backoff_s * 2 ** attempt  # the wait before the next attempt, should this one fail
            self.rate_limiter.acquire(estimated)
            endpoint = self.endpoints.acquire(failed_on)
            url = f"{endpoint.base_url}/{_ROUTES[self.api]}"
            where = f"{url}: " if len(self.base_urls) > 1 else ""  # which server failed, when there are several
            failed, down_for_s = False, None
            used: int | None = 0  # what the server counts this request at: nothing unless it answers
            try:
                try:
                    response = client.post(url, json=body)
                except httpx.TimeoutException:
                    failed, last_failure = True, f"{where}no answer within timeout_s={self.timeout_s:g}"
                    continue
                except httpx.TransportError as exc:
                    failed, last_failure = True, f"{where}{type(exc).__name__}: {exc}"
                    continue
                reachable = True
                status = response.status_code
                if status == 429 or status >= 500:
                    failed, last_failure = True, f"{where}HTTP {status}: {server_error_message(response)}"
                    retry_after = _retry_after_s(response)
                    delay = max(delay, retry_after or 0.0)
                    down_for_s = retry_after if status == 429 else None
                    continue
                if status >= 400:
                    raise RagevalError(f"{url} rejected the request for model {self.model!r} with HTTP {status}: "
                                       f"{server_error_message(response)}")
                text, used = self._parse(response, url)
                return text
            finally:
                self.endpoints.release(endpoint, failed=failed, down_for_s=down_for_s)
                self.rate_limiter.settle(estimated, used)
                if failed:
                    failed_on.append(endpoint)
        servers = self.url if len(self.base_urls) == 1 else \
            f"any of the {len(self.base_urls)} servers ({', '.join(self.base_urls)})"
        if reachable:
            raise RagevalError(f"{servers} kept failing for model {self.model!r}: {last_failure} "
                               f"(after {attempts} attempts)")
        raise RagevalError(f"cannot reach the OpenAI-compatible server at {servers} ({last_failure}; "
                           f"{attempts} attempts): {_UNREACHABLE_HINT}")

    def _parse(self, response, url: str) -> tuple[str, int | None]:
        """The answer's text and its cost in tokens (None when the server does not say)."""
        try:
            payload = response.json()
        except ValueError:
            start = response.text[:200]
            raise RagevalError(f"{url}: the answer (HTTP {response.status_code}) is not JSON: {start!r}") from None
        try:
            return extract_text(payload, self.api), usage_tokens(payload)
        except MalformedResponse as exc:
            raise RagevalError(f"{url}: malformed answer (HTTP {response.status_code}), {exc}") from None
