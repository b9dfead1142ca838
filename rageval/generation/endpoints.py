"""Several OpenAI-compatible servers serving one model (vLLM replicas): which one takes the next request.

``round-robin`` takes them in turn; ``least-in-flight`` takes the one with the fewest requests waiting for an answer
(ties in turn), so a slower replica gets less. An endpoint whose request failed (no connection, a timeout, HTTP
5xx) is *down* for ``down_s`` seconds, one that answered 429 for its ``Retry-After`` (else ``down_s``): it gets no
request while another is up, and the request is retried on another one. When every endpoint is down the one back
soonest is used, so a fleet that is briefly unreachable as a whole is still retried with back-off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

BALANCES = ("least-in-flight", "round-robin")


@dataclass
class Endpoint:
    """One server: its base URL (``http://host:port/v1``) and what this client did with it."""

    base_url: str
    in_flight: int = 0
    sent: int = 0
    failures: int = 0
    down_until: float = 0.0


class EndpointPool:
    """The endpoints of one generator, shared by its worker threads (see the module docstring)."""

    def __init__(self, base_urls: Sequence[str], balance: str = "least-in-flight", *, down_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic):
        if not base_urls:
            raise ValueError("EndpointPool: expected at least one base URL")
        if balance not in BALANCES:
            raise ValueError(f"balance {balance!r}: expected one of {', '.join(BALANCES)}")
        self.endpoints = [Endpoint(url) for url in base_urls]
        self.balance = balance
        self.down_s = down_s
        self._clock = clock
        self._next = 0  # where the round (and the tie-break of least-in-flight) starts
        self._lock = threading.Lock()

    def _in_turn(self) -> list[Endpoint]:
        count = len(self.endpoints)
        return [self.endpoints[(self._next + i) % count] for i in range(count)]

    def _candidates(self, avoid: Collection[Endpoint]) -> list[Endpoint]:
        now = self._clock()
        ordered = self._in_turn()
        up = [e for e in ordered if e.down_until <= now]
        return [e for e in up if e not in avoid] or up or [min(ordered, key=lambda e: e.down_until)]

    def has_fresh(self, avoid: Collection[Endpoint]) -> bool:
        """Whether an endpoint is up that is not in ``avoid`` (those a request already failed on)."""
        with self._lock:
            now = self._clock()
            return any(e.down_until <= now and e not in avoid for e in self.endpoints)

    def acquire(self, avoid: Collection[Endpoint] = ()) -> Endpoint:
        """The endpoint for the next request, counted as in flight until :meth:`release`; ``avoid``: endpoints
        this request failed on (taken only when no other is up)."""
        with self._lock:
            candidates = self._candidates(avoid)
            chosen = min(candidates, key=lambda e: e.in_flight) if self.balance == "least-in-flight" \
                else candidates[0]
            self._next = (self.endpoints.index(chosen) + 1) % len(self.endpoints)
            chosen.in_flight += 1
            chosen.sent += 1
            return chosen

    def release(self, endpoint: Endpoint, *, failed: bool = False, down_for_s: float | None = None) -> None:
        """The request on ``endpoint`` is over; a failed one marks it down for ``down_for_s`` seconds (default
        ``down_s``)."""
        with self._lock:
            endpoint.in_flight -= 1
            if failed:
                endpoint.failures += 1
                endpoint.down_until = self._clock() + (self.down_s if down_for_s is None else down_for_s)

    def stats(self) -> list[dict]:
        """Per endpoint: base URL, requests sent, failures and whether it is down now."""
        with self._lock:
            now = self._clock()
            return [{"base_url": e.base_url, "sent": e.sent, "failures": e.failures, "down": e.down_until > now}
                    for e in self.endpoints]
