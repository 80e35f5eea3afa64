"""The openai provider against the fake server, through the real SDK."""

from __future__ import annotations

from types import SimpleNamespace

import pluggy
import pytest
from fakeprovider import Reply

from agent.contract import hookspecs
from agent.contract.messages import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from agent.contract.providers import (
    ProviderError,
    ProviderNotice,
    ProviderRequest,
    ProviderSettings,
    ReasoningDelta,
    StepFinished,
    TextDelta,
    ToolCallStarted,
)
from agent.loop.retry import retry_after_seconds, should_retry_header
from plugins_builtin import openai as provider_openai
from plugins_builtin.openai import ChatProvider, ResponsesProvider

TOOLS = [{"name": "read_file", "description": "Read a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def make(srv, api="chat", **kw):
    options = {"openai_api": api, **kw.pop("options", {})}
    settings = ProviderSettings(provider="openai", model="gpt-5-test", base_url=srv.openai_url,
                                api_key="sk-test", max_retries=kw.pop("max_retries", 0),
                                options=options, **kw)
    return provider_openai.SPEC.create(settings)


def request(messages=None, **kw):
    return ProviderRequest(model="gpt-5-test", system=kw.pop("system", "You are terse."),
                           messages=messages or [Message.user("hi")], tools=kw.pop("tools", TOOLS),
                           **kw)


async def collect(provider, req):
    return [e async for e in provider.stream(req)]


def history():
    """user → assistant (reasoning, text, two tool calls) → tool results → user."""
    return [
        Message.user("read a and b"),
        Message("assistant", [
            ReasoningPart("Plan: read both", encrypted="enc-0", item_id="rs_0", provider="openai"),
            TextPart("Reading."),
            ToolCallPart("call_A", "read_file", {"path": "a"}, raw_arguments='{"path": "a"}',
                         item_id="fc_A"),
            ToolCallPart("call_B", "read_file", {"path": "b"}),
        ]),
        Message("tool", [ToolResultPart("call_A", "read_file", "AAA"),
                         ToolResultPart("call_B", "read_file", "BBB", is_error=True)]),
        Message.user("thanks"),
    ]


# ---- chat completions ------------------------------------------------------------------------


async def test_chat_text_stream_and_request(fake_provider):
    fake_provider.script(Reply.text("Hello there", usage={"input_tokens": 50, "cached_tokens": 32,
                                                         "output_tokens": 7}))
    provider = make(fake_provider)
    assert isinstance(provider, ChatProvider)
    events = await collect(provider, request())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there"
    assert len([e for e in events if isinstance(e, TextDelta)]) == 3  # streamed in pieces
    final = events[-1]
    assert isinstance(final, StepFinished)
    assert final.message.role == "assistant" and final.message.text == "Hello there"
    assert final.stop_reason == "end"
    assert (final.usage.input_tokens, final.usage.cached_tokens, final.usage.output_tokens) == (
        50, 32, 7)

    req = fake_provider.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    body = req.body
    assert body["model"] == "gpt-5-test" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "You are terse."},
                                {"role": "user", "content": "hi"}]
    assert body["tools"] == [{"type": "function", "function": TOOLS[0]}]
    assert body["reasoning_effort"] == "medium"


async def test_chat_tool_calls_assembled_from_fragments(fake_provider):
    fake_provider.script(Reply(
        reasoning="Need both files", text="Reading",
        tool_calls=[("read_file", {"path": "a.txt"}, "call_A"), ("read_file", {"path": "b.txt"})],
        usage={"reasoning_tokens": 8}, pieces=4,
    ))
    events = await collect(make(fake_provider), request())
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.id, e.name) for e in started] == [("call_A", "read_file"), ("call_2", "read_file")]
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Need both files"
    final = events[-1]
    calls = final.message.tool_calls
    assert [(c.id, c.arguments) for c in calls] == [("call_A", {"path": "a.txt"}),
                                                     ("call_2", {"path": "b.txt"})]
    assert calls[0].raw_arguments == '{"path": "a.txt"}'
    assert final.stop_reason == "tool_use"
    assert final.usage.reasoning_tokens == 8
    assert isinstance(final.message.parts[0], ReasoningPart)


