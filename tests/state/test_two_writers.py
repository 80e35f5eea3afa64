"""One session, one writer: two real ``agent -c -p`` processes continue one saved session.

The process that loads the session while another holds its lease becomes a fork from what
it read (without the holder's turn still in progress); the holder keeps exactly its own run;
both are told.  The lease is a row in the database (``agent.state.lease``), so the order is
decided there, not by timing.  ``bench/two_writers.py`` runs 50 trials with random start
offsets; here a deterministic overlap and a few random ones."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from clirun import agent_env
from fakeprovider import Reply
from twowriters import _wire, answering, command, run_trials, saved_histories
from wirecheck import assert_valid_request

pytestmark = pytest.mark.e2e  # runs the agent as a process (docs/testing.md)


def wait_for(condition, bound: float = 60) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_a_run_started_while_another_holds_the_session_forks_and_both_are_told(
        tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    answering(fake_provider, 0)
    first = subprocess.run(command(fake_provider.openai_url, "-p", "hello"), cwd=ws, env=env,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    db = home / "state" / "agent.db"
    (original,) = saved_histories(db)

    posts = sum(1 for r in fake_provider.requests if r.method == "POST")
    fake_provider.hold_until(posts + 2)  # A's request waits for B's
    procs = {"a": subprocess.Popen(command(fake_provider.openai_url, "-c", "-p", "from a",
                                           "--json"), cwd=ws, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)}
    try:
        # A holds the session and is mid-turn (its prompt saved, its request waiting) ...
        wait_for(lambda: sum(1 for r in fake_provider.requests if r.method == "POST")
                 > posts)
        # ... when B continues the same session.
        procs["b"] = subprocess.Popen(command(fake_provider.openai_url, "-c", "-p", "from b",
                                              "--json"), cwd=ws, env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        outs = {name: p.communicate(timeout=120) for name, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
    assert {n: p.returncode for n, p in procs.items()} == {"a": 0, "b": 0}, outs
    saved = saved_histories(db)
    fork = next(sid for sid in saved if sid != original)
    prefix = ["user:hello", "assistant:answer to hello"]
    # A keeps exactly its own run; B's fork starts from what B read, less A's open turn.
    assert saved == {original: [*prefix, "user:from a", "assistant:answer to from a"],
                     fork: [*prefix, "user:from b", "assistant:answer to from b"]}
    events = {n: [json.loads(line) for line in out.splitlines()] for n, (out, _) in outs.items()}
    assert [e for e in events["b"] if e["type"] == "session-forked"] == [
        {"type": "session-forked", "schema_version": 2, "forkedFrom": original,
         "session": fork, "moved": True}]
    assert [e for e in events["a"] if e["type"] == "session-forked"] == [
        {"type": "session-forked", "schema_version": 2, "forkedFrom": original,
         "session": fork, "moved": False}]
    # B is told before its turn's answer, A before its own done event.
    kinds = [e["type"] for e in events["b"]]
    assert kinds.index("session-forked") < kinds.index("text")
    assert events["a"][-2]["type"] == events["b"][-2]["type"] == "done"
    # the final record names the session each run's messages went to
    assert events["b"][-1]["session_id"] == fork
    assert events["a"][-1]["session_id"] == original
    # The model saw each run's own history and nothing of the other's.
    wires = [_wire(r) for r in fake_provider.requests[-2:]]
    assert sorted(wires) == [[*prefix, "user:from a"], [*prefix, "user:from b"]]
    for request in fake_provider.requests[-2:]:
        assert_valid_request(request)


def test_two_runs_at_random_offsets_lose_and_mix_nothing(tmp_path):
    outcomes = run_trials(3, tmp_path, seed=7)
    problems = [(o.trial, o.offset, o.problems) for o in outcomes if o.problems]
    assert not problems
    assert sum(o.lost + o.mixed + o.untold for o in outcomes) == 0


def test_a_lease_left_by_a_killed_process_is_taken_over(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    answering(fake_provider, 0)
    first = subprocess.run(command(fake_provider.openai_url, "-p", "hello"), cwd=ws, env=env,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    fake_provider.responder = None
    fake_provider.script(Reply.stall(60))
    victim = subprocess.Popen(command(fake_provider.openai_url, "-c", "-p", "killed"), cwd=ws,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    posts = len(fake_provider.requests)
    wait_for(lambda: len(fake_provider.requests) > posts)  # it holds the lease, mid-turn
    victim.kill()
    victim.wait()
    fake_provider.clear_script()
    answering(fake_provider, 0)
    again = subprocess.run(command(fake_provider.openai_url, "-c", "-p", "after"), cwd=ws,
                           env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    saved = saved_histories(home / "state" / "agent.db")
    assert len(saved) == 1, saved  # the dead run's lease did not make this one fork
    assert "forked" not in again.stderr
    assert list(saved.values())[0][-2:] == ["user:after", "assistant:answer to after"]
