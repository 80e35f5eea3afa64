"""System prompt fragments and their assembly.

Plugins contribute :class:`Fragment` objects through ``agent_prompt_fragments``; the core
sorts them by ``(order, key)`` so the prompt is byte-stable across runs (which keeps provider
prompt caches warm), and re-assembles before every step so state changed by one step (a task
list, a loaded skill) is visible in the next.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Fragment:
    """A piece of the system prompt.

    ``key`` names it (a later fragment with the same key replaces an earlier one);
    ``order`` places it: 0-99 identity and rules, 100-199 tools, 200-299 project
    (instructions, memory), 300+ volatile state (task list).  Stable text first keeps the
    cacheable prefix long.
    """

    key: str
    text: str
    order: int = 100


def assemble(fragments: Iterable[Fragment]) -> str:
    """Join fragments into one prompt: deduplicated by key, sorted by (order, key)."""
    by_key: dict[str, Fragment] = {}
    for frag in fragments:
        if frag.text and frag.text.strip():
            by_key[frag.key] = frag
    ordered = sorted(by_key.values(), key=lambda f: (f.order, f.key))
    return "\n\n".join(f.text.strip() for f in ordered)