async def test_chat_malformed_arguments_are_marked(fake_provider):
    fake_provider.script(Reply.tool_call("read_file", '{"path": "a.txt"', id="call_X"))
    final = (await collect(make(fake_provider), request()))[-1]
    call = final.message.tool_calls[0]
    assert call.arguments == {"__invalid_json__": '{"path": "a.txt"'}
    assert call.raw_arguments == '{"path": "a.txt"'


async def test_chat_history_translation(fake_provider):
    fake_provider.script(Reply.text("ok"))
    await collect(make(fake_provider), request(history()))
    messages = fake_provider.last.body["messages"]
    assert messages == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "read a and b"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "call_A", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
            {"id": "call_B", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "b"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_A", "content": "AAA"},
        {"role": "tool", "tool_call_id": "call_B", "content": "BBB"},
        {"role": "user", "content": "thanks"},
    ]


@pytest.mark.parametrize("level, effort", [("off", "none"), ("low", "low"), ("high", "high"),
                                           ("max", "xhigh")])
async def test_chat_thinking_levels(fake_provider, level, effort):
    fake_provider.script(Reply.text("ok"))
    await collect(make(fake_provider), request(thinking=level))
    assert fake_provider.last.body["reasoning_effort"] == effort


async def test_chat_reasoning_params_can_be_turned_off(fake_provider):
    fake_provider.script(Reply.text("ok"))
    await collect(make(fake_provider, options={"send_reasoning": False}), request(tools=[]))
    body = fake_provider.last.body
    assert "reasoning_effort" not in body and "tools" not in body


# ---- responses -------------------------------------------------------------------------------


async def test_responses_stream_and_request(fake_provider):
    fake_provider.script(Reply(
        reasoning="Plan: read a.txt", text="Hello", encrypted="gAAAAenc", reasoning_id="rs_9",
        tool_calls=[("read_file", {"path": "a.txt"}, "call_1"), ("read_file", {"path": "b"})],
        usage={"input_tokens": 120, "cached_tokens": 64, "output_tokens": 40,
               "reasoning_tokens": 16},
    ))
    provider = make(fake_provider, api="responses")
    assert isinstance(provider, ResponsesProvider)
    events = await collect(provider, request(thinking="high"))
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Plan: read a.txt"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello"
    assert [e.id for e in events if isinstance(e, ToolCallStarted)] == ["call_1", "call_2"]
    final = events[-1]
    reasoning, text, call1, call2 = final.message.parts
    assert reasoning == ReasoningPart("Plan: read a.txt", encrypted="gAAAAenc", item_id="rs_9",
                                      provider="openai")
    assert text == TextPart("Hello")
    assert (call1.id, call1.item_id, call1.arguments) == ("call_1", "fc_1", {"path": "a.txt"})
    assert (call2.id, call2.arguments) == ("call_2", {"path": "b"})
    assert final.stop_reason == "tool_use"
    u = final.usage
    assert (u.input_tokens, u.cached_tokens, u.output_tokens, u.reasoning_tokens) == (
        120, 64, 40, 16)

    body = fake_provider.last.body
    assert fake_provider.last.path == "/v1/responses"
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["instructions"] == "You are terse."
    assert body["tools"] == [{"type": "function", **TOOLS[0], "strict": False}]
    assert body["input"] == [{"type": "message", "role": "user", "content": "hi"}]


async def test_responses_history_sends_reasoning_back_inline(fake_provider):
    fake_provider.script(Reply.text("ok"))
    hist = history()
    # Reasoning from another provider (no encrypted content) is never sent.
    hist[1].parts.insert(0, ReasoningPart("anthropic thought", signature="s", provider="anthropic"))
    await collect(make(fake_provider, api="responses"), request(hist))
    items = fake_provider.last.body["input"]
    assert items == [
        {"type": "message", "role": "user", "content": "read a and b"},
        {"type": "reasoning", "id": "rs_0", "encrypted_content": "enc-0",
         "summary": [{"type": "summary_text", "text": "Plan: read both"}]},
        {"type": "message", "role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "call_A", "name": "read_file",
         "arguments": '{"path": "a"}'},
        {"type": "function_call", "call_id": "call_B", "name": "read_file",
         "arguments": '{"path": "b"}'},
        {"type": "function_call_output", "call_id": "call_A", "output": "AAA"},
        {"type": "function_call_output", "call_id": "call_B", "output": "BBB"},
        {"type": "message", "role": "user", "content": "thanks"},
    ]
    assert all(item.get("type") != "item_reference" for item in items)


