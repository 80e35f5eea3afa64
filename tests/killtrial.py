"""``kill -9`` trials: start ``agent -p`` against the fake provider, kill it at a random moment,
then check what a user would rely on.

After each kill:

- ``PRAGMA integrity_check`` passes on the state database;
- nothing committed is lost: the last request the fake server received carries the history
  the agent had committed by then (the recorder commits each message before the request
  that includes it is built), so that history must still be in the store, in order;
- ``agent -c -p`` works: it exits 0, and the request it sends is valid (every tool call
  answered, the interrupted ones included) and starts with everything the store held (that
  run goes through ``agent.cli.main`` in this process: only the killed run needs a process
  of its own);
- every saved session still loads.

Used by ``tests/state/test_durability.py`` (a few trials) and ``bench/kill_durability.py`` (many).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clirun import agent_env, run_agent_here
from fakeprovider import FakeProvider, Reply
from wirecheck import assert_valid_request

from agent.contract.messages import Message
from plugins_builtin.openai import chat_messages


@dataclass
class Outcome:
    """What one trial found."""

    trial: int
    delay: float
    killed: bool  # the process was still running when the signal was sent
    landed: str  # where the kill landed, judged from the saved history
    problems: list[str] = field(default_factory=list)


def script_for(rng: random.Random) -> list[Reply]:
    """A turn of 1-4 steps with delays: tool calls that take a while, then an answer."""
    replies: list[Reply] = []
    for step in range(rng.randint(0, 3)):
        calls: list[tuple[Any, ...]] = []
        for n in range(rng.randint(1, 2)):
            if rng.random() < 0.5:
                calls.append(("bash", {"command": f"sleep 0.{rng.randint(1, 3)}; echo s{step}"},
                              f"call_{step}_{n}"))
            else:
                calls.append(("current_time", {}, f"call_{step}_{n}"))
        replies.append(Reply(text=rng.choice(["", "Working on it. "]), tool_calls=calls,
                             delay=rng.choice([0.0, 0.01, 0.03])))
    replies.append(Reply("The answer, written slowly over several events.", pieces=8,
                         delay=rng.choice([0.01, 0.03, 0.06])))
    return replies


def db_path(home: Path) -> Path:
    return home / "state" / "agent.db"


def saved_messages(home: Path, prompt: str) -> list[dict[str, Any]] | None:
    """The saved messages of the session that began with ``prompt`` (None: not saved)."""
    path = db_path(home)
    if not path.exists():
        return None
    conn = sqlite3.connect(str(path))
    try:
        row = conn.execute("SELECT session_id FROM messages WHERE seq = 1 AND body LIKE ?",
                           (f"%{json.dumps(prompt)[1:-1]}%",)).fetchone()
        if row is None:
            return None
        bodies = conn.execute("SELECT body FROM messages WHERE session_id = ? ORDER BY seq",
                              (row[0],)).fetchall()
        return [json.loads(b) for (b,) in bodies]
    finally:
        conn.close()


def saved_message_count(home: Path) -> int:
    """How many messages the store holds, over every session (0 when there is no store)."""
    path = db_path(home)
    if not path.exists():
        return 0
    conn = sqlite3.connect(str(path))
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saved messages as chat completions would carry them."""
    return chat_messages("", [Message.from_dict(m) for m in messages])


def landed_at(messages: list[dict[str, Any]] | None) -> str:
    if not messages:
        return "before the prompt was saved"
    last = Message.from_dict(messages[-1])
    if last.role == "user":
        return "waiting for the model"
    if last.role == "tool":
        return "after tool results"
    if last.tool_calls:
        return "while tools ran"
    return "after the answer"


def integrity(home: Path) -> str:
    path = db_path(home)
    if not path.exists():
        return "ok"
    conn = sqlite3.connect(str(path))
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def agent_args(url: str, *args: str) -> list[str]:
    return [*args, "--yolo", "--provider", "openai", "--base-url", url, "--model", "gpt-5"]


def agent_cmd(url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "agent", *agent_args(url, *args)]


