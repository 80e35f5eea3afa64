"""``agent acp`` end to end: the real process, driven by the ACP SDK's own client side, with
the real provider SDKs against the fake provider.  Every message the agent sends is checked
against the protocol's schema models shipped with the SDK."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, schema, text_block
from acp.connection import StreamDirection
from acp.schema import AllowedOutcome, RequestPermissionResponse
from acp.stdio import spawn_agent_process
from clirun import agent_env
from fakeprovider import Reply

pytestmark = pytest.mark.e2e


class EditorClient:
    """An editor as the SDK models one: it records every update and answers each
    permission request with ``answer`` (an option id, or an exception to raise)."""

    def __init__(self, answer: Any = "allow-once") -> None:
        self.answer = answer
        self.updates: list[Any] = []
        self.asked: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.asked.append((tool_call, [o.kind for o in options]))
        if isinstance(self.answer, Exception):
            raise self.answer
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=self.answer, outcome="selected"))

    def on_connect(self, conn: Any) -> None:
        pass

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))


#: What each answer and each message the agent sends must be, as the SDK's schema models
#: (generated from the protocol's JSON schema) define it.
RESULTS = {"initialize": schema.InitializeResponse, "session/new": schema.NewSessionResponse,
           "session/load": schema.LoadSessionResponse, "session/prompt": schema.PromptResponse,
           "session/set_mode": schema.SetSessionModeResponse}
AGENT_SENDS = {"session/update": schema.SessionNotification,
               "session/request_permission": schema.RequestPermissionRequest}


class SchemaCheck:
    """Validates every raw message the agent sends against the protocol's schema models."""

    def __init__(self) -> None:
        self.asked: dict[Any, str] = {}
        self.checked = 0
        self.problems: list[str] = []

    def __call__(self, event: Any) -> None:
        message = event.message
        if event.direction == StreamDirection.OUTGOING:
            if "method" in message and "id" in message:
                self.asked[message["id"]] = message["method"]
            return
        try:
            assert message.get("jsonrpc") == "2.0", "not JSON-RPC 2.0"
            if "method" in message:
                AGENT_SENDS[message["method"]].model_validate(message.get("params"))
            elif "result" in message:
                model = RESULTS.get(self.asked.get(message["id"], ""))
                if model is not None and message["result"] is not None:
                    model.model_validate(message["result"])
            else:
                assert isinstance(message["error"]["code"], int), "an error without a code"
            self.checked += 1
        except Exception as exc:
            self.problems.append(f"{json.dumps(message)[:300]}: {exc}")

    def assert_valid(self) -> None:
        assert self.checked and not self.problems, self.problems


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return tmp_path / "home", ws


def _env(home: Path, fake_provider: Any) -> dict[str, str]:
    return agent_env(home, OPENAI_API_KEY="sk-test", AGENT_PROVIDER="openai",
                     AGENT_BASE_URL=fake_provider.openai_url, AGENT_MODEL="m")


async def _session(client: EditorClient, home: Path, ws: Path, fake_provider: Any,
                   body: Any) -> Any:
    check = SchemaCheck()
    async with spawn_agent_process(client, sys.executable, "-m", "agent", "acp",
                                   env=_env(home, fake_provider), cwd=ws,
                                   observers=[check]) as (conn, proc):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.protocol_version == PROTOCOL_VERSION
        session = await conn.new_session(cwd=str(ws), mcp_servers=[])
        answer = await body(conn, session.session_id, proc)
    check.assert_valid()
    return answer


async def _prompt(client: EditorClient, home: Path, ws: Path, fake_provider: Any,
                  text: str) -> Any:
    """A new session and one prompt of ``text``: the prompt's answer."""
    async def body(conn, sid, proc):
        return await conn.prompt(session_id=sid, prompt=[text_block(text)])

    return await _session(client, home, ws, fake_provider, body)


async def test_prompt_streams_text_reads_and_edits_with_permission(dirs, fake_provider):
    home, ws = dirs
    (ws / "a.txt").write_text("hello world\n")
    fake_provider.script(
        Reply(reasoning="Look first", text="Reading.",
              tool_calls=[("read_file", {"path": "a.txt"}, "call_r")]),
        Reply(tool_calls=[("edit_file", {"path": "a.txt", "oldString": "hello",
                                         "newString": "goodbye"}, "call_e")]),
        Reply.text("Edited."))
    client = EditorClient("allow-once")
    answer = await _prompt(client, home, ws, fake_provider, "change a.txt")
    assert answer.stop_reason == "end_turn"
    assert client.text() == "Reading.Edited."
    assert client.text("agent_thought_chunk") == "Look first"
    calls = {u.tool_call_id: u for u in client.of("tool_call")}
    assert calls["call_r"].kind == "read"
    assert calls["call_r"].locations[0].path == str((ws / "a.txt").resolve())
    assert calls["call_e"].kind == "edit"
    diff = calls["call_e"].content[0]
    assert (diff.type, diff.old_text, diff.new_text) == ("diff", "hello world\n",
                                                       "goodbye world\n")
    (asked, kinds), = client.asked
    assert asked.tool_call_id == "call_e" and asked.content[0].type == "diff"
    assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    done = {u.tool_call_id: u.status for u in client.of("tool_call_update")
            if u.status in ("completed", "failed")}
    assert done == {"call_r": "completed", "call_e": "completed"}
    assert (ws / "a.txt").read_text() == "goodbye world\n"
    sent = json.dumps(fake_provider.requests[1].body)
    assert "hello world" in sent  # the model got what read_file read


