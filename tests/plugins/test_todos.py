"""The task list: todo_write results and warnings, the prompt block on the wire, resume."""

from __future__ import annotations

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent.loop.session import Runtime
from agent.testing import collect, gate_decision, make_boot, make_session, run_tool
from plugins_builtin import todos as todos_plugin
from plugins_builtin.todos import TODO_WRITE


@pytest.fixture
def boot(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return make_boot(ws, tmp_path / "home", builtins=["todos", "openai", "sessions"])


@pytest.fixture
def session(boot):
    config, hooks = boot
    return hooks.open_session(Runtime(config=config, hooks=hooks, tools=hooks.tools(config),
                                      provider=None, model="m"))


def item(content, status, note=None):
    out = {"content": content, "status": status}
    if note is not None:
        out["note"] = note
    return out


async def write(boot, session, todos):
    config, _ = boot
    return await run_tool(TODO_WRITE, {"todos": todos}, config, session=session)


async def test_the_list_is_replaced_and_rendered(boot, session):
    first = await write(boot, session, [item("a", "done"), item("b", "in_progress"),
                                        item("c", "pending", "after b")])
    assert not first.is_error
    assert first.output == ("Task list updated: 1/3 done.\n"
                            "- [x] a\n- [~] b\n- [ ] c (after b)")
    second = await write(boot, session, [item("  only   one ", "in_progress")])
    assert second.output == "Task list updated: 0/1 done.\n- [~] only one"
    assert session.data["todos"] == [{"content": "only one", "status": "in_progress"}]
    empty = await write(boot, session, [])
    assert empty.output == "Task list updated: 0/0 done."
    assert todos_plugin.todos_text(session) == "No task list yet."


@pytest.mark.parametrize("todos,warnings", [
    ([item("a", "in_progress"), item("b", "in_progress"), item("c", "in_progress")],
     ["Warning: 3 tasks are in_progress; keep it to one."]),
    ([item("a", "done"), item("b", "pending")],
     ["Warning: nothing is in_progress; mark what you are working on."]),
    ([item("a", "in_progress"), item("stuck", "blocked")],
     ['Warning: "stuck" is blocked with no note saying why.']),
    ([item("a", "done"), item("stuck", "blocked", "needs the API key")], []),
    ([item("a", "done"), item("b", "done")], []),
])
async def test_warnings(boot, session, todos, warnings):
    result = await write(boot, session, todos)
    assert [line for line in result.output.splitlines() if line.startswith("Warning")] \
        == warnings


async def test_bad_input_is_refused_with_a_specific_message(boot, session):
    bad_status = await write(boot, session, [item("a", "started")])
    assert bad_status.is_error and "'started' is not one of" in bad_status.output
    blank = await write(boot, session, [item("a", "done"), item("   ", "pending")])
    assert blank.is_error and blank.output.startswith("Task 2 has no content.")
    assert "todos" not in session.data  # nothing half-written


async def test_todo_write_needs_no_approval(boot):
    config, hooks = boot
    decision = await gate_decision(config, hooks, TODO_WRITE, {"todos": [item("a", "done")]})
    assert decision.allowed


def test_prompt_block_and_slash_command(session):
    assert todos_plugin.prompt_block([]) == ""
    session.data["todos"] = [item("a", "done"), item("b", "in_progress"),
                             item("c", "blocked", "waiting on review")]
    assert todos_plugin.prompt_block(session.data["todos"]) == (
        "Your task list (1/3 done, 1 blocked). Keep it current with todo_write:\n"
        "- [x] a\n- [~] b\n- [!] c (waiting on review)")

    class App:
        shown: list[str] = []
        info = shown.append

    app = App()
    app.session = session
    assert todos_plugin.run_todos(app, "") is None
    assert app.shown == ["- [x] a\n- [~] b\n- [!] c (waiting on review)"]


BLOCK = ("Your task list (0/2 done). Keep it current with todo_write:\n"
         "- [~] read the code\n- [ ] fix the bug")
PLAN = {"todos": [item("read the code", "in_progress"), item("fix the bug", "pending")]}


def system_prompt(request) -> str:
    return request.body["messages"][0]["content"]


async def test_the_list_is_in_the_next_steps_system_prompt(boot, fake_provider):
    config, hooks = boot
    fake_provider.script(Reply.tool_call("todo_write", PLAN, id="c1"), Reply.text("done"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "fix the bug")
    assert [e.type for e in events if e.type.startswith("tool")] == [
        "tool-start", "tool-call", "tool-result"]
    first, second = fake_provider.requests
    assert "Your task list" not in system_prompt(first)
    assert system_prompt(second).endswith(BLOCK)  # order 300: after the stable parts
    tool_names = [t["function"]["name"] for t in first.body["tools"]]
    assert "todo_write" in tool_names


def test_the_list_survives_continue(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    fake_provider.script(Reply.tool_call("todo_write", PLAN, id="c1"), Reply.text("planned"),
                         Reply.text("carrying on"))
    common = ["--provider", "openai", "--base-url", fake_provider.openai_url, "--model", "m"]
    first = run_agent_here(["-p", "plan the fix", *common], home=home, cwd=ws, OPENAI_API_KEY="x")
    assert first.returncode == 0, first.stderr
    assert "[denied]" not in first.stderr  # auto-approved even headless without --yolo
    again = run_agent_here(["-c", "-p", "continue", *common], home=home, cwd=ws, OPENAI_API_KEY="x")
    assert again.returncode == 0, again.stderr
    assert system_prompt(fake_provider.requests[2]).endswith(BLOCK)
