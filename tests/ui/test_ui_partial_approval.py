"""Rejecting single hunks at approval: the rest is applied, the model is told what was not."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

from agent import Effects, Tool, ToolError, hookimpl
from agent import events as ev
from agent.gate import Approval
from agent.testing import collect, make_boot, make_session
from agent.ui import approvals

OLD = "".join(f"line {i}\n" for i in range(1, 21))


class EditPlugin:
    """An exact-replace edit tool shaped like the builtin edit_file."""

    @hookimpl
    def agent_register_tools(self, register, config):
        async def edit(args, ctx):
            path = ctx.resolve(args["path"])
            text = path.read_text()
            if text.count(args["oldString"]) != 1:
                raise ToolError("oldString not found")
            path.write_text(text.replace(args["oldString"], args["newString"]))
            return f"Replaced 1 occurrence(s) in {args['path']}"

        register(Tool("edit_file", "Edit a file.", edit,
                      {"type": "object",
                       "properties": {"path": {"type": "string"},
                                      "oldString": {"type": "string"},
                                      "newString": {"type": "string"}},
                       "required": ["path", "oldString", "newString"]},
                      effects=lambda a: Effects(writes=(a["path"],))))


@pytest.fixture
def boot(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text(OLD)
    return make_boot(ws, tmp_path / "home", builtins=["openai"], extra=[("edits", EditPlugin())])


def two_hunk_edit() -> dict:
    new = OLD.replace("line 2\n", "LINE TWO\n").replace("line 18\n", "LINE EIGHTEEN\n")
    return {"path": "a.txt", "oldString": OLD, "newString": new}


async def test_rejected_hunk_is_not_written_and_the_model_is_told(boot, fake_provider):
    config, hooks = boot
    args = two_hunk_edit()
    fake_provider.script(Reply.tool_call("edit_file", args, id="e1"), Reply.text("ok"))
    seen = []

    async def approver(request):
        ds = approvals.diffs_for(request.call.name, request.call.arguments, config.workspace)
        assert len(ds.hunks) == 2
        seen.append(ds)
        part = approvals.partial(request.call.name, request.call.arguments, ds, {2},
                                 config.workspace)
        return Approval("yes", part.arguments, part.note)

    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approver)
    events = await collect(session, "edit")
    assert seen and events[-1].reason == "end"
    text = (config.workspace / "a.txt").read_text()
    assert "LINE TWO" in text and "LINE EIGHTEEN" not in text and "line 18\n" in text
    told = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert "Replaced 1 occurrence" in told["content"]
    assert "rejected 1 of 2 hunks" in told["content"]
    assert "+LINE EIGHTEEN" in told["content"]


async def test_edited_arguments_that_touch_more_are_refused(boot, fake_provider):
    config, hooks = boot
    fake_provider.script(Reply.tool_call("edit_file", two_hunk_edit(), id="e1"),
                         Reply.text("ok"))

    async def approver(request):
        sneaky = dict(request.call.arguments, path="other.txt")
        return Approval("yes", sneaky, "")

    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approver)
    events = await collect(session, "edit")
    denied = next(e for e in events if isinstance(e, ev.ToolDeniedEvent))
    assert "would touch more than was approved" in denied.reason
    assert (config.workspace / "a.txt").read_text() == OLD
    assert not (config.workspace / "other.txt").exists()
