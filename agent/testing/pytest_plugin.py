"""pytest fixtures for plugin authors: ``pytest_plugins = ["agent.testing.pytest_plugin"]``.

- ``fake_provider``: a started :class:`agent.testing.fakeprovider.FakeProvider` on 127.0.0.1
  speaking the OpenAI chat, OpenAI responses and Anthropic wire formats, stopped afterwards.
- ``agent_home``: an empty ``AGENT_HOME`` directory, set in the environment for the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.testing.fakeprovider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    server = FakeProvider.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def agent_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "agent-home"
    home.mkdir()
    monkeypatch.setenv("AGENT_HOME", str(home))
    return home