async def test_responses_thinking_off_and_max(fake_provider):
    fake_provider.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))
    provider = make(fake_provider, api="responses")
    await collect(provider, request(thinking="off"))
    await collect(provider, request(thinking="max"))
    # a model without "none" can be given another word for off
    tuned = make(fake_provider, api="responses", options={"reasoning_efforts": {"off": "minimal"}})
    await collect(tuned, request(thinking="off"))
    efforts = [b["reasoning"]["effort"] for b in fake_provider.bodies]
    assert efforts == ["none", "xhigh", "minimal"]


async def test_responses_in_stream_error(fake_provider):
    fake_provider.script(Reply.stream_error("The server had an error", type="server_error",
                                            after=6))
    provider = make(fake_provider, api="responses")
    with pytest.raises(ProviderError) as info:
        await collect(provider, request())
    err = info.value
    assert "The server had an error" in err.message and err.kind == "stream"
    assert err.output_started  # text deltas had arrived


# ---- mode selection --------------------------------------------------------------------------


def test_auto_mode_offers_responses_only_on_the_official_endpoint():
    official = provider_openai.SPEC.create(
        ProviderSettings(provider="openai", model="gpt-5", api_key="k"))
    assert isinstance(official, ChatProvider)
    assert [type(p) for p in official.alternatives] == [ResponsesProvider]
    third_party = provider_openai.SPEC.create(ProviderSettings(
        provider="openai", model="llama", base_url="http://localhost:11434/v1"))
    assert isinstance(third_party, ChatProvider) and third_party.alternatives == []
    assert provider_openai.SPEC.env_key == "OPENAI_API_KEY"
    assert provider_openai.SPEC.default_model == "gpt-5"
    with pytest.raises(ProviderError):
        provider_openai.SPEC.create(ProviderSettings(provider="openai", model="m",
                                                     options={"openai_api": "soap"}))


def test_plugin_registers_its_spec():
    seen = []
    provider_openai.agent_register_providers(seen.append, None)
    assert seen == [provider_openai.SPEC] and seen[0].name == "openai"


async def test_list_models(fake_provider):
    fake_provider.models = ["zeta", "alpha"]
    assert await make(fake_provider).list_models() == ["alpha", "zeta"]


# ---- errors and retries ----------------------------------------------------------------------


async def test_401_is_a_clear_error(fake_provider):
    fake_provider.script(Reply.error(401, message="Incorrect API key provided: sk-test."))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, max_retries=2), request())
    err = info.value
    assert err.status == 401 and not err.retryable and not err.output_started
    assert err.kind == "auth"
    host = f"127.0.0.1:{fake_provider.port}"
    assert str(err) == f"{host} returned 401: Incorrect API key provided: sk-test."
    assert len(fake_provider.requests) == 1  # never retried


def test_errors_name_openai_or_the_compatible_host():
    official = provider_openai.Endpoint(ProviderSettings(provider="openai", model="m"))
    groq = provider_openai.Endpoint(ProviderSettings(
        provider="openai", model="m", base_url="https://api.groq.com/openai/v1"))
    assert (official.name, groq.name) == ("openai", "api.groq.com")


async def test_retry_after_beyond_the_cap_fails_at_once_naming_the_wait(fake_provider):
    fake_provider.script(
        Reply.error(429, message="Rate limit reached", headers={"retry-after": "3600"}),
        Reply.text("never asked for"),
    )
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, max_retries=3, retry_after_cap=60), request())
    assert info.value.message == (
        f"127.0.0.1:{fake_provider.port} returned 429: Rate limit reached; the server asked to "
        "retry after 3600 s, more than retry_after_cap = 60 s, so it was not retried")
    assert info.value.retry_after == 3600 and info.value.status == 429
    assert len(fake_provider.requests) == 1 and fake_provider.pending == 1


async def test_retry_after_within_the_cap_is_obeyed(fake_provider):
    fake_provider.script(
        Reply.error(429, message="Rate limit reached", headers={"retry-after-ms": "50"}),
        Reply.text("after the wait"),
    )
    events = await collect(make(fake_provider, max_retries=1, retry_after_cap=0.1), request())
    assert events[-1].message.text == "after the wait"
    notices = [e.text for e in events if isinstance(e, ProviderNotice)]
    assert notices == [f"127.0.0.1:{fake_provider.port} returned 429: Rate limit reached; "
                       "retrying in 0.05 s (retry 1 of 1)"]
    assert [r.headers["x-stainless-retry-count"] for r in fake_provider.requests] == ["0", "1"]


