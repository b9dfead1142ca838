"""``python -m ui.serve [streamlit options]``: the dashboard, as ``streamlit run app.py [options]`` serves it, with
the modules its pages need imported before the server answers.

Why: ``streamlit run`` imports nothing of a page until the first visitor's first script run, so the first visit
of a fresh server paid for importing pandas, numpy, pyarrow, the engine and the data layer (about 0.9 s of CPU
here, as much as an empty Streamlit page takes to show) inside that run. Here the server process imports them
before it starts listening: the server takes that much longer to start, and the first page shows sooner.
``make dashboard`` starts the dashboard this way; ``benchmarks/bench_dashboard.py`` times pages served by it.

Options are passed to ``streamlit run`` unchanged (``python -m ui.serve --server.port 8502``); the settings of
``.streamlit/config.toml`` apply as they do there (read from the working directory: start it from the checkout).
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app.py"
#: The data layer's cached functions are declared at import; with no Streamlit runtime yet, each declaration logs
#: "No runtime found, using MemoryCacheStorageManager" (a check of its parameters only: the caches themselves are
#: made at the first call, in the server's runtime). That message is dropped while :func:`preload` runs.
CACHE_LOGGER = "streamlit.runtime.caching.cache_data_api"
#: Modules the pages import only while they run (lazy imports of the engine, parts of pandas, pyarrow and
#: Streamlit, PIL for the favicon), found by listing ``sys.modules`` before and after each page's first run after
#: :func:`preload`. None of them imports torch or a model. A name missing here costs only its import time.
IMPORTED_WHILE_RUNNING = (
    "PIL.Image", "PIL.PngImagePlugin", "pandas.core.methods.to_dict", "pandas.core.reshape.reshape",
    "pyarrow.pandas_compat", "streamlit.components.v2.manifest_scanner", "streamlit.material_icon_names",
    "rageval.attribution.experiment", "rageval.ium.results_section", "rageval.jobs.labelling", "rageval.store.jobs",
)


def preload() -> list[str]:
    """Import every module of the ``ui`` package (and so pandas, numpy, pyarrow and the engine modules the pages
    use) and :data:`IMPORTED_WHILE_RUNNING`; the names imported, in order."""
    import ui

    names = [f"ui.{module.name}" for module in pkgutil.iter_modules(ui.__path__) if module.name != "serve"]
    names += IMPORTED_WHILE_RUNNING
    # A filter, not a level: Streamlit sets the level of its loggers when a module first asks for one.
    cache_logger = logging.getLogger(CACHE_LOGGER)
    no_runtime = _NoRuntimeFilter()
    cache_logger.addFilter(no_runtime)
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        cache_logger.removeFilter(no_runtime)
    return names


class _NoRuntimeFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "No runtime found" not in record.getMessage()


def skip_direct_run_check() -> bool:
    """Spare the first page its check for "a script run without ``streamlit run``": Streamlit makes it once per
    process, at the first element, with ``inspect.stack()``, which maps every frame to its module by walking
    ``sys.modules``: 0.15 s of the first visit's script time once the pages' ~1,500 modules are loaded (py-spy on
    the server, Correlations on the shipped run). This process is ``streamlit run``, so the check has nothing to
    say. Whether it could be spared (False: a Streamlit without that flag; nothing is changed then)."""
    from streamlit import delta_generator

    if not hasattr(delta_generator, "_use_warning_has_been_displayed"):
        return False
    delta_generator._use_warning_has_been_displayed = True
    return True


def hide_metrics() -> bool:
    """Serve no ``/_stcore/metrics`` (team mode): Streamlit answers it to anyone, signed in or not, with every
    session's count and the cache sizes per function. Its route answers 404 instead (left out, the path would get
    the app's page as any unknown path does). Whether it could be (False: a Streamlit that builds its routes
    otherwise; then :func:`main` refuses to serve a team: tests/team/test_team_http.py)."""
    try:
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route
        from streamlit.web.server.starlette import starlette_app, starlette_routes
    except ImportError:
        return False
    if not all(hasattr(starlette_routes, name) for name in ("ROUTE_METRICS", "_with_base")) \
            or not hasattr(starlette_app, "create_metrics_routes"):
        return False

    async def not_served(request):
        return PlainTextResponse("not served on a dashboard served for a team\n", status_code=404)

    def routes(runtime, base_url):
        path = starlette_routes._with_base(starlette_routes.ROUTE_METRICS, base_url)
        return [Route(path, not_served, methods=["GET", "HEAD", "OPTIONS"])]

    starlette_app.create_metrics_routes = routes
    return True


#: The provider's metadata, by its URL (:func:`cache_provider_metadata`).
_METADATA: dict[str, dict] = {}


def cache_provider_metadata(url: str, announce=print) -> bool:
    """Fetch the team's provider metadata and keys now, with retries (:mod:`rageval.team.provider`), and have every
    Authlib client Streamlit makes for a sign-in take them from here instead of asking the provider each time (the
    class all of Streamlit's OAuth clients inherit ``load_server_metadata`` from). Should the provider not answer
    at start, the first sign-in fetches them, with the same retries. Whether the metadata is cached now."""
    import asyncio
    import copy
    import time

    from authlib.integrations.base_client.async_app import AsyncOAuth2Mixin

    from rageval.team.provider import ProviderError, fetch_provider_metadata

    original = AsyncOAuth2Mixin.load_server_metadata
    lock: list[asyncio.Lock] = []

    async def load_server_metadata(self):
        if self._server_metadata_url != url or "_loaded_at" in self.server_metadata:
            return await original(self)
        if url not in _METADATA:
            if not lock:
                lock.append(asyncio.Lock())
            async with lock[0]:  # one fetch for a burst of sign-ins
                if url not in _METADATA:
                    _METADATA[url] = (await asyncio.to_thread(fetch_provider_metadata, url))[0]
        self.server_metadata.update(copy.deepcopy(_METADATA[url]))
        self.server_metadata["_loaded_at"] = time.time()
        return self.server_metadata

    AsyncOAuth2Mixin.load_server_metadata = load_server_metadata
    try:
        _METADATA[url], tries = fetch_provider_metadata(url)
    except ProviderError as error:
        announce(f"rageval serve: the provider's metadata could not be fetched at start ({error}); the first "
                 "sign-in tries again")
        return False
    announce(f"rageval serve: provider metadata and keys cached ({tries} request(s))")
    return True


def main(argv: list[str] | None = None) -> None:
    """Preload, then hand over to ``streamlit run app.py`` with ``argv`` (default: this command's arguments). In team
    mode (``$RAGEVAL_TEAM``, set by ``rageval serve --team``) the metrics endpoint is not served."""
    import os

    options = sys.argv[1:] if argv is None else argv
    from rageval.paths import user_runs_dir
    from rageval.store.files import remove_stale_temporaries

    for leftover in remove_stale_temporaries(user_runs_dir()):  # a killed import's or job's half-written file
        print(f"removed {leftover}, left by a write that was killed", file=sys.stderr)
    if os.environ.get("RAGEVAL_TEAM") and not hide_metrics():
        sys.exit("rageval serve --team: this Streamlit serves /_stcore/metrics to everyone and rageval cannot turn it "
                 "off; install the Streamlit version of requirements.txt")
    if os.environ.get("RAGEVAL_TEAM"):
        from rageval.team.config import load_team_config

        cache_provider_metadata(load_team_config(os.environ["RAGEVAL_TEAM"]).server_metadata_url,
                                announce=lambda line: print(line, file=sys.stderr, flush=True))
    preload()
    skip_direct_run_check()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *options]
    cli.main()


if __name__ == "__main__":
    main()
