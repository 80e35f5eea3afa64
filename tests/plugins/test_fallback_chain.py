"""The fallback plugin's endpoint chain: two fake servers, the real SDKs, real sessions."""

from __future__ import annotations

import sqlite3

import pytest
from clirun import run_agent_here
from fakeprovider import FakeProvider, Reply

from agent.contract import events as ev
from agent.contract.messages import Message
from agent.contract.providers import ProviderRequest, ProviderSettings, Usage
from agent.testing import collect, make_boot, make_session
from plugins_builtin import anthropic as provider_anthropic
from plugins_builtin import openai as provider_openai
from plugins_builtin.budget import pricing, spend
from plugins_builtin.fallback import Endpoint, EndpointChain, FallbackProvider

CLAUDE = "claude-sonnet-4-6"
KEY_ENV = "FALLBACK_TEST_KEY"


@pytest.fixture
def backup():
    """The second server: the fallback endpoint."""
    server = FakeProvider.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def fallback_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "fallback-key")


def session_for(tmp_path, primary, backup, *, provider="openai", model="gpt-5",
                fallback=None, **options):
    """A session on ``primary`` (openai chat unless told) with ``backup`` as its fallback
    (anthropic unless told), configured the way a user would in config.toml."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    entry = fallback or {"provider": "anthropic", "model": CLAUDE, "base_url": backup.base_url,
                         "api_key_env": KEY_ENV}
    file_data = {"fallback": [entry], "fallback_cooldown": 300.0, **options}
    config, hooks = make_boot(ws, tmp_path / "home", file_data=file_data,
                              builtins=["openai", "anthropic", "fallback", "time", "budget"])
    base_url = primary.openai_url if provider == "openai" else primary.base_url
    return make_session(config, hooks, provider=provider, model=model, base_url=base_url)


def notices(events):
    return [e.text for e in events if isinstance(e, ev.NoticeEvent)]


def errors(events):
    return [e for e in events if isinstance(e, ev.ErrorEvent)]


@pytest.mark.parametrize("status", [529, 500])
async def test_server_error_fails_over_once_and_stays(tmp_path, fake_provider, backup, status):
    fake_provider.script(Reply.error(status))
    backup.script(Reply.text("from claude", usage={"input_tokens": 1000, "output_tokens": 100}),
                  Reply.text("still claude"))
    session = session_for(tmp_path, fake_provider, backup)
    port = fake_provider.port

    events = await collect(session, "hi")
    reason = {529: "Overloaded", 500: "Internal server error"}[status]
    assert notices(events) == [
        f"endpoint fallback: 127.0.0.1:{port} chat completions (gpt-5) failed "
        f"(127.0.0.1:{port} returned {status}: {reason}), retrying on anthropic messages "
        f"({CLAUDE})"]
    assert not errors(events)
    assert session.messages[-1].text == "from claude"
    assert backup.bodies[0]["model"] == CLAUDE
    assert backup.requests[0].headers["x-api-key"] == "fallback-key"
    assert backup.bodies[0]["messages"][0]["content"][0]["text"] == "hi"

    # Priced at the model that answered, not the session's.
    claude_cost = pricing.cost(CLAUDE, Usage(input_tokens=1000, output_tokens=100))
    assert claude_cost != pricing.cost("gpt-5", Usage(input_tokens=1000, output_tokens=100))
    assert events[-1].cost_usd == pytest.approx(claude_cost)
    assert spend.ledger(session).own.usd == pytest.approx(claude_cost)

    # Within the cooldown the next request goes straight to the fallback, without a notice.
    events = await collect(session, "again")
    assert notices(events) == [] and session.messages[-1].text == "still claude"
    assert fake_provider.paths == ["/v1/chat/completions"]
    assert backup.paths == ["/v1/messages", "/v1/messages"]


async def test_primary_is_tried_again_after_the_cooldown(tmp_path, fake_provider, backup):
    fake_provider.script(Reply.error(500), Reply.text("primary is back"), Reply.text("and stays"))
    backup.script(Reply.text("from claude"))
    session = session_for(tmp_path, fake_provider, backup)  # the 300 s cooldown
    chain = session.runtime.provider
    assert isinstance(chain, EndpointChain)
    now = [1000.0]
    chain.clock = lambda: now[0]  # the cooldown passes without waiting for it

    assert len(notices(await collect(session, "one"))) == 1
    now[0] += 300
    events = await collect(session, "two")
    assert notices(events) == [] and session.messages[-1].text == "primary is back"
    await collect(session, "three")
    assert session.messages[-1].text == "and stays"
    assert fake_provider.paths == ["/v1/chat/completions"] * 3
    assert backup.paths == ["/v1/messages"]


@pytest.mark.parametrize("status", [401, 400])
async def test_auth_and_bad_request_errors_never_fail_over(tmp_path, fake_provider, backup,
                                                          status):
    fake_provider.script(Reply.error(status, message="nope"))
    session = session_for(tmp_path, fake_provider, backup)
    events = await collect(session, "hi")
    assert notices(events) == []
    [error] = errors(events)
    assert error.status == status and error.error.endswith(f"returned {status}: nope")
    assert backup.paths == []


async def test_no_fail_over_after_output_started(tmp_path, fake_provider, backup):
    fake_provider.script(Reply.drop_after(3))
    session = session_for(tmp_path, fake_provider, backup)
    events = await collect(session, "hi")
    assert any(isinstance(e, ev.TextEvent) for e in events)
    assert notices(events) == [] and len(errors(events)) == 1
    assert backup.paths == []


async def test_every_endpoint_failing_gives_one_error_naming_each(tmp_path, fake_provider,
                                                                 backup):
    fake_provider.script(Reply.error(500, message="primary down"))
    backup.script(Reply.error(529, message="claude overloaded"))
    session = session_for(tmp_path, fake_provider, backup)
    events = await collect(session, "hi")
    port = fake_provider.port
    [error] = errors(events)
    assert error.status == 529  # the last error
    assert error.error == (
        f"every endpoint failed - 127.0.0.1:{port} chat completions (gpt-5): 127.0.0.1:{port} "
        f"returned 500: primary down; anthropic messages ({CLAUDE}): 127.0.0.1:{backup.port} "
        "returned 529: "
        "claude overloaded")
    assert len(notices(events)) == 1
    assert isinstance(events[-1], ev.DoneEvent) and events[-1].reason == "error"


async def test_mid_turn_switch_to_anthropic_keeps_a_valid_history(tmp_path, fake_provider,
                                                                  backup):
    # The responses API gives the first step encrypted openai reasoning to leave behind.
    fake_provider.script(Reply(reasoning="plan", tool_calls=[("current_time", {}, "call_A")]),
                         Reply.error(503))
    backup.script(Reply.text("It is now."), Reply.text("next turn", reasoning="think"))
    session = session_for(tmp_path, fake_provider, backup, openai_api="responses")

    events = await collect(session, "what time is it?")
    assert [e.name for e in events if isinstance(e, ev.ToolResultEvent)] == ["current_time"]
    assert len(notices(events)) == 1 and session.messages[-1].text == "It is now."
    assert fake_provider.paths == ["/v1/responses", "/v1/responses"]
    body = backup.bodies[0]
    roles = [(m["role"], [b["type"] for b in m["content"]]) for m in body["messages"]]
    assert roles == [("user", ["text"]), ("assistant", ["tool_use"]),
                     ("user", ["tool_result"])]
    tool_use = body["messages"][1]["content"][0]
    tool_result = body["messages"][2]["content"][0]
    assert (tool_use["id"], tool_use["name"], tool_use["input"]) == ("call_A", "current_time", {})
    assert tool_result["tool_use_id"] == "call_A" and tool_result["content"]
    # No openai reasoning, and no thinking for a turn another provider began.
    assert "thinking" not in body
    assert "plan" not in str(body["messages"])

    await collect(session, "and now?")  # a new turn: thinking is back
    assert backup.bodies[1]["thinking"]["type"] == "enabled"


async def test_mid_turn_switch_to_openai_drops_anthropic_thinking(tmp_path, fake_provider,
                                                                  backup):
    fake_provider.script(Reply(reasoning="secret plan", tool_calls=[("current_time", {})]),
                         Reply.error(529))
    backup.script(Reply.text("done"))
    fallback = {"provider": "openai", "model": "gpt-5", "base_url": backup.openai_url,
                "api_key_env": KEY_ENV}
    session = session_for(tmp_path, fake_provider, backup, provider="anthropic", model=CLAUDE,
                          fallback=fallback, openai_api="responses")
    events = await collect(session, "time?")
    assert len(notices(events)) == 1 and session.messages[-1].text == "done"
    assert fake_provider.paths == ["/v1/messages", "/v1/messages"]
    sent = backup.bodies[0]
    assert sent["model"] == "gpt-5"
    assert [i["type"] for i in sent["input"]] == ["message", "function_call",
                                                  "function_call_output"]
    assert sent["input"][1]["call_id"] == sent["input"][2]["call_id"] == "toolu_1"
    assert "secret plan" not in str(sent)


async def test_shape_switch_and_endpoint_fallback_compose(fake_provider, backup):
    """On the official endpoint's pair, a 404 still switches shape on the same server; a
    later 500 moves to the next endpoint."""
    settings = ProviderSettings(provider="openai", model="gpt-test", api_key="k",
                                base_url=fake_provider.openai_url, max_retries=0)
    endpoint = provider_openai.Endpoint(settings)
    chat = provider_openai.ChatProvider(endpoint)
    chat.alternatives = [provider_openai.ResponsesProvider(endpoint)]
    claude = provider_anthropic.create(ProviderSettings(
        provider="anthropic", model=CLAUDE, base_url=backup.base_url, api_key="k",
        max_retries=0))
    chain = EndpointChain([Endpoint(FallbackProvider(chat)), Endpoint(claude, CLAUDE)])
    fake_provider.script(Reply.error(404, message="not a chat model"), Reply.text("responses"),
                         Reply.error(500))
    backup.script(Reply.text("claude"))

    async def run():
        request = ProviderRequest(model="gpt-test", system="s", messages=[Message.user("hi")])
        return [e async for e in chain.stream(request)]

    first = await run()
    assert first[-1].message.text == "responses" and first[-1].model == ""
    second = await run()
    assert second[-1].message.text == "claude" and second[-1].model == CLAUDE
    assert fake_provider.paths == ["/v1/chat/completions", "/v1/responses", "/v1/responses"]
    assert backup.paths == ["/v1/messages"]


def write_config(home, text):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def test_headless_run_fails_over_and_books_usage_at_the_fallback_model(tmp_path, fake_provider,
                                                                       backup):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    write_config(home, f"""
