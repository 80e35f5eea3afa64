"""The protocol surface over Streamable HTTP: the same features server as the stdio tests
(tests/mcp_features_server.py), served on 127.0.0.1 by uvicorn in a thread: roots,
elicitation, progress, resources (text and image), resource links, prompts, images from a
tool, and ``@server:uri`` mentions."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from mcp_features import assert_sampling_round_trip, connected, feature_tool

from agent.contract.mentions import expand
from agent.testing import make_boot, run_tool

SERVER = Path(__file__).parents[1].joinpath("mcp_features_server.py")
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU"
       "5ErkJggg==")


@pytest.fixture(scope="module")
def features_url():
    import uvicorn

    spec = importlib.util.spec_from_file_location("mcp_features_server", SERVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.make_server().streamable_http_app()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not web.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert web.started, "the features server did not start"
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    web.should_exit = True
    thread.join(5)


@pytest.fixture
def feat(tmp_path, features_url):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["mcp"],
                              file_data={"mcp_servers": {"feat": {"url": features_url}}})
    with connected(config, hooks):
        yield config, hooks


tool = feature_tool


async def test_roots_elicitation_and_progress_over_http(feat):
    config, _ = feat
    roots = await run_tool(tool(config, "whereami"), {}, config)
    assert json.loads(roots.output) == [config.workspace.resolve().as_uri()]

    async def asker(question, options, multiple):
        return "red"

    session = SimpleNamespace(runtime=SimpleNamespace(asker=asker))
    picked = await run_tool(tool(config, "pick_color"), {}, config, session=session)
    assert json.loads(picked.output) == {"action": "accept", "content": {"color": "red"}}
    lines: list[str] = []
    slow = await run_tool(tool(config, "slow"), {}, config, output=lines)
    assert slow.output == "slow done"
    for _ in range(200):  # forwarded onto this loop with call_soon_threadsafe
        if len(lines) == 3:
            break
        await asyncio.sleep(0.01)
    assert "".join(lines) == ("[progress 1/3] step 1\n[progress 2/3] step 2\n"
                              "[progress 3/3] step 3\n")


async def test_resources_links_images_and_mentions_over_http(feat):
    config, hooks = feat
    listing = await run_tool(tool(config, "list_resources"), {}, config)
    assert "memo://logo.png  logo  (image/png)" in listing.output.splitlines()
    made = await run_tool(tool(config, "make_report"), {}, config)
    assert "(read it with mcp__feat__read_resource)" in made.output
    logo = await run_tool(tool(config, "read_resource"), {"uri": "memo://logo.png"}, config)
    assert [(i.media_type, i.data) for i in logo.images] == [("image/png", PNG)]
    shot = await run_tool(tool(config, "snapshot"), {}, config)
    assert [(i.media_type, i.data, i.source) for i in shot.images] == [
        ("image/png", PNG, "mcp__feat__snapshot")]
    assert "[structured content]" in shot.output
    message, warnings = await expand("see @feat:memo://notes/today", hooks.mentions(config))
    assert warnings == [] and "buy tea\ncall Ada" in message.text


async def test_prompts_over_http(feat):
    config, hooks = feat
    command = hooks.commands(config).get("/mcp__feat__review")
    assert command is not None
    sent: list[str] = []
    app = SimpleNamespace(run_prompt=sent.append, error=sent.append)
    await command.run(app, "db.py speed")
    assert sent == ["Review db.py for speed."]


async def test_sampling_over_http_goes_through_the_sessions_provider_with_approval(
        tmp_path, features_url, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["mcp", "openai", "budget"],
                              file_data={"mcp_servers": {"feat": {"url": features_url}}})
    with connected(config, hooks):
        await assert_sampling_round_trip(config, hooks, fake_provider)
