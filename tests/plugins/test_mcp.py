"""The MCP client against real servers: a raw stdio stub (tests/mcp_stub.py), mcp-server-time,
mcp-server-git, and an SDK-built server over Streamable HTTP; plus config, cache and commands.

What is asserted crossed a boundary: the text a server returned, the request bodies the fake
provider received, the server processes (alive or gone), the config file and the tools cache.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import tomllib
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from clirun import run_agent, run_agent_here
from fakeprovider import Reply
from waiting import LoopClock, until

from agent.testing import collect, make_boot, make_session, run_tool
from plugins_builtin.mcp import state
from plugins_builtin.mcp.commands import (
    add_server,
    cli_mcp,
    parse_add_args,
    remove_server,
    run_mcp,
)
from plugins_builtin.mcp.results import result_text
from plugins_builtin.mcp.servers import parse_servers
from plugins_builtin.mcp.tools import tool_name

pytestmark = pytest.mark.timeout(60)


STUB = str(Path(__file__).parents[1].joinpath("mcp_stub.py"))
#: Where console scripts are: this interpreter's own folder, then (a virtualenv made with
#: --system-site-packages finds the servers installed beside its base interpreter) the base's.
BINS = (Path(sys.executable).parent, Path(sys.base_prefix) / "bin")


def server_bin(name: str) -> str:
    """The console script itself, not a pyenv shim that would start bash and pyenv first."""
    for folder in BINS:
        if (folder / name).exists():
            return str(folder / name)
    return name


def stub(*flags: str, **extra) -> dict:
    return {"command": sys.executable, "args": [STUB, *flags], **extra}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids_with(marker: str) -> list[int]:
    """Live processes whose environment carries ``marker`` (set through the server's env)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def wait_connected(config, timeout: float = 20) -> None:
    state(config).manager.wait(timeout)


def tool_of(config, server: str, name: str):
    st = state(config)
    definition = next(t for t in st.manager.tools[server] if t["name"] == name)
    return st.factory.tool(server, definition)


def boot(tmp: Path, servers: dict, *, builtins=("mcp",), **kwargs):
    ws = tmp / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    file_data = {"mcp_servers": servers, **kwargs.pop("file_data", {})}
    return make_boot(ws, tmp / "home", builtins=list(builtins), file_data=file_data, **kwargs)


@pytest.fixture(scope="module")
def time_server(tmp_path_factory):
    """mcp-server-time, started once for the module by the test that asks for it (the
    headless acceptance run, e2e), not by every test process that runs any test of this
    module: a real server costs 1-2 s of CPU to start.  Its config is also written as the user
    config of ``home``, for that run."""
    tmp = tmp_path_factory.mktemp("real")
    home, ws = tmp / "home", tmp / "ws"
    home.mkdir()
    ws.mkdir()
    marker = f"MCP_TEST_MARK_{uuid.uuid4().hex}"
    time_table = (f'[mcp_servers.time]\ncommand = "{server_bin("mcp-server-time")}"\n'
                  f'args = ["--local-timezone", "UTC"]\nenv = {{ {marker} = "1" }}\n')
    (home / "config.toml").write_text(time_table)
    config, hooks = make_boot(ws, home, builtins=["mcp"], file_data=tomllib.loads(time_table))
    hooks.tools(config)  # starts connecting, in the background
    yield SimpleNamespace(config=config, hooks=hooks, home=home, ws=ws, marker=marker)
    hooks.unconfigure(config)


@pytest.fixture(scope="module")
def git_server(tmp_path_factory):
    """mcp-server-git on a new repository, started once for the module by the test that asks
    for it (a fast-lane test: the time server stays unstarted there)."""
    tmp = tmp_path_factory.mktemp("real")
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    (repo / "new.txt").write_text("x")
    git_table = (f'[mcp_servers.git]\ncommand = "{server_bin("mcp-server-git")}"\n'
                 f'args = ["--repository", "{repo}"]\n')
    (tmp / "ws").mkdir()
    (tmp / "home").mkdir()
    config, hooks = make_boot(tmp / "ws", tmp / "home", builtins=["mcp"],
                              file_data=tomllib.loads(git_table))
    hooks.tools(config)  # starts connecting, in the background
    yield SimpleNamespace(config=config, hooks=hooks, repo=repo)
    hooks.unconfigure(config)


# ---- config, names, results (no processes) --------------------------------------------------


def test_server_tables_are_read_and_bad_ones_explained():
    servers = parse_servers({
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                 "env": {"A": "1"}, "timeout": 5},
        "web": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer t"}},
        "nocmd": {"args": ["x"]},
        "badurl": {"url": "ftp://x"},
        "badtime": {"command": "x", "timeout": 0},
        "badenv": {"command": "x", "env": {"A": 1}},
        "a__b": {"command": "x"},
    })
    assert servers["time"].kind == "local" and servers["time"].timeout == 5
    assert servers["time"].startup_timeout == 30 and servers["web"].timeout == 60
    assert servers["time"].where == "mcp-server-time --local-timezone UTC"
    assert servers["web"].kind == "remote" and dict(servers["web"].headers) == {
        "Authorization": "Bearer t"}
    assert servers["nocmd"].problem == "a local server needs a command (or a remote one a url)"
    assert servers["badurl"].problem == "url must start with http:// or https://"
    assert "timeout must be a number of seconds above 0" in servers["badtime"].problem
    assert servers["badenv"].problem == "env must be a table of strings"
    assert '"__"' in servers["a__b"].problem
    assert servers["time"].fingerprint() != parse_servers(
        {"time": {"command": "mcp-server-time"}})["time"].fingerprint()


