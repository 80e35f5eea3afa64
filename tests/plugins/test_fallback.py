"""The fallback plugin: chat completions → responses on the official OpenAI endpoint."""

from __future__ import annotations

import pluggy
import pytest
from fakeprovider import Reply

from agent.contract import hookspecs
from agent.contract.messages import Message
from agent.contract.providers import (
    ProviderError,
    ProviderNotice,
    ProviderRequest,
    ProviderSettings,
    StepFinished,
    TextDelta,
)
from plugins_builtin import fallback
from plugins_builtin import openai as provider_openai
from plugins_builtin.fallback import FallbackProvider, should_switch
from plugins_builtin.openai import ChatProvider, ResponsesProvider


def official_pair(srv):
    """A chat provider with a responses alternative, as ``auto`` builds on api.openai.com,
    but pointed at the fake server."""
    settings = ProviderSettings(provider="openai", model="gpt-test", base_url=srv.openai_url,
                                api_key="k", max_retries=0)
    endpoint = provider_openai.Endpoint(settings)
    chat = ChatProvider(endpoint)
    chat.alternatives = [ResponsesProvider(endpoint)]
    return chat


def request():
    return ProviderRequest(model="gpt-test", system="s", messages=[Message.user("hi")])


async def collect(provider):
    return [e async for e in provider.stream(request())]


NOT_FOUND = {"error": {"message": "This is not a chat model and thus not supported in the "
                                  "v1/chat/completions endpoint.", "type": "invalid_request_error",
                       "param": "model", "code": None}}


async def test_switches_once_on_404_and_stays_switched(fake_provider):
    fake_provider.script(Reply.error(404, NOT_FOUND), Reply.text("from responses"),
                         Reply.text("still responses"))
    provider = FallbackProvider(official_pair(fake_provider))
    assert provider.label.endswith("chat completions")

    events = await collect(provider)
    notices = [e for e in events if isinstance(e, ProviderNotice)]
    assert len(notices) == 1
    assert notices[0].text.startswith(
        f"endpoint fallback: 127.0.0.1:{fake_provider.port} chat completions rejected the request, "
        f"retrying on 127.0.0.1:{fake_provider.port} responses (")
    assert "not a chat model" in notices[0].text
    assert isinstance(events[-1], StepFinished)
    assert events[-1].message.text == "from responses"
    assert provider.label.endswith("responses")

    events = await collect(provider)
    assert not [e for e in events if isinstance(e, ProviderNotice)]
    assert events[-1].message.text == "still responses"
    assert fake_provider.paths == ["/v1/chat/completions", "/v1/responses", "/v1/responses"]
    # the same request was resent
    assert fake_provider.bodies[1]["input"] == [{"type": "message", "role": "user",
                                                 "content": "hi"}]


@pytest.mark.parametrize("status", [401, 429, 500])
async def test_never_switches_on_auth_rate_limit_or_server_errors(fake_provider, status):
    fake_provider.script(Reply.error(status, message="nope"))
    provider = FallbackProvider(official_pair(fake_provider))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert info.value.status == status
    assert fake_provider.paths == ["/v1/chat/completions"]
    assert provider.label.endswith("chat completions")


async def test_no_switch_after_output_started(fake_provider):
    fake_provider.script(Reply.drop_after(3))
    provider = FallbackProvider(official_pair(fake_provider))
    seen = []
    with pytest.raises(ProviderError):
        async for event in provider.stream(request()):
            seen.append(event)
    assert any(isinstance(e, TextDelta) for e in seen)
    assert fake_provider.paths == ["/v1/chat/completions"]


async def test_last_endpoint_error_is_raised(fake_provider):
    fake_provider.script(Reply.error(400, message="bad chat"), Reply.error(400, message="bad resp"))
    provider = FallbackProvider(official_pair(fake_provider))
    with pytest.raises(ProviderError) as info:
        await collect(provider)
    assert "bad resp" in info.value.message
    assert fake_provider.paths == ["/v1/chat/completions", "/v1/responses"]


def test_should_switch_rules():
    assert should_switch(ProviderError("x", status=404))
    assert should_switch(ProviderError("x", status=422))
    assert not should_switch(ProviderError("x", status=404, output_started=True))
    assert not should_switch(ProviderError("x", status=400, retryable=True))
    assert not should_switch(ProviderError("x", status=401))
    assert not should_switch(ProviderError("x"))


def select(provider):
    """Run the hook with a plain selector plugin and the fallback wrapper."""
    pm = pluggy.PluginManager("agent")
    pm.add_hookspecs(hookspecs)  # the real spec: checks the wrapper's signature too

    class Selector:
        @pluggy.HookimplMarker("agent")
        def agent_select_provider(self, settings):
            return provider

    pm.register(Selector())
    pm.register(fallback)
    return pm.hook.agent_select_provider(config=None, providers={}, settings=None)


def test_hook_wraps_only_providers_with_alternatives():
    official = provider_openai.SPEC.create(
        ProviderSettings(provider="openai", model="gpt-5", api_key="k"))
    wrapped = select(official)
    assert isinstance(wrapped, FallbackProvider) and wrapped.current is official
    assert wrapped.settings is official.settings  # other attributes pass through

    local = provider_openai.SPEC.create(ProviderSettings(
        provider="openai", model="m", base_url="http://localhost:1234/v1"))
    assert select(local) is local
    assert select(None) is None
