"""A long compacted turn keeps no copies of its history: counted, never timed or weighed.

A 120-step tool loop through the real openai SDK against the local fake provider, with
compaction on and the session recorded in the state database (the shape of
bench/long_turn.py).  Past the summary, the live message objects are the history's own
plus a bounded number (the prune plugin's copies of the messages after its cut), whatever
the length of the history; the requests, the SDK's responses and the stream's objects of
earlier steps are gone.  Before the prune plugin held its summary's cut, every old tool call
kept a stubbed copy alive, so the count grew by three messages a step instead of two.
"""

from __future__ import annotations

import gc

from fakeprovider import Reply, Request

from agent import hookimpl
from agent.contract.messages import Message, TextPart, ToolResultPart
from agent.contract.providers import ProviderRequest
from agent.testing import collect, make_boot, make_session

STEPS = 120
#: where the live objects are counted: well past the first summary (about step 30 here)
CHECKS = (60, 120)


def live(kind: type) -> int:
    return sum(1 for obj in gc.get_objects() if type(obj) is kind)


async def test_a_long_compacted_turn_holds_the_history_and_a_bounded_rest(tmp_path,
                                                                       fake_provider):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    for n in range(STEPS + 1):
        (ws / "src" / f"module_{n}.py").write_text(
            "".join(f"def f_{n}_{j}(x):  # line {j} of module {n}\n" for j in range(24)))
    config, hooks = make_boot(ws, tmp_path / "home",
                              builtins=["openai", "prune", "files", "sessions"],
                              file_data={"compact_threshold": 4000})
    probe = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5")
    session = hooks.open_session(probe.runtime)
    session.max_steps = STEPS + 1
    assert session.recorder is not None  # recorded, as a real run is
    del probe
    counts: dict[int, dict[str, int]] = {}

    class Count:
        @hookimpl
        def agent_request_done(self, session, model, usage):
            steps = sum(1 for m in session.messages if m.role == "assistant")
            if steps in CHECKS and steps not in counts:
                gc.collect()
                counts[steps] = {
                    "history": len(session.messages),
                    "messages": live(Message) - before["messages"],
                    "results": live(ToolResultPart) - before["results"],
                    "texts": live(TextPart) - before["texts"],
                    "requests": live(ProviderRequest) - before["requests"],
                }

    hooks.pm.register(Count(), "count")
    # What lives before the turn (other tests' leftovers in this worker) is not the turn's.
    gc.collect()
    before = {"messages": live(Message), "results": live(ToolResultPart),
              "texts": live(TextPart), "requests": live(ProviderRequest)}
    step = [0]

    def respond(req: Request) -> Reply:
        body = req.body if isinstance(req.body, dict) else {}
        first = (body.get("messages") or [{}])[0]
        if "working notes" in str(first.get("content", "")):
            return Reply.text("Notes: read src/module_*.py one by one; nothing changed.")
        step[0] += 1
        if step[0] > STEPS:
            return Reply.text("All modules read.")
        return Reply(text=f"Reading module {step[0]}.",
                     tool_calls=[("read_file", {"path": f"src/module_{step[0]}.py"},
                                  f"call_{step[0]}")])

    fake_provider.responder = respond
    events = await collect(session, "Read every module under src/, one per step.")
    assert events[-1].type == "done" and events[-1].reason == "end", events[-1]
    summarised = [r for r in fake_provider.requests
                  if "working notes" in str(r.body["messages"][0].get("content", ""))]
    assert summarised, "the turn never compacted: the test proves nothing"
    assert set(counts) == set(CHECKS), counts

    early, late = counts[CHECKS[0]], counts[CHECKS[-1]]
    for seen in (early, late):
        # the history's own messages, and a bounded rest (no copy per old step)
        assert seen["history"] <= seen["messages"] <= seen["history"] + 60, seen
        # one result per step in the history; no other copy of any
        assert seen["results"] <= seen["history"] // 2 + 10, seen
        assert seen["requests"] <= 3, seen
    grown = late["history"] - early["history"]
    assert late["messages"] - early["messages"] <= grown + 10, (early, late)
    # one text part a step (the assistant's words): no note or merged copy kept per step
    assert late["texts"] - early["texts"] <= grown // 2 + 10, (early, late)
