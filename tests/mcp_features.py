"""Shared set-up of the tests that use the MCP features server (``mcp_features_server.py``):
a home whose config starts it over stdio for a headless run, a connected in-process client,
and the tool a connected server offers under a name."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from plugins_builtin.mcp_client import state

SERVER = str(Path(__file__).with_name("mcp_features_server.py"))


def features_home(tmp_path: Path, *, top: str = "", tables: str = "") -> tuple[Path, Path]:
    """``(home, ws)`` with a config that starts the features server as ``feat``; ``top`` is
    TOML placed before the server's table (plain keys), ``tables`` after it."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text(
        "mcp_startup_timeout = 120\n" + top
        + f'[mcp_servers.feat]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n' + tables)
    return home, ws


@contextmanager
def connected(config: Any, hooks: Any) -> Iterator[tuple[Any, Any]]:
    """The mcp plugin configured and its servers connected; unconfigured on the way out."""
    hooks.tools(config)
    state(config).manager.wait(60)
    try:
        yield config, hooks
    finally:
        hooks.unconfigure(config)


def feature_tool(config: Any, name: str) -> Any:
    """The ``feat`` server's tool ``name``, as the agent offers it to the model."""
    st = state(config)
    definition = next(t for t in st.manager.tools["feat"] if t["name"] == name)
    return st.factory.tool("feat", definition)