@pytest.mark.parametrize("answer", ["reject-once", "reject-always", "no-such-option",
                                    RuntimeError("editor crashed")])
async def test_a_rejected_or_garbled_answer_leaves_the_file_byte_identical(
        dirs, fake_provider, answer):
    home, ws = dirs
    original = b"keep\r\nme \xe2\x9c\x93\n"
    (ws / "a.txt").write_bytes(original)
    fake_provider.script(
        Reply(tool_calls=[("read_file", {"path": "a.txt"}, "call_r")]),
        Reply(tool_calls=[("edit_file", {"path": "a.txt", "oldString": "keep",
                                         "newString": "lose"}, "call_e")]),
        Reply.text("Understood."))
    client = EditorClient(answer)
    result = await _prompt(client, home, ws, fake_provider, "edit")
    assert result.stop_reason == "end_turn"
    assert len(client.asked) == 1
    assert (ws / "a.txt").read_bytes() == original
    final = [u.status for u in client.of("tool_call_update") if u.tool_call_id == "call_e"]
    assert final[-1] == "failed"


async def test_bash_output_streams_as_tool_call_content(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(
        Reply(tool_calls=[("bash", {"command": "echo first-line; echo second-line"},
                           "call_b")]),
        Reply.text("Ran it."))
    client = EditorClient("allow-once")
    result = await _prompt(client, home, ws, fake_provider, "run")
    assert result.stop_reason == "end_turn"
    start, = [u for u in client.of("tool_call") if u.tool_call_id == "call_b"]
    assert start.kind == "execute" and "echo first-line" in start.title
    updates = [u for u in client.of("tool_call_update") if u.tool_call_id == "call_b"]
    assert updates[-1].status == "completed"
    shown = "".join(c.content.text for u in updates for c in (u.content or []))
    assert "first-line" in shown and "second-line" in shown


def _processes_running(argument: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if argument.encode() in cmdline and state != "Z":
            found.append(int(pid))
    return found


async def test_cancel_stops_the_turn_and_kills_the_running_command(dirs, fake_provider):
    home, ws = dirs
    marker = "30.0731"  # a sleep no other test runs
    fake_provider.script(
        Reply(tool_calls=[("bash", {"command": f"sleep {marker}"}, "call_s")]))
    client = EditorClient("allow-once")

    async def body(conn, sid, proc):
        turn = asyncio.create_task(
            conn.prompt(session_id=sid, prompt=[text_block("sleep")]))
        for _ in range(400):  # until the command runs
            if _processes_running(marker):
                break
            await asyncio.sleep(0.05)
        assert _processes_running(marker), "the command never started"
        await conn.cancel(session_id=sid)
        result = await asyncio.wait_for(turn, 20)
        for _ in range(100):
            if not _processes_running(marker):
                break
            await asyncio.sleep(0.05)
        return result

    result = await _session(client, home, ws, fake_provider, body)
    assert result.stop_reason == "cancelled"
    assert _processes_running(marker) == []


async def test_set_mode_is_confirmed_and_plan_mode_refuses_edits(dirs, fake_provider):
    home, ws = dirs
    (ws / "a.txt").write_text("same\n")
    fake_provider.script(
        Reply(tool_calls=[("write_file", {"path": "b.txt", "content": "new\n"}, "call_w")]),
        Reply.text("Could not."))
    client = EditorClient("allow-once")

    async def body(conn, sid, proc):
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        return await conn.prompt(session_id=sid, prompt=[text_block("write b")])

    result = await _session(client, home, ws, fake_provider, body)
    assert result.stop_reason == "end_turn"
    assert [u.current_mode_id for u in client.of("current_mode_update")] == ["plan"]
    assert not (ws / "b.txt").exists()
    final = [u.status for u in client.of("tool_call_update") if u.tool_call_id == "call_w"]
    assert final[-1] == "failed"


def test_malformed_json_rpc_gets_an_error_and_the_agent_keeps_serving(dirs, fake_provider):
    home, ws = dirs
    lines = ["{not json", "[1, 2]",
             json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize",
                         "params": {"protocolVersion": PROTOCOL_VERSION}})]
    proc = subprocess.run([sys.executable, "-m", "agent", "acp"], cwd=ws,
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=60, env=_env(home, fake_provider))
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r.get("error", {}).get("code") for r in replies[:2]] == [-32700, -32700]
    assert replies[2]["id"] == 7 and replies[2]["result"]["protocolVersion"] == PROTOCOL_VERSION
    assert replies[2]["result"]["agentCapabilities"]["promptCapabilities"]["embeddedContext"]


