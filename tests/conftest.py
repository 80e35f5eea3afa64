"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def fake_provider() -> Iterator[object]:
    """A started :class:`fakeprovider.FakeProvider` on 127.0.0.1, stopped after the test."""
    from fakeprovider import FakeProvider

    server = FakeProvider.start()
    try:
        yield server
    finally:
        server.stop()
