"""Compaction: long sessions keep working, keep what matters, and never break tool pairing.

The behaviour tests drive the real loop with a scripted model (a stand-in for the remote
model, which decides its next move from the request it receives) and assert on what was
sent; the wire tests run the real SDKs against the local fake provider.
"""

from __future__ import annotations

import json
import random
import re

import pytest
from fakeprovider import Reply

from agent import Effects, Tool, hookimpl
from agent.contract import events as ev
from agent.contract.messages import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from agent.contract.providers import ProviderError, StepFinished, TextDelta, Usage
from agent.loop.session import Runtime, Session
from agent.testing import collect, make_boot, make_session
from plugins_builtin import prune

FILLER = " ".join(["context"] * 220)  # ~1,600 characters per prompt


def prompt(n: int) -> str:
    return f"REQ-{n}: please look at f{n}.txt and fix it. {FILLER}"


def big_tool() -> Tool:
    async def run(args, ctx):
        return f"contents of {args['path']}\n" + "line of output\n" * 200

    return Tool("big", "read a big file", run,
                {"type": "object", "properties": {"path": {"type": "string"}},
                 "required": ["path"]},
                effects=lambda a: Effects(reads=(a["path"],)), read_only=True)


class Tools:
    @hookimpl
    def agent_register_tools(self, register, config):
        register(big_tool())


class ScriptedModel:
    """The model: two tool calls per request from the user, then an answer.  It counts
    the results it can *see*, so a request that lost the current tool loop would make it
    loop until the step cap.  Summary requests get notes naming every REQ-n they were shown
    (what a real summariser would keep)."""

    label = "scripted"

    def __init__(self, *, fail_summaries: bool = False, calls_per_turn: int = 2) -> None:
        self.requests: list = []
        self.fail_summaries = fail_summaries
        self.calls_per_turn = calls_per_turn

    @staticmethod
    def is_summary(request) -> bool:
        return "working notes" in request.system

    async def stream(self, request):
        self.requests.append(request)
        if self.is_summary(request):
            if self.fail_summaries:
                raise ProviderError("summary model unavailable", status=503)
            seen = sorted(set(re.findall(r"REQ-\d+", request.messages[-1].text)),
                          key=lambda r: int(r[4:]))
            notes = "NOTES: " + ", ".join(seen)
            yield TextDelta(notes)
            yield StepFinished(Message("assistant", [TextPart(notes)]), Usage())
            return
        msgs = request.messages
        last_user = max(i for i, m in enumerate(msgs) if m.role == "user")
        current = re.findall(r"REQ-(\d+)", msgs[last_user].text)[-1]
        done = sum(len(m.tool_results) for m in msgs[last_user + 1:])
        if done < self.calls_per_turn:
            msg = Message("assistant", [
                ReasoningPart("I should read it", signature="sig"),
                TextPart("reading"),
                ToolCallPart(f"c{current}-{done}", "big", {"path": f"f{current}.txt"})])
            yield StepFinished(msg, Usage(), "tool_use")
            return
        yield TextDelta(f"done {current}")
        yield StepFinished(Message("assistant", [TextPart(f"done {current}")]), Usage())

    async def list_models(self):
        return []


def scripted_session(tmp_path, model, threshold: int) -> Session:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["prune"],
                              extra=[("tools", Tools())],
                              file_data={"compact_threshold": threshold})
    runtime = Runtime(config=config, hooks=hooks, tools=hooks.tools(config), provider=model,
                      model="m")
    return Session(runtime, max_steps=8)


def wire_text(request) -> str:
    return json.dumps([m.to_dict() for m in request.messages])


def assert_pairing(messages: list[Message]) -> None:
    """Every result answers a call in the message before; every call is answered next."""
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            assert i > 0 and messages[i - 1].role == "assistant"
            called = {c.id for c in messages[i - 1].tool_calls}
            assert {r.call_id for r in msg.tool_results} <= called, f"orphan result at {i}"
        if msg.tool_calls:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            assert nxt is not None and nxt.role == "tool", f"unanswered call at {i}"
            assert {c.id for c in msg.tool_calls} <= {r.call_id for r in nxt.tool_results}


async def run_long_session(tmp_path, model, turns=20, threshold=6000):
    session = scripted_session(tmp_path, model, threshold)
    per_turn: list[list] = []
    for n in range(1, turns + 1):
        events = await collect(session, prompt(n))
        assert events[-1].type == "done" and events[-1].reason == "end", (n, events[-1])
        per_turn.append(events)
        if n == 2:
            assert prune.pin_last(session).startswith('Pinned: "REQ-2')
    return session, per_turn


