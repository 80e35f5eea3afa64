"""Streams cannot hang: the idle deadline on content (keep-alive comments and pings are not
progress), the overall request deadline, retries of a stall before any output, and what the
user is told.  Session level, all three wire formats, through the real SDKs against the fake
server; small deadline values, and the assertions are on how the turn ended (its error and
what the next request carried), never on elapsed time.

Where the test can tell when a deadline's clock started (a request's arrival, the last
words to reach the session) the deadline is ``LONG``, far beyond any load's pause, and the
test fires it by moving the event loop's clock past it (``waiting.LoopClock``; for the loop
a headless run makes, ``LoopClocks``) once what must not count as progress has arrived.
The stalls keep real time, and are what proves a deadline fires without anyone moving a
clock: their deadline ``IDLE`` must fire on the stall yet not before the first content or
the retry's answer arrives, so it is a generous multiple of what a loaded machine takes.
Retries wait no backoff (``retry_backoff = 0``): the backoff's schedule is tested in
test_provider_retries.py."""

from __future__ import annotations

import json
import time

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from faultkit import (
    FORMATS,
    IDS,
    LONG,
    Turn,
    error_of,
    mid_text,
    next_prompt_works,
    open_session,
    shown_text,
)
from waiting import LoopClock, LoopClocks, beside, until, wait_until
from wirecheck import assert_human

from agent.contract import events as ev
from agent.testing import collect

IDLE = 0.5
#: Keep-alives every ``EVERY`` s; ``KEEPALIVES`` of them arrive before the clock is moved.
EVERY = 0.01
KEEPALIVES = 5


def notices(events) -> list[str]:
    return [e.text for e in events if isinstance(e, ev.NoticeEvent)]


async def quiet_after_words(turn: Turn, reply: Reply) -> float:
    """A ``time.monotonic()`` reading taken after the last words of ``reply`` (a
    ``Reply.keepalive(after=...)``) reached the session, with ``KEEPALIVES`` keep-alives sent
    since: what an idle deadline counts from, and what those keep-alives must not move.  The
    fake sends every word before its first keep-alive; a reading after which more words
    still arrived is taken again."""
    await until(lambda: shown_text(turn.events) and reply.keepalives_sent >= KEEPALIVES,
                "the first words, then keep-alives")
    while True:
        since, shown, sent = time.monotonic(), shown_text(turn.events), reply.keepalives_sent
        await until(lambda sent=sent: reply.keepalives_sent >= sent + KEEPALIVES,
                    "keep-alives after the words")
        if shown_text(turn.events) == shown:
            return since


def host(srv) -> str:
    return f"127.0.0.1:{srv.port}"


