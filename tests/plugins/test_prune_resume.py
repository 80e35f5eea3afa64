"""Resuming a long session is cheap: a history with no saved summary costs at most two
summary requests however long it is (the most recent messages first, the rest folded), the
notes are saved with the session and reused by the next resume, the user is told what the
requests are for, and their cost counts against the spending cap, checked before they are
sent.  Through the real CLI (`agent -c -p`) and the real SDK against the fake server."""

from __future__ import annotations

import json
import random
import time

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent.contract import events as ev
from agent.contract.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agent.loop.session import Runtime
from agent.state.store import SessionRecord, Store
from agent.testing import collect, make_boot, make_session
from plugins_builtin import prune
from plugins_builtin.budget import spend

THRESHOLD = 4_000  # estimated tokens: a few hundred messages are far past it


def history(turns: int) -> list[Message]:
    """A coding session: per turn a request, a tool call and its result, an answer."""
    rng = random.Random(7)
    words = "parser config session request tool result error value file path".split()
    out: list[Message] = []
    for n in range(1, turns + 1):
        filler = " ".join(rng.choice(words) for _ in range(40))
        out.append(Message.user(f"REQ-{n}: fix module_{n}.py, {filler}"))
        args = {"path": f"src/module_{n}.py"}
        out.append(Message("assistant", [TextPart(f"Reading module_{n}."),
                                         ToolCallPart(f"call_{n}", "read_file", args,
                                                      json.dumps(args))]))
        out.append(Message("tool", [ToolResultPart(f"call_{n}", "read_file",
                                                   f"{n}: " + filler * 3)]))
        out.append(Message("assistant", [TextPart(f"Fixed module_{n}. {filler}")]))
    return out


def store_session(home, ws, messages: list[Message]) -> str:
    sid = "0190aaaa-0000-7000-8000-00000000cafe"
    now = time.time()
    with Store.open(home / "state") as store:
        store.create_session(SessionRecord(sid, str(ws), now, now, title="long session",
                                           provider="openai", model="m"))
        store.replace_messages(sid, [m.to_dict() for m in messages])
    return sid


def is_summary(request) -> bool:
    first = (request.body.get("messages") or [{}])[0]
    return first.get("role") == "system" and first["content"] == prune.SUMMARY_SYSTEM


@pytest.fixture
def dirs(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text(f"compact_threshold = {THRESHOLD}\nmax_retries = 0\n")
    return home, ws


def resume(srv, home, ws, prompt: str):
    return run_agent_here(["-c", "-p", prompt, "--provider", "openai", "--base-url", srv.openai_url,
                           "--model", "m"], home=home, cwd=ws, OPENAI_API_KEY="x",
                          AGENT_OPENAI_API="chat")


def test_resuming_a_long_session_costs_two_summary_requests_then_none(dirs, fake_provider):
    home, ws = dirs
    messages = history(150)  # 600 messages; the transcript needs ~30 chunks of the budget
    store_session(home, ws, messages)
    fake_provider.script(Reply.text("NOTES-RECENT"), Reply.text("NOTES-FOLDED"),
                         Reply.text("the answer"))
    proc = resume(fake_provider, home, ws, "what next?")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "the answer\n"
    summaries = [r for r in fake_provider.requests if is_summary(r)]
    assert len(summaries) == 2 and len(fake_provider.requests) == 3
    first, second = (r.body["messages"][1]["content"] for r in summaries)
    # The most recent messages first (with the rest noted without the model)...
    assert "The most recent messages" in first and "REQ-150" in first
    assert "REQ-1:" in first  # the older requests, in the notes made without the model
    # ...then the older messages, condensed, folded into those notes.
    assert "Earlier notes:\nNOTES-RECENT" in second and "REQ-1:" in second
    assert "REQ-150" not in second.split("condensed, to fold into the notes:", 1)[1]
    for request in summaries:
        assert len(request.raw) < 3 * 2 * THRESHOLD * 4  # each one bounded by the budget
    main = fake_provider.requests[2].raw.decode()
    assert "NOTES-FOLDED" in main and "what next?" in main
    notices = [line for line in proc.stderr.splitlines() if line.startswith("[notice] ")]
    assert any(line.startswith("[notice] summarising ") and "(2 model requests" in line
               for line in notices), proc.stderr

    # The notes were saved with the session: the next resume spends nothing on them.
    fake_provider.script(Reply.text("second answer"))
    again = resume(fake_provider, home, ws, "and then?")
    assert again.returncode == 0, again.stderr
    assert not any(is_summary(r) for r in fake_provider.requests[3:])
    assert len(fake_provider.requests) == 4
    assert "NOTES-FOLDED" in fake_provider.requests[3].raw.decode()
    assert "[notice] summarising" not in again.stderr


# ---- the spending cap ---------------------------------------------------------------------------


def capped_session(tmp_path, srv, cap: float | None, plugins=("openai", "prune", "budget")):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    data = {"compact_threshold": THRESHOLD}
    if cap is not None:
        data["max_spend_usd"] = cap
    config, hooks = make_boot(ws, tmp_path / "home", builtins=list(plugins), file_data=data)
    probe = make_session(config, hooks, base_url=srv.openai_url, model="gpt-5")
    runtime = Runtime(config=config, hooks=hooks, tools=probe.tools,
                      provider=probe.runtime.provider, model="gpt-5")
    from agent.loop.session import Session

    return Session(runtime, messages=history(150))


async def test_summary_requests_are_booked_against_the_cap(tmp_path, fake_provider):
    fake_provider.script(Reply.text("NOTES-RECENT"), Reply.text("NOTES-FOLDED"),
                         Reply.text("the answer"))
    session = capped_session(tmp_path, fake_provider, cap=100.0)
    events = await collect(session, "what next?")
    assert events[-1].reason == "end"
    book = spend.ledger(session)
    assert book.own.requests == 3  # two summaries and the prompt's request
    assert book.own.usage.input_tokens == 30  # the fake reports 10 input tokens each
    assert book.reserved == {}  # every hold released
    notices = [e.text for e in events if isinstance(e, ev.NoticeEvent)]
    assert notices and notices[0].startswith("summarising 5")
    # The notice came before anything of the answer.
    first_notice = next(i for i, e in enumerate(events) if isinstance(e, ev.NoticeEvent))
    assert first_notice < next(i for i, e in enumerate(events) if isinstance(e, ev.TextEvent))


async def test_a_summary_the_cap_cannot_afford_is_never_sent(tmp_path, fake_provider):
    # Room for the prompt's own request (checked first, at its full uncompacted size), none
    # for a summary on top of it.
    probe = capped_session(tmp_path, fake_provider, cap=None, plugins=("openai",))
    probe.messages.append(Message.user("what next?"))
    room = spend.worst_case_usd(await probe.build_request(), probe.runtime.provider)
    assert room is not None and fake_provider.requests == []
    session = capped_session(tmp_path, fake_provider, cap=room * 1.0001)
    fake_provider.script(Reply.text("the answer"))
    events = await collect(session, "what next?")
    assert events[-1].reason == "end"
    assert not any(is_summary(r) for r in fake_provider.requests)  # refused before sending
    assert len(fake_provider.requests) == 1
    sent = fake_provider.requests[0].raw.decode()
    assert "Automatic notes" in sent  # notes made without the model stood in
    notices = [e.text for e in events if isinstance(e, ev.NoticeEvent)]
    assert any("the spending cap (max_spend_usd) leaves no room" in n for n in notices)