def test_tool_names_are_namespaced_safe_and_bounded():
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("fs", "read.file v2") == "mcp__fs__read_file_v2"
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert len(long_a) == 64 and long_a != long_b


def test_results_join_text_and_summarise_the_rest():
    import mcp_types as t

    result = t.CallToolResult(content=[
        t.TextContent(type="text", text="first"),
        t.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
        t.EmbeddedResource(type="resource", resource=t.TextResourceContents(
            uri="file:///a.txt", text="inside")),
        t.ResourceLink(type="resource_link", uri="file:///b.bin", name="b.bin"),
    ])
    assert result_text(result) == ("first\n[image 1: image/png, 5 bytes]\n"
                                   "[resource file:///a.txt]\ninside\n"
                                   "[resource link: b.bin <file:///b.bin>]")
    only = t.CallToolResult(content=[], structured_content={"n": 1})
    assert json.loads(result_text(only)) == {"n": 1}


def test_add_and_remove_write_the_config_file(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('model = "m"  # kept\n')
    lines = add_server(cfg, "time", "local", "mcp-server-time", ["--local-timezone", "UTC"])
    assert lines == ["added mcp server time (mcp-server-time --local-timezone UTC)",
                     f"saved to {cfg}", "restart agent to connect it"]
    add_server(cfg, "web", "remote", "https://example.test/mcp", {"Authorization": "Bearer t"})
    data = tomllib.loads(cfg.read_text())
    assert data["mcp_servers"] == {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
        "web": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer t"}}}
    assert "# kept" in cfg.read_text()
    for name, kind, target, message in [
        ("", "local", "x", "a name is required"),
        ("time", "local", "x", 'an MCP server named "time" is already configured'),
        ("my_server", "local", "x", "use letters, digits and hyphens only, starting with a "
                                    "letter or digit"),
        ("-x", "local", "x", "use letters, digits and hyphens only, starting with a letter "
                             "or digit"),
        ("a__b", "local", "x", 'the name may not contain "__" (it separates server and tool '
                               'names)'),
        ("ok", "local", " ", "a command is required"),
        ("ok", "remote", "example.test", "the URL must start with http:// or https://"),
    ]:
        with pytest.raises(ValueError) as err:
            add_server(cfg, name, kind, target)
        assert str(err.value) == message
    assert remove_server(cfg, "time") == ["removed mcp server time", f"saved to {cfg}",
                                          "restart agent to disconnect it"]
    with pytest.raises(ValueError, match='no MCP server named "time"'):
        remove_server(cfg, "time")
    assert list(tomllib.loads(cfg.read_text())["mcp_servers"]) == ["web"]


def test_add_argument_forms():
    assert parse_add_args(["git", "--", "uvx", "mcp-server-git", "--repository", "."]) == (
        "git", "local", "uvx", ["mcp-server-git", "--repository", "."])
    assert parse_add_args(["web", "https://h/mcp", "--header", "X-Key: 1"]) == (
        "web", "remote", "https://h/mcp", {"X-Key": "1"})
    with pytest.raises(ValueError, match='headers look like "KEY: value'):
        parse_add_args(["web", "https://h/mcp", "--header", "no colon"])


# ---- a stdio stub, shared by the module -----------------------------------------------------


@pytest.fixture(scope="module")
def stubbed(tmp_path_factory):
    """A booted mcp plugin with one stub server (1 s call timeout), connected."""
    tmp = tmp_path_factory.mktemp("stub")
    os.environ["MCP_TEST_INHERITED"] = "from-parent"
    try:
        config, hooks = boot(tmp, {"stub": stub("--pidfile", str(tmp / "pids"),
                                                "--calls", str(tmp / "calls"),
                                                env={"FOO": "from-config"}, timeout=1)})
        hooks.tools(config)
        wait_connected(config)
    finally:
        del os.environ["MCP_TEST_INHERITED"]
    yield SimpleNamespace(config=config, hooks=hooks, tmp=tmp)
    hooks.unconfigure(config)


async def call(ns, name, args):
    return await run_tool(tool_of(ns.config, "stub", name), args, ns.config)


async def test_structured_content_that_mirrors_the_blocks_is_sent_once(stubbed):
    # The reference filesystem server: the text again as {"content": text}.
    text = "line one\nline two"
    mirrored = await call(stubbed, "echo", {"text": text, "mirror": True})
    assert mirrored.output == text
    # The content blocks again: the image's base64 must not reach the model as text.
    blocks = await call(stubbed, "picture", {"mirror": "blocks"})
    assert blocks.output == "a red dot\n[image 1: image/png, 8 bytes]"
    assert [i.data for i in blocks.images] == ["iVBORw0KGgo="]
    # Another shape that repeats the payload: the rest is kept, the payload sent once.
    other = await call(stubbed, "picture", {"mirror": "data"})
    assert "iVBORw0KGgo=" not in other.output
    assert json.loads(other.output.split("[structured content]\n", 1)[1]) == {
        "image": {"base64": "[the image block's data, sent once]", "mime": "image/png"},
        "caption": "a dot"}
    assert [i.data for i in other.images] == ["iVBORw0KGgo="]


def test_an_mcp_calls_approval_names_its_title_and_reads_its_arguments(stubbed):
    from agent.ui.approvals import detail_lines

    tool = tool_of(stubbed.config, "stub", "echo")
    args = {"text": "hello there", "options": {"loud": True, "times": 2}}
    described = tool.description_of(args)
    assert described.question == "Run 'Echo some text' on the MCP server stub?"
    # What the dialog shows: one readable line per argument, no JSON dump under it.
    assert detail_lines(tool.name, args, tool) == [
        "text: hello there", "options.loud: True", "options.times: 2"]
    plain = tool_of(stubbed.config, "stub", "env")  # no title: the tool's own name
    assert plain.description_of({"name": "FOO"}).question == \
        "Run 'env' on the MCP server stub?"


async def test_results_errors_and_environment(stubbed):
    assert (await call(stubbed, "echo", {"text": "hi"})).output == "hi"
    structured = await call(stubbed, "structured", {})
    assert json.loads(structured.output) == {"answer": 42, "unit": "widgets"}
    picture = await call(stubbed, "picture", {})
    assert picture.output == "a red dot\n[image 1: image/png, 8 bytes]"
    assert [(i.media_type, i.data) for i in picture.images] == [("image/png", "iVBORw0KGgo=")]
    failed = await call(stubbed, "fail", {"message": "no such thing"})
    assert failed.is_error and failed.output == "no such thing"
    assert (await call(stubbed, "env", {"name": "FOO"})).output == "from-config"
    assert (await call(stubbed, "env", {"name": "MCP_TEST_INHERITED"})).output == "from-parent"
    tool = tool_of(stubbed.config, "stub", "echo")
    assert tool.name == "mcp__stub__echo" and tool.effects({}).opaque and tool.tool_set is None
    assert tool.description == "Echo the text back."
    assert tool.parameters["required"] == ["text"]


async def test_a_crashed_server_is_reported_and_restarted(stubbed):
    before = pids(stubbed.tmp / "pids")
    crashed = await call(stubbed, "crash", {})
    assert crashed.is_error
    assert crashed.output == ('mcp server "stub" crashed: the connection closed (stderr: boom: '
                              'simulated crash); it will be restarted on the next call')
    assert (await call(stubbed, "echo", {"text": "back"})).output == "back"
    after = pids(stubbed.tmp / "pids")
    assert len(after) == len(before) + 1 and not alive(before[-1]) and alive(after[-1])


async def test_a_server_that_died_while_idle_is_restarted_before_the_call(stubbed):
    before = pids(stubbed.tmp / "pids")
    os.kill(before[-1], 9)
    await until(lambda: not alive(before[-1]), "the killed server to be gone")
    assert (await call(stubbed, "echo", {"text": "revived"})).output == "revived"
    assert len(pids(stubbed.tmp / "pids")) == len(before) + 1


def calls_seen(ns) -> list[str]:
    """The requests the stub server recorded (``--calls``), one JSON line each."""
    calls = ns.tmp / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


async def test_a_hung_server_times_out_and_is_restarted(stubbed):
    before = pids(stubbed.tmp / "pids")
    # The call's timeout (1 s) is kept on the clock of the MCP client's event loop and began
    # before the server had the call: moved past it once the server has it, not waited for.
    clock = LoopClock(state(stubbed.config).manager.loop)
    seen, asked = len(calls_seen(stubbed)), time.monotonic()
    task = asyncio.create_task(call(stubbed, "hang", {}))
    await until(lambda: any('"hang"' in line for line in calls_seen(stubbed)[seen:]),
                "the server to have the call")
    clock.fire(asked, 1)  # unless the real second is (nearly) up already
    hung = await task
    assert hung.is_error and hung.output == ('mcp server "stub" did not answer within 1 s; '
                                             'it will be restarted on the next call')
    assert (await call(stubbed, "echo", {"text": "again"})).output == "again"
    after = pids(stubbed.tmp / "pids")
    assert len(after) == len(before) + 1
    # The hung one is closed in the background.
    await until(lambda: not alive(before[-1]), "the hung server to be closed")


def test_slash_mcp_lists_servers(stubbed, tmp_path):
    shown = []
    app = SimpleNamespace(config=stubbed.config,
                          info=lambda title, body=None, hint="": shown.append((title, body, hint)))
    assert asyncio.run(run_mcp(app, "")) is None
    title, body, hint = shown[0]
    assert (title, hint) == ("mcp servers", "/mcp add to add one")
    assert body.splitlines()[0] == "- `stub` (local) - 9 tools\\"
    assert body.splitlines()[1] == f"  `{sys.executable} {STUB} --pidfile " \
                                   f"{stubbed.tmp / 'pids'} --calls {stubbed.tmp / 'calls'}`"
    assert body.splitlines()[-1] == f"configured in {stubbed.config.config_file}"
    assert asyncio.run(run_mcp(app, "frobnicate")) == "usage: /mcp [list|add|remove <name>]"
    assert asyncio.run(run_mcp(app, "rm nothere")) == 'no MCP server named "nothere"'


class WizardApp:
    """The command context's asking side, answering from a script (None = esc)."""

    def __init__(self, config, kind, answers):
        self.config, self.kind, self.answers = config, kind, list(answers)
        self.asked, self.errors, self.picked_hint = [], [], None

    async def pick(self, title, items, hint=""):
        self.picked_hint = hint
        assert [value for _, value in items] == ["local", "remote"]
        return self.kind

    async def prompt_text(self, title, hint="", default=""):
        self.asked.append(title)
        return self.answers.pop(0)

    def error(self, text):
        self.errors.append(text)


def test_add_wizard_validates_as_it_asks(tmp_path):
    config, hooks = boot(tmp_path, {})
    try:
        app = WizardApp(config, "local", ["Bad Name", "files", "", "npx",
                                          '-y "@scope/server fs" /tmp'])
        out = asyncio.run(run_mcp(app, "add"))
        assert app.asked == ["name", "name", "command", "command", "arguments"]
        assert app.errors == ["use letters, digits and hyphens only, starting with a letter "
                              "or digit", "a command is required"]
        assert out.splitlines()[0] == "added mcp server files (npx -y '@scope/server fs' /tmp)"
        assert out.splitlines()[2] == "restart agent to connect it"
        app = WizardApp(config, "remote", ["files", "web", "example.test",
                                           "https://example.test/mcp", "Authorization"
                                           " Bearer", "Authorization: Bearer t, X-A: b"])
        asyncio.run(run_mcp(app, "new"))
        assert app.picked_hint == "configured: files"
        assert app.errors == ['an MCP server named "files" is already configured',
                              "the URL must start with http:// or https://",
                              'headers look like "KEY: value, OTHER: value"; could not read '
                              '"Authorization Bearer"']
        assert tomllib.loads(config.config_file.read_text())["mcp_servers"] == {
            "files": {"command": "npx", "args": ["-y", "@scope/server fs", "/tmp"]},
            "web": {"url": "https://example.test/mcp",
                    "headers": {"Authorization": "Bearer t", "X-A": "b"}}}
        assert asyncio.run(run_mcp(WizardApp(config, "local", ["late", None]), "add")) == \
            "mcp setup cancelled"
        assert asyncio.run(run_mcp(WizardApp(config, None, []), "add")) == "mcp setup cancelled"
    finally:
        hooks.unconfigure(config)


async def test_an_interrupted_call_is_cancelled_on_the_server_and_leaves_it_usable(stubbed):
    calls = stubbed.tmp / "calls"
    before = len(calls.read_text().splitlines()) if calls.exists() else 0
    task = asyncio.create_task(call(stubbed, "hang", {}))
    for _ in range(500):  # until the server has the call
        lines = calls.read_text().splitlines()[before:] if calls.exists() else []
        if any('"hang"' in line for line in lines):
            break
        await asyncio.sleep(0.01)
    task.cancel()  # what esc and ctrl-c do to a running tool
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(500):  # the server is told (notifications/cancelled)
        if any('"cancelled"' in line for line in calls.read_text().splitlines()[before:]):
            break
        await asyncio.sleep(0.01)
    assert any('"cancelled"' in line for line in calls.read_text().splitlines()[before:])
    assert (await call(stubbed, "echo", {"text": "still here"})).output == "still here"


# ---- lifecycle ------------------------------------------------------------------------------


async def test_unconfigure_ends_every_server_process(tmp_path):
    marker = f"MCP_TEST_MARK_{uuid.uuid4().hex}"
    config, hooks = boot(tmp_path, {"a": stub(env={marker: "1"}), "b": stub(env={marker: "1"})})
    hooks.tools(config)
    await asyncio.to_thread(wait_connected, config)
    assert len(pids_with(marker)) == 2
    hooks.unconfigure(config)
    assert pids_with(marker) == []  # gone when unconfigure returns


async def open_gate_once_asked(asked: Path, gate: Path) -> None:
    """Let a ``--start-when gate`` stub answer ``initialize``, once it has been asked."""
    await until(asked.exists, "the server to be asked to initialize")
    gate.touch()


async def test_a_call_waits_for_a_server_still_starting(tmp_path):
    gate, asked = tmp_path / "gate", tmp_path / "asked"
    config, hooks = boot(tmp_path, {
        "slow": stub("--start-when", str(gate), "--asked", str(asked)),
        "stuck": stub("--startup-delay", "30", startup_timeout=0.5),
        "missing": {"command": str(tmp_path / "no-such-server")},
        "nowhere": stub(cwd="no-such-dir"),
        "here": stub(cwd=".."),
    })
    try:
        hooks.tools(config)
        st = state(config)
        # The gate opens only after the call to "slow" is under way: it cannot be answered
        # before the server has started.
        slow, stuck, missing, nowhere, _ = await asyncio.gather(
            run_tool(st.factory.tool("slow", {"name": "echo"}), {"text": "waited"}, config),
            run_tool(st.factory.tool("stuck", {"name": "echo"}), {}, config),
            run_tool(st.factory.tool("missing", {"name": "x"}), {}, config),
            run_tool(st.factory.tool("nowhere", {"name": "x"}), {}, config),
            open_gate_once_asked(asked, gate))
        here = await run_tool(st.factory.tool("here", {"name": "cwd"}), {}, config)
        assert here.output == str(tmp_path)
        assert nowhere.output == (f'mcp server "nowhere" failed to start: cwd '
                                  f'{tmp_path / "ws" / "no-such-dir"} is not a directory; it '
                                  'will be restarted on the next call')
        assert slow.output == "waited"  # its startup was waited for
        assert stuck.output == ('mcp server "stuck" failed to start: did not start within '
                                '0.5 s; it will be restarted on the next call')
        assert missing.output == (f'mcp server "missing" failed to start: command not found: '
                                  f'{tmp_path / "no-such-server"}; it will be restarted on the '
                                  'next call')
    finally:
        hooks.unconfigure(config)


def test_failures_are_reported_not_fatal(tmp_path, capsys):
    config, hooks = boot(tmp_path, {"missing": {"command": str(tmp_path / "nope")},
                                    "broken": {"url": "ftp://x"}}, headless=True)
    try:
        assert config.notices == ["mcp broken failed: url must start with http:// or https://"]
        state(config).manager.wait(10)
    finally:
        hooks.unconfigure(config)
    assert capsys.readouterr().err.splitlines() == [
        "agent: mcp broken failed: url must start with http:// or https://",
        f"agent: mcp missing failed: command not found: {tmp_path / 'nope'}"]


# ---- sessions: dynamic registration, cache, gate --------------------------------------------


async def test_tools_join_when_the_server_connects_and_are_cached(tmp_path, fake_provider):
    gate = tmp_path / "gate"  # the server answers initialize once it exists
    servers = {"stub": stub("--start-when", str(gate))}
    config, hooks = boot(tmp_path, servers, builtins=("mcp", "openai"), flags={"yolo": True})
    try:
        session = make_session(config, hooks, base_url=fake_provider.openai_url)
        assert not [n for n in session.tools if n.startswith("mcp__")]  # nothing cached yet
        gate.touch()
        await asyncio.to_thread(wait_connected, config)
        fake_provider.script(Reply.tool_call("mcp__stub__echo", {"text": "pong"}, id="c1"),
                             Reply.text("done"))
        events = await collect(session, "ping the stub")
        assert [e.type for e in events if e.type.startswith("tool-")][-1] == "tool-result"
        first, second = fake_provider.bodies
        names = [t["function"]["name"] for t in first["tools"]]
        assert "mcp__stub__echo" in names and "mcp__stub__hang" in names
        system = first["messages"][0]["content"]
        assert ("Tools from MCP servers are named mcp__<server>__<tool>. Each needs approval; "
                "read its own description before calling. Servers: stub.") in system
        assert second["messages"][-1] == {"role": "tool", "tool_call_id": "c1",
                                          "content": "pong"}
    finally:
        hooks.unconfigure(config)
    cached = json.loads((tmp_path / "home/state/mcp/tools-cache.json").read_text())
    assert [t["name"] for t in cached["servers"]["stub"]["tools"]][:2] == ["echo", "fail"]

    # A restart registers the cached tools before the server has even started answering.
    gate.unlink()
    config, hooks = boot(tmp_path, servers)
    try:
        tools = hooks.tools(config)  # no waiting: the server is not connected yet (below)
        assert "mcp__stub__echo" in tools and tools["mcp__stub__echo"].plugin == "mcp"
        assert state(config).manager.state_of("stub")[0] != "connected"
    finally:
        hooks.unconfigure(config)
    # A changed config misses the cache.
    config, hooks = boot(tmp_path, {"stub": stub("--start-when", str(tmp_path / "gate-2"))})
    try:
        assert not [n for n in hooks.tools(config) if n.startswith("mcp__")]
    finally:
        hooks.unconfigure(config)


async def test_a_changed_tool_list_reaches_the_session(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, {"stub": stub()}, builtins=("mcp", "openai"),
                         flags={"yolo": True})
    try:
        session = make_session(config, hooks, base_url=fake_provider.openai_url)
        await asyncio.to_thread(wait_connected, config)
        fake_provider.script(Reply.tool_call("mcp__stub__grow", {}, id="c1"),
                             Reply.text("grown"), Reply.text("again"))
        await collect(session, "grow")
        for _ in range(50):  # the new list is fetched in the background
            if "mcp__stub__extra" in state(config).factory.all_tools():
                break
            await asyncio.sleep(0.02)
        await collect(session, "look again")
        names = [[t["function"]["name"] for t in body["tools"]] for body in fake_provider.bodies]
        assert "mcp__stub__extra" not in names[0] and "mcp__stub__extra" in names[2]
    finally:
        hooks.unconfigure(config)


@pytest.mark.parametrize("case", ["headless", "rule"])
async def test_denied_calls_never_reach_the_server(tmp_path, fake_provider, case):
    calls = tmp_path / "calls"
    file_data = {"permission": {"mcp__*": "deny"}} if case == "rule" else {}
    flags = {"yolo": True} if case == "rule" else {}
    config, hooks = boot(tmp_path, {"stub": stub("--calls", str(calls))},
                         builtins=("mcp", "openai"), file_data=file_data, flags=flags)
    try:
        hooks.tools(config)
        await asyncio.to_thread(wait_connected, config)
        session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=None)
        fake_provider.script(Reply.tool_call("mcp__stub__echo", {"text": "x"}, id="c1"),
                             Reply.text("ok"))
        events = await collect(session, "go")
        denied = [e for e in events if e.type == "tool-denied"]
        assert len(denied) == 1
        if case == "headless":
            assert "needs approval and this is a headless run" in denied[0].reason
            # an MCP tool's effects are unknown: only a rule naming the tool lets it through
            assert "rerun with --allow mcp__stub__echo, or --yolo." in denied[0].reason
        else:
            assert "Refused by the permission rules" in denied[0].reason
        assert not calls.exists()
    finally:
        hooks.unconfigure(config)


def test_no_mcp_skips_every_server(tmp_path):
    from agent.boot.cli import build_parser

    config, hooks = boot(tmp_path, {"stub": stub()}, flags={"mcp": False})
    try:
        assert not [n for n in hooks.tools(config) if n.startswith("mcp")]
        st = state(config)
        assert not st.manager.started
        shown = []
        app = SimpleNamespace(config=config, info=lambda t, b=None, hint="": shown.append(b))
        asyncio.run(run_mcp(app, "list"))
        assert shown[0].splitlines()[0] == "- `stub` (local) - not connected (--no-mcp)\\"
    finally:
        hooks.unconfigure(config)
    parser = build_parser(config.options)
    assert parser.parse_args(["--no-mcp"]).opt_mcp is False


async def test_meta_tools_call_through_and_keep_the_rules(tmp_path):
    calls = tmp_path / "calls"
    config, hooks = boot(tmp_path, {"stub": stub("--calls", str(calls))},
                         builtins=("mcp", "openai"), file_data={"mcp_meta_tools": True,
                                    "permission": {"mcp__stub__crash": "deny"}})
    try:
        tools = hooks.tools(config)
        assert sorted(n for n in tools if n.startswith("mcp")) == ["mcp_call", "mcp_inspect",
                                                                   "mcp_list"]
        listing = await run_tool(tools["mcp_list"], {}, config)
        assert "stub:\n  echo: Echo the text back." in listing.output
        inspect = await run_tool(tools["mcp_inspect"], {"server": "stub", "tool": "echo"}, config)
        assert '"required": [\n    "text"\n  ]' in inspect.output
        echoed = await run_tool(tools["mcp_call"], {"server": "stub", "tool": "echo",
                                                    "arguments": {"text": "via meta"}}, config)
        assert echoed.output == "via meta"
        bad = await run_tool(tools["mcp_call"], {"server": "stub", "tool": "echo",
                                                 "arguments": {}}, config)
        assert bad.is_error and "'text' is a required property" in bad.output
        from agent.testing import gate_decision

        session = make_session(config, hooks)
        decision = await gate_decision(config, hooks, tools["mcp_call"],
                                       {"server": "stub", "tool": "crash"}, yolo=True,
                                       session=session)
        assert not decision.allowed and "mcp__stub__crash (through mcp_call)" in decision.message
        assert len(calls.read_text().splitlines()) == 1
    finally:
        hooks.unconfigure(config)


# ---- real servers ---------------------------------------------------------------------------


async def test_git_server_over_stdio(git_server):
    config, repo = git_server.config, git_server.repo
    await asyncio.to_thread(wait_connected, config)
    status = await run_tool(tool_of(config, "git", "git_status"), {"repo_path": str(repo)},
                            config)
    assert not status.is_error
    assert "On branch trunk" in status.output and "new.txt" in status.output


@pytest.fixture(scope="module")
def http_server():
    """An SDK-built MCP server over Streamable HTTP that wants ``X-Test-Token: sesame``."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from starlette.responses import JSONResponse

    server = MCPServer("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    inner = server.streamable_http_app()

    async def app(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"x-test-token") != b"sesame":
            await JSONResponse({"error": "no token"}, status_code=401)(scope, receive, send)
            return
        await inner(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not web.started and time.monotonic() < deadline:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    web.should_exit = True
    thread.join(5)


async def test_http_server_with_headers(tmp_path, http_server):
    config, hooks = boot(tmp_path, {
        "calc": {"url": http_server, "headers": {"X-Test-Token": "sesame"}},
        "nokey": {"url": http_server}})
    try:
        hooks.tools(config)
        await asyncio.to_thread(wait_connected, config)
        added = await run_tool(tool_of(config, "calc", "add"), {"a": 2, "b": 3}, config)
        assert added.output == "5" and not added.is_error
        echoed = await run_tool(tool_of(config, "calc", "echo"), {"text": "over http"}, config)
        assert echoed.output == "over http"
        nokey = await run_tool(state(config).factory.tool("nokey", {"name": "add"}), {}, config)
        assert nokey.output == (f'mcp server "nokey" failed to start: HTTP 401 from '
                                f"{http_server} (check the server's headers in the config); "
                                "it will be reconnected on the next call")
        shown = []
        app = SimpleNamespace(config=config, info=lambda t, b=None, hint="": shown.append(b))
        await run_mcp(app, "")
        assert "- `calc` (remote) - 2 tools\\" in shown[0].splitlines()
        assert f"  `{http_server}`" in shown[0].splitlines()
    finally:
        hooks.unconfigure(config)


@pytest.mark.e2e
def test_headless_run_calls_the_time_server(time_server, fake_provider):
    """The acceptance run: with the tools cached by an earlier connection (the module's own
    time server, same config), `agent -p ... --yolo --json` offers them at once and the call
    reaches the real server the run starts."""
    wait_connected(time_server.config)  # connected once: the tool list is cached
    assert state(time_server.config).manager.state_of("time") == ("connected", "")
    before = pids_with(time_server.marker)
    assert len(before) == 1  # the module's own server
    fake_provider.script(Reply.tool_call("mcp__time__get_current_time", {"timezone": "UTC"},
                                         id="c1"), Reply.text("It is now."))
    proc = run_agent(["-p", "what time is it in UTC", "--yolo", "--json", "--provider",
                      "openai", "--base-url", fake_provider.openai_url, "--model", "m"],
                     home=time_server.home, cwd=time_server.ws, OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    offered = [t["function"]["name"] for t in fake_provider.bodies[0]["tools"]]
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(offered)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    result = next(e for e in events if e["type"] == "tool-result")
    assert result["name"] == "mcp__time__get_current_time"
    answer = json.loads(result["output"])
    assert answer["timezone"] == "UTC" and answer["datetime"].endswith("+00:00")
    tool_message = fake_provider.bodies[1]["messages"][-1]
    assert tool_message["role"] == "tool" and json.loads(tool_message["content"]) == answer
    assert pids_with(time_server.marker) == before  # the run's own server exited with it


def test_headless_first_request_carries_a_new_servers_tools(tmp_path, fake_provider):
    """Nothing cached (a fresh AGENT_HOME) and a server slow to start: the first request of
    `agent -p` still offers its tools, and a first step that calls one succeeds."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    gate, asked = tmp_path / "gate", tmp_path / "asked"
    args = json.dumps([STUB, "--start-when", str(gate), "--asked", str(asked)])
    (home / "config.toml").write_text(
        "mcp_startup_timeout = 120\n"  # generous: a loaded machine starts Python slowly
        f'[mcp_servers.stub]\ncommand = "{sys.executable}"\nargs = {args}\n')
    fake_provider.script(Reply.tool_call("mcp__stub__echo", {"text": "first try"}, id="c1"),
                         Reply.text("done"))
    # The server starts answering only once the run has asked it to initialize.
    opener = threading.Thread(target=asyncio.run, args=(open_gate_once_asked(asked, gate),))
    opener.start()
    try:
        proc = run_agent_here(["-p", "echo it", "--yolo", "--json", "--provider", "openai",
                               "--base-url", fake_provider.openai_url, "--model", "m"],
                              home=home, cwd=ws, OPENAI_API_KEY="x")
    finally:
        opener.join()
    assert proc.returncode == 0, proc.stderr
    offered = {t["function"]["name"] for t in fake_provider.bodies[0]["tools"]}
    assert "mcp__stub__echo" in offered
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    result = next(e for e in events if e["type"] == "tool-result")
    assert result["name"] == "mcp__stub__echo" and not result.get("is_error")
    assert "first try" in fake_provider.bodies[1]["messages"][-1]["content"]


def test_headless_stops_waiting_after_mcp_startup_timeout(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    ready, pidfile = tmp_path / "ready", tmp_path / "pids"
    args = json.dumps([STUB, "--startup-delay", "30", "--ready", str(ready), "--pidfile",
                       str(pidfile)])
    marker = f"MCP_TEST_MARK_{uuid.uuid4().hex}"
    (home / "config.toml").write_text(
        "mcp_startup_timeout = 0.5\n"
        f'[mcp_servers.slow]\ncommand = "{sys.executable}"\nargs = {args}\n'
        f'env = {{ {marker} = "1" }}\n')
    fake_provider.script(Reply.text("hello"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello\n"
    assert "mcp slow failed: not ready after 0.5 s" in proc.stderr
    assert not ready.exists()  # it never finished starting...
    assert len(fake_provider.bodies) == 1  # ...yet the prompt went out, without its tools
    assert not any(t["function"]["name"].startswith("mcp__")
                   for t in fake_provider.bodies[0]["tools"])
    # Nothing of the server outlives the run, whether or not it got as far as writing its
    # pid (a loaded machine may take longer than the 0.5 s to start Python at all).
    assert not any(alive(p) for p in pids(pidfile)) and pids_with(marker) == []


def test_shell_commands(stubbed, tmp_path, capsys):
    assert cli_mcp(["list"], SimpleNamespace(config=stubbed.config)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "- stub (local) - 9 tools"
    assert out[2] == "  tools: echo, fail, structured, picture, env, cwd, crash, hang, grow"
    assert out[-1] == f"configured in {stubbed.config.config_file}"

    config, hooks = boot(tmp_path, {})
    try:
        ns = SimpleNamespace(config=config)
        assert cli_mcp(["add", "web", "https://h.test/mcp", "--header", "X-Key: 1"], ns) == 0
        assert capsys.readouterr().out.splitlines()[0] == "added mcp server web (https://h.test/mcp)"
        assert cli_mcp(["add", "bad_name", "--", "x"], ns) == 2
        assert "use letters, digits and hyphens only" in capsys.readouterr().err
        assert cli_mcp(["remove", "web"], ns) == 0
        assert cli_mcp(["remove", "web"], ns) == 2
        assert 'no MCP server named "web"' in capsys.readouterr().err
        assert tomllib.loads(config.config_file.read_text()).get("mcp_servers", {}) == {}
    finally:
        hooks.unconfigure(config)
    # From the shell, through the plugin subcommand.
    home = tmp_path / "shell-home"
    proc = run_agent_here(["mcp", "add", "time", "--", "uvx", "mcp-server-time"], home=home,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "added mcp server time (uvx mcp-server-time)"
    assert tomllib.loads((home / "config.toml").read_text())["mcp_servers"] == {
        "time": {"command": "uvx", "args": ["mcp-server-time"]}}
