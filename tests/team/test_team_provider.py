"""The provider's metadata fetched once, with retries and backoff (rageval.team.provider, ui.serve; issue 39 item 5):
against a real HTTP server on loopback that counts what it is asked, fails on purpose, then answers."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rageval.team.provider import ProviderError, fetch_json, fetch_provider_metadata


class Provider:
    """A discovery document and a key set on loopback; ``fail_first`` answers 503 to that many requests first."""

    def __init__(self, fail_first: int = 0, status: int = 503):
        self.hits: list[str] = []
        self.fail_first, self.status = fail_first, status
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                provider.hits.append(self.path)
                if len(provider.hits) <= provider.fail_first:
                    self.send_error(provider.status)
                    return
                base = f"http://127.0.0.1:{self.server.server_port}"
                body = ({"issuer": base, "authorization_endpoint": f"{base}/auth", "token_endpoint": f"{base}/token",
                         "jwks_uri": f"{base}/jwks"} if self.path.startswith("/.well-known") else
                        {"keys": [{"kty": "oct", "kid": "k1", "k": "c2VjcmV0"}]})
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/.well-known/openid-configuration"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider(request):
    made = Provider(*getattr(request, "param", ()))
    yield made
    made.close()


@pytest.mark.parametrize("provider", [(2,)], indirect=True)
def test_a_busy_provider_is_tried_again_with_backoff(provider):
    waits: list[float] = []
    metadata, tries = fetch_json(provider.url, sleep=waits.append)
    assert tries == 3 and waits == [0.5, 1.0] and metadata["jwks_uri"].endswith("/jwks")


@pytest.mark.parametrize("provider", [(99, 404)], indirect=True)
def test_a_wrong_url_fails_at_once(provider):
    with pytest.raises(ProviderError, match=r"answered HTTP 404"):
        fetch_json(provider.url, sleep=lambda s: pytest.fail("no retry for a 404"))
    assert len(provider.hits) == 1


def test_a_provider_that_never_answers_is_given_up_after_the_tries():
    waits: list[float] = []
    with pytest.raises(ProviderError, match=r"no answer after 4 tries"):
        fetch_json("http://127.0.0.1:9/.well-known/openid-configuration", attempts=4, sleep=waits.append)
    assert waits == [0.5, 1.0, 2.0]


def test_every_sign_in_client_takes_the_metadata_fetched_at_start(provider, monkeypatch):
    """Streamlit makes a new Authlib client per sign-in; each asked the provider for its metadata and keys. With the
    cache, five sign-ins' clients cost the provider nothing beyond the two requests made at start."""
    from authlib.integrations import starlette_client
    from authlib.integrations.base_client.async_app import AsyncOAuth2Mixin
    from streamlit.web.server.starlette.starlette_auth_routes import _create_streamlit_oauth_class

    import ui.serve

    monkeypatch.setattr(AsyncOAuth2Mixin, "load_server_metadata", AsyncOAuth2Mixin.load_server_metadata)  # restored
    monkeypatch.setattr(ui.serve, "_METADATA", {})
    assert ui.serve.cache_provider_metadata(provider.url, announce=lambda line: None)
    assert provider.hits == ["/.well-known/openid-configuration", "/jwks"]

    async def sign_ins():
        for number in range(5):
            oauth = _create_streamlit_oauth_class(starlette_client)()
            oauth.register(f"p{number}", client_id="c", client_secret="s", server_metadata_url=provider.url)
            client = oauth.create_client(f"p{number}")
            metadata = await client.load_server_metadata()
            keys = await client.fetch_jwk_set()
            assert metadata["token_endpoint"].endswith("/token") and keys["keys"][0]["kid"] == "k1"

    asyncio.run(sign_ins())
    assert len(provider.hits) == 2


def test_metadata_and_keys_in_one_call(provider):
    metadata, tries = fetch_provider_metadata(provider.url)
    assert tries == 2 and metadata["jwks"]["keys"][0]["kid"] == "k1"