async def test_a_long_session_keeps_its_memory_and_its_tool_pairs(tmp_path):
    model = ScriptedModel()
    session, per_turn = await run_long_session(tmp_path, model)

    main = [r for r in model.requests if not model.is_summary(r)]
    summaries = [r for r in model.requests if model.is_summary(r)]
    assert len(main) == 20 * 3  # every turn ended because the model chose to, in 3 steps
    steps = {prune.state(session)["step"]}
    compacted_turns = [n for n, events in enumerate(per_turn, 1)
                       if any(isinstance(e, ev.CompactedEvent) for e in events)]
    assert compacted_turns and compacted_turns[0] > 2  # crossed the threshold, not at once
    for events in per_turn:  # reported once per turn at most
        assert sum(isinstance(e, ev.CompactedEvent) for e in events) <= 1
    assert summaries, "the session grew past what tool pruning alone can fit"
    assert len(summaries) < len(compacted_turns)  # summaries are cached, not remade per step
    assert steps == {"summary"}

    pinned_text = prompt(2)
    for index, request in enumerate(main):
        turn = index // 3 + 1
        text = wire_text(request)
        for earlier in range(1, turn):  # verbatim or through the summary
            assert f"REQ-{earlier}" in text, (turn, earlier)
        assert_pairing(request.messages)
        if turn > 2:
            assert any(pinned_text in m.text for m in request.messages), turn
        assert request.messages[0].role == "user"
        assert len(text) // 4 <= 6000, (turn, len(text) // 4)

    # The session's own history is complete: nothing pruned, reasoning and results intact.
    assert sum(len(m.tool_results) for m in session.messages) == 40
    assert sum(isinstance(p, ReasoningPart) for m in session.messages for p in m.parts) == 40
    assert all("line of output" in r.output for m in session.messages for r in m.tool_results)
    pinned = [i for i, m in enumerate(session.messages) if m.pinned]
    assert pinned == [6] and session.messages[6].text == prompt(2)  # only what /pin marked


async def test_a_failing_summary_model_falls_back_to_deterministic_notes(tmp_path):
    model = ScriptedModel(fail_summaries=True)
    session, _ = await run_long_session(tmp_path, model, turns=14)
    main = [r for r in model.requests if not model.is_summary(r)]
    last = wire_text(main[-1])
    assert "model summary was unavailable" in last
    assert "Files touched: f1.txt" in last
    for earlier in range(1, 14):
        assert f"REQ-{earlier}" in last
    failed = [r for r in model.requests if model.is_summary(r)]
    assert len(failed) < 14  # a failed span is not retried on every step


async def test_under_the_threshold_the_request_is_untouched(tmp_path):
    model = ScriptedModel()
    session = scripted_session(tmp_path, model, threshold=1_000_000)
    events = await collect(session, prompt(1))
    assert not any(isinstance(e, ev.CompactedEvent) for e in events)
    last = model.requests[-1]
    assert [m.to_dict() for m in last.messages] == [m.to_dict() for m in session.messages[:-1]]
    assert any(isinstance(p, ReasoningPart) for m in last.messages for p in m.parts)


def random_history(rng: random.Random, turns: int) -> list[Message]:
    """Turns of tool loops with reasoning, item ids and the odd pinned prompt.  Half the
    histories reuse call ids across steps, as some local servers do (call_0, call_1...)."""
    msgs: list[Message] = []
    n = 0
    reuse = rng.random() < 0.5
    for t in range(turns):
        msgs.append(Message("user", [TextPart(f"REQ-{t} " + "x" * rng.randint(10, 800))],
                            pinned=rng.random() < 0.1))
        for _ in range(rng.randint(0, 4)):
            calls = [ToolCallPart(f"call_{k}" if reuse else f"id{(n := n + 1)}", "big",
                                  {"path": f"p{n}"}, item_id=f"fc_{n}")
                     for k in range(rng.randint(1, 3))]
            parts = [ReasoningPart("r" * rng.randint(0, 300), item_id=f"rs_{n}")] \
                if rng.random() < 0.7 else []
            msgs.append(Message("assistant", [*parts, TextPart("t" * rng.randint(0, 50)),
                                              *calls]))
            msgs.append(Message("tool", [ToolResultPart(c.id, c.name, "o" * rng.randint(0, 3000))
                                         for c in calls]))
        if rng.random() < 0.8:
            msgs.append(Message("assistant", [ReasoningPart("r"), TextPart("answer")]))
    return msgs


