"""Fixtures of the bench client tests: the in-process SSE test server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bench.server import TestServer, serve


@pytest.fixture
def server() -> Iterator[TestServer]:
    """A fresh test server on 127.0.0.1, port 0."""
    yield from serve()
