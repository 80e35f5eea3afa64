"""What a failed model request tells the user: the endpoint's host and what actually
happened (not the protocol's name, not "could not connect" for a connection that was made),
and one behaviour for a malformed event stream in all three wire formats: the step fails
with the offending line named, what arrived is kept, and it is not retried.  Session level,
through the real SDKs against the fake server."""

from __future__ import annotations

import json
import socket

import pytest
from fakeprovider import Reply
from faultkit import FORMATS, IDS, error_of, mid_text, next_prompt_works, open_session, shown_text
from wirecheck import assert_human

from agent.testing import collect


def host(srv) -> str:
    return f"127.0.0.1:{srv.port}"


# ---- naming the endpoint ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_an_error_status_names_the_endpoints_host(tmp_path, fake_provider, fmt):
    # A custom Anthropic- or OpenAI-compatible URL: "anthropic returned 400" would be wrong.
    fake_provider.script(Reply.error(400, message="max_tokens: too large for this model"))
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    error = error_of(await collect(session, "hello"))
    assert error.error == (f"{host(fake_provider)} returned 400: max_tokens: too large for "
                           "this model")
    assert len(fake_provider.requests) == 1
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_reset_after_connecting_is_not_reported_as_could_not_connect(tmp_path,
                                                                           fake_provider, fmt):
    fake_provider.script(Reply.reset())
    session = open_session(tmp_path, fake_provider, fmt)
    error = error_of(await collect(session, "hello"))
    assert "could not connect" not in error.error
    assert error.error.startswith(f"the connection to {host(fake_provider)} broke before it "
                                  "answered: ")
    assert_human(error.error)
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_reset_before_the_answer_is_retried(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.reset(), Reply.text("second try"))
    # No backoff: the retry is the subject, not its wait (test_provider_retries.py has that).
    session = open_session(tmp_path, fake_provider, fmt, retries=1, retry_backoff=0)
    events = await collect(session, "hello")
    assert events[-1].reason == "end" and session.messages[-1].text == "second try"
    assert len(fake_provider.requests) == 2


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_reset_mid_answer_says_so_and_keeps_the_answer(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.reset(after=mid_text(fmt), reply=Reply("Part of it", pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    events = await collect(session, "hello")
    error = error_of(events)
    assert error.error.startswith(f"the connection to {host(fake_provider)} broke in the "
                                  "middle of the answer: ")
    shown = shown_text(events)
    assert shown and session.messages[-1].text == shown
    assert len(fake_provider.requests) == 1
    await next_prompt_works(session, fake_provider)


class Nowhere:
    """Where the fake server would be, on a port nothing listens on."""

    def __init__(self) -> None:
        with socket.socket() as probe:  # free a moment ago, closed now
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.openai_url = self.base_url + "/v1"


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_nothing_listening_is_could_not_connect(tmp_path, fmt):
    nowhere = Nowhere()
    session = open_session(tmp_path, nowhere, fmt)
    error = error_of(await collect(session, "hello"))
    assert error.error.startswith(f"could not connect to 127.0.0.1:{nowhere.port}: ")
    assert_human(error.error)


# ---- one behaviour for a malformed event stream -------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_malformed_line_mid_stream_fails_the_step_the_same_way_everywhere(
        tmp_path, fake_provider, fmt):
    bad = "data: {this is not json\n\n"
    fake_provider.script(Reply.malformed(bad, after=mid_text(fmt),
                                         reply=Reply("Words around a bad line", pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    events = await collect(session, "hello")
    error = error_of(events)
    assert error.error == (f"{host(fake_provider)} sent a malformed stream: an event whose "
                           "data is not JSON: data: {this is not json")
    shown = shown_text(events)
    assert shown and session.messages[-1].text == shown  # what arrived before it is kept
    assert len(fake_provider.requests) == 1  # not retried
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_malformed_stream_before_any_output_is_not_retried(tmp_path, fake_provider,
                                                                   fmt):
    fake_provider.script(Reply.malformed())
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    error = error_of(await collect(session, "hello"))
    assert error.error.startswith(f"{host(fake_provider)} sent a malformed stream: ")
    assert len(fake_provider.requests) == 1
    assert [m.role for m in session.messages] == ["user"]
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_line_that_is_no_sse_field_is_malformed_too(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.malformed('dta: {"oops": 1}\n\n', after=mid_text(fmt),
                                         reply=Reply("Words around a bad line", pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt)
    error = error_of(await collect(session, "hello"))
    assert error.error == (f"{host(fake_provider)} sent a malformed stream: a line that is "
                           'not an SSE field: dta: {"oops": 1}')


async def test_an_anthropic_event_without_its_name_is_not_silently_dropped(tmp_path,
                                                                           fake_provider):
    # The anthropic SDK drops events without an event: line; here one carries text, and
    # dropping it would leave a hole in the answer.
    delta = {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": " LOST"}}
    fake_provider.script(Reply.malformed(f"data: {json.dumps(delta)}\n\n", after=4,
                                         reply=Reply("Words around a gap", pieces=3)))
    session = open_session(tmp_path, fake_provider, FORMATS[2])
    events = await collect(session, "hello")
    error = error_of(events)
    assert error.error.startswith(f"{host(fake_provider)} sent a malformed stream: an event "
                                  'without an event: line: data: {"type": "content_block_delta"')
    assert "LOST" not in shown_text(events)
    await next_prompt_works(session, fake_provider)


async def test_good_events_sharing_a_chunk_with_a_bad_one_still_arrive(tmp_path, fake_provider):
    good = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"content": " KEPT"}, "logprobs": None,
                         "finish_reason": None}]}
    raw = f"data: {json.dumps(good)}\n\ndata: {{broken\n\n"  # one write, one chunk
    fake_provider.script(Reply.malformed(raw, after=2, reply=Reply("Start", pieces=1)))
    session = open_session(tmp_path, fake_provider, FORMATS[0])
    events = await collect(session, "hello")
    error_of(events)
    assert shown_text(events) == "Start KEPT"
    assert session.messages[-1].text == "Start KEPT"


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_an_event_of_the_wrong_shape_is_malformed_and_keeps_what_arrived(
        tmp_path, fake_provider, fmt):
    # Valid JSON, but not what the format allows where it stands: a delta that is a string.
    bad = {"chat": {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "choices": [{"index": 0, "delta": "oops", "finish_reason": None}]},
           "responses": {"type": "response.output_text.delta", "output_index": 1},
           "anthropic": {"type": "content_block_start", "index": 5, "content_block": "oops"}}
    kind = fmt[1] or "anthropic"
    raw = (f"event: {bad[kind]['type']}\n" if kind != "chat" else "") + \
        f"data: {json.dumps(bad[kind])}\n\n"
    fake_provider.script(Reply.malformed(raw, after=mid_text(fmt),
                                         reply=Reply("Words around a bad event", pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    events = await collect(session, "hello")
    error = error_of(events)
    assert error.error.startswith(f"{host(fake_provider)} sent a malformed stream: an event of "
                                  "a shape the format does not allow: {")
    shown = shown_text(events)
    assert shown and session.messages[-1].text == shown
    assert len(fake_provider.requests) == 1  # not retried
    await next_prompt_works(session, fake_provider)