def test_a_session_outside_the_workspace_is_refused_with_a_clear_error(dirs, fake_provider):
    home, ws = dirs
    other = ws.parent / "elsewhere"
    other.mkdir()
    lines = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                         "params": {"cwd": str(other), "mcpServers": []}})]
    proc = subprocess.run([sys.executable, "-m", "agent", "acp"], cwd=ws,
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=60, env=_env(home, fake_provider))
    reply = json.loads(proc.stdout)
    assert reply["error"]["code"] == -32602
    assert "workspace" in reply["error"]["data"]["message"]


async def test_the_task_list_becomes_plan_entries(dirs, fake_provider):
    home, ws = dirs
    todos = [{"content": "read the code", "status": "done"},
             {"content": "fix the bug", "status": "in_progress"},
             {"content": "add a test", "status": "pending"}]
    fake_provider.script(Reply(tool_calls=[("todo_write", {"todos": todos}, "call_t")]),
                         Reply.text("Planned."))
    client = EditorClient("allow-once")
    result = await _prompt(client, home, ws, fake_provider, "plan it")
    assert result.stop_reason == "end_turn"
    plan, = client.of("plan")
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read the code", "completed"), ("fix the bug", "in_progress"),
        ("add a test", "pending")]


async def test_a_guard_refusal_is_a_failed_call_and_nothing_runs(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(
        Reply(tool_calls=[("write_file", {"path": "package-lock.json", "content": "{}"},
                           "call_w")]),
        Reply.text("Refused."))
    client = EditorClient("allow-once")
    result = await _prompt(client, home, ws, fake_provider, "write the lockfile")
    assert result.stop_reason == "end_turn"
    assert client.asked == []  # a guard's deny is never put to the editor
    assert not (ws / "package-lock.json").exists()
    final = [u for u in client.of("tool_call_update") if u.tool_call_id == "call_w"]
    assert final[-1].status == "failed"
    assert "denied" in final[-1].content[0].content.text


async def test_load_session_replays_the_saved_conversation(dirs, fake_provider):
    home, ws = dirs
    (ws / "a.txt").write_text("saved text\n")
    fake_provider.script(
        Reply(text="Looking.", tool_calls=[("read_file", {"path": "a.txt"}, "call_r")]),
        Reply.text("It says saved text."))
    first = EditorClient()

    async def body(conn, sid, proc):
        await conn.prompt(session_id=sid, prompt=[text_block("what is in a.txt?")])
        return sid

    sid = await _session(first, home, ws, fake_provider, body)
    later, check = EditorClient(), SchemaCheck()
    async with spawn_agent_process(later, sys.executable, "-m", "agent", "acp",
                                   env=_env(home, fake_provider), cwd=ws,
                                   observers=[check]) as (conn, proc):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.load_session is True
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        assert later.text("user_message_chunk") == "what is in a.txt?"
        assert later.text() == "Looking.It says saved text."
        call, = later.of("tool_call")
        assert (call.tool_call_id, call.kind) == ("call_r", "read")
        result, = [u for u in later.of("tool_call_update") if u.tool_call_id == "call_r"]
        assert result.status == "completed" and "saved text" in result.content[0].content.text
        with pytest.raises(RequestError) as missing:
            await conn.load_session(cwd=str(ws), session_id="no-such-session", mcp_servers=[])
        assert missing.value.code == -32602
    check.assert_valid()
    assert len(fake_provider.requests) == 2  # loading asks the model nothing


async def test_custom_commands_are_offered_and_expand_when_used(dirs, fake_provider):
    home, ws = dirs
    (home / "commands").mkdir(parents=True)
    (home / "commands" / "greet.md").write_text(
        "---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS politely.\n")
    fake_provider.script(Reply.text("Hello, Bob."))
    client = EditorClient()
    result = await _prompt(client, home, ws, fake_provider, "/greet Bob")
    assert result.stop_reason == "end_turn"
    offered, = client.of("available_commands_update")
    greet, = [c for c in offered.available_commands if c.name == "greet"]
    assert greet.description.startswith("Greet someone")
    assert "Say hello to Bob politely." in json.dumps(fake_provider.requests[0].body)