@pytest.mark.parametrize("seed", range(8))
async def test_pruned_requests_never_break_pairing(tmp_path, seed):
    rng = random.Random(seed)
    model = ScriptedModel()
    session = scripted_session(tmp_path, model, threshold=rng.choice([500, 1500, 4000]))
    history = random_history(rng, rng.randint(3, 18))
    from agent.contract.providers import ProviderRequest

    for end in range(1, len(history) + 1):
        if history[end - 1].role == "assistant" and history[end - 1].tool_calls:
            continue  # a request is never sent between a call and its result
        request = ProviderRequest("m", "system", history[:end])
        result = prune.agent_prepare_request(request, session)
        sent = (await result).messages if result is not None else request.messages
        assert_pairing(sent)
        kept_pins = [m for m in history[:end] if m.pinned]
        for pin in kept_pins:
            assert any(pin.text in m.text for m in sent)
        assert all(m.parts for m in sent)
        assert history[end - 1].text in json.dumps([m.to_dict() for m in sent])


async def test_compact_replaces_the_history_with_a_summary(tmp_path):
    model = ScriptedModel()
    session = scripted_session(tmp_path, model, threshold=1_000_000)
    assert await prune.compact(session) == "Nothing to compact: the session is empty."
    for n in (1, 2, 3):
        await collect(session, prompt(n))
    prune.pin_last(session)
    before = len(session.messages)
    assert await prune.compact(session) == f"compacted {before} messages into 1 (and kept 1 pinned)"
    assert session.messages[0].text == (
        "Summary of the session so far:\n\nNOTES: REQ-1, REQ-2, REQ-3")
    assert session.messages[1].pinned and session.messages[1].text == prompt(3)
    assert len(session.messages) == 2
    await collect(session, prompt(4))  # the session goes on from the summary
    assert model.requests[-1].messages[0].text.startswith("Summary of the session so far:")


async def test_compact_leaves_the_history_alone_when_the_model_fails(tmp_path):
    session = scripted_session(tmp_path, ScriptedModel(), threshold=1_000_000)
    await collect(session, prompt(1))
    session.runtime.provider = ScriptedModel(fail_summaries=True)
    before = [m.to_dict() for m in session.messages]
    reply = await prune.compact(session)
    assert reply.startswith("Compaction failed, history unchanged")
    assert [m.to_dict() for m in session.messages] == before


async def test_pin_and_compact_commands_report_through_the_app(tmp_path):
    session = scripted_session(tmp_path, ScriptedModel(), threshold=1_000_000)
    registry = session.hooks.commands(session.config)
    shown: list[str] = []

    class App:
        def __init__(self):
            self.session = session

        def info(self, text):
            shown.append(text)

    registry.get("pin").run(App(), "")
    await collect(session, prompt(1))
    registry.get("pin").run(App(), "")
    await registry.get("compact").run(App(), "")
    assert shown[0].startswith("Nothing to pin yet")
    assert shown[1].startswith('Pinned: "REQ-1')
    assert shown[2] == "compacted 6 messages into 1 (and kept 1 pinned)"


# ---- on the wire, through the real SDKs -------------------------------------------------------


async def test_summary_call_and_summarised_request_on_the_wire(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "prune"],
                              file_data={"compact_threshold": 2500})
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    replies = [Reply.text(f"ANSWER-{i} " + "words " * 300) for i in range(12)]
    fake_provider.script(*replies)
    for n in range(1, 6):
        await collect(session, f"REQ-{n} " + FILLER)
    bodies = fake_provider.bodies
    summary_calls = [i for i, b in enumerate(bodies)
                     if "working notes" in b["messages"][0]["content"]]
    assert summary_calls, [len(json.dumps(b)) for b in bodies]
    first = summary_calls[0]
    assert "tools" not in bodies[first] or not bodies[first]["tools"]
    assert "REQ-1" in bodies[first]["messages"][-1]["content"]
    # A long span is folded in chunks, each call carrying the notes so far.
    run_end = first
    while run_end + 1 in summary_calls:
        run_end += 1
        assert f"Earlier notes:\nANSWER-{run_end - 1}" in bodies[run_end]["messages"][-1]["content"]
    # The next request carries the summary (the last reply's text) instead of REQ-1.
    after = json.dumps(bodies[run_end + 1]["messages"])
    assert "Summary of the earlier part of this session" in after
    assert f"ANSWER-{run_end}" in after and "REQ-1 context" not in after
    # The session's own history kept every message.
    assert [m.role for m in session.messages].count("user") == 5
    assert session.messages[0].text.startswith("REQ-1")


