"""The agent loop against the fake provider, through the real SDKs."""

from __future__ import annotations

import asyncio
import json

import pytest
from fakeprovider import Reply
from waiting import until

from agent import NO_EFFECTS, Effects, Fragment, Tool, hookimpl
from agent.contract import events as ev
from agent.testing import collect, make_boot, make_session


class Recorder:
    """A test plugin: a tool that writes a file, a read-only tool, a step-counting fragment."""

    def __init__(self) -> None:
        self.steps = 0
        self.runs: list[str] = []

    @hookimpl
    def agent_register_tools(self, register, config):
        async def write(args, ctx):
            ctx.resolve(args["path"]).write_text("written")
            self.runs.append("write")
            return "ok"

        async def peek(args, ctx):
            self.runs.append("peek:" + args["what"])
            await asyncio.sleep(0.05)
            return "peeked " + args["what"]

        register(Tool("write_marker", "Write a marker file.", write,
                      {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]},
                      effects=lambda a: Effects(writes=(a["path"],))))
        register(Tool("peek", "Look at something.", peek,
                      {"type": "object", "properties": {"what": {"type": "string"}},
                       "required": ["what"]},
                      effects=lambda a: NO_EFFECTS, read_only=True))

    @hookimpl
    def agent_prompt_fragments(self, session):
        self.steps += 1
        return Fragment("step-counter", f"This is step {self.steps}.", order=900)


@pytest.fixture
def boot(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    rec = Recorder()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "time"],
                              extra=[("recorder", rec)])
    return config, hooks, rec


def system_of(request) -> str:
    return request.body["messages"][0]["content"]


async def test_tool_call_then_answer_pairs_results_and_rebuilds_prompt(boot, fake_provider):
    config, hooks, rec = boot
    fake_provider.script(Reply.tool_call("current_time", {}, id="call_t"),
                         Reply.text("It is now."))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "what time is it")
    kinds = [e.type for e in events]
    assert kinds[0] == "tool-start" and "tool-call" in kinds and "tool-result" in kinds
    assert kinds[-1] == "done" and events[-1].reason == "end"
    first, second = fake_provider.requests
    assert "This is step 1." in system_of(first)
    assert "This is step 2." in system_of(second)  # fragments re-assembled every step
    offered = {t["function"]["name"] for t in first.body["tools"]}
    assert {"current_time", "write_marker", "peek"} <= offered
    msgs = second.body["messages"]
    call = next(m for m in msgs if m["role"] == "assistant")["tool_calls"][0]
    result = next(m for m in msgs if m["role"] == "tool")
    assert call["id"] == result["tool_call_id"] == "call_t"
    assert "T" in result["content"]  # an ISO timestamp


async def test_several_calls_in_one_step_all_run_and_are_answered(boot, fake_provider):
    config, hooks, rec = boot
    fake_provider.script(
        Reply(tool_calls=[("peek", {"what": "a"}, "c1"), ("peek", {"what": "b"}, "c2"),
                          ("nope", {}, "c3"), ("peek", '{"what": ', "c4")]),
        Reply.text("done"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "look")
    errors = {e.id: e.error for e in events if isinstance(e, ev.ToolErrorEvent)}
    assert "Unknown tool: nope" in errors["c3"]
    assert "not valid JSON" in errors["c4"]
    assert sorted(rec.runs) == ["peek:a", "peek:b"]
    answered = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == ["c1", "c2", "c3", "c4"]


async def test_schema_violation_is_a_tool_error_and_the_turn_goes_on(boot, fake_provider):
    config, hooks, rec = boot
    fake_provider.script(Reply.tool_call("peek", {"what": 5}, id="c1"), Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "look")
    err = next(e for e in events if isinstance(e, ev.ToolErrorEvent))
    assert "Invalid arguments for peek" in err.error and "not of type 'string'" in err.error
    assert rec.runs == [] and events[-1].reason == "end"


async def test_denied_call_never_runs_and_the_model_is_told(boot, fake_provider):
    config, hooks, rec = boot
    fake_provider.script(Reply.tool_call("write_marker", {"path": "m.txt"}, id="w1"),
                         Reply.text("understood"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)  # no approver
    events = await collect(session, "write it")
    denied = next(e for e in events if isinstance(e, ev.ToolDeniedEvent))
    assert denied.by == "headless"
    assert not (config.workspace / "m.txt").exists() and rec.runs == []
    told = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert "needs approval" in told["content"]


async def test_user_approval_runs_the_call_and_always_grants(boot, fake_provider):
    config, hooks, rec = boot
    asked = []

    async def approver(request):
        asked.append(request.call.name)
        return "always"

    fake_provider.script(Reply.tool_call("write_marker", {"path": "a.txt"}, id="w1"),
                         Reply.tool_call("write_marker", {"path": "b.txt"}, id="w2"),
                         Reply.text("both"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approver)
    await collect(session, "write two")
    assert (config.workspace / "a.txt").exists() and (config.workspace / "b.txt").exists()
    assert asked == ["write_marker"]  # the second call was covered by "always"


async def test_step_cap_ends_the_turn(boot, fake_provider):
    config, hooks, rec = boot
    fake_provider.script(*[Reply.tool_call("peek", {"what": str(i)}, id=f"c{i}")
                           for i in range(3)])
    session = make_session(config, hooks, base_url=fake_provider.openai_url, max_steps=2)
    events = await collect(session, "loop")
    assert events[-1].reason == "max_steps" and len(fake_provider.requests) == 2
    assert any(isinstance(e, ev.NoticeEvent) and "step cap" in e.text for e in events)


async def test_cancelling_the_turn_leaves_a_valid_history(boot, fake_provider):
    config, hooks, rec = boot
    fake_provider.script(Reply.stall(5, after=2, reply=Reply("partial answer", pieces=4)),
                         Reply.text("next"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    seen: list[ev.Event] = []

    async def consume():
        async for item in session.run("talk"):
            seen.append(item)

    task = asyncio.create_task(consume())
    await until(lambda: any(isinstance(e, ev.TextEvent) for e in seen), "the first text")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.messages[-1].role == "assistant" and session.messages[-1].text
    await collect(session, "again")
    roles = [m["role"] for m in fake_provider.requests[-1].body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


async def test_provider_error_ends_turn_with_clear_message(boot, fake_provider):
    config, hooks, rec = boot
    fake_provider.script(Reply.error(401, message="Incorrect API key provided"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "hi")
    error = next(e for e in events if isinstance(e, ev.ErrorEvent))
    assert "401" in error.error and "Incorrect API key provided" in error.error
    assert events[-1].reason == "error"


async def test_json_form_of_every_event_validates(boot, fake_provider):
    from pathlib import Path

    import jsonschema

    schema = json.loads((Path(__file__).parents[2] / "docs/events.schema.json").read_text())
    config, hooks, rec = boot
    fake_provider.script(Reply(reasoning="hmm", text="x",
                               tool_calls=[("peek", {"what": "a"}, "c1")]),
                         Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "hi")
    for event in events:
        jsonschema.validate(event.to_json(), schema)
