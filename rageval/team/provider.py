"""The OpenID Connect provider's metadata (its discovery document and its signing keys), fetched once when a team's
dashboard starts, with retries and exponential backoff, and kept for every sign-in after.

Why: Streamlit builds a new OAuth client for each sign-in, sign-in callback and sign-out, and each asks the
provider for its metadata (and the callback for its keys) again. Fifty people signing in at once were fifty or more
requests to the provider within seconds, and seven of them timed out ("Authentication error"; issue 39 item 5).
``ui.serve`` fetches both here when the server starts and hands them to every client; a key the provider has
rotated since is fetched by Authlib itself (it asks again when a token's key is unknown).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from rageval.errors import RagevalError

#: Waits between tries: 0.5, 1, 2, 4, 8 s (six tries, about 15 s in all), then the provider is given up on.
ATTEMPTS = 6
FIRST_WAIT_S = 0.5
TIMEOUT_S = 10.0
#: HTTP answers worth trying again (the provider busy or restarting); any other error is the configuration's.
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class ProviderError(RagevalError):
    """The provider's metadata could not be fetched (one line naming the URL and the last error)."""


def fetch_json(url: str, *, attempts: int = ATTEMPTS, first_wait_s: float = FIRST_WAIT_S, timeout_s: float = TIMEOUT_S,
               sleep: Callable[[float], None] = time.sleep) -> tuple[dict[str, Any], int]:
    """(the JSON object at ``url``, the tries it took): a refused connection, a timeout or a :data:`RETRY_STATUS`
    answer is tried again after ``first_wait_s``, then twice as long each time, ``attempts`` tries in all; any other
    HTTP error, or an answer that is not a JSON object, is a :class:`ProviderError` at once."""
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            if error.code not in RETRY_STATUS:
                raise ProviderError(f"{url}: the provider answered HTTP {error.code} ({error.reason})") from None
            last = f"HTTP {error.code}"
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            last = str(getattr(error, "reason", error))
        else:
            try:
                value = json.loads(body)
            except ValueError:
                raise ProviderError(f"{url}: not a JSON document ({body[:80]!r})") from None
            if not isinstance(value, dict):
                raise ProviderError(f"{url}: expected a JSON object, got a {type(value).__name__}")
            return value, attempt
        if attempt < attempts:
            sleep(first_wait_s * 2 ** (attempt - 1))
    raise ProviderError(f"{url}: no answer after {attempts} tries ({last})")


def fetch_provider_metadata(url: str, **retry: Any) -> tuple[dict[str, Any], int]:
    """(the discovery document at ``url`` with its signing keys under ``"jwks"``, as Authlib keeps them; the tries
    the two requests took in all), each request with :func:`fetch_json`'s retries."""
    metadata, tries = fetch_json(url, **retry)
    jwks_uri = metadata.get("jwks_uri")
    if isinstance(jwks_uri, str) and jwks_uri:
        metadata["jwks"], more = fetch_json(jwks_uri, **retry)
        tries += more
    return metadata, tries