def run_trial(n: int, home: Path, ws: Path, rng: random.Random, *, max_delay: float = 2.5,
              resume: bool = True) -> Outcome:
    """One kill at a random moment, then every check (see the module docstring)."""
    prompt = f"trial {n}: do the thing #{rng.randrange(10**9)}"
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    delay = rng.uniform(0.05, max_delay)
    with FakeProvider.start() as srv:
        srv.script(*script_for(rng))
        proc = subprocess.Popen(agent_cmd(srv.openai_url, "-p", prompt), cwd=ws, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=delay)
            killed = False  # it finished first
        except subprocess.TimeoutExpired:
            killed = True
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        seen = [r for r in srv.requests if r.method == "POST"]
    saved = saved_messages(home, prompt)
    outcome = Outcome(n, delay, killed, landed_at(saved))
    problems = outcome.problems
    check = integrity(home)
    if check != "ok":
        problems.append(f"integrity_check: {check}")
    if seen:
        sent = [m for m in seen[-1].body["messages"] if m["role"] != "system"]
        if saved is None:
            problems.append("the server saw a request, but its prompt is not in the store")
        elif wire(saved)[:len(sent)] != sent:
            problems.append("messages the server saw are missing from the store")
    if not resume:
        return outcome
    nothing_saved = saved_message_count(home) == 0
    with FakeProvider.start() as srv:
        srv.script(Reply.text("resumed"))
        proc2 = run_agent_here(agent_args(srv.openai_url, "-c", "-p", f"after kill {n}"),
                               home=home, cwd=ws, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
        if nothing_saved:
            # Every kill so far landed before a prompt was saved: there is nothing to carry
            # on, and saying so (exit 2, nothing sent) is the right answer.
            if proc2.returncode != 2 or "no saved session" not in proc2.stderr or srv.requests:
                problems.append(f"agent -c with nothing saved exited {proc2.returncode}: "
                                f"{proc2.stderr.strip()[-300:]}")
            return outcome
        if proc2.returncode != 0:
            problems.append(f"agent -c exited {proc2.returncode}: {proc2.stderr.strip()[-300:]}")
            return outcome
        request = srv.requests[-1]
    try:
        assert_valid_request(request)
    except AssertionError as exc:
        problems.append(f"the resumed request is invalid: {exc}")
    if saved is not None:
        sent = [m for m in request.body["messages"] if m["role"] != "system"]
        if sent[:len(wire(saved))] != wire(saved):
            problems.append("agent -c did not send back everything that was saved")
    return outcome


def calibrate(home: Path, ws: Path, seed: int = 0) -> float:
    """Wall time of one whole run of a typical script (nothing killed): the span over which
    kill moments are spread."""
    rng = random.Random(seed)
    env = agent_env(home, OPENAI_API_KEY="x", AGENT_OPENAI_API="chat")
    with FakeProvider.start() as srv:
        srv.script(*script_for(rng))
        start = time.monotonic()
        subprocess.run(agent_cmd(srv.openai_url, "-p", "calibration run"), cwd=ws, env=env,
                       capture_output=True, timeout=120)
        return time.monotonic() - start


def check_all_sessions(home: Path) -> list[str]:
    """Every saved session loads and makes a valid history."""
    from agent.state.store import Store

    problems = []
    if not db_path(home).exists():
        return problems
    with Store.open(home / "state") as store:
        for record in store.sessions(limit=None):
            try:
                messages = [Message.from_dict(d) for d in store.load_messages(record.id)]
                chat_messages("", messages)
            except Exception as exc:  # report, do not stop: this is the finding
                problems.append(f"session {record.id} does not load: {exc}")
    return problems


def run_trials(count: int, home: Path, ws: Path, *, seed: int = 0, max_delay: float = 2.5,
               resume: bool = True, progress: Any = None, kills: int | None = None
               ) -> tuple[list[Outcome], list[str]]:
    """``count`` trials in one state directory (or, with ``kills``, as many as it takes for
    that many to be killed mid-run, at most three times as many); returns the outcomes and
    any problem found when every saved session is loaded at the end."""
    rng = random.Random(seed)
    outcomes: list[Outcome] = []
    n = 0
    while True:
        if kills is None and n >= count:
            break
        if kills is not None and (sum(o.killed for o in outcomes) >= kills or n >= 3 * kills):
            break
        n += 1
        outcome = run_trial(n, home, ws, rng, max_delay=max_delay, resume=resume)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return outcomes, check_all_sessions(home)


def summary(outcomes: list[Outcome], final: list[str]) -> list[str]:
    """Markdown lines: trials, where the kills landed, problems."""
    killed = sum(o.killed for o in outcomes)
    places = Counter(o.landed for o in outcomes if o.killed)
    failed = [o for o in outcomes if o.problems]
    lines = [f"- trials: {len(outcomes)} (killed mid-run: {killed}; finished before the "
             f"signal: {len(outcomes) - killed})",
             "- where the kills landed: " + ", ".join(f"{place}: {count}"
                                                      for place, count in places.most_common()),
             f"- integrity_check failures: "
             f"{sum(any(p.startswith('integrity') for p in o.problems) for o in outcomes)}",
             f"- trials losing committed messages: "
             f"{sum(any('missing' in p for p in o.problems) for o in outcomes)}",
             f"- `agent -c` failures: "
             f"{sum(any('agent -c' in p or 'resumed' in p for p in o.problems) for o in outcomes)}",
             f"- sessions that no longer load: {len(final)}"]
    for o in failed:
        lines.append(f"  - trial {o.trial} (kill at {o.delay:.2f} s): " + "; ".join(o.problems))
    lines.extend(f"  - {p}" for p in final)
    return lines
