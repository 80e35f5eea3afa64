"""The undo plugin (snapshots before every mutating call, /undo, /redo) and the
``agent_before_tool_call`` hook it is built on."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

from agent import Effects, Tool, Verdict, hookimpl
from agent.testing import collect, make_boot, make_session


def _writer(seen: list[str]) -> Tool:
    async def run(args, ctx):
        seen.append("ran " + args["path"])
        ctx.resolve(args["path"]).write_text("new")
        return "wrote"

    return Tool("put", "write a file", run,
                {"type": "object", "properties": {"path": {"type": "string"}}},
                effects=lambda a: Effects(writes=(a["path"],)))


async def test_agent_before_tool_call_runs_before_allowed_calls_only(tmp_path, fake_provider):
    seen: list[str] = []

    class Probe:
        @hookimpl
        def agent_register_tools(self, register, config):
            register(_writer(seen))

        @hookimpl
        def agent_guard_tool_call(self, call, effects, session):
            if "locked" in call.arguments.get("path", ""):
                return Verdict.deny("locked")

        @hookimpl
        def agent_before_tool_call(self, call, effects, session):
            target = session.workspace / effects.writes[0]
            seen.append(f"before {effects.writes[0]} exists={target.exists()}")

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai"],
                              extra=[("probe", Probe())], flags={"yolo": True})
    fake_provider.script(
        Reply(tool_calls=[("put", {"path": "locked.txt"}), ("put", {"path": "a.txt"})]),
        Reply.text("done"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "go")
    assert seen == ["before a.txt exists=False", "ran a.txt"]
    assert not (ws / "locked.txt").exists()
