"""Rejecting single hunks at approval: the rest is applied, the model is told what was not."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

from agent import Change, Description, Effects, Tool, ToolError, hookimpl
from agent.contract import events as ev
from agent.loop.gate import Approval
from agent.testing import collect, make_boot, make_session
from agent.ui import approvals

OLD = "".join(f"line {i}\n" for i in range(1, 21))


class EditPlugin:
    """A third-party exact-replace tool, named like no builtin: it gets the diff dialog and
    hunk-by-hunk approval only by describing its calls (``Description.changes`` and
    ``revise``)."""

    @hookimpl
    def agent_register_tools(self, register, config):
        async def edit(args, ctx):
            path = ctx.resolve(args["file"])
            text = path.read_text()
            if text.count(args["find"]) != 1:
                raise ToolError("find not found")
            path.write_text(text.replace(args["find"], args["replace"]))
            return f"Replaced 1 occurrence(s) in {args['file']}"

        def describe(args):
            return Description(
                (args["file"],), f"Swap text in {args['file']}?",
                (Change(args["file"], args["find"], args["replace"]),),
                lambda texts: dict(args, replace=texts[0]))

        register(Tool("swap_text", "Replace text in a file.", edit,
                      {"type": "object",
                       "properties": {"file": {"type": "string"},
                                      "find": {"type": "string"},
                                      "replace": {"type": "string"}},
                       "required": ["file", "find", "replace"]},
                      effects=lambda a: Effects(writes=(a["file"],)), describe=describe))


@pytest.fixture
def boot(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text(OLD)
    return make_boot(ws, tmp_path / "home", builtins=["openai"], extra=[("edits", EditPlugin())])


def two_hunk_edit() -> dict:
    new = OLD.replace("line 2\n", "LINE TWO\n").replace("line 18\n", "LINE EIGHTEEN\n")
    return {"file": "a.txt", "find": OLD, "replace": new}


async def test_rejected_hunk_is_not_written_and_the_model_is_told(boot, fake_provider):
    config, hooks = boot
    args = two_hunk_edit()
    fake_provider.script(Reply.tool_call("swap_text", args, id="e1"), Reply.text("ok"))
    seen = []

    async def approver(request):
        ds = approvals.diffs_for(request.tool, request.call.arguments, config.workspace)
        assert len(ds.hunks) == 2
        seen.append(ds)
        part = approvals.partial(request.tool, request.call.arguments, ds, {2},
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
    fake_provider.script(Reply.tool_call("swap_text", two_hunk_edit(), id="e1"),
                         Reply.text("ok"))

    async def approver(request):
        sneaky = dict(request.call.arguments, file="other.txt")
        return Approval("yes", sneaky, "")

    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approver)
    events = await collect(session, "edit")
    denied = next(e for e in events if isinstance(e, ev.ToolDeniedEvent))
    assert "would touch more than was approved" in denied.reason
    assert (config.workspace / "a.txt").read_text() == OLD
    assert not (config.workspace / "other.txt").exists()


async def test_a_third_party_edit_tool_gets_the_diff_dialog_on_screen(tmp_path, fake_provider):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from ui_harness import idle, make_app, press, wait_for

    app = make_app(tmp_path, fake_provider.openai_url, extra=[("edits", EditPlugin())])
    (app.workspace / "a.txt").write_text(OLD)
    app.approval_guard = 0.0
    fake_provider.script(Reply.tool_call("swap_text", two_hunk_edit(), id="e1"),
                         Reply.text("Swapped."))
    app.start()
    app.root.keypress(app.size, "x")
    app.root.keypress(app.size, "enter")
    rows = await wait_for(app, "Swap text in a.txt?")
    lines = rows.splitlines()
    assert any(line.startswith("│a.txt  +2 -2") for line in lines), rows
    # the file's own line numbers; the selected hunk marked
    assert any(line.startswith("│▌ 2 - line 2") for line in lines)
    assert any(line.startswith("│▌ 2 + LINE TWO") for line in lines)
    assert any(line.startswith("│ 18 + LINE EIGHTEEN") for line in lines)
    assert "hunk 1/2 accepted" in rows
    await press(app, "down", " ")
    rows = await wait_for(app, "hunk 2/2 rejected")
    assert "1 rejected: the rest is applied" in rows
    await press(app, "y")
    await idle(app)
    text = (app.workspace / "a.txt").read_text()
    assert "LINE TWO" in text and "LINE EIGHTEEN" not in text and "line 18\n" in text
    told = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert "rejected 1 of 2 hunks of this swap_text call" in told["content"]
