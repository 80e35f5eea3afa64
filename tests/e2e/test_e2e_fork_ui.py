"""The full-screen UI continuing a session another live process holds: it says so from the
first frame, and writes only to its fork.  A real pty (pyte), the real CLI, the fake
provider; the other process is a real one (``sleep``) whose lease row is in the database."""

from __future__ import annotations

import socket
import sqlite3
import subprocess

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from pty_term import Term
from twowriters import saved_histories as saved

from agent.state.lease import process_started

pytestmark = pytest.mark.e2e  # a real terminal (docs/testing.md)

IDLE = "ask agent... (/ commands, @ files)"


def test_the_ui_tells_a_fork_from_the_first_frame_and_leaves_the_held_session_alone(
        tmp_path, fake_provider):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    args = ["--provider", "openai", "--base-url", fake_provider.openai_url, "--model", "m"]
    fake_provider.script(Reply.text("hello back"), Reply.text("forked answer"))
    first = run_agent_here(["-p", "hello", *args], home=home, cwd=ws, OPENAI_API_KEY="x",
                           AGENT_OPENAI_API="chat")
    assert first.returncode == 0, first.stderr
    db = home / "state" / "agent.db"
    (original,) = saved(db)
    holder = subprocess.Popen(["sleep", "120"])  # the other agent process, alive
    term = None
    try:
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("INSERT INTO session_leases (session_id, host, pid, started, token, "
                         "taken_at) VALUES (?, ?, ?, ?, 'other', 0)",
                         (original, socket.gethostname(), holder.pid,
                          process_started(holder.pid)))
        conn.close()
        term = Term(["-c", *args], cwd=ws, home=home,
                    env={"OPENAI_API_KEY": "x", "AGENT_OPENAI_API": "chat"})
        screen = term.wait_for(IDLE, timeout=60)
        assert "goes on as session" in " ".join(screen.split()), screen
        term.type("from the ui")
        term.wait_for("forked answer", timeout=60)
        term.wait_for(IDLE)
        term.type("/exit")
        assert term.wait_exit() == 0
    finally:
        if term is not None:
            term.close()
        holder.kill()
        holder.wait()
    after = saved(db)
    assert after[original] == ["user:hello", "assistant:hello back"]  # untouched
    (fork,) = set(after) - {original}
    assert after[fork] == ["user:hello", "assistant:hello back", "user:from the ui",
                           "assistant:forked answer"]
