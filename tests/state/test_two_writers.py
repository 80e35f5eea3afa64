"""One session, one writer: two real ``agent -c -p`` processes continue one saved session at
the same moment.  Each keeps exactly its own prompt: the first to write keeps the session,
the other forks to a new id holding the shared prefix and its own messages; both are told.

Synchronised without a clock: the test holds the database's write lock while both start, so
both load the same saved history and then wait to write; it lets go once both have said (on
stderr) that they are past loading; the fake provider then holds both model requests until
both arrived, so the fork has happened before either run ends."""

from __future__ import annotations

import json
import select
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import agent_env
from fakeprovider import Reply
from wirecheck import assert_valid_request

pytestmark = pytest.mark.e2e  # runs the agent as a process (docs/testing.md)

#: printed by every headless run with -v and without --yolo, after the session is loaded,
#: before the turn
PAST_LOADING = "headless mode denies every tool call"


def agent(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "agent", *args, "--provider", "openai", "--base-url", url,
            "--model", "gpt-5"]


def history(db: Path) -> dict[str, list[str]]:
    """Every saved session: its messages as ``role:text``."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT session_id, body FROM messages ORDER BY session_id, seq")
        out: dict[str, list[str]] = {}
        for sid, body in rows:
            message = json.loads(body)
            text = "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")
            out.setdefault(sid, []).append(f"{message['role']}:{text}")
        return out
    finally:
        conn.close()


def wait_for_lines(procs: list[subprocess.Popen], marker: str, bound: float = 60) -> list[str]:
    """Read each process's stderr until it printed ``marker`` (bounded); returns what was read."""
    seen = [""] * len(procs)
    deadline = time.monotonic() + bound
    while not all(marker in text for text in seen):
        assert time.monotonic() < deadline, f"not all runs got past loading: {seen}"
        waiting = {p.stderr.fileno(): i for i, p in enumerate(procs) if marker not in seen[i]}
        ready, _, _ = select.select(list(waiting), [], [], 0.5)
        for fd in ready:
            chunk = procs[waiting[fd]].stderr.read1(65536).decode()
            assert chunk, f"run {waiting[fd]} ended early: {seen[waiting[fd]]}"
            seen[waiting[fd]] += chunk
    return seen


def test_two_processes_continuing_one_session_each_keep_their_own_prompts(tmp_path,
                                                                          fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    fake_provider.script(Reply.text("hello back"))
    first = subprocess.run(agent(fake_provider.openai_url, "-p", "hello"), cwd=ws, env=env,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    db = home / "state" / "agent.db"
    (original,) = history(db)

    fake_provider.script(Reply.text("answer one"), Reply.text("answer two"))
    fake_provider.hold_until(3)  # the first run's request, then both of these
    lock = sqlite3.connect(db, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # readers go on (WAL); every writer waits for us
    procs = [subprocess.Popen(agent(fake_provider.openai_url, "-c", "-p", f"from {name}",
                                    "--json", "-v"),
                              cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name in ("a", "b")]
    try:
        early = wait_for_lines(procs, PAST_LOADING)
        lock.execute("ROLLBACK")
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        lock.close()
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    stderr = [e + o[1].decode() for e, o in zip(early, outs, strict=True)]
    events = [[json.loads(line) for line in o[0].decode().splitlines()] for o in outs]

    saved = history(db)
    assert len(saved) == 2, saved
    fork = next(sid for sid in saved if sid != original)
    prefix = ["user:hello", "assistant:hello back"]
    # Each session holds the shared prefix and exactly one run's prompt (never both).
    prompts = {sid: [m for m in msgs if m.startswith("user:")] for sid, msgs in saved.items()}
    assert sorted(prompts.values()) == [["user:hello", "user:from a"],
                                        ["user:hello", "user:from b"]], saved
    for msgs in saved.values():
        assert msgs[:2] == prefix and len(msgs) == 4, saved
    kept = 0 if "user:from a" in prompts[original] else 1
    moved = 1 - kept
    assert f"user:from {'ab'[moved]}" in prompts[fork]

    # Both are told: the one that moved, and the one that kept the session.
    forked = [[e for e in run if e["type"] == "session-forked"] for run in events]
    assert forked[moved] == [{"type": "session-forked", "schema_version": 2,
                              "forkedFrom": original, "session": fork, "moved": True}]
    assert forked[kept] == [{"type": "session-forked", "schema_version": 2,
                             "forkedFrom": original, "session": fork, "moved": False}]
    assert events[moved][-2]["type"] == events[kept][-2]["type"] == "done"
    # the final record names the session each run's messages went to
    assert events[moved][-1]["session_id"] == fork
    assert events[kept][-1]["session_id"] == original
    assert f"this run was saved as a new session (agent -r {fork[:18]})" in stderr[moved]
    assert f"its messages were saved as session {fork[:18]}" in stderr[kept]

    # Each request the model saw was a valid history with only its own run's prompt.
    for request in fake_provider.requests[-2:]:
        assert_valid_request(request)
        users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
        assert users in (["hello", "from a"], ["hello", "from b"])
