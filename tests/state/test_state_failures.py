"""State failures are loud: a state dir that fills mid-turn, one that is full or read-only
from the start.  ``agent -p`` with AGENT_HOME on a small tmpfs, the real openai SDK against
the fake provider; the disk is filled by the turn's own bash call, so the moment is exact
without a clock.  One case runs a real process (its exit status when the disk fills
mid-turn); the others are what the CLI decides, run in process (``run_agent_here``)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import agent_env, run_agent_here
from fakeprovider import Reply
from smallfs import fill, remount_read_only, small_fs
from wirecheck import assert_valid_request


def arguments(url: str, *args: str) -> list[str]:
    return [*args, "--yolo", "--provider", "openai", "--base-url", url, "--model", "gpt-5"]


# The turn's bash call fills the state dir (the sandbox would keep it to the workspace).
ENV = {"OPENAI_API_KEY": "x", "AGENT_OPENAI_API": "chat", "AGENT_SANDBOX": "off"}


def run_process(url: str, home: Path, ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *arguments(url, *args)], cwd=ws,
                          env=agent_env(home, **ENV), capture_output=True, text=True,
                          timeout=120)


def run(url: str, home: Path, ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_agent_here(arguments(url, *args), home=home, cwd=ws, **ENV)


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def saved_prompts(home: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{home / 'state' / 'agent.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT body FROM messages ORDER BY session_id, seq").fetchall()
    finally:
        conn.close()
    out = []
    for (body,) in rows:
        message = json.loads(body)
        if message["role"] == "user":
            out.extend(p.get("text", "") for p in message["parts"] if p.get("type") == "text")
    return out


def user_texts(request) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in request.body["messages"] if m["role"] == "user"]


@pytest.mark.e2e
def test_a_state_dir_that_fills_mid_turn_exits_5_and_says_so(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    with small_fs(tmp_path / "home", size="2m") as home:
        fake_provider.script(
            Reply.tool_call("bash", {"command": f"cat /dev/zero > {home}/filler; echo full"},
                            id="c1"),
            Reply.tool_call("bash", {"command": "echo second"}, id="c2"),
            Reply.text("all done"))
        done = run_process(fake_provider.openai_url, home, ws, "-p", "fill the disk", "--json")
        assert done.returncode == 5, done.stderr
        out = events(done.stdout)
        failed = [e for e in out if e["type"] == "save-failed"]
        assert failed and failed[0]["unsaved"] >= 1, out
        assert "full" in failed[0]["error"], failed
        # The last event's count is what is missing from the store, as stderr says.
        missing = int(re.search(r"(\d+) of \d+ message\(s\) of session", done.stderr)[1])
        assert failed[-1]["unsaved"] == missing, (failed, done.stderr)
        assert out.index(failed[-1]) < len(out) - 2  # before done
        assert out[-2]["type"] == "done" and out[-2]["reason"] == "end"  # the turn finished
        assert out[-1]["type"] == "result" and out[-1]["exit_code"] == 5
        assert [e["output"] for e in out if e["type"] == "tool-result"][-1].endswith("second")
        assert "could not be saved" in done.stderr
        # What was saved is intact and continues once there is room again.
        (home / "filler").unlink()
        assert saved_prompts(home) == ["fill the disk"]
        fake_provider.script(Reply.text("resumed"))
        again = run_process(fake_provider.openai_url, home, ws, "-c", "-p", "go on")
        assert again.returncode == 0, again.stderr
        assert_valid_request(fake_provider.requests[-1])
        assert user_texts(fake_provider.requests[-1]) == ["fill the disk", "go on"]


def test_the_text_mode_prints_the_failure_on_stderr(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    with small_fs(tmp_path / "home", size="2m") as home:
        fake_provider.script(
            Reply.tool_call("bash", {"command": f"cat /dev/zero > {home}/filler; echo full"},
                            id="c1"),
            Reply.text("the answer"))
        done = run(fake_provider.openai_url, home, ws, "-p", "fill it")
        assert done.returncode == 5
        assert done.stdout.strip() == "the answer"
        assert "[unsaved] session " in done.stderr and "message(s) not saved" in done.stderr


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_a_broken_state_dir_with_a_database_runs_unsaved_instead_of_exiting_2(
        tmp_path, fake_provider, kind):
    ws = tmp_path / "ws"
    ws.mkdir()
    with small_fs(tmp_path / "home", size="2m") as home:
        fake_provider.script(Reply.text("one"))
        first = run(fake_provider.openai_url, home, ws, "-p", "first prompt")
        assert first.returncode == 0, first.stderr
        db = home / "state" / "agent.db"
        before = db.read_bytes()
        if kind == "full":
            fill(home)
        else:
            remount_read_only(home)
        fake_provider.script(Reply.text("two"))
        done = run(fake_provider.openai_url, home, ws, "-c", "-p", "second prompt", "--json")
        assert done.returncode == 5, done.stderr
        out = events(done.stdout)
        assert "".join(e["text"] for e in out if e["type"] == "text") == "two"
        failed = [e for e in out if e["type"] == "save-failed"]
        assert failed and all("opened read-only" in e["error"] for e in failed), out
        assert failed[-1]["unsaved"] == 2  # the prompt and the answer: what stderr counts
        assert "will not be saved" in done.stderr
        # It continued the saved session: the model saw the first exchange.
        assert user_texts(fake_provider.requests[-1]) == ["first prompt", "second prompt"]
        assert db.read_bytes() == before
        listed = run_agent_here(["sessions"], home=home, cwd=ws)
        assert "first prompt" in listed.stdout, listed.stderr


def test_a_read_only_state_dir_without_a_database_runs_unsaved_and_exits_5(tmp_path,
                                                                          fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    with small_fs(tmp_path / "home", size="2m") as home:
        remount_read_only(home)
        fake_provider.script(Reply.text("answered"))
        done = run(fake_provider.openai_url, home, ws, "-p", "hello")
        assert done.returncode == 5, done.stderr
        assert done.stdout.strip() == "answered"
        assert "this session will not be saved" in done.stderr
        assert "2 message(s) were not saved" in done.stderr
        assert list(home.iterdir()) == []


# ---- the full-screen UI: a banner that stays ----------------------------------------------


async def test_the_ui_shows_a_persistent_banner_when_saving_fails(tmp_path, fake_provider):
    sys.path.insert(0, str(Path(__file__).parents[1] / "ui"))
    from ui_harness import idle, make_app, screen, type_text

    with small_fs(tmp_path / "home", size="2m") as home:
        app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash", "sessions"],
                       flags={"yolo": True, "sandbox": "off"})
        assert app.config.state_dir == home / "state"
        app.start()
        fake_provider.script(
            Reply.tool_call("bash", {"command": f"cat /dev/zero > {home}/filler; echo full"},
                            id="c1"),
            Reply.text("first answer"))
        await type_text(app, "fill it", enter=True)
        await idle(app, timeout=60)
        rows = screen(app)
        assert "NOT SAVED: " in rows and "message(s) of this session are not in" in rows, rows
        assert "could not save this session" in rows
        fake_provider.script(Reply.text("second answer"))
        await type_text(app, "and again", enter=True)
        await idle(app, timeout=60)
        rows = screen(app)
        assert "second answer" in rows, rows
        assert "NOT SAVED: " in rows, rows.splitlines()[-8:]  # still up
        (home / "filler").unlink()  # room again: the next turn saves everything, banner gone
        fake_provider.script(Reply.text("third answer"))
        await type_text(app, "once more", enter=True)
        await idle(app, timeout=60)
        rows = screen(app)
        assert "NOT SAVED: " not in rows and "the session is saved again" in rows, rows
        assert saved_prompts(home) == ["fill it", "and again", "once more"]
        app.hooks.unconfigure(app.config)
