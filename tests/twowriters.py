"""Two-writer trials: two real ``agent -c -p`` processes continue one saved session, the
second started a random moment after the first.

Each trial makes a session (``agent -p``) in a workspace of its own, then starts run A and,
``offset`` seconds later, run B, both ``agent -c -p PROMPT --json``.  The fake provider answers
each request with ``answer to PROMPT`` (whatever the order the requests come in), slowly
enough that the runs overlap.  The oracle counts messages, never timing:

- **lost**: each run's prompt and its answer are saved, each exactly once in the database;
- **mixed**: the history each run's request carried is exactly what its session holds before
  its prompt (no other run's prompt slipped in or out), and the session the trial began with
  still starts with its own prefix;
- **told**: when the runs ended in two sessions, the one that moved says so
  (``session-forked`` with ``moved: true``) and the one that kept the session says so too
  (the event with ``moved: false``, or its note on stderr at exit).

Used by ``tests/state/test_two_writers.py`` (a few trials) and ``bench/two_writers.py`` (50).
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clirun import agent_env
from fakeprovider import FakeProvider, Reply


@dataclass
class Outcome:
    trial: int
    offset: float
    sessions: int  # how many sessions hold the two runs' prompts (1: one after the other)
    lost: int = 0
    mixed: int = 0
    untold: int = 0
    codes: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message.get("parts", []) if p.get("type") == "text")


def saved_histories(db: Path) -> dict[str, list[str]]:
    """Every saved session of the database ``db``: its messages as ``role:text``."""
    conn = sqlite3.connect(db)
    try:
        out: dict[str, list[str]] = {}
        for sid, body in conn.execute("SELECT session_id, body FROM messages "
                                      "ORDER BY session_id, seq"):
            message = json.loads(body)
            out.setdefault(sid, []).append(f"{message['role']}:{_text(message)}")
        return out
    finally:
        conn.close()


def _wire(request: Any) -> list[str]:
    """A chat completions request's history as ``role:text`` (the system prompt left out)."""
    out = []
    for m in request.body.get("messages", []):
        if m["role"] == "system":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
        out.append(f"{m['role']}:{content or ''}")
    return out


def answering(srv: FakeProvider, delay: float) -> None:
    """Answer every request with ``answer to <its last prompt>``, in pieces over time."""

    def respond(req: Any) -> Reply | None:
        body = req.body if isinstance(req.body, dict) else {}
        prompts = [m for m in body.get("messages", []) if m.get("role") == "user"]
        last = prompts[-1].get("content") if prompts else ""
        if isinstance(last, list):
            last = "".join(c.get("text", "") for c in last if isinstance(c, dict))
        return Reply(f"answer to {last}", pieces=4, delay=delay)

    srv.responder = respond


def command(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "agent", *args, "--provider", "openai", "--base-url", url,
            "--model", "gpt-5"]


def trial(n: int, srv: FakeProvider, home: Path, root: Path, offset: float) -> Outcome:
    ws = root / f"ws{n}"
    ws.mkdir()
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    base = f"base {n}"
    first = subprocess.run(command(srv.openai_url, "-p", base), cwd=ws, env=env,
                           capture_output=True, text=True, timeout=120)
    outcome = Outcome(n, offset, 0)
    if first.returncode != 0:
        outcome.problems.append(f"the first run failed: {first.stderr[-300:]}")
        return outcome
    prompts = {"a": f"from a {n}", "b": f"from b {n}"}
    seen = len(srv.requests)
    procs = {}
    procs["a"] = subprocess.Popen(command(srv.openai_url, "-c", "-p", prompts["a"], "--json"),
                                  cwd=ws, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
    time.sleep(offset)
    procs["b"] = subprocess.Popen(command(srv.openai_url, "-c", "-p", prompts["b"], "--json"),
                                  cwd=ws, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
    outs = {}
    for name, proc in procs.items():
        try:
            outs[name] = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            outs[name] = proc.communicate()
        outcome.codes.append(proc.returncode)
        if proc.returncode != 0:
            outcome.problems.append(f"run {name} exited {proc.returncode}: "
                                    f"{outs[name][1][-300:]}")
    saved = saved_histories(home / "state" / "agent.db")
    requests = {}
    for req in srv.requests[seen:]:
        if req.method == "POST" and isinstance(req.body, dict):
            wire = _wire(req)
            for name, prompt in prompts.items():
                if wire and wire[-1] == f"user:{prompt}":
                    requests[name] = wire
    homes: dict[str, str] = {}
    for name, prompt in prompts.items():
        where = [(sid, msgs.index(f"user:{prompt}")) for sid, msgs in saved.items()
                 if f"user:{prompt}" in msgs]
        copies = sum(msgs.count(f"user:{prompt}") for msgs in saved.values())
        answers = sum(msgs.count(f"assistant:answer to {prompt}") for msgs in saved.values())
        if copies != 1 or answers != 1:
            outcome.lost += 1
            outcome.problems.append(f"run {name}: its prompt is saved {copies} times, its "
                                    f"answer {answers} times")
            continue
        sid, at = where[0]
        homes[name] = sid
        msgs = saved[sid]
        if msgs[at + 1:at + 2] != [f"assistant:answer to {prompt}"]:
            outcome.mixed += 1
            outcome.problems.append(f"run {name}: its answer does not follow its prompt")
        if requests.get(name) != msgs[:at + 1]:
            outcome.mixed += 1
            outcome.problems.append(f"run {name}: the model saw {requests.get(name)}, the "
                                    f"session holds {msgs[:at + 1]} before its answer")
        if msgs[:2] != [f"user:{base}", f"assistant:answer to {base}"]:
            outcome.mixed += 1
            outcome.problems.append(f"run {name}: its session lost the shared start: {msgs}")
    outcome.sessions = len(set(homes.values()))
    if outcome.sessions == 2:
        events = {name: [json.loads(line) for line in out.splitlines() if line.startswith("{")]
                  for name, (out, _) in outs.items()}
        forked = {name: [e for e in ev if e.get("type") == "session-forked"]
                  for name, ev in events.items()}
        movers = [name for name in forked if any(e["moved"] for e in forked[name])]
        if len(movers) != 1:
            outcome.untold += 1
            outcome.problems.append(f"the run that moved did not say so once: {forked}")
        else:
            kept = "b" if movers[0] == "a" else "a"
            fork = homes[movers[0]]
            told = any(not e["moved"] and e["session"] == fork for e in forked[kept]) or \
                fork[:18] in outs[kept][1]
            if not told:
                outcome.untold += 1
                outcome.problems.append(f"run {kept} kept the session but was not told of "
                                        f"{fork}: {outs[kept][1][-400:]}")
    return outcome


def run_trials(trials: int, root: Path, *, seed: int = 0, max_offset: float = 2.5,
               delay: float = 0.15, progress: Any = None) -> list[Outcome]:
    """``trials`` trials in one state directory under ``root``; offsets uniform over
    ``0..max_offset`` seconds."""
    rng = random.Random(seed)
    home = root / "home"
    outcomes = []
    with FakeProvider.start() as srv:
        answering(srv, delay)
        for n in range(trials):
            outcome = trial(n, srv, home, root, rng.uniform(0, max_offset))
            outcomes.append(outcome)
            if progress is not None:
                progress(outcome)
    return outcomes
