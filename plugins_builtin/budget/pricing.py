"""What model requests cost, in US dollars, from a hand-entered price table.

Prices are USD per million tokens: ``input`` (uncached prompt tokens), ``output`` (answer and
reasoning tokens), ``cached_input`` (prompt tokens read from the provider's cache) and
``cache_write`` (Anthropic prompt-cache writes, 5-minute lifetime; the input price when absent).

Source and date (entered by hand on 2026-11-30, see :data:`PRICES_DATE`): Claude models from
Anthropic's pricing page (platform.claude.com/docs/en/about-claude/pricing); GPT-5.x models
from OpenAI's pricing page (openai.com/api/pricing) as published in mid-2026; older OpenAI
models (gpt-5, gpt-4.1, gpt-4o, o3, o4-mini) at their 2025 list prices; DeepSeek and xAI
figures carried over from the reference agent's table (2025) without re-checking.  Prices
change and this table does not follow them by itself: a stale figure mislabels spending, it
never changes what a provider bills.  Long-context surcharges, batch discounts, regional
multipliers and 1-hour cache writes are not modelled.

Lookup (:func:`price_for`): the model id is lower-cased, anything up to the last ``/`` is
dropped (``anthropic/claude-sonnet-4.5`` → ``claude-sonnet-4.5``), dots become dashes
(``claude-opus-4.5`` and ``claude-opus-4-5`` are the same model), and the longest table key
that is a prefix of what remains, ending at a word boundary, wins: dated ids
(``claude-sonnet-4-5-20250929``) and suffixes (``gpt-5-mini-2025-08-07``) resolve to their
family, while ``gpt-5-2025-08-07`` is not mistaken for ``gpt-5.2`` (``gpt-5-2`` followed by a
digit is no boundary).  No match → None: "unpriced".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.lib.money import format_usd

__all__ = ["PRICES", "PRICES_DATE", "Price", "cost", "format_usd", "normalise", "price_for"]

PRICES_DATE = "2026-11-30"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float
    cache_write: float | None = None


def _anthropic(inp: float, out: float) -> Price:
    # Anthropic: cache hits cost 0.1x input, 5-minute cache writes 1.25x input.
    return Price(inp, out, round(inp * 0.1, 6), round(inp * 1.25, 6))


PRICES: dict[str, Price] = {
    # Anthropic
    "claude-opus-5": _anthropic(5, 25),
    "claude-opus-4-5": _anthropic(5, 25),
    "claude-opus-4-6": _anthropic(5, 25),
    "claude-opus-4-7": _anthropic(5, 25),
    "claude-opus-4-8": _anthropic(5, 25),
    "claude-opus-4": _anthropic(15, 75),          # Opus 4 and 4.1
    "claude-sonnet-5": _anthropic(2, 10),
    "claude-sonnet-4": _anthropic(3, 15),         # Sonnet 4, 4.5, 4.6
    "claude-3-7-sonnet": _anthropic(3, 15),
    "claude-haiku-4": _anthropic(1, 5),           # Haiku 4.5
    "claude-3-5-haiku": _anthropic(0.8, 4),
    "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.30),
    # OpenAI
    "gpt-5-5": Price(5, 30, 0.5),
    "gpt-5-4": Price(2.5, 15, 0.25),
    "gpt-5-4-mini": Price(0.75, 4.5, 0.075),
    "gpt-5-4-nano": Price(0.2, 1.25, 0.02),
    "gpt-5-2": Price(1.75, 14, 0.175),
    "gpt-5-1": Price(1.25, 10, 0.125),
    "gpt-5": Price(1.25, 10, 0.125),
    "gpt-5-mini": Price(0.25, 2, 0.025),
    "gpt-5-nano": Price(0.05, 0.4, 0.005),
    "gpt-4-1": Price(2, 8, 0.5),
    "gpt-4-1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4-1-nano": Price(0.1, 0.4, 0.025),
    "gpt-4o": Price(2.5, 10, 1.25),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "o3": Price(2, 8, 0.5),
    "o3-mini": Price(1.1, 4.4, 0.55),
    "o4-mini": Price(1.1, 4.4, 0.275),
    # DeepSeek
    "deepseek-chat": Price(0.27, 1.1, 0.07),
    "deepseek-reasoner": Price(0.55, 2.19, 0.14),
    # xAI
    "grok-4": Price(3, 15, 0.75),
}


def normalise(model: str) -> str:
    """The id as the table spells it: lower case, no vendor path, dots as dashes."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.replace(".", "-")


def price_for(model: str | None) -> Price | None:
    """The price of ``model`` by longest-prefix match, or None when unpriced."""
    if not model:
        return None
    name = normalise(model)
    best = ""
    for key in PRICES:
        if len(key) > len(best) and name.startswith(key) and (
                len(name) == len(key) or not name[len(key)].isalnum()):
            best = key
    return PRICES[best] if best else None


def cost(model: str | None, usage: Any) -> float | None:
    """USD for ``usage`` (an :class:`agent.contract.providers.Usage` or anything with its token
    attributes), or None when the model is unpriced.

    ``input_tokens`` counts every prompt token, cached reads and cache writes included (how
    the providers are normalised), so the uncached part is what remains after those two.
    """
    price = price_for(model)
    if price is None:
        return None
    inp = int(getattr(usage, "input_tokens", 0) or 0)
    out = int(getattr(usage, "output_tokens", 0) or 0)
    cached = int(getattr(usage, "cached_tokens", 0) or 0)
    written = int(getattr(usage, "cache_write_tokens", 0) or 0)
    uncached = max(0, inp - cached - written)
    write_price = price.input if price.cache_write is None else price.cache_write
    total = (uncached * price.input + cached * price.cached_input + written * write_price
             + out * price.output)
    return total / 1_000_000