@pytest.mark.parametrize("kind", ["comment", "ping"])
@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_keepalives_forever_before_any_output_end_the_turn(tmp_path, fake_provider, fmt,
                                                                kind):
    replies = [Reply.keepalive(kind=kind, every=EVERY), Reply.keepalive(kind=kind, every=EVERY)]
    fake_provider.script(*replies)
    session = open_session(tmp_path, fake_provider, fmt, retries=1,
                           stream_idle_timeout=LONG, retry_backoff=0)
    clock = LoopClock()
    turn = Turn(session, "hello")
    for n, reply in enumerate(replies):
        await until(lambda r=reply: r.keepalives_sent >= KEEPALIVES,
                    f"keep-alives in answer to attempt {n + 1}")
        # Past the idle deadline as counted from the request's arrival (the attempt's clock
        # started before it), short of one a keep-alive (every EVERY s after it) restarted:
        # if keep-alives counted as progress, the deadline would never come.
        clock.move_past(fake_provider.requests[n].time, LONG)
    events = await turn.ended()
    error = error_of(events)
    assert error.error == (f"{host(fake_provider)} sent no content for {LONG:g} s "
                           "(stream_idle_timeout) (after 1 retry)")
    assert_human(error.error)
    assert len(fake_provider.requests) == 2  # retried once, within max_retries
    assert [m.role for m in session.messages] == ["user"]
    assert await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_stall_after_the_headers_is_retried_and_the_retry_answers(tmp_path,
                                                                        fake_provider, fmt):
    # Headers sent, then silence: the SDKs never retry this themselves.
    fake_provider.script(Reply.stall(30, after=0), Reply.text("second try"))
    session = open_session(tmp_path, fake_provider, fmt, retries=2,
                           stream_idle_timeout=IDLE, retry_backoff=0)
    events = await collect(session, "hello")
    assert events[-1].reason == "end" and session.messages[-1].text == "second try"
    [notice] = notices(events)
    assert notice.startswith(f"{host(fake_provider)} sent no content for {IDLE:g} s")
    assert "retrying in" in notice and notice.endswith("(retry 1 of 2)")
    first, second = fake_provider.requests
    assert second.body == first.body
    assert second.headers["x-stainless-retry-count"] == "1"
    assert await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_keepalives_after_output_end_the_step_and_keep_what_arrived(tmp_path,
                                                                         fake_provider, fmt):
    reply = Reply.keepalive(after=mid_text(fmt), kind="ping", every=EVERY,
                            reply=Reply("Half of the answer", pieces=3))
    fake_provider.script(reply)
    session = open_session(tmp_path, fake_provider, fmt, retries=3,
                           stream_idle_timeout=LONG)
    clock = LoopClock()
    turn = Turn(session, "hello")
    # Past the idle deadline as counted from the last words, short of one restarted by the
    # keep-alives that followed them.
    clock.move_past(await quiet_after_words(turn, reply), LONG)
    events = await turn.ended()
    error = error_of(events)
    assert error.error == (f"{host(fake_provider)} stopped sending in the middle of the "
                           f"answer: no content for {LONG:g} s (stream_idle_timeout)")
    shown = shown_text(events)
    assert shown and session.messages[-1].text == shown
    assert len(fake_provider.requests) == 1  # output had begun: never replayed
    assert await next_prompt_works(session, fake_provider) == ["user", "assistant", "user"]
    assert shown in fake_provider.requests[-1].raw.decode()


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_stream_that_trickles_forever_ends_at_the_request_deadline(tmp_path,
                                                                          fake_provider, fmt):
    # Real content, slowly (8 s of it): the idle deadline never fires, the overall one does.
    fake_provider.script(Reply("word " * 400, pieces=400, delay=0.02))
    session = open_session(tmp_path, fake_provider, fmt, retries=2,
                           stream_idle_timeout=2 * LONG, request_deadline=LONG)
    clock = LoopClock()
    turn = Turn(session, "hello")
    await until(lambda: shown_text(turn.events), "the first words")
    # Past the overall deadline as counted from the request's arrival (the request's clock
    # started before it); the idle one, restarted by every word, is a LONG further off.
    clock.move_past(fake_provider.requests[0].time, LONG)
    events = await turn.ended()
    error = error_of(events)
    assert error.error == (f"{host(fake_provider)} did not finish answering within "
                           f"request_deadline = {LONG} s")
    shown = shown_text(events)
    assert shown.startswith("word") and session.messages[-1].text == shown
    assert len(fake_provider.requests) == 1
    assert await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_retries_stop_at_the_request_deadline(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.error(503, headers={"retry-after": "1"}))
    session = open_session(tmp_path, fake_provider, fmt, retries=5, retry_after_cap=10,
                           request_deadline=0.5)
    error = error_of(await collect(session, "hello"))
    assert error.error.endswith("; no time left to retry within request_deadline = 0.5 s")
    assert len(fake_provider.requests) == 1
    assert await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_stalled_retry_wait_is_cancelled_at_once(tmp_path, fake_provider, fmt):
    # esc cancels the turn's task: a long retry wait must not hold it.
    import asyncio

    fake_provider.script(Reply.error(429, headers={"retry-after": "30"}))
    session = open_session(tmp_path, fake_provider, fmt, retries=1, retry_after_cap=60)
    seen: list = []

    async def turn():
        async for event in session.run("hello"):
            seen.append(event)

    task = asyncio.ensure_future(turn())
    for _ in range(500):  # poll (bounded) until the retry is announced
        if notices(seen):
            break
        await asyncio.sleep(0.01)
    assert "retrying in 30 s" in notices(seen)[0]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert len(fake_provider.requests) == 1
    assert await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_esc_in_a_stalled_stream_interrupts_and_no_deadline_error_follows(
        tmp_path, fake_provider, fmt):
    # Cancelled while reading (the deadline watchdog armed): the turn is interrupted, the
    # cancellation is not mistaken for a deadline, and the deadline's timer does not fire
    # into a later turn.
    import asyncio
    import threading

    fake_provider.script(Reply.stall(60, after=mid_text(fmt), reply=Reply("Half of it",
                                                                          pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt, stream_idle_timeout=LONG)
    clock = LoopClock()
    first = Turn(session, "hello")
    # Bounded at 20 s: the first request also imports the SDK, seconds on a loaded machine.
    await until(lambda: shown_text(first.events), "some of the answer")
    seen = clock.now()  # the first turn's words arrived before (a few may follow)
    first.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(first.task, 5)
    assert not [e for e in first.events if isinstance(e, ev.ErrorEvent)]
    # The next turn starts half a deadline later on the loop's clock, streams its first
    # words, and holds the rest while the clock passes the first turn's deadline (a quarter
    # deadline to spare for words of the first turn that came after `seen`): a timer the
    # first turn left behind fires into this one, whose own deadline is a quarter further.
    clock.move_past(time.monotonic(), LONG / 2)
    rest = threading.Event()
    fake_provider.script(Reply.held(rest, after=mid_text(fmt),
                                    reply=Reply("slow but steady", pieces=4)))
    second = Turn(session, "and now?")
    await until(lambda: shown_text(second.events), "the next turn's first words")
    clock.move_to(seen + LONG + LONG / 4)
    for _ in range(3):  # the loop runs what fell due (a timer left behind) before the rest
        await asyncio.sleep(0)
    rest.set()
    events = await second.ended()
    assert events[-1].reason == "end", events
    assert shown_text(events) == "slow but steady"


# ---- headless: the run ends, with exit code 1 and one clear line; `agent -c` carries on -------


def headless(srv, fmt, args, home, ws):
    provider, api = fmt
    url = srv.openai_url if provider == "openai" else srv.base_url
    key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    return run_agent_here([*args, "--provider", provider, "--base-url", url, "--model", "m"],
                          home=home, cwd=ws,
                          **{key: "sk-test", "AGENT_OPENAI_API": api or "chat"})


@pytest.fixture
def dirs(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    configure(home, IDLE)
    return home, ws


def configure(home, idle: float) -> None:
    (home / "config.toml").write_text(f"max_retries = 1\nretry_backoff = 0\n"
                                      f"stream_idle_timeout = {idle}\n"
                                      f"request_deadline = {10 * LONG}\n")


def patient(home) -> None:
    """The next run only has to work: a deadline far above any load's pause, so the run
    that continues the session is not cut by the short one the first run was tested with."""
    (home / "config.toml").write_text("max_retries = 1\nstream_idle_timeout = 60\n")


def error_lines(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("[error] ")]


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_headless_keepalives_forever_exit_1_and_continue_works(dirs, fake_provider, fmt,
                                                               monkeypatch):
    home, ws = dirs
    configure(home, LONG)
    replies = [Reply.keepalive(every=EVERY), Reply.keepalive(every=EVERY)]
    fake_provider.script(*replies)
    clocks = LoopClocks(monkeypatch)  # the loop the run makes

    def fire_each_attempts_deadline() -> None:
        # As in the session test above, from beside the run.
        for n, reply in enumerate(replies):
            wait_until(lambda r=reply: r.keepalives_sent >= KEEPALIVES,
                       f"keep-alives in answer to attempt {n + 1}")
            clocks.move_past(fake_provider.requests[n].time, LONG)

    with beside(fire_each_attempts_deadline, unblock=fake_provider.stop):
        proc = headless(fake_provider, fmt, ["-p", "hello"], home, ws)
    assert proc.returncode == 1, proc.stderr
    [line] = error_lines(proc)
    assert line == (f"[error] {host(fake_provider)} sent no content for {LONG:g} s "
                    "(stream_idle_timeout) (after 1 retry)")
    assert "Traceback" not in proc.stderr
    fake_provider.script(Reply.text("back again"))
    patient(home)
    again = headless(fake_provider, fmt, ["-c", "-p", "still there?"], home, ws)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "back again\n"
    assert "hello" in fake_provider.requests[-1].raw.decode()  # the same session went on


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
def test_headless_stall_after_output_exit_1_keeps_it_and_continue_sends_it(dirs, fake_provider,
                                                                         fmt):
    home, ws = dirs
    fake_provider.script(Reply.stall(60, after=mid_text(fmt),
                                     reply=Reply("The answer is forty", pieces=4)))
    proc = headless(fake_provider, fmt, ["-p", "what is it?", "--json"], home, ws)
    assert proc.returncode == 1, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    [error] = [e for e in events if e["type"] == "error"]
    assert error["error"] == (f"{host(fake_provider)} stopped sending in the middle of the "
                              f"answer: no content for {IDLE:g} s (stream_idle_timeout)")
    partial = "".join(e["text"] for e in events if e["type"] == "text")
    assert partial and "The answer is forty".startswith(partial)
    assert events[-2]["type"] == "done" and events[-2]["reason"] == "error"
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "error"
    assert len(fake_provider.requests) == 1
    fake_provider.script(Reply.text("forty-two"))
    patient(home)
    again = headless(fake_provider, fmt, ["-c", "-p", "go on"], home, ws)
    assert again.returncode == 0, again.stderr
    assert partial in fake_provider.requests[-1].raw.decode()