provider = "openai"
model = "gpt-5"
base_url = "{fake_provider.openai_url}"
max_retries = 0

[[fallback]]
provider = "anthropic"
model = "{CLAUDE}"
base_url = "{backup.base_url}"
api_key_env = "{KEY_ENV}"
""")
    fake_provider.script(Reply.error(503))
    backup.script(Reply.text("hello from claude",
                             usage={"input_tokens": 2000, "output_tokens": 50}))
    result = run_agent_here(["-p", "hi"], home=home, cwd=ws, OPENAI_API_KEY="x",
                            **{KEY_ENV: "fallback-key"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from claude\n"
    assert (f"[notice] endpoint fallback: 127.0.0.1:{fake_provider.port} chat completions "
            f"(gpt-5) failed") in result.stderr
    rows = sqlite3.connect(str(home / "state" / "agent.db")).execute(
        "SELECT model, input_tokens, cost_usd FROM usage").fetchall()
    cost = pricing.cost(CLAUDE, Usage(input_tokens=2000, output_tokens=50))
    assert rows == [(CLAUDE, 2000, pytest.approx(cost))]


@pytest.mark.parametrize(("fallback", "message"), [
    ('[{provider = "antropic"}]',
     'fallback[0]: unknown provider "antropic". Available: anthropic, openai'),
    ('[{provider = "anthropic", api_key_env = "NO_SUCH_KEY_VAR"}]',
     'fallback[0]: no API key for provider "anthropic": set NO_SUCH_KEY_VAR'),
    ('[{provider = "openai", api_key_env = "' + KEY_ENV + '"}, {provider = "anthropic", '
     'model = 5}]', "fallback[1].model must be a non-empty string, got 5"),
    ('[{provider = "anthropic", api_key = "sk"}]',
     "fallback[0]: unknown key 'api_key' (expected provider, model, base_url, api_key_env)"),
    ('["anthropic"]', "fallback[0] must be a table like {provider = \"anthropic\"}"),
    ("3", "'fallback' must be a list, got 3"),
])
def test_bad_fallback_config_stops_startup(tmp_path, fallback, message):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    write_config(home, f"fallback = {fallback}\n")
    result = run_agent_here(["-p", "hi"], home=home, cwd=ws, OPENAI_API_KEY="x",
                            **{KEY_ENV: "fallback-key"})
    assert result.returncode == 2
    assert message in result.stderr
    assert str(home / "config.toml") in result.stderr


async def test_anthropic_keeps_thinking_through_its_own_tool_loop(tmp_path, fake_provider,
                                                                  backup):
    """The mid-turn rule only applies to turns another provider began."""
    fake_provider.script(Reply(reasoning="plan", tool_calls=[("current_time", {})]),
                         Reply.text("done"))
    session = session_for(tmp_path, fake_provider, backup, provider="anthropic", model=CLAUDE)
    await collect(session, "time?")
    second = fake_provider.bodies[1]
    assert second["thinking"]["type"] == "enabled"
    assert second["messages"][1]["content"][0] == {"type": "thinking", "thinking": "plan",
                                                   "signature": "sig-1"}
    assert backup.paths == []
