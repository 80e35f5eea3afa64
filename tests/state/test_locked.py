"""A database another process keeps write-locked: ``save-failed`` is said only for messages
that really are not saved.  A real ``agent -p`` process; the test takes SQLite's write lock
itself (``BEGIN IMMEDIATE`` on its own connection) the moment the model request arrives, so
the answer's write meets it; when the lock goes is decided by what the agent logged, never
by a clock."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from clirun import agent_env
from fakeprovider import Reply

pytestmark = pytest.mark.e2e  # runs the agent as a process (docs/testing.md)


def command(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "agent", *args, "--provider", "openai", "--base-url", url,
            "--model", "gpt-5"]


def roles(db) -> list[str]:
    """The roles of the newest session's saved messages."""
    conn = sqlite3.connect(db)
    try:
        return [r for (r,) in conn.execute(
            "SELECT role FROM messages WHERE session_id = (SELECT id FROM sessions ORDER BY "
            "created_at DESC LIMIT 1) ORDER BY seq")]
    finally:
        conn.close()


class Locker:
    """Takes the database's write lock when the model request arrives."""

    def __init__(self, db) -> None:
        self.db = db
        self.conn: sqlite3.Connection | None = None
        self.taken = threading.Event()

    def responder(self, req):
        self.conn = sqlite3.connect(self.db, isolation_level=None, check_same_thread=False)
        self.conn.execute("BEGIN IMMEDIATE")  # readers go on (WAL); writers wait
        self.taken.set()
        return Reply.text("the answer")

    def release(self) -> None:
        if self.conn is not None:
            self.conn.execute("ROLLBACK")
            self.conn.close()
            self.conn = None


def start(fake_provider, tmp_path):
    """The run under test (``agent -p hello --json``), its database and the locker."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    db = home / "state" / "agent.db"
    locker = Locker(db)
    fake_provider.script(Reply.text("warmed"))
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    # The database exists before the run (as it does for anyone who used agent before).
    first = subprocess.run(command(fake_provider.openai_url, "-p", "warm up"), cwd=ws,
                           env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    fake_provider.responder = locker.responder
    proc = subprocess.Popen(command(fake_provider.openai_url, "-p", "hello", "--json"),
                            cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    return proc, db, locker


def test_a_lock_that_goes_before_the_turn_ends_reports_nothing_and_loses_nothing(
        tmp_path, fake_provider):
    proc, db, locker = start(fake_provider, tmp_path)
    log = db.parent / "agent.log"
    try:
        assert locker.taken.wait(120)
        # The answer's write waited out the busy timeout and failed (the log says so) ...
        deadline = time.monotonic() + 120
        while "could not save the session" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        locker.release()  # ... and then the other process lets go
        out, err = proc.communicate(timeout=120)
    finally:
        locker.release()
        if proc.poll() is None:
            proc.kill()
    events = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 0, (err, events)
    assert not [e for e in events if e["type"] == "save-failed"], events
    assert roles(db) == ["user", "assistant"]  # the late write caught up


def test_a_lock_held_past_the_end_is_reported_once_with_the_true_count_and_exits_5(
        tmp_path, fake_provider):
    proc, db, locker = start(fake_provider, tmp_path)
    try:
        assert locker.taken.wait(120)
        out, err = proc.communicate(timeout=180)
    finally:
        locker.release()
        if proc.poll() is None:
            proc.kill()
    events = [json.loads(line) for line in out.splitlines()]
    failed = [e for e in events if e["type"] == "save-failed"]
    assert proc.returncode == 5, err
    missing = int(re.search(r"(\d+) of \d+ message\(s\) of session", err)[1])
    assert [e["unsaved"] for e in failed] == [missing] == [1], (failed, err)
    assert "locked" in failed[0]["error"]
    kinds = [e["type"] for e in events]
    assert kinds.index("save-failed") < kinds.index("done")
    assert roles(db) == ["user"]  # the prompt was saved; the answer is what was lost
