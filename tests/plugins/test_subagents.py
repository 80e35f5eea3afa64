"""The task tool: subagents in parallel, approvals through the parent, usage attribution."""

from __future__ import annotations

import asyncio
import json
import threading

from fakeprovider import Reply
from waiting import until

from agent import Verdict, hookimpl
from agent.contract import events as ev
from agent.testing import collect, make_boot, make_session
from plugins_builtin.budget import spend
from plugins_builtin.budget.pricing import format_usd

BUILTINS = ["openai", "files", "bash", "git", "agents", "subagents", "budget"]
READ_SET = {"read_file", "read_many_files", "glob", "grep", "list_dir", "git_status",
            "git_diff", "git_log", "git_show", "git_blame", "git_branch"}
WORKER_SET = READ_SET | {"write_file", "edit_file", "multi_edit", "apply_patch", "bash"}


class Approvals:
    """The parent's approver: records every request, answers ``answer``."""

    def __init__(self, answer: str = "yes") -> None:
        self.answer = answer
        self.requests: list = []

    async def __call__(self, request):
        self.requests.append(request)
        return self.answer


class SecretGuard:
    @hookimpl
    def agent_guard_tool_call(self, call, effects, session):
        if any(p.endswith("secret.txt") for p in effects.writes):
            return Verdict.deny("secret.txt is off limits; ask the user", "testguard")
        return None


def boot(tmp_path, *, extra=(), file_data=None, headless=False, **flags):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return make_boot(ws, tmp_path / "home", builtins=BUILTINS, extra=extra,
                     file_data=file_data, flags=flags, headless=headless)


def system_of(request) -> str:
    return request.body["messages"][0]["content"]


def tool_names(request) -> set[str]:
    return {t["function"]["name"] for t in request.body.get("tools", [])}


def tool_results(request) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.body["messages"]
            if m["role"] == "tool"}


def children(server, kind: str = "explore") -> list:
    """The model requests a subagent of ``kind`` made, in arrival order."""
    marks = (f"You are an {kind} subagent", f"You are a {kind} subagent")
    return [r for r in server.requests
            if r.method == "POST" and any(m in system_of(r) for m in marks)]


def task(description: str, prompt: str, kind: str | None = None, id: str = "t1"):
    args = {"description": description, "prompt": prompt}
    if kind:
        args["kind"] = kind
    return ("task", args, id)


# ---- parallel explore subagents -------------------------------------------------------------

def running(session, prompt: str) -> tuple[list, asyncio.Task]:
    """The turn for ``prompt`` running in the background, and the events it has sent so far."""
    events: list = []

    async def run() -> None:
        async for event in session.run(prompt):
            events.append(event)

    return events, asyncio.ensure_future(run())


