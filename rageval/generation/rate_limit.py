"""Client-side rate limits for a served model: requests per minute and tokens per minute, each a token bucket
shared by every worker thread of one :class:`~rageval.generation.openai_backend.OpenAIGenerator`.

A bucket holds at most ``burst_s`` seconds of its rate (at least one unit) and refills continuously. A caller
*reserves* what it needs at once, even below zero, and then waits until the bucket has refilled that debt: callers
are served in the order they reserved, a request larger than the bucket still passes (after its wait), and in any
window of T seconds at most ``capacity + rate * T`` units are let through. Tokens are reserved from an estimate
(:func:`estimate_tokens`) and settled with the count the server reports (``usage.total_tokens``) when it does.
One process only: two processes against the same fleet each need their own share of the limit.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text; the server's usage corrects the estimate


def estimate_tokens(prompt: str, max_new_tokens: int) -> int:
    """Tokens a request may cost before the server says: the prompt at 4 characters a token, plus the whole
    answer budget."""
    return math.ceil(len(prompt) / CHARS_PER_TOKEN) + max_new_tokens


class TokenBucket:
    """``per_minute`` units a minute, at most ``burst_s`` seconds' worth at once (see the module docstring).
    ``clock`` is injectable so a test can drive it."""

    def __init__(self, per_minute: float, *, burst_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        if not per_minute > 0:
            raise ValueError(f"rate limit: expected a positive number per minute, got {per_minute}")
        self.rate = per_minute / 60.0
        self.capacity = max(self.rate * burst_s, 1.0)
        self._clock = clock
        self._level = self.capacity
        self._updated = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._updated) * self.rate)
        self._updated = now

    def reserve(self, amount: float) -> float:
        """Take ``amount`` units now; the seconds to wait before using them (0 when the bucket had them)."""
        with self._lock:
            self._refill()
            self._level -= amount
            return max(0.0, -self._level / self.rate)

    def settle(self, amount: float) -> None:
        """Take ``amount`` more units (negative: give them back), once the true cost of a reservation is known."""
        with self._lock:
            self._refill()
            self._level = min(self.capacity, self._level - amount)


class RateLimiter:
    """The request and token buckets of one generator (either may be absent: no limit). ``acquire`` blocks the
    calling thread until it may send; ``settle`` corrects the token reservation with the server's count."""

    def __init__(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.requests = TokenBucket(requests_per_minute, clock=clock) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute, clock=clock) if tokens_per_minute else None
        self._sleep = sleep

    def acquire(self, estimated_tokens: int) -> None:
        wait = 0.0
        if self.requests is not None:
            wait = self.requests.reserve(1)
        if self.tokens is not None:
            wait = max(wait, self.tokens.reserve(estimated_tokens))
        if wait > 0:
            self._sleep(wait)

    def settle(self, estimated_tokens: int, used_tokens: int | None) -> None:
        """``used_tokens``: the server's count (0 for a request that failed); None keeps the estimate (a server
        that reports no usage)."""
        if self.tokens is not None and used_tokens is not None:
            self.tokens.settle(used_tokens - estimated_tokens)
