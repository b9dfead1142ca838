"""Shared fixtures: a fake LLM, so anything that takes a Generator can be tested without a model."""

from __future__ import annotations

import pytest

from rageval.generation.base import FakeGenerator


@pytest.fixture
def fake_generator() -> FakeGenerator:
    """Answers with the first capitalised span of the prompt's first passage; counts ``calls``/``prompts_seen``."""
    return FakeGenerator()
