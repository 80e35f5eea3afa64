"""Provider faults through the real CLI (`agent -p`): config keys that bound retries and
timeouts take effect, errors are one clear line (never a traceback), the saved session
keeps what the user saw, and `agent -c` carries on from it.  Also a reader closing stdout
(`agent -p ... | head`)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from clirun import agent_env, run_agent, run_agent_here
from fakeprovider import Reply
from wirecheck import assert_human, assert_valid_request


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return home, ws


def agent(srv, args, home, ws, *, provider="openai"):
    url = srv.openai_url if provider == "openai" else srv.base_url
    key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    return run_agent_here([*args, "--provider", provider, "--base-url", url, "--model", "m"],
                          home=home, cwd=ws, **{key: "sk-test", "AGENT_OPENAI_API": "chat"})


def configure(home, text: str) -> None:
    (home / "config.toml").write_text(text)


def saved_roles(home) -> list[str]:
    conn = sqlite3.connect(str(home / "state" / "agent.db"))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return [r for (r,) in conn.execute("SELECT role FROM messages ORDER BY seq")]
    finally:
        conn.close()


def test_a_retry_after_beyond_the_cap_fails_at_once_and_continue_works(dirs, fake_provider):
    # The anthropic SDK alone would sleep the whole hour; the config key refuses the wait.
    home, ws = dirs
    configure(home, "max_retries = 3\nretry_after_cap = 60\n")
    fake_provider.script(Reply.error(529, headers={"retry-after": "3600"}))
    proc = agent(fake_provider, ["-p", "hello"], home, ws, provider="anthropic")
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("[error] ")]
    assert len(errors) == 1, proc.stderr
    assert ("the server asked to retry after 3600 s, more than retry_after_cap = 60 s"
            in errors[0])
    assert f"127.0.0.1:{fake_provider.port} returned 529" in errors[0]
    assert len(fake_provider.requests) == 1
    fake_provider.script(Reply.text("after all"))
    again = agent(fake_provider, ["-c", "-p", "again"], home, ws, provider="anthropic")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "after all\n"


def test_a_retry_after_within_the_cap_is_waited_for(dirs, fake_provider):
    home, ws = dirs
    configure(home, "max_retries = 1\nretry_after_cap = 0.3\n")
    fake_provider.script(Reply.error(529, headers={"retry-after": "0.1"}),
                         Reply.text("after the wait"))
    proc = agent(fake_provider, ["-p", "hello"], home, ws, provider="anthropic")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "after the wait\n"
    assert [r.headers["x-stainless-retry-count"] for r in fake_provider.requests] == ["0", "1"]


def test_dropped_stream_exits_1_and_continue_resends_the_partial_answer(dirs, fake_provider):
    home, ws = dirs
    configure(home, "max_retries = 2\n")
    fake_provider.script(Reply.drop_after(3, Reply("The answer is forty", pieces=4)))
    proc = agent(fake_provider, ["-p", "what is the answer?"], home, ws)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("[error] ")]
    assert len(errors) == 1 and "connection to 127.0.0.1" in errors[0]
    assert_human(errors[0])
    partial = proc.stdout.strip()
    assert partial and "The answer is forty".startswith(partial)
    assert saved_roles(home) == ["user", "assistant"]

    fake_provider.script(Reply.text("Forty-two."))
    again = agent(fake_provider, ["-c", "-p", "go on"], home, ws)
    assert again.returncode == 0, again.stderr
    request = fake_provider.requests[-1]
    assert assert_valid_request(request) == ["user", "assistant", "user"]
    assert [m.get("content") for m in request.body["messages"][1:]] == [
        "what is the answer?", partial, "go on"]
    assert saved_roles(home) == ["user", "assistant", "user", "assistant"]


def test_json_mode_reports_a_stall_as_an_error_event(dirs, fake_provider):
    home, ws = dirs
    configure(home, "max_retries = 0\nrequest_timeout = 0.5\n")
    fake_provider.script(Reply.stall(20))
    proc = agent(fake_provider, ["-p", "hello", "--json"], home, ws)
    assert proc.returncode == 1, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["type"] for e in events] == ["system", "error", "done", "result"]
    assert "timed out" in events[1]["error"] and events[1]["kind"] == "provider"
    assert events[2]["reason"] == "error"


@pytest.mark.e2e  # an argv byte that is not UTF-8 needs a real process's argv
def test_lone_surrogates_in_model_text_and_argv(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply("bad \ud800 char", pieces=1), Reply.text("still fine"))
    # An argv byte that is not UTF-8 reaches Python as a lone surrogate too.
    proc = run_agent(["-p", "caf\udce9 question", "--json", "--provider", "openai",
                      "--base-url", fake_provider.openai_url, "--model", "m"],
                     home=home, cwd=ws, OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "".join(e["text"] for e in events if e["type"] == "text") == "bad \ufffd char"
    assert "not fully saved" not in proc.stderr
    assert saved_roles(home) == ["user", "assistant"]
    again = agent(fake_provider, ["-c", "-p", "next"], home, ws)
    assert again.returncode == 0, again.stderr
    assert assert_valid_request(fake_provider.requests[-1]) == ["user", "assistant", "user"]
    assert fake_provider.requests[-1].body["messages"][1]["content"] == "caf\ufffd question"


@pytest.mark.e2e  # a real pipe whose reader leaves
@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
def test_a_reader_closing_stdout_stops_the_turn_quietly(dirs, fake_provider, json_mode):
    # `agent -p ... | head -c 20`: the reader leaves while the answer still streams.
    home, ws = dirs
    fake_provider.script(Reply("word " * 4000, pieces=400, delay=0.002),
                         Reply.text("carried on"))
    args = ["-p", "talk a lot", *(["--json"] if json_mode else []), "--provider", "openai",
            "--base-url", fake_provider.openai_url, "--model", "m"]
    proc = subprocess.Popen([sys.executable, "-m", "agent", *args], cwd=ws,
                            env=agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = proc.stdout.read(20)
    proc.stdout.close()
    _, err = proc.communicate(timeout=30)
    assert head
    assert proc.returncode == 141, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    conn = sqlite3.connect(str(home / "state" / "agent.db"))
    bodies = [json.loads(b) for (b,) in conn.execute("SELECT body FROM messages ORDER BY seq")]
    assert [b["role"] for b in bodies] == ["user", "assistant"]
    assert bodies[1]["parts"][0]["text"].startswith("word word")  # what streamed is kept
    again = agent(fake_provider, ["-c", "-p", "go on"], home, ws)
    assert again.returncode == 0, again.stderr
    assert assert_valid_request(fake_provider.requests[-1]) == ["user", "assistant", "user"]
