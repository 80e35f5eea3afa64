"""Provider faults that a retry cures, or that must not be retried: rate limits and overload
with and without ``retry-after`` (an absurd one is capped by ``retry_after_cap``), server
errors, a stalled request, retries running out, a bad key.  Session level, all three wire
formats, through the real SDKs; the prompt after each works."""

from __future__ import annotations

import re

import pytest
from fakeprovider import Reply
from faultkit import FORMATS, IDS, LONG, Turn, error_of, next_prompt_works, open_session
from waiting import LoopClock, until
from wirecheck import assert_human

from agent.contract import events as ev
from agent.loop.streaming import backoff
from agent.testing import collect


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
@pytest.mark.parametrize("status", [429, 529])
async def test_retry_after_beyond_the_cap_fails_at_once_naming_the_wait(tmp_path, fake_provider,
                                                                        fmt, status):
    fake_provider.script(Reply.error(status, headers={"retry-after": "3600"}),
                         Reply.text("never asked for"))
    session = open_session(tmp_path, fake_provider, fmt, retries=3, retry_after_cap=60)
    error = error_of(await collect(session, "hello"))
    assert error.status == status
    assert error.error.startswith(f"127.0.0.1:{fake_provider.port} returned {status}: ")
    assert error.error.endswith("; the server asked to retry after 3600 s, more than "
                                "retry_after_cap = 60 s, so it was not retried")
    assert_human(error.error, status)
    assert len(fake_provider.requests) == 1  # no wait, no second request
    fake_provider.clear_script()
    assert await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_retry_after_within_the_cap_is_obeyed_and_announced(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.error(429, headers={"retry-after-ms": "100"}),
                         Reply.text("after the wait"))
    session = open_session(tmp_path, fake_provider, fmt, retries=1, retry_after_cap=0.2)
    events = await collect(session, "hello")
    assert events[-1].reason == "end" and session.messages[-1].text == "after the wait"
    notices = [e.text for e in events if isinstance(e, ev.NoticeEvent)]
    assert len(notices) == 1 and notices[0].endswith("retrying in 0.1 s (retry 1 of 1)")
    first, second = fake_provider.requests
    assert second.headers["x-stainless-retry-count"] == "1"
    assert second.body == first.body  # the same request again
    assert await next_prompt_works(session, fake_provider) == ["user", "assistant", "user"]


@pytest.mark.parametrize("status,fmt", [(429, FORMATS[0]), (529, FORMATS[2]),
                                        (500, FORMATS[1])],
                         ids=["429-chat", "529-anthropic", "500-responses"])
async def test_without_retry_after_the_sdk_backs_off_and_succeeds(tmp_path, fake_provider,
                                                                  status, fmt):
    # No retry-after: the wait is retry_backoff, less up to a random quarter (0.0375-0.05 s).
    fake_provider.script(Reply.error(status), Reply.text("fine"))
    session = open_session(tmp_path, fake_provider, fmt, retries=1, retry_backoff=0.05)
    events = await collect(session, "hello")
    assert events[-1].reason == "end" and session.messages[-1].text == "fine"
    [notice] = [e.text for e in events if isinstance(e, ev.NoticeEvent)]
    assert re.search(r"; retrying in 0\.0[45] s \(retry 1 of 1\)$", notice), notice
    assert len(fake_provider.requests) == 2
    await next_prompt_works(session, fake_provider)


def test_the_backoff_doubles_from_retry_backoff_up_to_8_s():
    # Each wait is the nominal one less at most a quarter (jitter), never more.
    for first, nominal in [(0.5, [0.5, 1, 2, 4, 8, 8]), (0.05, [0.05, 0.1, 0.2, 0.4]),
                           (0.0, [0, 0, 0]), (10.0, [10, 10])]:
        for retry, expected in enumerate(nominal, start=1):
            waits = [backoff(retry, first) for _ in range(200)]
            assert all(0.75 * expected <= w <= expected for w in waits), (first, retry)
            if expected:
                assert len(set(waits)) > 1  # jittered, not a fixed schedule
    assert all(0.375 <= backoff(1) <= 0.5 for _ in range(100))  # the default first wait


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_retries_spent_is_one_clear_error_and_the_prompt_stays(tmp_path, fake_provider,
                                                                    fmt):
    fake_provider.script(*[Reply.error(429, message="Rate limit reached for requests",
                                       headers={"retry-after-ms": "10"})] * 3)
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    error = error_of(await collect(session, "hello"))
    assert len(fake_provider.requests) == 3
    assert error.status == 429 and "Rate limit reached for requests" in error.error
    assert_human(error.error, 429)
    assert [m.role for m in session.messages] == ["user"]
    roles = await next_prompt_works(session, fake_provider)
    # The unanswered prompt goes along: two user turns (merged into one for anthropic).
    assert "hello" in fake_provider.requests[-1].raw.decode()
    assert roles == (["user"] if fmt[0] == "anthropic" else ["user", "user"])


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_401_is_not_retried_and_names_the_status(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.error(401, message="Incorrect API key provided: sk-bad"))
    session = open_session(tmp_path, fake_provider, fmt, retries=3)
    error = error_of(await collect(session, "hello"))
    assert len(fake_provider.requests) == 1
    assert error.status == 401 and "Incorrect API key provided" in error.error
    assert_human(error.error, 401)
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_stall_before_the_answer_is_retried(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.stall(60), Reply.text("second try"))
    session = open_session(tmp_path, fake_provider, fmt, retries=1, request_timeout=LONG,
                           retry_backoff=0)
    # The SDK's read timeout is kept on the event loop's clock: fired by moving that past it
    # (plus slack: the read starts a little after the request arrived), not by waiting.
    clock = LoopClock()
    turn = Turn(session, "hello")
    await until(lambda: fake_provider.requests, "the first attempt's request")
    clock.move_past(fake_provider.requests[0].time, LONG + 5)
    events = await turn.ended()
    assert events[-1].reason == "end" and session.messages[-1].text == "second try"
    assert len(fake_provider.requests) == 2
    await next_prompt_works(session, fake_provider)
