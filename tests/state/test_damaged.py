"""A damaged state database loses only what is damaged: one bad message row is skipped (and
named) when the session is resumed, the rest of the session goes to the model intact and
valid.  Real files, the real CLI in process, the real openai SDK against the fake provider."""

from __future__ import annotations

import sqlite3

from clirun import run_agent_here
from fakeprovider import Reply
from wirecheck import assert_valid_request

ENV = {"OPENAI_API_KEY": "x", "AGENT_OPENAI_API": "chat"}


def arguments(url: str, *args: str) -> list[str]:
    return [*args, "--provider", "openai", "--base-url", url, "--model", "gpt-5"]


def make_session(fake_provider, home, ws) -> None:
    """user, assistant (a tool call), tool (its result), assistant (text)."""
    fake_provider.script(Reply.tool_call("current_time", {}, id="call_1"),
                         Reply.text("it is late"))
    first = run_agent_here(arguments(fake_provider.openai_url, "-p", "what time is it"),
                           home=home, cwd=ws, **ENV)
    assert first.returncode == 0, first.stderr


def damage(db, seq: int) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE messages SET body = substr(body, 1, 17) WHERE seq = ?", (seq,))
    conn.close()


def test_a_damaged_row_is_skipped_with_a_note_and_the_rest_resumes(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    make_session(fake_provider, home, ws)
    db = home / "state" / "agent.db"
    damage(db, 3)  # the tool result: half a JSON object

    fake_provider.script(Reply.text("still here"))
    again = run_agent_here(arguments(fake_provider.openai_url, "-c", "-p", "and now?"),
                           home=home, cwd=ws, **ENV)
    assert again.returncode == 0, again.stderr
    assert "1 damaged message(s) of session" in again.stderr
    request = fake_provider.requests[-1]
    assert_valid_request(request)  # the call whose result was lost is answered
    wire = request.body["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant",
                                         "user"]
    assert wire[1]["content"] == "what time is it" and wire[4]["content"] == "it is late"
    assert "damaged" in wire[3]["content"]
    # The store now holds the mended history and this turn, in order.
    conn = sqlite3.connect(db)
    roles = [r for (r,) in conn.execute("SELECT role FROM messages ORDER BY seq")]
    conn.close()
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]


def test_a_damaged_prompt_row_loses_only_that_prompt(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    make_session(fake_provider, home, ws)
    db = home / "state" / "agent.db"
    damage(db, 4)  # the final answer

    fake_provider.script(Reply.text("ok"))
    again = run_agent_here(arguments(fake_provider.openai_url, "-c", "-p", "go on"),
                           home=home, cwd=ws, **ENV)
    assert again.returncode == 0, again.stderr
    assert "1 damaged message(s)" in again.stderr
    wire = fake_provider.requests[-1].body["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "user"]
    assert_valid_request(fake_provider.requests[-1])
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT seq, role FROM messages ORDER BY seq").fetchall()
    conn.close()
    # The damaged row stays where it was (doctor --repair may still read it); the new
    # messages come after it.
    assert rows == [(1, "user"), (2, "assistant"), (3, "tool"), (4, "assistant"),
                    (5, "user"), (6, "assistant")]
