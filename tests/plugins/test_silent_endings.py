"""Nothing ends silently, on every wire format (openai chat, openai responses, anthropic).

An answer with no text and no tool call, an empty output list, a 200 whose body is an error
object or an HTML page: the user reads the provider's own message (or "the model returned
nothing"), ``--json`` gets an ``error`` event, the exit code is 1.  A gateway that answers a
streaming request with the whole JSON message is read like a stream.  Through the real CLI
(``agent -p``) and the real SDKs, against the fake provider.
"""

from __future__ import annotations

import json

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

FORMATS = ["chat", "responses", "anthropic"]

QUOTA = {"error": {"message": "You exceeded your current quota, please check your plan and "
                              "billing details.", "type": "insufficient_quota", "param": None,
                   "code": "insufficient_quota"}}
PAGE = ("<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
        "<body><h1>502 Bad Gateway</h1><hr>nginx</body></html>")


@pytest.fixture
def dirs(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text("max_retries = 0\n")
    return home, ws


def agent(srv, fmt, home, ws, *args):
    if fmt == "anthropic":
        flags = ["--provider", "anthropic", "--base-url", srv.base_url]
        env = {"ANTHROPIC_API_KEY": "sk-test"}
    else:
        flags = ["--provider", "openai", "--base-url", srv.openai_url]
        env = {"OPENAI_API_KEY": "sk-test", "AGENT_OPENAI_API": fmt}
    return run_agent_here([*args, *flags, "--model", "m"], home=home, cwd=ws, **env)


CASES = {
    "reasoning only": (lambda: Reply(reasoning="Let me think about that."),
                       "the model returned nothing (only reasoning, no answer)"),
    "nothing at all": (lambda: Reply(), "the model returned nothing"),
    "an error body": (lambda: Reply.http_body(QUOTA),
                      "answered with an error: You exceeded your current quota, please check "
                      "your plan and billing details. (insufficient_quota)"),
    "an HTML page": (lambda: Reply.http_body(PAGE, "text/html; charset=utf-8"),
                     "answered with text/html instead of an event stream: an HTML page titled "
                     "'502 Bad Gateway'"),
    "plain text": (lambda: Reply.http_body("upstream connect error", "text/plain"),
                   "answered with text/plain instead of an event stream: "
                   "'upstream connect error'"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_silent_ending_is_an_error_with_the_servers_words(dirs, fake_provider, fmt, case):
    home, ws = dirs
    make, expected = CASES[case]
    fake_provider.script(make())
    proc = agent(fake_provider, fmt, home, ws, "-p", "hello")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert expected in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    fake_provider.script(make())
    proc = agent(fake_provider, fmt, home, ws, "-p", "hello", "--json")
    assert proc.returncode == 1, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    errors = [e for e in events if e["type"] == "error"]
    assert len(errors) == 1 and expected in errors[0]["error"], events
    done = [e for e in events if e["type"] == "done"]
    assert len(done) == 1 and done[0]["reason"] == "error"
    assert len(fake_provider.requests) == 2  # an error body is not retried


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_whole_json_answer_to_a_streaming_request_is_read(dirs, fake_provider, fmt):
    home, ws = dirs
    (ws / "a.txt").write_text("alpha\n")
    fake_provider.script(
        Reply.plain(Reply.tool_call("read_file", {"path": "a.txt"}, id="call_r1")),
        Reply.plain(Reply.text("The file says alpha.")))
    proc = agent(fake_provider, fmt, home, ws, "-p", "what is in a.txt?")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "The file says alpha."
    second = json.dumps(fake_provider.requests[1].body)
    assert "1: alpha" in second  # the tool ran, and its result went back
    assert all(r.body.get("stream") for r in fake_provider.requests)