async def test_two_tasks_in_one_step_overlap(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    answer = threading.Event()  # neither child can finish until both have asked the model
    fake_provider.script(
        Reply(tool_calls=[task("look at A", "find A"), task("look at B", "find B", id="t2")]),
        Reply.held(answer, reply=Reply.text("finding one")),
        Reply.held(answer, reply=Reply.text("finding two")),
        Reply.text("both done"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events, turn = running(session, "explore both")
    await until(lambda: len(children(fake_provider)) == 2, "both children to ask at once")
    answer.set()
    await turn
    first, second = children(fake_provider)
    results = tool_results(fake_provider.requests[-1])
    assert sorted(results.values()) == ["finding one", "finding two"]
    # Each child saw only its own prompt, under the explore prompt and the read-only tools.
    assert {first.body["messages"][1]["content"], second.body["messages"][1]["content"]} == {
        "find A", "find B"}
    assert len(first.body["messages"]) == 2 and tool_names(first) == READ_SET
    records = session.data["subagents"]
    assert [(r["kind"], r["status"], r["steps"]) for r in records] == [
        ("explore", "done", 1), ("explore", "done", 1)]
    output = "".join(e.chunk for e in events if isinstance(e, ev.ToolOutputEvent))
    assert "explore: look at A" in output and "explore: done in 1 steps" in output


async def test_concurrency_limit_runs_them_in_turn(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, subagent_concurrency=1)
    answer = threading.Event()  # the first child cannot finish until the test has looked
    fake_provider.script(
        Reply(tool_calls=[task("look at A", "find A"), task("look at B", "find B", id="t2")]),
        Reply.held(answer, reply=Reply.text("finding one")), Reply.text("finding two"),
        Reply.text("both done"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events, turn = running(session, "explore both")

    def output() -> str:
        return "".join(e.chunk for e in events if isinstance(e, ev.ToolOutputEvent))

    await until(lambda: "(queued)" in output() and children(fake_provider),
                "the second task to wait while the first child runs")
    assert len(children(fake_provider)) == 1  # the second has not started: one slot
    answer.set()
    await turn
    assert [r.body["messages"][1]["content"] for r in children(fake_provider)] == [
        "find A", "find B"]


async def test_explore_subagent_never_asks_the_user(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, file_data={"permission": {"read_file": "ask"}})
    (config.workspace / "notes.txt").write_text("private")
    approvals = Approvals("yes")
    fake_provider.script(
        Reply.tool_call(*task("read notes", "read notes.txt")),
        Reply.tool_call("read_file", {"path": "notes.txt"}, id="r1"),
        Reply.text("could not read it"),
        Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url,
                           approver=approvals)
    await collect(session, "go")
    assert approvals.requests == []
    told = tool_results(children(fake_provider)[1])["r1"]
    assert "explore subagent never asks" in told and "private" not in told


async def test_empty_report_and_the_step_cap(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    fake_provider.script(
        Reply(tool_calls=[task("nothing", "say nothing")]), Reply.text(""), Reply.text("ok"),
        Reply.tool_call(*task("forever", "keep looking", id="t2")),
        *[Reply.tool_call("glob", {"pattern": f"*.{i}"}, id=f"g{i}") for i in range(20)],
        Reply.text("done"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "first")
    # An empty answer is never a silent end: the parent's model is told what happened.
    report = tool_results(fake_provider.requests[2])["t1"]
    assert report.startswith("The explore subagent failed: ") and report.endswith(
        "the model returned nothing"), report
    events = await collect(session, "second")
    assert len(children(fake_provider)) == 21  # 1 + the second child's 20 steps
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert "stopped at its 20-step cap" in result.output


# ---- the worker and the parent's gate ----------------------------------------------------------


async def test_worker_write_is_approved_by_the_parent_as_origin_worker(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    approvals = Approvals("yes")
    fake_provider.script(
        Reply.tool_call(*task("write the note", "create note.txt saying hi", "worker")),
        Reply.tool_call("write_file", {"path": "note.txt", "content": "hi"}, id="w1"),
        Reply.text("Wrote note.txt."),
        Reply.text("The worker wrote it."))
    session = make_session(config, hooks, base_url=fake_provider.openai_url,
                           approver=approvals)
    events = await collect(session, "delegate")
    assert (config.workspace / "note.txt").read_text() == "hi"
    [asked] = approvals.requests
    assert (asked.origin, asked.call.name, asked.call.arguments["path"]) == (
        "worker", "write_file", "note.txt")
    child = children(fake_provider, "worker")[0]
    assert tool_names(child) == WORKER_SET
    assert "A denied call is final" in system_of(child)
    assert tool_results(fake_provider.requests[-1])["t1"] == "Wrote note.txt."
    assert events[-1].reason == "end"


async def test_guard_refusal_in_the_worker_is_final(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, extra=[("testguard", SecretGuard())])
    approvals = Approvals("yes")
    fake_provider.script(
        Reply.tool_call(*task("write secret", "put x in secret.txt", "worker")),
        Reply.tool_call("write_file", {"path": "secret.txt", "content": "x"}, id="w1"),
        Reply.text("Blocked; nothing written."),
        Reply.text("The worker could not write."))
    session = make_session(config, hooks, base_url=fake_provider.openai_url,
                           approver=approvals)
    await collect(session, "delegate")
    assert not (config.workspace / "secret.txt").exists()
    assert approvals.requests == []  # a guard's deny is never put to the user
    told = tool_results(children(fake_provider, "worker")[1])["w1"]
    assert told.startswith("Blocked by the testguard plugin: secret.txt is off limits")


async def test_guard_refusal_holds_under_yolo_too(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, extra=[("testguard", SecretGuard())], yolo=True)
    fake_provider.script(
        Reply.tool_call(*task("write secret", "put x in secret.txt", "worker")),
        Reply.tool_call("write_file", {"path": "secret.txt", "content": "x"}, id="w1"),
        Reply.text("Blocked."), Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url,
                           approver=Approvals("yes"))
    await collect(session, "delegate")
    assert not (config.workspace / "secret.txt").exists()


async def test_user_denial_tells_the_worker_to_stop(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    approvals = Approvals("no")
    fake_provider.script(
        Reply.tool_call(*task("run it", "run make", "worker")),
        Reply.tool_call("bash", {"command": "touch made.txt"}, id="b1"),
        Reply.text("The user denied bash."),
        Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url,
                           approver=approvals)
    await collect(session, "delegate")
    assert not (config.workspace / "made.txt").exists()
    assert [r.origin for r in approvals.requests] == ["worker"]
    told = tool_results(children(fake_provider, "worker")[1])["b1"]
    assert told == "The user denied this call. Stop and report it."


async def test_headless_offers_no_worker_and_refuses_an_explicit_one(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, headless=True)
    fake_provider.script(
        Reply.tool_call(*task("write", "write a file", "worker")), Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)  # no approver
    await collect(session, "delegate")
    first = fake_provider.requests[0]
    task_spec = next(t["function"] for t in first.body["tools"]
                     if t["function"]["name"] == "task")
    assert task_spec["parameters"]["properties"]["kind"]["enum"] == ["explore", "review"]
    assert "worker" not in task_spec["description"]
    assert tool_results(fake_provider.requests[1])["t1"] == (
        "The worker kind needs an approval channel, which this session has not provided.")
    assert len(fake_provider.requests) == 2  # no subagent ran


async def test_no_subagent_flag_removes_the_task_tool(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, subagent=False)
    fake_provider.script(Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "hi")
    assert "task" not in tool_names(fake_provider.requests[0])
    assert "read_file" in tool_names(fake_provider.requests[0])


# ---- usage and cost ---------------------------------------------------------------------------


async def test_subagent_usage_is_attributed_and_priced_at_its_model(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, subagent_model="gpt-5-mini")
    fake_provider.script(
        Reply.tool_call(*task("count", "count files"), usage={"input_tokens": 100,
                                                              "output_tokens": 10}),
        Reply.text("3 files", usage={"input_tokens": 1000, "output_tokens": 200}),
        Reply.text("done", usage={"input_tokens": 200, "output_tokens": 20}))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5")
    events = await collect(session, "count")
    assert children(fake_provider)[0].body["model"] == "gpt-5-mini"
    assert session.data["subagent_usage"]["input_tokens"] == 1000
    assert session.data["subagent_usage"]["output_tokens"] == 200
    assert session.usage.input_tokens == 1300  # the parent's totals include the subagent's
    book = spend.ledger(session)
    assert book.subagents.usd == (1000 * 0.25 + 200 * 2) / 1e6
    assert book.own.usd == (300 * 1.25 + 30 * 10) / 1e6
    done = events[-1]
    assert done.input_tokens == 300 and done.cost_usd == book.own.usd
    text = hooks.commands(config).get("cost").run(type("App", (), {"session": session})(), "")
    lines = text.splitlines()
    own, sub = format_usd(book.own.usd), format_usd(book.subagents.usd)
    assert (own, sub) == ("$0.0007", "$0.0006")  # 0.000675 and 0.00065
    assert lines[0] == f"session: 300 in / 30 out tokens, 2 requests - {own}"
    assert lines[1] == f"subagents: 1,000 in / 200 out tokens, 1 requests - {sub}"
    assert lines[2] == "total: 1,300 in / 230 out tokens, 3 requests - $0.0013"
    record = session.data["subagents"][0]
    assert json.loads(json.dumps(record))["model"] == "gpt-5-mini"  # plain JSON for the UI


async def test_ctrl_c_stops_a_running_subagent_and_the_turn_goes_on(tmp_path, fake_provider):
    import asyncio

    config, hooks = boot(tmp_path)
    fake_provider.script(Reply.tool_call(*task("slow", "take your time")), Reply.stall(10),
                         Reply.text("stopped it"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    turn = asyncio.create_task(collect(session, "go"))
    await asyncio.to_thread(fake_provider.wait_requests, 2)
    assert session.data["subagents"][0]["status"] == "running"
    assert session.interrupt_tools() == ["t1"]
    events = await asyncio.wait_for(turn, 10)
    assert session.data["subagents"][0]["status"] == "cancelled"
    assert "The user interrupted" in tool_results(fake_provider.requests[-1])["t1"]
    assert events[-1].reason == "end" and spend.ledger(session).reserved == {}
