"""Two real agent processes editing one file: every edit lands or is refused with a reason.

Each agent runs 50 rounds of read_file then edit_file (each its own line) in one headless
turn.  The fake provider is the referee: it answers an agent's edit only once both agents have
read the file in that round (so both work from the same view), in a random order, and in every
fifth round a "person" changes a third line between the reads and the edits.  The oracle is the
file on disk against what each agent was told: an edit reported as made is in the file, an edit
refused left its line alone, the person's lines are never overwritten, and in each round exactly
one agent's edit lands (none in the person's rounds).
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading

import pytest
from clirun import agent_env
from fakeprovider import Reply

pytestmark = pytest.mark.e2e

ROUNDS = 50
PERSON_EVERY = 5


def _text(content) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def read(who: str, i: int) -> Reply:
    # A limit of its own each round: three identical calls in one turn would be asked about.
    return Reply.tool_call("read_file", {"path": "shared.txt", "limit": 1000 + i},
                           id=f"r{who}{i}")


class Referee:
    def __init__(self, target, seed: int) -> None:
        self.target = target
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.barriers = [threading.Barrier(2, action=self._between(i), timeout=60)
                         for i in range(ROUNDS)]
        self.told: dict[tuple[str, int], str] = {}

    def _between(self, i: int):
        def person() -> None:
            if i % PERSON_EVERY == PERSON_EVERY - 1:  # the person edits after both reads
                text = self.target.read_text()
                self.target.write_text(text.replace(f"U{i} old\n", f"U{i} user\n"))
        return person

    def respond(self, req):
        messages = req.body["messages"]
        who = "A" if "agent A" in _text(messages[1]["content"]) else "B"
        calls = [c["function"]["name"] for m in messages if m["role"] == "assistant"
                 for c in m.get("tool_calls") or []]
        if messages[-1]["role"] == "user":
            return read(who, 0)
        i = calls.count("read_file") - 1
        if calls[-1] == "read_file":
            self.barriers[i].wait()
            with self.lock:
                pause = self.rng.random() * 0.01
            threading.Event().wait(pause)  # a random order for the two edits
            return Reply.tool_call("edit_file", {"path": "shared.txt",
                                                 "oldString": f"{who}{i} old",
                                                 "newString": f"{who}{i} new"}, id=f"e{who}{i}")
        self.told[(who, i)] = _text(messages[-1]["content"])
        if i + 1 == ROUNDS:
            return Reply.text("done")
        return read(who, i + 1)


def test_two_agents_editing_one_file_never_lose_an_edit(tmp_path, fake_provider):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    target = ws / "shared.txt"
    target.write_text("".join(f"A{i} old\nB{i} old\nU{i} old\n" for i in range(ROUNDS)))
    referee = Referee(target, seed=random.randrange(1 << 30))
    fake_provider.responder = referee.respond
    env = agent_env(home, OPENAI_API_KEY="sk-test", AGENT_OPENAI_API="chat")
    procs = [subprocess.Popen(
        [sys.executable, "-m", "agent", "-p", f"you are agent {who}", "--yolo",
         "--max-steps", str(2 * ROUNDS + 5), "--provider", "openai",
         "--base-url", fake_provider.openai_url, "--model", "m"],
        cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for who in "AB"]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    final = target.read_text()
    landed_per_round = []
    for i in range(ROUNDS):
        landed = 0
        for who in "AB":
            told = referee.told[(who, i)]
            if told.startswith("Replaced 1 occurrence"):
                assert f"{who}{i} new\n" in final, (who, i, told)  # reported made: it is there
                landed += 1
            else:
                assert "shared.txt changed since you last read it" in told, (who, i, told)
                assert f"{who}{i} old\n" in final, (who, i)  # refused: its line untouched
        landed_per_round.append(landed)
        person = i % PERSON_EVERY == PERSON_EVERY - 1
        assert (f"U{i} user\n" if person else f"U{i} old\n") in final  # never overwritten
    assert landed_per_round == [0 if i % PERSON_EVERY == PERSON_EVERY - 1 else 1
                                for i in range(ROUNDS)]
