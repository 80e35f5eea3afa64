"""Spending caps: checked before every request, never crossed; headless exit code 4."""

from __future__ import annotations

import json

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent.contract import events as ev
from agent.contract.providers import ProviderRequest
from agent.testing import collect, make_boot, make_session
from plugins_builtin.budget import spend

BUILTINS = ["openai", "files", "time", "agents", "subagents", "budget"]

# gpt-5: $1.25 per million input tokens, $10 per million output tokens.
PRICEY_STEP = {"input_tokens": 10_000, "output_tokens": 8_000}  # $0.0125 + $0.08


def boot(tmp_path, *, file_data=None, **flags):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return make_boot(ws, tmp_path / "home", builtins=BUILTINS, file_data=file_data,
                     flags=flags)


def headless(tmp_path, fake_provider, *args: str):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("max_tokens = 8000\n")
    return run_agent_here(["-p", "what time is it", *args], home=home, cwd=tmp_path,
                          AGENT_PROVIDER="openai", AGENT_MODEL="gpt-5", AGENT_API_KEY="k",
                          AGENT_BASE_URL=fake_provider.openai_url)


def test_headless_run_stops_before_the_request_that_could_cross_the_cap(tmp_path,
                                                                        fake_provider):
    fake_provider.script(Reply.tool_call("current_time", {}, usage=PRICEY_STEP),
                         Reply.text("never sent"))
    proc = headless(tmp_path, fake_provider, "--max-spend", "0.15", "--json")
    assert proc.returncode == 4, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    error = next(e for e in events if e["type"] == "error")
    assert error["kind"] == "budget"
    assert error["error"].startswith("Spending cap reached: this session spent $0.09 of the "
                                     "$0.15 cap (max_spend_usd)")
    assert events[-2]["type"] == "done" and events[-2]["reason"] == "budget"
    assert events[-1]["type"] == "result" and events[-1]["subtype"] == "error_max_budget_usd"
    assert [e["type"] for e in events].count("tool-result") == 1  # the first step ran
    assert fake_provider.paths == ["/v1/chat/completions"]  # and nothing was sent after it
    assert fake_provider.pending == 1


def test_headless_text_mode_names_the_cap_on_stderr(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("current_time", {}, usage=PRICEY_STEP),
                         Reply.text("never sent"))
    proc = headless(tmp_path, fake_provider, "--max-spend", "0.15")
    assert proc.returncode == 4
    assert "[error] Spending cap reached" in proc.stderr and "--max-spend" in proc.stderr
    assert len(fake_provider.requests) == 1


