"""The transcript as styled terminal text: what is left in the scrollback.

On exit the full-screen UI writes the transcript to the normal screen, the same blocks it
showed, drawn at the same width with the same colours (SGR sequences from the palette), so the
conversation stays in the terminal's scrollback where it can be searched and copied.  Inline
mode (``--inline``, ``ui.alt_screen = false``) prints each block the same way as soon as it is
final, above the prompt, while the session runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger("agent.ui")

RESET = "\x1b[0m"


def escaper(screen: Any) -> Callable[[Any], str]:
    """attr -> SGR escape, through the screen's palette (no colours without a screen)."""
    convert = getattr(screen, "_attr_to_escape", None)  # urwid's own, with its palette
    if convert is None:
        return lambda attr: ""

    def escape(attr: Any) -> str:
        try:
            return str(convert(attr))
        except Exception:  # an attribute the palette does not know: plain text
            return ""
    return escape


def canvas_lines(canvas: Any, escape: Callable[[Any], str]) -> list[str]:
    """A canvas's rows as text with SGR runs, trailing blanks dropped."""
    out: list[str] = []
    for row in canvas.content():
        runs = [(attr, run.decode("utf-8", "replace")) for attr, _cs, run in row]
        while runs and not runs[-1][1].strip():
            runs.pop()
        if runs:
            attr, text = runs[-1]
            runs[-1] = (attr, text.rstrip())
        line = "".join(escape(attr) + text for attr, text in runs)
        out.append(line + (RESET if any(escape(a) for a, _ in runs) else ""))
    return out


def entry_lines(entries: Iterable[Any], width: int, escape: Callable[[Any], str]) -> list[str]:
    """The rows of transcript entries drawn at ``width``."""
    out: list[str] = []
    for entry in entries:
        try:
            out.extend(canvas_lines(entry.render((width,)), escape))
        except Exception:
            log.warning("could not print a %s block", entry.block.kind, exc_info=True)
    return out


#: rows written on exit at most: more than terminals keep (tmux 2,000, xterm 1,024 by default)
EXIT_ROWS = 3_000


def tail_lines(entries: list[Any], width: int, escape: Callable[[Any], str],
               limit: int = EXIT_ROWS) -> list[str]:
    """The rows of the last entries, at most ``limit`` of them (whole entries, newest last),
    with a first line saying how many earlier blocks were left out."""
    picked: list[list[str]] = []
    rows = 0
    for entry in reversed(entries):
        lines = entry_lines([entry], width, escape)
        if picked and rows + len(lines) > limit:
            break
        picked.append(lines)
        rows += len(lines)
    out = [line for lines in reversed(picked) for line in lines]
    skipped = len(entries) - len(picked)
    if skipped:
        out.insert(0, f"... {skipped} earlier blocks not shown here (the session keeps them)")
    return out


def is_final(entry: Any) -> bool:
    """True when an entry will not change any more (safe to print for good)."""
    block = entry.block
    if not block.final:
        return False
    return not (block.kind == "tool" and block.data.get("status", "running") == "running")