async def test_500_then_success_is_retried(fake_provider):
    fake_provider.script(Reply.error(500, message="boom", headers={"retry-after-ms": "5"}),
                         Reply.text("fine"))
    events = await collect(make(fake_provider, max_retries=1), request())
    assert events[-1].message.text == "fine"
    assert len(fake_provider.requests) == 2


async def test_500_without_retries_is_retryable_error(fake_provider):
    fake_provider.script(Reply.error(503, message="Service Unavailable"))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider), request())
    assert info.value.status == 503 and info.value.retryable and info.value.kind == "server"


async def test_dropped_connection_mid_stream(fake_provider):
    fake_provider.script(Reply.drop_after(3))
    seen = []
    with pytest.raises(ProviderError) as info:
        async for event in make(fake_provider).stream(request()):
            seen.append(event)
    assert any(isinstance(e, TextDelta) for e in seen)
    err = info.value
    assert err.output_started and err.retryable and err.kind == "connection"
    assert "Error" not in err.message.split(":")[0]  # no exception class names up front


async def test_dropped_connection_responses(fake_provider):
    fake_provider.script(Reply.drop_after(5))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, api="responses"), request())
    assert info.value.output_started and info.value.kind == "connection"


async def test_malformed_stream(fake_provider):
    fake_provider.script(Reply.malformed())
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider), request())
    assert info.value.kind == "protocol"


async def test_stall_times_out(fake_provider):
    fake_provider.script(Reply.stall(5))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, timeout=0.3), request())
    assert info.value.kind == "timeout" and info.value.retryable


async def test_in_stream_error_chat(fake_provider):
    fake_provider.script(Reply.stream_error("upstream overloaded", after=2))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider), request())
    assert "upstream overloaded" in info.value.message and info.value.output_started


async def test_unreachable_endpoint():
    settings = ProviderSettings(provider="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                api_key="k", max_retries=0, options={"openai_api": "chat"})
    with pytest.raises(ProviderError) as info:
        await collect(provider_openai.SPEC.create(settings), request())
    assert info.value.kind == "connection" and not info.value.output_started
    assert info.value.message.startswith("could not connect to 127.0.0.1:9")


async def test_script_running_out_fails_loudly(fake_provider):
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, max_retries=2), request())
    assert info.value.status == 500 and "script ran out" in info.value.message
    assert len(fake_provider.requests) == 1  # x-should-retry: false


def test_chat_calls_reusing_an_index_are_kept_apart():
    # Some compatible servers send every call at index 0, told apart only by id.
    def chunk(**delta):
        fn = {"name": delta.pop("name", None), "arguments": delta.pop("args", None)}
        frag = {"index": 0, "id": delta.pop("id", None), "function": fn}
        d = {"content": None, "refusal": None, "tool_calls": [frag]}
        return {"usage": None, "choices": [{"delta": d, "finish_reason": None}]}

    asm = provider_openai._ChatAssembler("test")
    events = []
    for c in (chunk(id="a", name="f", args='{"x": 1}'), chunk(id="b", name="g", args="{}")):
        asm.feed(None, c, events)
    asm.finish = "tool_calls"
    calls = asm.finish_step().message.tool_calls
    assert [(e.id, e.name) for e in events] == [("a", "f"), ("b", "g")]
    assert [(c.id, c.arguments) for c in calls] == [("a", {"x": 1}), ("b", {})]


def test_retry_after_headers_are_read_in_their_own_units():
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "3600"}) == 3600
    far = retry_after_seconds({"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"})
    assert far is not None and far > 3600 * 24 * 365
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    assert should_retry_header({"x-should-retry": "false"}) is False
    assert should_retry_header({"x-should-retry": "True"}) is True
    assert should_retry_header({}) is None


def test_registered_through_the_real_hookspecs():
    pm = pluggy.PluginManager("agent")
    pm.add_hookspecs(hookspecs)
    pm.register(provider_openai)
    seen = []
    pm.hook.agent_register_providers(register=seen.append, config=None)
    assert [s.name for s in seen] == ["openai"]