def test_the_same_run_under_a_larger_cap_completes(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("current_time", {}, usage=PRICEY_STEP),
                         Reply.text("It is late."))
    proc = headless(tmp_path, fake_provider, "--max-spend", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "It is late."


def test_a_cap_that_is_not_positive_is_a_usage_error(tmp_path):
    proc = run_agent_here(["-p", "hi", "--max-spend", "0"], home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 2
    assert "max_spend_usd must be a positive amount of US dollars, got 0.0" in proc.stderr


async def test_a_notice_at_80_percent_then_requests_continue(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, max_spend_usd=0.1, file_data={"max_tokens": 100})
    fake_provider.script(Reply.tool_call("current_time", {}, usage={"output_tokens": 8_500}),
                         Reply.text("done", usage={"input_tokens": 10, "output_tokens": 5}))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5")
    events = await collect(session, "time?")
    notices = [e.text for e in events if isinstance(e, ev.NoticeEvent)]
    assert notices == ["spending: $0.09 of the $0.10 cap (85 %); requests stop before they "
                       "could cross it"]
    assert events[-1].reason == "end" and len(fake_provider.requests) == 2
    assert spend.ledger(session).spent_usd <= 0.1


async def test_an_unpriced_model_is_refused_under_a_cap(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, max_spend_usd=5.0)
    fake_provider.script(Reply.text("never sent"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url,
                           model="llama-3.3-70b")
    events = await collect(session, "hi")
    assert events[-2].kind == "budget" and "llama-3.3-70b has no price" in events[-2].error
    assert events[-1].reason == "budget" and events[-1].steps == 0
    assert fake_provider.requests == []


async def test_parallel_subagents_cannot_overshoot_together(tmp_path, fake_provider):
    # Each request may cost a little over $0.10 (10,000 output tokens); the cap fits one.
    config, hooks = boot(tmp_path, max_spend_usd=0.15, file_data={"max_tokens": 10_000})
    fake_provider.script(
        Reply(tool_calls=[("task", {"description": "a", "prompt": "find a"}, "t1"),
                          ("task", {"description": "b", "prompt": "find b"}, "t2")]),
        Reply.text("found it", delay=0.05),
        Reply.text("summary"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5")
    events = await collect(session, "look")
    results = {e.id: e for e in events if isinstance(e, (ev.ToolResultEvent,
                                                         ev.ToolErrorEvent))}
    outcomes = sorted(type(e).__name__ for e in results.values())
    assert outcomes == ["ToolErrorEvent", "ToolResultEvent"]
    refused = next(e for e in results.values() if isinstance(e, ev.ToolErrorEvent))
    assert refused.error.startswith("The explore subagent stopped: Spending cap reached")
    assert "more in flight" in refused.error
    assert len(fake_provider.requests) == 3  # parent, one subagent, parent
    book = spend.ledger(session)
    assert book.spent_usd <= 0.15 and book.reserved == {}


async def test_subagent_cap_stops_subagents_but_not_the_session(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, subagent_max_spend_usd=0.01,
                         file_data={"max_tokens": 2_000})  # a subagent request: >= $0.02
    fake_provider.script(
        Reply.tool_call("task", {"description": "a", "prompt": "find a"}, id="t1"),
        Reply.text("answered without help"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5")
    events = await collect(session, "look")
    error = next(e for e in events if isinstance(e, ev.ToolErrorEvent))
    assert "its subagents spent $0.00 of the $0.01 cap (subagent_max_spend_usd)" in error.error
    assert events[-1].reason == "end" and len(fake_provider.requests) == 2


def test_worst_case_counts_every_output_token_and_a_generous_input():
    request = ProviderRequest(model="gpt-5", system="x" * 3_000, messages=[], max_tokens=1_000)
    assert spend.estimate_input_tokens(request) == 1_000
    assert spend.worst_case_usd(request) == (1_000 * 1.25 + 1_000 * 10) / 1e6
    assert spend.worst_case_usd(ProviderRequest(model="mystery", system="", messages=[])) \
        is None


class ThinkingProvider:
    """A provider that sends more output room than asked (a thinking budget)."""

    def max_output_tokens(self, request):
        return request.max_tokens + 30_000


def test_the_output_bound_is_what_the_provider_will_allow():
    request = ProviderRequest(model="gpt-5", system="", messages=[], max_tokens=1_000)
    assert spend.output_bound(request) == 1_000
    assert spend.output_bound(request, ThinkingProvider()) == 31_000
    assert spend.worst_case_usd(request, ThinkingProvider()) == 31_000 * 10 / 1e6
    assert spend.output_bound(request, object()) == 1_000


@pytest.mark.parametrize("api,key", [("chat", "max_completion_tokens"),
                                     ("responses", "max_output_tokens")])
async def test_openai_requests_carry_the_output_cap_the_budget_assumes(tmp_path, fake_provider,
                                                                        api, key):
    from fakeprovider import Reply

    from agent.testing import collect, make_boot, make_session
    from plugins_builtin.budget.spend import output_bound

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "h", builtins=["openai"],
                              file_data={"openai_api": api, "max_tokens": 1234})
    fake_provider.script(Reply.text("ok"))
    # "official" endpoint semantics are decided by URL; the fake server is a compatible one,
    # so chat sends the classic name there.
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "hi")
    body = fake_provider.requests[0].body
    sent = body.get(key) or body.get("max_tokens")
    request = await session.build_request()
    assert sent == 1234 == output_bound(request, session.runtime.provider)
