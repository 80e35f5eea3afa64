"""The cost contract: prices and spending reach the core only through hooks, so a third-party
plugin can stand in for the builtin ``budget`` plugin, and without any the core prices nothing."""

from __future__ import annotations

import json

from clirun import run_agent_here
from fakeprovider import Reply

from agent import hookimpl
from agent.testing import collect, make_boot, make_session


class HousePricing:
    """A third-party cost plugin: one cent per output token, a ledger of its own."""

    def __init__(self) -> None:
        self.booked: list[tuple[str, int, bool]] = []
        self.abandoned: list[bool] = []

    @hookimpl
    def agent_price_usage(self, model, usage):
        return usage.output_tokens * 0.01 if model == "house-1" else None

    @hookimpl
    def agent_request_done(self, session, model, usage, nested):
        if usage is None:
            self.abandoned.append(nested)
        else:
            self.booked.append((model, usage.output_tokens, nested))

    @hookimpl
    def agent_session_spent(self, session):
        return sum(out for _, out, _ in self.booked) * 0.01, False


async def test_a_third_party_plugin_prices_turns_and_books_every_request(tmp_path,
                                                                        fake_provider):
    fake_provider.script(
        Reply.tool_call("current_time", {}, usage={"input_tokens": 50, "output_tokens": 7}),
        Reply.text("noon", usage={"input_tokens": 80, "output_tokens": 3}))
    house = HousePricing()
    config, hooks = make_boot(tmp_path, tmp_path / "home", builtins=["openai", "time"],
                              extra=[("house", house)])
    session = make_session(config, hooks, base_url=fake_provider.openai_url, model="house-1")
    events = await collect(session, "what time is it")
    assert len(fake_provider.requests) == 2
    assert house.booked == [("house-1", 7, False), ("house-1", 3, False)]
    assert events[-1].type == "done" and events[-1].cost_usd == 0.1
    assert hooks.session_spent(session) == (0.1, False)
    assert hooks.commands(config).get("cost") is None  # /cost is the budget plugin's


def test_without_a_cost_plugin_a_headless_turn_carries_no_cost(tmp_path, fake_provider):
    usage = {"input_tokens": 1000, "output_tokens": 100}
    fake_provider.script(Reply.text("hi", usage=usage), Reply.text("hi", usage=usage))
    home = tmp_path / "home"
    home.mkdir()
    args = ["-p", "hello", "--json"]
    env = dict(home=home, cwd=tmp_path, AGENT_PROVIDER="openai", AGENT_MODEL="gpt-5",
               AGENT_API_KEY="k", AGENT_BASE_URL=fake_provider.openai_url)
    priced = run_agent_here(args, **env)
    unpriced = run_agent_here([*args, "--disable", "budget"], **env)
    for proc in (priced, unpriced):
        assert proc.returncode == 0, proc.stderr
    done = [json.loads(line) for line in priced.stdout.splitlines()][-2]
    assert done["type"] == "done" and done["costUsd"] == 0.002250  # gpt-5 list prices
    done = [json.loads(line) for line in unpriced.stdout.splitlines()][-2]
    assert done["type"] == "done" and "costUsd" not in done

