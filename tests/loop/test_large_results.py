"""Large results are kept, not cut: a 20 MB answer from an SDK-built stdio MCP server
arrives (it used to be reported as "did not answer within 60 s"), is saved whole under the
state dir, the model sees its head and tail and the path, and read_file can page through
that path (and no other file under the state dir).  The server is started through the test
servers' fork server (tests/mcp_forkserver.py): a process of its own on the agent's pipes,
without a new interpreter importing the MCP SDK."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from fakeprovider import Reply
from mcp_forkserver import server_command

from agent.contract.tools import RESULT_CAP
from agent.testing import collect, make_boot, make_session

pytestmark = pytest.mark.timeout(240)

SERVER = str(Path(__file__).parents[1].joinpath("mcp_big_server.py"))
SIZE = 20_000_000


def tool_messages(request) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.body["messages"]
            if m["role"] == "tool"}


def pointer(told: str) -> str:
    return told.split(" are saved in ", 1)[1].split(": read_file that path", 1)[0]


async def test_a_20_mb_mcp_result_arrives_and_is_kept_whole(tmp_path, fake_provider):
    from plugins_builtin.mcp import state

    ws = tmp_path / "ws"
    ws.mkdir()
    command, args = server_command(SERVER)
    servers = {"big": {"command": command, "args": args, "timeout": 60}}
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["mcp", "openai", "files"],
                              file_data={"mcp_servers": servers}, flags={"yolo": True})
    try:
        await asyncio.to_thread(state(config).manager.wait, 60)
        session = make_session(config, hooks, base_url=fake_provider.openai_url)
        fake_provider.script(
            Reply.tool_call("mcp__big__big", {"size": SIZE}, id="c1"),
            Reply.text("got it"))
        events = await collect(session, "fetch the big one")
        assert events[-1].reason == "end"
        told = tool_messages(fake_provider.requests[1])["c1"]
        assert "did not answer" not in told
        assert len(told) <= RESULT_CAP
        assert told.startswith("line 00000000 ") and told.endswith("THE-END")
        saved = Path(pointer(told))
        assert saved.is_relative_to(config.state_dir / "results" / session.id)
        assert os.stat(saved).st_mode & 0o777 == 0o600
        text = saved.read_text()
        assert len(text) >= SIZE - 8 and text.endswith("THE-END")
        lines = text.count("\n") + 1
        assert f"[{lines:,} lines, {len(text):,} chars in all; " in told

        # The model can read the rest through the pointer, and only through it.
        fake_provider.script(
            Reply.tool_call("read_file", {"path": str(saved), "offset": 150_000, "limit": 2},
                            id="r1"),
            Reply.tool_call("read_file", {"path": str(config.state_dir / "agent.db")},
                            id="r2"),
            Reply.text("read"))
        await collect(session, "read the middle")
        read = tool_messages(fake_provider.requests[-1])
        assert read["r1"] == ("150000: line 00149999 " + "x" * 50 + "\n150001: line 00150000 "
                              + "x" * 50 + "\n... [lines 150000-150001 of "
                              f"{text.count(chr(10)) + 1} shown; continue with offset=150002]")
        assert read["r2"].startswith("Path escapes workspace")
    finally:
        hooks.unconfigure(config)


async def test_bash_output_over_the_cap_is_saved_with_head_and_tail(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["bash", "openai"],
                              flags={"yolo": True})
    try:
        session = make_session(config, hooks, base_url=fake_provider.openai_url)
        command = "echo FIRST; seq 1 100000; echo LAST"  # 589 KB: more than the cap
        fake_provider.script(Reply.tool_call("bash", {"command": command}, id="b1"),
                             Reply.text("ok"))
        await collect(session, "count")
        told = tool_messages(fake_provider.requests[1])["b1"]
        assert len(told) <= RESULT_CAP
        assert told.startswith("exit: 0\nstdout:\nFIRST\n1\n2\n")  # the head
        assert "\n99999\n100000\nLAST" in told[-14_000:]  # and the tail
        whole = Path(pointer(told)).read_text()
        expected = "FIRST\n" + "".join(f"{i}\n" for i in range(1, 100001)) + "LAST"
        assert whole.startswith("exit: 0\nstdout:\n" + expected)
    finally:
        hooks.unconfigure(config)


def test_results_under_the_cap_are_unchanged_and_nothing_is_saved(tmp_path):
    from agent.loop.saved_results import keep_large

    text = "y" * RESULT_CAP
    assert keep_large(text, state_dir=tmp_path, session_id="s", call_id="c") == text
    assert not (tmp_path / "results").exists()


def test_only_this_sessions_saved_results_are_readable(tmp_path):
    from agent.loop.saved_results import keep_large, resolve_saved

    class S:
        id = "sess-1"
        data: dict = {}

    told = keep_large("z" * 40_000, state_dir=tmp_path, session_id="sess-1", call_id="c9")
    saved = pointer(told)
    assert resolve_saved(saved, tmp_path, S()) == Path(saved)
    other = S()
    other.id = "sess-2"
    assert resolve_saved(saved, tmp_path, other) is None  # another session's result
    (tmp_path / "results" / "sess-1" / "link.txt").symlink_to(tmp_path / "secret")
    (tmp_path / "secret").write_text("s")
    assert resolve_saved(str(tmp_path / "results" / "sess-1" / "link.txt"), tmp_path, S()) \
        is None
    assert resolve_saved(str(tmp_path / "results" / "sess-1" / ".." / ".." / "secret"),
                         tmp_path, S()) is None
    forked = S()
    forked.id, forked.earlier_ids = "sess-3", ["sess-1"]
    assert resolve_saved(saved, tmp_path, forked) == Path(saved)