async def test_quota_exhausted_429_is_not_retryable(fake_provider):
    body = {"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota",
                      "param": None, "code": "insufficient_quota"}}
    fake_provider.script(Reply.error(429, body, headers={"x-should-retry": "false"}))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider), request())
    assert info.value.status == 429 and not info.value.retryable
    assert info.value.message.endswith("You exceeded your current quota.")


def test_declares_its_options():
    declared = []
    provider_openai.agent_addoption(SimpleNamespace(add=declared.append))
    by_key = {o.key: o for o in declared}
    assert by_key["openai_api"].choices == ("auto", "chat", "responses")
    assert by_key["openai_api"].env == "AGENT_OPENAI_API"
    assert by_key["send_reasoning"].default is None  # unset: decided per model (below)


async def test_unset_options_mean_defaults(fake_provider):
    # The core passes every declared key, unset ones as None.
    fake_provider.script(Reply.text("ok"))
    provider = make(fake_provider, api=None,
                    options={"send_reasoning": None, "reasoning_efforts": None})
    await collect(provider, request())
    assert fake_provider.last.body["reasoning_effort"] == "medium"


# ---- reasoning parameters only where they are taken --------------------------------------

def unknown(thinking="medium", chosen=False):
    return ProviderRequest(model="llama-local", system="s", messages=[Message.user("hi")],
                           thinking=thinking, thinking_chosen=chosen)


@pytest.mark.parametrize("thinking, chosen, sent", [
    ("medium", False, None),  # the default level, a model not known to reason: nothing
    ("off", True, None),  # --think off never sends "none" to a model that may not know it
    ("high", True, "high"),  # a level the user asked for is sent
])
async def test_reasoning_effort_goes_to_an_unknown_model_only_when_asked(fake_provider,
                                                                        thinking, chosen, sent):
    fake_provider.script(Reply.text("ok"))
    settings = ProviderSettings(provider="openai", model="llama-local",
                                base_url=fake_provider.openai_url, api_key="sk-test",
                                max_retries=0, options={"openai_api": "chat"})
    await collect(provider_openai.SPEC.create(settings), unknown(thinking, chosen))
    assert fake_provider.last.body.get("reasoning_effort") == sent


LITELLM_400 = ("litellm.UnsupportedParamsError: openai does not support parameters: "
               "['reasoning_effort'], for model=llama-local. To drop these, set "
               "`litellm.drop_params=True` or for proxy:\n\n`litellm_settings:\n drop_params: "
               "true`\n")


async def test_a_400_naming_a_parameter_drops_it_retries_once_and_remembers(fake_provider):
    fake_provider.script(Reply.error(400, message=LITELLM_400, type="invalid_request_error"),
                         Reply.text("answered"), Reply.text("again"))
    settings = ProviderSettings(provider="openai", model="llama-local",
                                base_url=fake_provider.openai_url, api_key="sk-test",
                                max_retries=0, options={"openai_api": "chat"})
    provider = provider_openai.SPEC.create(settings)
    events = await collect(provider, unknown("high", chosen=True))
    notices = [e.text for e in events if isinstance(e, ProviderNotice)]
    assert notices == [f"127.0.0.1:{fake_provider.port} does not take reasoning_effort for "
                       "llama-local; sending requests without it from now on"]
    assert events[-1].message.parts[-1].text == "answered"
    first, second = fake_provider.bodies
    assert first["reasoning_effort"] == "high" and "reasoning_effort" not in second
    # Sticky: the next request goes without it at once, and says nothing more.
    events = await collect(provider, unknown("high", chosen=True))
    assert not [e for e in events if isinstance(e, ProviderNotice)]
    assert "reasoning_effort" not in fake_provider.bodies[2]
    assert len(fake_provider.requests) == 3


async def test_a_400_naming_nothing_droppable_is_reported_as_it_is(fake_provider):
    fake_provider.script(Reply.error(400, message="messages: too many", type="invalid_request"))
    settings = ProviderSettings(provider="openai", model="llama-local",
                                base_url=fake_provider.openai_url, api_key="sk-test",
                                max_retries=0, options={"openai_api": "chat"})
    with pytest.raises(ProviderError, match="messages: too many"):
        await collect(provider_openai.SPEC.create(settings), unknown("high", chosen=True))
    assert len(fake_provider.requests) == 1
