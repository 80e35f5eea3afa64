"""Pricing: longest-prefix lookup, cost arithmetic, formatting, and the turn cost on the wire."""

from __future__ import annotations

import json

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent.contract.providers import Usage
from plugins_builtin.budget.pricing import PRICES, Price, cost, format_usd, normalise, price_for


def test_longest_prefix_wins():
    assert price_for("gpt-5-mini-2025-08-07") == PRICES["gpt-5-mini"]
    assert price_for("gpt-5-2025-08-07") == PRICES["gpt-5"]
    assert price_for("gpt-4o-mini") == PRICES["gpt-4o-mini"]
    assert price_for("claude-opus-4-1-20250805") == Price(15, 75, 1.5, 18.75)
    assert price_for("claude-opus-4-5-20251101").input == 5
    assert price_for("gpt-5.2-2025-12-11") == PRICES["gpt-5-2"]
    assert price_for("gpt-5:latest") == PRICES["gpt-5"]


def test_a_prefix_must_end_at_a_word_boundary():
    # "gpt-5-2" (gpt-5.2) is a character prefix of "gpt-5-2025..." but not the model.
    assert price_for("gpt-5-2025-08-07") == PRICES["gpt-5"]
    assert price_for("gpt-4o1") is None


def test_vendor_prefix_case_and_dots_are_ignored():
    assert price_for("anthropic/claude-sonnet-4.5") == PRICES["claude-sonnet-4"]
    assert price_for("openai/GPT-4o") == PRICES["gpt-4o"]
    assert price_for("anthropic/claude-opus-4.5").output == 25
    assert price_for("openrouter/openai/gpt-5.4-mini") == PRICES["gpt-5-4-mini"]


def test_unknown_models_are_unpriced():
    assert price_for("llama-3.3-70b") is None
    assert price_for("") is None and price_for(None) is None
    assert cost("llama-3.3-70b", Usage(input_tokens=4210, output_tokens=88)) is None


def test_table_keys_are_in_lookup_form_and_sane():
    for key, price in PRICES.items():
        assert key == normalise(key), key  # a key a lookup could never reach would be dead
        assert 0 < price.cached_input <= price.input < price.output, key


def test_cost_splits_cached_reads_and_cache_writes_out_of_the_input():
    # claude-sonnet-4: 3 in, 15 out, 0.30 cache read, 3.75 cache write (per million)
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_tokens=600_000,
                  cache_write_tokens=100_000)
    expected = 300_000 * 3 + 600_000 * 0.3 + 100_000 * 3.75 + 100_000 * 15
    assert cost("claude-sonnet-4-5", usage) == pytest.approx(expected / 1e6)
    # OpenAI has no cache-write charge: cached tokens at the cached rate, the rest at input.
    usage = Usage(input_tokens=2000, output_tokens=500, cached_tokens=1000)
    assert cost("gpt-5", usage) == pytest.approx((1000 * 1.25 + 1000 * 0.125 + 500 * 10) / 1e6)
    assert cost("gpt-5", Usage()) == 0.0


@pytest.mark.parametrize("amount,text", [
    (0, "$0.00"), (0.0, "$0.00"), (0.00012345, "$0.0001"), (0.0099, "$0.0099"),
    (0.01, "$0.01"), (1.234, "$1.23"), (12.5, "$12.50"), (None, "unpriced"),
])
def test_format_usd(amount, text):
    assert format_usd(amount) == text


@pytest.mark.parametrize("model,expected", [
    ("gpt-5", (1000 * 1.25 + 200 * 10) / 1e6),
    ("my-local-model", None),
])
def test_the_done_event_carries_the_turn_cost(tmp_path, fake_provider, model, expected):
    fake_provider.script(Reply.text("hi", usage={"input_tokens": 1000, "output_tokens": 200}))
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = run_agent_here(["-p", "hello", "--json", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", model], home=tmp_path / "home",
                          cwd=ws, OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    done = [json.loads(line) for line in proc.stdout.splitlines()][-2]
    assert done["type"] == "done" and done["inputTokens"] == 1000
    if expected is None:
        assert "costUsd" not in done
    else:
        assert done["costUsd"] == pytest.approx(expected)