async def test_anthropic_tool_loop_keeps_its_last_thinking_block(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["anthropic", "prune"],
                              extra=[("tools", Tools())], file_data={"compact_threshold": 2200})
    session = make_session(config, hooks, provider="anthropic", base_url=fake_provider.base_url,
                           model="claude-sonnet-4-5")
    fake_provider.script(
        Reply(reasoning="first thought", text="reading", tool_calls=[("big", {"path": "a"})],
              signature="sig-a"),
        Reply.text("done 1"),
        Reply(reasoning="second thought", text="again", tool_calls=[("big", {"path": "b"})],
              signature="sig-b"),
        Reply.text("done 2"))
    await collect(session, "REQ-1 " + FILLER)
    events = await collect(session, "REQ-2 " + FILLER)
    assert any(isinstance(e, ev.CompactedEvent) for e in events)
    assert len(fake_provider.bodies) == 4  # tool pruning was enough: no summary call
    last = fake_provider.bodies[-1]["messages"]
    assert "REQ-1" in json.dumps(last) and "big" in json.dumps(last)
    final_assistant = [m for m in last if m["role"] == "assistant"][-1]
    assert final_assistant["content"][0]["type"] == "thinking"
    assert final_assistant["content"][0]["signature"] == "sig-b"
    earlier = [m for m in last if m["role"] == "assistant"][:-1]
    assert all(b["type"] not in ("thinking", "tool_use") for m in earlier for b in m["content"])
    assert "earlier tool call, details pruned" in json.dumps(earlier)


async def test_compact_and_pin_are_saved_and_the_summary_call_is_on_the_ledger(tmp_path,
                                                                               fake_provider):
    from agent.state.store import Store
    from plugins_builtin.sessions.recorder import SessionRecorder

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "prune"])
    store = Store.open(config.state_dir)
    session = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5",
                           recorder=SessionRecorder(store, cwd=str(config.workspace)))
    fake_provider.script(Reply.text("first answer"), Reply.text("second answer"),
                         Reply.text("NOTES: two questions were asked",
                                    usage={"input_tokens": 120, "output_tokens": 9}))
    await collect(session, "question one")
    prune.pin_last(session)
    assert store.load_messages(session.id)[0].get("pinned") is True
    await collect(session, "question two")
    assert await prune.compact(session) == "compacted 4 messages into 1 (and kept 1 pinned)"
    saved = store.load_messages(session.id)
    assert [m["parts"][0]["text"] for m in saved] == [
        "Summary of the session so far:\n\nNOTES: two questions were asked", "question one"]
    causes = [(r["cause"], r["input_tokens"]) for r in
              store.query("SELECT cause, input_tokens FROM usage ORDER BY id")]
    assert causes[-1] == ("command:compact", 120)
    store.close()


def test_summaries_survive_resume_so_they_are_not_paid_for_twice(tmp_path, fake_provider):
    """Summaries are saved with the session: after ``agent -c``, compaction carries on from
    the saved summary (an incremental call over the new span only) instead of summarising
    the whole history again from its first message."""
    from clirun import run_agent_here
    from fakeprovider import Reply

    home, ws = tmp_path / "h", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text("compact_threshold = 1500\n")
    base = ["--provider", "openai", "--base-url", fake_provider.openai_url, "--model", "m"]
    env = {"OPENAI_API_KEY": "x"}
    filler = "lorem ipsum dolor sit amet " * 60

    def summary_requests(requests):
        return [r for r in requests
                if "working notes" in str(r.body["messages"][0].get("content", ""))]

    for i in range(5):
        start = len(fake_provider.requests)
        # enough replies for the answer and any summary calls; the rest is dropped
        fake_provider.script(*[Reply.text(f"noted {i}") for _ in range(6)])
        args = ["-p", f"question {i}: {filler}"] + (["-c"] if i else []) + base
        assert run_agent_here(args, home=home, cwd=ws, **env).returncode == 0
        fake_provider.clear_script()
        made = summary_requests(fake_provider.requests[start:])
        if i == 4:
            assert made, "the last run made no summary call: the test proves nothing"
            assert not any("question 0:" in str(r.body["messages"]) for r in made), (
                "the last run summarised the first question again")
    assert summary_requests(fake_provider.requests)


