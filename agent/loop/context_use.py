"""What fills the context window: the estimate ``/context`` shows.

The next request is split into the system prompt's fragments (instructions and memory on
lines of their own), the tool schemas offered and the conversation's messages, each
estimated at four characters a token (the same measure as the status bar's figure before a
provider reports one), against the window the agent compacts at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.loop.session import Session

#: characters a token, for the estimate
CHARS_PER_TOKEN = 4
#: the bar's width in cells
BAR_WIDTH = 40
#: the rows every breakdown has; the caller's own rows (prompt fragments it names) go between
#: the tool schemas and the messages
SYSTEM, TOOLS, MESSAGES = "system prompt", "tool schemas", "messages"


@dataclass(frozen=True)
class ContextUse:
    """Estimated tokens per part of the next request, and the window they share."""

    parts: dict[str, int]  # label -> tokens, in the breakdown's order
    window: int

    @property
    def used(self) -> int:
        return sum(self.parts.values())

    @property
    def free(self) -> int:
        return max(0, self.window - self.used)


def _tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _message_chars(message: Any) -> int:
    chars = 0
    for part in message.parts:
        chars += len(getattr(part, "text", "") or getattr(part, "output", "") or "")
        args = getattr(part, "arguments", None)
        if args:
            chars += len(json.dumps(args, default=str))
    return chars


def measure(session: Session, window: int,
            own_lines: dict[str, str] | None = None) -> ContextUse:
    """The breakdown of what ``session``'s next request would hold.  ``own_lines`` maps
    prompt fragment keys to a row of their own (``{"memory": "memory"}``); every other
    fragment counts as the system prompt."""
    own = dict(own_lines or {})
    chars = dict.fromkeys([SYSTEM, TOOLS, *dict.fromkeys(own.values()), MESSAGES], 0)
    for fragment in session.hooks.prompt_fragments(session):
        chars[own.get(fragment.key, SYSTEM)] += len(fragment.text)
    chars[TOOLS] = len(json.dumps([t.spec() for t in session.tools_for_step()], default=str))
    chars[MESSAGES] = sum(_message_chars(m) for m in session.messages)
    return ContextUse({name: _tokens(n) for name, n in chars.items()}, max(1, int(window)))


def marks(use: ContextUse) -> dict[str, str]:
    """The cell each row fills the bar with: its first letter not taken yet (upper case,
    then lower case), so the legend can name it."""
    taken: dict[str, str] = {}
    for name in use.parts:
        letters = [c for c in name if c.isalpha()]
        options = [c.upper() for c in letters] + [c.lower() for c in letters] + ["#"]
        taken[name] = next(c for c in options if c not in taken.values() or c == "#")
    return taken


def bar(use: ContextUse, width: int = BAR_WIDTH) -> str:
    """``[SSTTTIm.......]``: each part's share of the window in cells (at least one for a
    part that is there), free cells as dots."""
    cells: list[str] = []
    for name, mark in marks(use).items():
        tokens = use.parts[name]
        if tokens:
            cells += [mark] * max(1, round(tokens * width / use.window))
    cells = cells[:width]
    return "[" + "".join(cells) + "." * (width - len(cells)) + "]"


def report(use: ContextUse) -> str:
    """The breakdown as text: the bar, then a line per part with tokens and percent."""
    def line(label: str, tokens: int, mark: str) -> str:
        pct = tokens * 100 / use.window
        return f"  {mark} {label:<14}{tokens:>9,} tokens  {pct:5.1f}%"

    lines = [f"Context window: ~{use.used:,} of {use.window:,} tokens used "
             f"({use.used * 100 // use.window}%), estimated at {CHARS_PER_TOKEN} characters "
             "a token", "  " + bar(use)]
    lines += [line(name, use.parts[name], mark) for name, mark in marks(use).items()]
    lines.append(line("free", use.free, "."))
    return "\n".join(lines)
