"""Shared fixtures: a fake LLM and a tiny random-weight model, so generation code is testable without a real model;
the browser tests' one dashboard server and one Chromium per session (tests/browser_support.py)."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from rageval.generation.base import FakeGenerator


@pytest.fixture(autouse=True)
def no_shipped_runs(monkeypatch):
    """The dashboard lists the shipped demo runs (data/runs) beside the user's runs folder; a test sees only the
    runs it made, unless it asks for the shipped ones (tests/app_helpers.py ``use_shipped_runs``)."""
    monkeypatch.setenv("RAGEVAL_SHIPPED_RUNS_DIR", "")


@pytest.fixture(autouse=True)
def no_precision_check(monkeypatch):
    """``dtype="auto"`` (the model settings' default) would time float32 against bfloat16 on a test's tiny model and
    pick by the timing; tests get the device default instead, unless they test the check
    (``monkeypatch.delenv("RAGEVAL_DTYPE_CHECK")``)."""
    monkeypatch.setenv("RAGEVAL_DTYPE_CHECK", "off")


@pytest.fixture(scope="session")
def corpus():
    """The rageval corpus built from the shipped data (a module may define its own ``corpus`` instead)."""
    from rageval.corpus import build_corpus

    return build_corpus()


@pytest.fixture(scope="session")
def passages(corpus):
    """The corpus' passages by id."""
    return {p.passage_id: p for p in corpus.passages}


@pytest.fixture
def fake_generator() -> FakeGenerator:
    """Answers with the first capitalised span of the prompt's first passage; counts ``calls``/``prompts_seen``."""
    return FakeGenerator()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A 2-layer Gemma 3 (random weights, seed 0) with a byte-level tokenizer whose token id 0 is ``"z"``
    (tests/model_fixtures.py)."""
    from tests.model_fixtures import build_tiny_gemma

    return build_tiny_gemma(tmp_path_factory.mktemp("tiny-gemma3"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The browser tests run last (otherwise in their order): the session's Chromium is driven by Playwright's sync
    API, which leaves its event loop marked as running in the main thread until the session ends, so a test after
    it that calls ``asyncio.run`` would fail; and the quick tests report first."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """The session's headless Debian Chromium (a Playwright ``Browser``); tests open pages with ``chromium_page``."""
    from playwright.sync_api import expect, sync_playwright

    from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, require_browser

    require_browser()
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def chromium_page(chromium):
    """``with chromium_page(width=1400, height=1000) as (page, page_errors):`` a page of the session's Chromium in a
    fresh context, with the JavaScript errors it raises."""
    from tests.browser_support import page_in

    return functools.partial(page_in, chromium)


@pytest.fixture(scope="session")
def dashboard(tmp_path_factory) -> Iterator[object]:
    """The session's dashboard server (``python -m ui.serve``) on a runs folder of the session's own, with no
    shipped runs and a cache folder of its own: a :class:`tests.browser_support.Dashboard`."""
    from tests.browser_support import Dashboard, require_browser, streamlit_server

    require_browser()
    runs = tmp_path_factory.mktemp("dashboard_runs")
    cache = tmp_path_factory.mktemp("dashboard_cache")
    with streamlit_server(runs, "streamlit_server.log", RAGEVAL_CACHE_DIR=str(cache)) as url:
        yield Dashboard(url, runs)


@pytest.fixture(scope="session")
def dashboard_shared_runs(dashboard, tmp_path_factory):
    """The session's dashboard with the two runs that tests only read, placed once: ``fixture`` (the small run of
    tests/run_fixtures.py) and the complete run ``reteval`` (tests/ui/test_app.py ``reteval_run_file``)."""
    from tests.run_fixtures import make_small_run
    from tests.ui.test_app import RETEVAL_RUN, reteval_run_file

    dashboard.place(reteval_run_file(tmp_path_factory), RETEVAL_RUN)
    make_small_run(dashboard.runs / "fixture.sqlite")
    return dashboard
