"""The anthropic provider against the fake server, through the real SDK."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

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
from plugins_builtin import anthropic as provider_anthropic
from plugins_builtin.anthropic import thinking_params

TOOLS = [{"name": "read_file", "description": "Read a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def make(srv, **kw):
    settings = ProviderSettings(provider="anthropic", model="claude-test", base_url=srv.base_url,
                                api_key="sk-ant-test", max_retries=kw.pop("max_retries", 0), **kw)
    return provider_anthropic.SPEC.create(settings)


def request(messages=None, **kw):
    return ProviderRequest(model=kw.pop("model", "claude-sonnet-4-5"),
                           system=kw.pop("system", "You are terse."),
                           messages=messages or [Message.user("hi")], tools=kw.pop("tools", TOOLS),
                           **kw)


async def collect(provider, req):
    return [e async for e in provider.stream(req)]


async def test_stream_thinking_text_and_tool_calls(fake_provider):
    fake_provider.script(Reply(
        reasoning="Need a.txt", signature="EqQBsig==", redacted="REDACTED",
        text="Let me look.",
        tool_calls=[("read_file", {"path": "a.txt"}, "toolu_A"), ("read_file", {"path": "b.txt"})],
        usage={"input_tokens": 100, "cached_tokens": 60, "cache_write_tokens": 15,
               "output_tokens": 89},
    ))
    events = await collect(make(fake_provider), request())
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Need a.txt"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me look."
    assert [(e.id, e.name) for e in events if isinstance(e, ToolCallStarted)] == [
        ("toolu_A", "read_file"), ("toolu_2", "read_file")]
    final = events[-1]
    assert isinstance(final, StepFinished)
    thinking, redacted, text, call_a, call_b = final.message.parts
    assert thinking == ReasoningPart("Need a.txt", signature="EqQBsig==", provider="anthropic")
    assert redacted == ReasoningPart(redacted="REDACTED", provider="anthropic")
    assert text == TextPart("Let me look.")
    assert (call_a.id, call_a.arguments) == ("toolu_A", {"path": "a.txt"})
    assert (call_b.id, call_b.arguments, call_b.raw_arguments) == (
        "toolu_2", {"path": "b.txt"}, '{"path": "b.txt"}')
    assert final.stop_reason == "tool_use"
    u = final.usage
    # input counts every prompt token: 25 fresh + 60 cache reads + 15 cache writes
    assert (u.input_tokens, u.cached_tokens, u.cache_write_tokens, u.output_tokens) == (
        100, 60, 15, 89)


async def test_request_shape(fake_provider):
    fake_provider.script(Reply.text("ok"))
    await collect(make(fake_provider), request(thinking="off"))
    req = fake_provider.last
    assert req.path == "/v1/messages"
    assert req.headers["authorization"] == "Bearer sk-ant-test"
    assert req.headers["x-api-key"] == "sk-ant-test"
    assert "anthropic-version" in req.headers
    body = req.body
    assert body["model"] == "claude-sonnet-4-5" and body["stream"] is True
    assert body["system"] == [{"type": "text", "text": "You are terse.",
                               "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]
    assert body["tools"] == [{"name": "read_file", "description": "Read a file",
                              "input_schema": TOOLS[0]["parameters"]}]
    assert "thinking" not in body and body["max_tokens"] == 16_000


async def test_history_translation_sends_thinking_back(fake_provider):
    fake_provider.script(Reply.text("ok"))
    history = [
        Message.user("read a and b"),
        Message("assistant", [
            ReasoningPart("Plan", signature="sig-0", provider="anthropic"),
            ReasoningPart(redacted="opaque", provider="anthropic"),
            ReasoningPart("openai summary", encrypted="enc", item_id="rs_1", provider="openai"),
            TextPart("Reading."),
            ToolCallPart("toolu_A", "read_file", {"path": "a"}),
            ToolCallPart("toolu_B", "read_file", {"path": "b"}),
        ]),
        Message("tool", [ToolResultPart("toolu_A", "read_file", "AAA"),
                         ToolResultPart("toolu_B", "read_file", "no such file", is_error=True)]),
        Message.user("and now?"),
    ]
    provider = make(fake_provider, options={"prompt_cache": False})
    await collect(provider, request(history, thinking="low"))
    body = fake_provider.last.body
    assert "system" in body and "cache_control" not in body["system"][0]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "read a and b"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Plan", "signature": "sig-0"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {"path": "a"}},
            {"type": "tool_use", "id": "toolu_B", "name": "read_file", "input": {"path": "b"}},
        ]},
        # tool results first, then the user's text, in one user turn
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_A", "content": "AAA"},
            {"type": "tool_result", "tool_use_id": "toolu_B", "content": "no such file",
             "is_error": True},
            {"type": "text", "text": "and now?"},
        ]},
    ]


async def test_thinking_off_drops_earlier_thinking(fake_provider):
    fake_provider.script(Reply.text("ok"))
    history = [Message.user("q"),
               Message("assistant", [ReasoningPart("t", signature="s", provider="anthropic"),
                                     TextPart("a")]),
               Message.user("q2")]
    await collect(make(fake_provider), request(history, thinking="off"))
    assistant = fake_provider.last.body["messages"][1]
    assert assistant == {"role": "assistant", "content": [{"type": "text", "text": "a"}]}


@pytest.mark.parametrize("level, budget, max_tokens", [
    ("low", 6_400, 16_000),
    ("medium", 16_000, 24_192),
    ("high", 38_400, 46_592),
    ("max", 63_999, 64_000),
])
async def test_thinking_levels_on_the_wire(fake_provider, level, budget, max_tokens):
    fake_provider.script(Reply.text("ok"))
    await collect(make(fake_provider), request(thinking=level))
    body = fake_provider.last.body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == max_tokens


def test_thinking_budget_always_fits_the_output_limit():
    for level in ("low", "medium", "high", "max"):
        for limit in (4_096, 8_192, 32_000, 64_000):
            for asked in (1_000, 16_000, 100_000):
                max_tokens, thinking = thinking_params(level, asked, limit)
                assert 1_024 <= thinking["budget_tokens"] < max_tokens
                assert max_tokens <= max(limit, 1_025)
    assert thinking_params("off", 16_000, 8_192) == (8_192, None)
    # opus 4.1 has a 32k output limit: high is clamped below it
    assert provider_anthropic.output_limit("claude-opus-4-1-20250805", {}) == 32_000
    assert provider_anthropic.output_limit("claude-opus-4-5", {}) == 64_000


async def test_malformed_tool_input_is_marked(fake_provider):
    fake_provider.script(Reply.tool_call("read_file", '{"path": ', id="toolu_X"))
    final = (await collect(make(fake_provider), request()))[-1]
    call = final.message.tool_calls[0]
    assert call.arguments == {"__invalid_json__": '{"path": '}


async def test_in_stream_error_event(fake_provider):
    fake_provider.script(Reply.stream_error("Overloaded", type="overloaded_error", after=3))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider), request())
    err = info.value
    host = f"127.0.0.1:{fake_provider.port}"
    assert err.message == f"{host} stream error: Overloaded (overloaded_error)"
    assert err.retryable and err.output_started and err.status is None


async def test_401_is_a_clear_error(fake_provider):
    fake_provider.script(Reply.error(401, message="invalid x-api-key"))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, max_retries=2), request())
    err = info.value
    # A custom Anthropic-compatible URL: the error names its host, not the protocol.
    assert str(err) == f"127.0.0.1:{fake_provider.port} returned 401: invalid x-api-key"
    assert err.status == 401 and err.kind == "auth" and not err.retryable
    assert len(fake_provider.requests) == 1


async def test_retry_after_beyond_the_cap_fails_at_once_naming_the_wait(fake_provider):
    # The anthropic SDK alone would sleep the full hour here.
    fake_provider.script(Reply.error(529, message="Overloaded", headers={"retry-after": "3600"}),
                         Reply.text("never asked for"))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, max_retries=2, retry_after_cap=60), request())
    assert info.value.message == (
        f"127.0.0.1:{fake_provider.port} returned 529: Overloaded; the server asked to retry "
        "after 3600 s, more than retry_after_cap = 60 s, so it was not retried")
    assert len(fake_provider.requests) == 1 and fake_provider.pending == 1


async def test_retry_after_within_the_cap_is_obeyed(fake_provider):
    fake_provider.script(Reply.error(529, message="Overloaded", headers={"retry-after-ms": "50"}),
                         Reply.text("made it"))
    events = await collect(make(fake_provider, max_retries=1, retry_after_cap=0.1), request())
    assert events[-1].message.text == "made it"
    assert [r.headers["x-stainless-retry-count"] for r in fake_provider.requests] == ["0", "1"]


async def test_500_then_success(fake_provider):
    fake_provider.script(Reply.error(500, headers={"retry-after-ms": "5"}), Reply.text("fine"))
    events = await collect(make(fake_provider, max_retries=1), request())
    assert events[-1].message.text == "fine"


async def test_dropped_connection_mid_stream(fake_provider):
    fake_provider.script(Reply.drop_after(4))
    seen = []
    with pytest.raises(ProviderError) as info:
        async for event in make(fake_provider).stream(request()):
            seen.append(event)
    assert any(isinstance(e, TextDelta) for e in seen)
    assert info.value.output_started and info.value.kind == "connection"


async def test_stall_mid_stream_times_out(fake_provider):
    fake_provider.script(Reply.stall(5, after=3))
    with pytest.raises(ProviderError) as info:
        await collect(make(fake_provider, timeout=0.3), request())
    assert info.value.kind == "timeout" and info.value.output_started


async def test_base_url_with_v1_suffix(fake_provider):
    fake_provider.script(Reply.text("ok"))
    provider = provider_anthropic.SPEC.create(ProviderSettings(
        provider="anthropic", model="m", base_url=fake_provider.base_url + "/v1/",
        api_key="k", max_retries=0))
    await collect(provider, request())
    assert fake_provider.paths == ["/v1/messages"]


async def test_list_models(fake_provider):
    fake_provider.models = ["claude-b", "claude-a"]
    assert await make(fake_provider).list_models() == ["claude-a", "claude-b"]


async def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = provider_anthropic.SPEC.create(ProviderSettings(provider="anthropic", model="m"))
    with pytest.raises(ProviderError) as info:
        await collect(provider, request())
    assert "ANTHROPIC_API_KEY" in info.value.message and info.value.kind == "auth"


def test_spec():
    seen = []
    provider_anthropic.agent_register_providers(seen.append, None)
    (spec,) = seen
    assert (spec.name, spec.env_key, spec.default_model, spec.default_base_url) == (
        "anthropic", "ANTHROPIC_API_KEY", "claude-sonnet-4-5", "https://api.anthropic.com")


async def test_adaptive_thinking_models(fake_provider):
    fake_provider.script(Reply.text("ok"), Reply.text("ok"))
    provider = make(fake_provider)
    await collect(provider, request(model="claude-opus-4-6", thinking="high"))
    await collect(provider, request(model="claude-opus-4-6", thinking="off"))
    on, off = fake_provider.bodies
    assert on["thinking"] == {"type": "adaptive"} and on["output_config"] == {"effort": "high"}
    assert on["max_tokens"] == 64_000
    assert "thinking" not in off and "output_config" not in off


def sdk_deprecated_model() -> str:
    """A model the installed SDK lists as being retired: the list changes with SDK
    releases, so the test takes its model from it rather than naming one."""
    from anthropic._data import DEPRECATED_MODELS
    return next(iter(DEPRECATED_MODELS))


async def test_deprecated_model_gives_one_notice(fake_provider, recwarn):
    model = sdk_deprecated_model()
    fake_provider.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))
    provider = make(fake_provider)
    first = await collect(provider, request(model=model))
    second = await collect(provider, request(model=model))
    current = await collect(provider, request(model="claude-model-not-retired"))
    notices = [e for e in first + second + current if isinstance(e, ProviderNotice)]
    assert len(notices) == 1 and f"{model} is deprecated" in notices[0].text
    assert [b["model"] for b in fake_provider.bodies] == [model, model, "claude-model-not-retired"]
    assert not [w for w in recwarn if "deprecated" in str(w.message)]  # nothing on stderr


def test_registered_through_the_real_hookspecs():
    import pluggy

    from agent.contract import hookspecs

    pm = pluggy.PluginManager("agent")
    pm.add_hookspecs(hookspecs)
    pm.register(provider_anthropic)
    seen = []
    pm.hook.agent_register_providers(register=seen.append, config=None)
    assert [s.name for s in seen] == ["anthropic"]