class ReadingModel(ScriptedModel):
    """Reads another file at every step, so the turn never ends by itself."""

    async def stream(self, request):
        if self.is_summary(request):
            async for item in super().stream(request):
                yield item
            return
        self.requests.append(request)
        n = len(self.requests)
        yield StepFinished(Message("assistant", [
            TextPart(f"reading {n}"), ToolCallPart(f"c{n}", "big", {"path": f"f{n}.txt"})]),
            Usage(), "tool_use")


async def test_a_long_turn_keeps_the_memos_bounded(tmp_path):
    """Memos by identity (estimates, stubs, merged runs, span keys) hold what recent requests
    used, not every version ever made: over a 120-step turn compacted at every step, the
    merged runs memo stays at a handful of entries (the old unbounded memos grew by every
    step's merges and heads), the history's estimates are kept by position so no request
    estimates the history again, and the estimates and stubbed copies memos hold those of
    the messages after the summary's cut, however long the history grows (they held one
    entry per history message and per old tool call)."""
    model = ReadingModel()
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["prune"],
                              extra=[("tools", Tools())],
                              file_data={"compact_threshold": 3000})
    runtime = Runtime(config=config, hooks=hooks, tools=hooks.tools(config), provider=model,
                      model="m")
    session = Session(runtime, max_steps=120)
    sizes = []

    class Watch:
        @hookimpl
        def agent_request_done(self, session, model, usage):
            sizes.append((len(session.messages), len(prune._tokens), len(prune._merges),
                          len(prune._stubs), len(prune._spans),
                          len(prune._histories[session].counts)))

    hooks.pm.register(Watch(), "watch")
    events = await collect(session, prompt(1))
    assert events[-1].type == "done" and events[-1].reason == "max_steps"
    assert sum(isinstance(e, ev.ToolResultEvent) for e in events) == 120
    sent = [r for r in model.requests if not model.is_summary(r)]
    assert len(sent) == 120
    assert all(r.messages[0].text.startswith(prune.SUMMARY_PREFIX) for r in sent[40:])
    late = sizes[40:]
    assert len(late) >= 80
    for history, estimates, merges, stubs, spans, measured in late:
        assert merges <= 24, merges
        assert spans <= 8, spans
        # every history message is estimated once, not again at every request: the
        # estimates of the history the last request sent are kept (all but the answer,
        # after a step; all of it, after a summary request)
        assert history - 1 <= measured <= history, (measured, history)
        # the identity memo keeps the copies and notes the last request made: those of
        # the messages after the cut
        assert estimates <= 60, (estimates, history)
        # stubbed copies only of the messages after the summary's cut: the history before
        # it is neither stubbed nor merged again once a summary is held
        assert stubs <= 40, (stubs, history)


async def test_a_held_summary_is_dropped_when_a_larger_threshold_fits_the_history(tmp_path):
    """Once a request needed the summary, later ones keep its cut without stubbing the
    whole history again; but a larger compact_threshold (set between turns) makes the next
    request weigh the whole history again: it fits with old tool calls as notes, so it is
    sent without the summary."""
    model = ReadingModel()
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["prune"],
                              extra=[("tools", Tools())],
                              file_data={"compact_threshold": 3000})
    runtime = Runtime(config=config, hooks=hooks, tools=hooks.tools(config), provider=model,
                      model="m")
    session = Session(runtime, max_steps=30)
    events = await collect(session, prompt(1))
    assert events[-1].type == "done" and events[-1].reason == "max_steps"
    sent = [r for r in model.requests if not model.is_summary(r)]
    assert all(r.messages[0].text.startswith(prune.SUMMARY_PREFIX) for r in sent[-10:])
    assert prune.state(session)["step"] == "summary"
    whole = sum(len(json.dumps(m.to_dict())) for m in session.messages) // 4
    assert whole > 20_000  # the whole history is far past the larger threshold too

    config.flag_values["compact_threshold"] = 20_000
    session.max_steps = 1
    events = await collect(session, prompt(2))
    assert events[-1].type == "done"
    last = model.requests[-1]
    assert not model.is_summary(last)
    assert not last.messages[0].text.startswith(prune.SUMMARY_PREFIX)
    assert "REQ-1" in last.messages[0].text  # the first prompt, word for word
    assert prune.state(session)["step"].startswith("tools:")
    assert_pairing(last.messages)
