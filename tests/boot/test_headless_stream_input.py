"""``agent -p --input-format stream-json``: several turns of one session in one process,
driven by JSON lines on stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from clirun import agent_env, run_agent_here
from fakeprovider import Reply
from waiting import wait_until

SCHEMA = jsonschema.Draft202012Validator(
    json.loads((Path(__file__).parents[2] / "docs/events.schema.json").read_text()))


def user(text) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"


def provider_args(fake_provider) -> list[str]:
    return ["--provider", "openai", "--base-url", fake_provider.openai_url, "--model", "m"]


def test_three_lines_make_three_turns_of_one_session(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    fake_provider.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    lines = (user("first") + user([{"type": "text", "text": "second"}])
             + user("third"))
    proc = run_agent_here(["-p", "--input-format", "stream-json", "--output-format",
                           "stream-json", *provider_args(fake_provider)],
                          home=home, cwd=ws, input=lines, OPENAI_API_KEY="x",
                          AGENT_OPENAI_API="chat")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        SCHEMA.validate(event)
    results = [e for e in events if e["type"] == "result"]
    assert [r["result"] for r in results] == ["one", "two", "three"]
    assert len({r["session_id"] for r in results}) == 1
    # each turn is sent the turns before it: one conversation, not three
    sent = [[m.get("content") for m in r.body["messages"] if m["role"] != "system"]
            for r in fake_provider.requests]
    assert sent[2] == ["first", "one", "second", "two", "third"]
    listed = json.loads(run_agent_here(["sessions", "--json"], home=home, cwd=ws).stdout)
    assert [(r["session_id"], r["message_count"]) for r in listed] == [
        (results[0]["session_id"], 6)]


def test_a_bad_line_is_reported_and_skipped(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    fake_provider.script(Reply.text("fine"))
    proc = run_agent_here(["-p", "--input-format", "stream-json", "--output-format",
                           "stream-json", *provider_args(fake_provider)],
                          home=home, cwd=ws, input="not json\n" + user("hello"),
                          OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        SCHEMA.validate(event)
    assert events[0]["type"] == "system"
    assert events[1]["type"] == "error" and events[1]["kind"] == "input"
    assert "not JSON" in events[1]["error"]
    assert [e["result"] for e in events if e["type"] == "result"] == ["fine"]


@pytest.mark.e2e
def test_an_interrupt_line_cancels_the_running_turn_and_the_session_goes_on(
        tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    fake_provider.script(Reply.stall(60), Reply.text("after the interrupt"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "-p", "--input-format", "stream-json",
         "--output-format", "stream-json", *provider_args(fake_provider)],
        cwd=ws, env=agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(user("wait forever"))
        proc.stdin.flush()
        wait_until(lambda: len(fake_provider.requests) == 1, "the first turn's request",
                   timeout=60)
        rest = json.dumps({"type": "control_request", "request_id": "r1",
                           "request": {"subtype": "interrupt"}}) + "\n" + user("and now?")
        out, err = proc.communicate(rest, timeout=60)  # then the end of input
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    for event in events:
        SCHEMA.validate(event)
    results = [e for e in events if e["type"] == "result"]
    assert [(r["stop_reason"], r["exit_code"]) for r in results] == [
        ("interrupted", 130), ("done", 0)]
    assert results[1]["result"] == "after the interrupt"
    assert results[0]["session_id"] == results[1]["session_id"]
    assert {"type": "control_response", "schema_version": 2,
            "response": {"subtype": "success", "request_id": "r1"}} in events
    assert fake_provider.requests[1].body["messages"][1]["content"] == "wait forever"
