"""``kill -9`` at random moments of a headless turn (tool calls and a slow answer from the
fake provider): the database stays intact, nothing committed is lost, and ``agent -c`` carries
on with a valid history.  A few trials here; ``bench/kill_durability.py`` runs fifty.  And the
polite signals: SIGTERM and SIGINT mid-command end the turn with exit 130, kill the command's
process group and leave a history ``agent -c`` continues.  And two processes continuing one
session at once: neither corrupts the other's history."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time

import pytest
from clirun import agent_env, run_agent_here
from fakeprovider import Reply
from killtrial import agent_args, agent_cmd, calibrate, run_trials, saved_messages, summary
from wirecheck import assert_valid_request


@pytest.mark.e2e
def test_kill_9_at_random_moments(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    # One whole run first: it measures the span kill moments are spread over (startup, the
    # tools, the answer) on this machine at this load, and leaves a saved session, so every
    # `agent -c` after a kill has something to carry on. Seeded: the same fractions every run.
    span = calibrate(home, ws, seed=7)
    # Trials until two were killed mid-run (at most six): the runs after the calibration one
    # can be faster than it, and with a fixed three trials, two finishing before their
    # signal failed the test at load 5 without anything being wrong.
    outcomes, final = run_trials(3, home, ws, seed=7, max_delay=span, kills=2)
    report = "\n".join(summary(outcomes, final))
    assert not final and all(not o.problems for o in outcomes), report
    assert sum(o.killed for o in outcomes) >= 2, report


def _running(token: str) -> list[int]:
    """Live ``sleep TOKEN`` processes, seen from the host."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[0].endswith(b"sleep") and argv[1] == token.encode() \
                and not _gone(int(name)):
            found.append(int(name))
    return found


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting for a reaper that is not ours."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_command_ends_the_turn_cleanly(tmp_path, fake_provider, sig):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    # The child is found by a unique argument: inside the sandbox's PID namespace $! is not
    # the host's pid.
    token = f"30.{os.getpid() % 100000}{sig.value}"
    fake_provider.script(
        Reply.tool_call("bash", {"command": "echo first line; echo second line >&2; "
                                            f"sleep {token} & echo $! > child.pid; wait"},
                        id="c1"),
        Reply.text("resumed"))
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    proc = subprocess.Popen(agent_cmd(fake_provider.openai_url, "-p", "run it", "--json"),
                            cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pidfile = ws / "child.pid"
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert events[-2] == {"type": "done", "schema_version": 2, "reason": "interrupted",
                          "steps": 0}
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "interrupted"
    assert not _running(token)  # the command's whole tree was killed
    saved = saved_messages(home, "run it")
    assert [m["role"] for m in saved] == ["user", "assistant", "tool"]
    output = saved[-1]["parts"][0]["output"]
    # What the command printed before the signal is in the history, with the note.
    assert "interrupted" in output and "first line" in output and "second line" in output
    # Carrying on reads only the store: in this process.
    again = run_agent_here(agent_args(fake_provider.openai_url, "-c", "-p", "go on"), home=home,
                           cwd=ws, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    assert again.returncode == 0, again.stderr
    assert_valid_request(fake_provider.requests[-1])


async def test_two_processes_continuing_one_session_never_interleave(tmp_path, fake_provider):
    from agent.contract.messages import Message
    from agent.state.store import Store
    from agent.testing import collect, make_boot, make_session
    from plugins_builtin.openai import chat_messages
    from plugins_builtin.sessions.recorder import SessionRecorder
    from plugins_builtin.sessions.saved import load_into

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "time"])

    def recorded():
        recorder = SessionRecorder(Store.open(config.state_dir), cwd=str(ws))
        return make_session(config, hooks, base_url=fake_provider.openai_url,
                            recorder=recorder)

    fake_provider.script(Reply.text("first"))
    original = recorded()
    await collect(original, "hello")
    original.recorder.close()  # that run ended: its lease is given up
    store = Store.open(config.state_dir)
    # Two `agent -c` at once: both load the same saved session, then both run a turn.
    a, b = recorded(), recorded()
    load_into(a, store.get_session(original.id))
    load_into(b, store.get_session(original.id))
    fake_provider.script(Reply.tool_call("current_time", {}, id="ca", delay=0.05),
                         Reply.tool_call("current_time", {}, id="cb", delay=0.05),
                         Reply.text("a done", delay=0.05), Reply.text("b done", delay=0.05))
    await asyncio.gather(collect(a, "from a"), collect(b, "from b"))

    ids = {a.id, b.id}
    assert len(ids) == 2 and original.id in ids  # one kept the session, one forked
    forked = b if b.id != original.id else a
    assert forked.recorder.forked_from == original.id
    for session in (a, b):
        saved = [Message.from_dict(d) for d in store.load_messages(session.id)]
        assert [m.to_dict() for m in saved] == [m.to_dict() for m in session.messages]
        wire = chat_messages("", saved)
        assert_valid_request(_Chat([{"role": "system", "content": "s"}, *wire,
                                    {"role": "user", "content": "next"}]))
    assert store.get_session(forked.id).title == "hello"


async def test_a_rewrite_never_erases_what_another_process_saved(tmp_path, fake_provider):
    from agent.state.store import Store
    from agent.testing import collect, make_boot, make_session
    from plugins_builtin.sessions.recorder import SessionRecorder
    from plugins_builtin.sessions.saved import load_into

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai"])

    def recorded():
        return make_session(config, hooks, base_url=fake_provider.openai_url,
                            recorder=SessionRecorder(Store.open(config.state_dir),
                                                     cwd=str(ws)))

    fake_provider.script(Reply.text("one"), Reply.text("two"))
    first = recorded()
    await collect(first, "hello")
    other = recorded()
    load_into(other, first.recorder.store.get_session(first.id))
    await collect(other, "more")  # the other process adds a turn
    first.messages = first.messages[:1]  # and this one edits its history in place (/undo)
    assert first.recorder.rewrite(first)
    store = first.recorder.store
    assert [m["role"] for m in store.load_messages(other.id)] == ["user", "assistant",
                                                                  "user", "assistant"]
    assert first.id != other.id
    assert [m["role"] for m in store.load_messages(first.id)] == ["user"]


class _Chat:
    """A chat completions request as the fake server would record it."""

    path = "/v1/chat/completions"

    def __init__(self, messages):
        self.body = {"messages": messages}
