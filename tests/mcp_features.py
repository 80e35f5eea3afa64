"""Shared set-up of the tests that use the MCP features server (``mcp_features_server.py``):
a home whose config starts it over stdio for a headless run, a connected in-process client,
and the tool a connected server offers under a name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp_forkserver import server_command

from plugins_builtin.mcp import state

SERVER = str(Path(__file__).with_name("mcp_features_server.py"))


def features_server() -> dict[str, Any]:
    """The ``[mcp_servers.feat]`` table: the features server over stdio, started through the
    fork server (``mcp_forkserver.py``: a process of its own without importing the SDK again)."""
    command, args = server_command(SERVER)
    return {"command": command, "args": args}


def features_home(tmp_path: Path, *, top: str = "", tables: str = "") -> tuple[Path, Path]:
    """``(home, ws)`` with a config that starts the features server as ``feat``; ``top`` is
    TOML placed before the server's table (plain keys), ``tables`` after it."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    server = features_server()
    (home / "config.toml").write_text(
        "mcp_startup_timeout = 120\n" + top
        + f'[mcp_servers.feat]\ncommand = {json.dumps(server["command"])}\n'
        + f'args = {json.dumps(server["args"])}\n' + tables)
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


async def assert_sampling_round_trip(config: Any, hooks: Any, fake_provider: Any) -> Any:
    """The model calls ``summarise``; the server's sampling request goes through the
    session's provider after an approval that names the server, and its answer comes back as
    the tool's result. Checked on the requests the fake provider received; returns the
    session (for what the caller checks beyond)."""
    import json

    from fakeprovider import Reply

    from agent.testing import collect, make_session

    asked = []

    async def approver(request: Any) -> str:
        asked.append(request)
        return "yes"

    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approver)
    fake_provider.script(Reply.tool_call("mcp__feat__summarise", {}, id="s1"),
                         Reply.text("Groceries for tea."),  # the server's sampling request
                         Reply.text("done"))
    await collect(session, "summarise it")
    sampling = fake_provider.requests[1].body
    assert sampling["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sampling["messages"][-1]["content"] == "Summarise: tea, milk, sugar."
    assert "tools" not in sampling or not sampling["tools"]
    tool_message = fake_provider.requests[2].body["messages"][-1]
    assert json.loads(tool_message["content"])["text"] == "Groceries for tea."
    assert any("the MCP server feat asks the model" in a.reason and "tea, milk" in a.reason
               for a in asked)
    assert len(fake_provider.requests) == 3
    return session
