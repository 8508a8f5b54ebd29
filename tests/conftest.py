"""Fixtures for every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from otel_semloop.telemetry import LOG_LIMITER


@pytest.fixture(autouse=True)
def _fresh_log_limiter() -> Iterator[None]:
    """The package's log limiter lets one line per kind a minute through, process-wide:
    each test starts with a clean slate, so a test that looks for a line sees it."""
    LOG_LIMITER.reset()
    yield
