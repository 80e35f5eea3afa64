"""Colour palettes as data, one table for every colour depth.

Each style names its 16-colour foreground/background and a high-colour pair written as
``#rrggbb``: urwid sends those unchanged to a truecolor terminal and maps them to the nearest
of 256 colours otherwise.  Backgrounds stay ``default`` nearly everywhere, so the palette reads
on dark and light terminals alike, and copied text carries no odd padding.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# name: (fg16, bg16, fg_high, bg_high, mono)
STYLES: dict[str, tuple[str, str, str, str, str]] = {
    "default": ("default", "default", "default", "default", ""),
    "user": ("light cyan", "default", "#5fd7ff", "default", "bold"),
    "dim": ("dark gray", "default", "#8a8a8a", "default", ""),
    "info": ("dark gray", "default", "#8a8a8a", "default", ""),
    "notice": ("yellow", "default", "#d7af5f", "default", ""),
    "error": ("light red", "default", "#ff5f5f", "default", "bold"),
    "tool": ("light magenta", "default", "#d787ff", "default", "bold"),
    "tool-detail": ("default", "default", "#bcbcbc", "default", ""),
    "tool-result": ("dark gray", "default", "#8a8a8a", "default", ""),
    "tool-error": ("light red", "default", "#ff5f5f", "default", ""),
    "origin": ("yellow", "default", "#ffaf00", "default", "bold"),
    "reasoning": ("dark gray,italics", "default", "#9e9e9e,italics", "default", "italics"),
    "working": ("light blue", "default", "#5fafff", "default", ""),
    "live": ("dark gray", "default", "#9e9e9e", "default", ""),
    "queue": ("dark cyan", "default", "#5fafaf", "default", ""),
    "placeholder": ("dark gray", "default", "#6c6c6c", "default", ""),
    "caption": ("light cyan", "default", "#5fd7ff", "default", "bold"),
    "status": ("light gray", "default", "#a8a8a8", "default", ""),
    "status-key": ("white", "default", "#e4e4e4", "default", "bold"),
    "status-warn": ("yellow", "default", "#ffaf00", "default", "bold"),
    "status-bad": ("light red", "default", "#ff5f5f", "default", "bold"),
    "menu": ("default", "default", "default", "default", ""),
    "menu-focus": ("black", "light cyan", "#000000", "#5fd7ff", "standout"),
    "menu-hint": ("dark gray", "default", "#8a8a8a", "default", ""),
    "panel": ("light blue", "default", "#5f87d7", "default", ""),
    "panel-title": ("light blue,bold", "default", "#87afff,bold", "default", "bold"),
    "approval": ("yellow", "default", "#ffaf00", "default", ""),
    "approval-title": ("yellow,bold", "default", "#ffaf00,bold", "default", "bold"),
    "ask": ("yellow", "default", "#ffd75f", "default", ""),
    "key": ("white,bold", "default", "#ffffff,bold", "default", "bold"),
    "diff-add": ("light green", "default", "#87d787", "default", ""),
    "diff-del": ("light red", "default", "#ff8787", "default", ""),
    "diff-ctx": ("dark gray", "default", "#8a8a8a", "default", ""),
    "diff-num": ("dark gray", "default", "#6c6c6c", "default", ""),
    "diff-head": ("white,bold", "default", "#e4e4e4,bold", "default", "bold"),
    "diff-gap": ("dark gray", "default", "#6c6c6c", "default", ""),
    "diff-rejected": ("dark gray,strikethrough", "default", "#6c6c6c,strikethrough", "default",
                      "strikethrough"),
    "diff-rejected-mark": ("light red", "default", "#ff8787", "default", "bold"),
    "diff-sel": ("black", "yellow", "#000000", "#ffaf00", "standout"),
    # the task list and the subagents in the live area
    "todo": ("default", "default", "default", "default", ""),
    "todo-title": ("white,bold", "default", "#e4e4e4,bold", "default", "bold"),
    "todo-bar": ("light green", "default", "#87d787", "default", "bold"),
    "todo-rest": ("dark gray", "default", "#585858", "default", ""),
    "todo-active": ("light cyan", "default", "#5fd7ff", "default", "bold"),
    "todo-done": ("light green,strikethrough", "default", "#87af87,strikethrough", "default",
                  "strikethrough"),
    "todo-blocked": ("light red", "default", "#ff5f5f", "default", "bold"),
    "sub-explore": ("light cyan", "default", "#5fd7ff", "default", "bold"),
    "sub-review": ("light blue", "default", "#5f87ff", "default", "bold"),
    "sub-worker": ("yellow", "default", "#ffaf00", "default", "bold"),
    "sub-done": ("light green", "default", "#87d787", "default", "bold"),
    "sub-failed": ("light red", "default", "#ff5f5f", "default", "bold"),
    "md-h1": ("light cyan,bold", "default", "#5fd7ff,bold", "default", "bold"),
    "md-h2": ("light blue,bold", "default", "#87afff,bold", "default", "bold"),
    "md-h3": ("light gray,bold", "default", "#bcbcbc,bold", "default", "bold"),
    "md-bold": ("default,bold", "default", "default,bold", "default", "bold"),
    "md-italic": ("default,italics", "default", "default,italics", "default", "italics"),
    "md-strike": ("default,strikethrough", "default", "default,strikethrough", "default",
                  "strikethrough"),
    "md-code": ("yellow", "default", "#ffd787", "default", ""),
    "md-codeblock": ("light green", "default", "#afd7af", "default", ""),
    "md-fence": ("dark gray", "default", "#585858", "default", ""),
    "md-link": ("light blue,underline", "default", "#5fafff,underline", "default", "underline"),
    "md-quote": ("dark gray,italics", "default", "#9e9e9e,italics", "default", "italics"),
    "md-done": ("dark gray,strikethrough", "default", "#6c6c6c,strikethrough", "default",
                "strikethrough"),
    "md-bullet": ("light cyan", "default", "#5fafd7", "default", ""),
    "md-rule": ("dark gray", "default", "#585858", "default", ""),
    # Pygments token classes (the markdown plugin maps tokens to these names)
    "pyg-keyword": ("light magenta", "default", "#d787d7", "default", "bold"),
    "pyg-string": ("light green", "default", "#afd787", "default", ""),
    "pyg-comment": ("dark gray,italics", "default", "#808080,italics", "default", ""),
    "pyg-number": ("light cyan", "default", "#87d7d7", "default", ""),
    "pyg-name": ("light gray", "default", "#d0d0d0", "default", ""),
    "pyg-function": ("light blue", "default", "#87afff", "default", ""),
    "pyg-class": ("yellow", "default", "#ffd75f", "default", "bold"),
    "pyg-builtin": ("dark cyan", "default", "#5fafaf", "default", ""),
    "pyg-operator": ("light gray", "default", "#bcbcbc", "default", ""),
    "pyg-error": ("light red", "default", "#ff5f5f", "default", ""),
}


def color_depth(env: Mapping[str, str] | None = None, setting: str | None = None) -> int:
    """How many colours to use: the ``colors`` setting wins, else the environment decides."""
    if setting and setting != "auto":
        return {"16": 16, "256": 256, "truecolor": 2**24, "mono": 1}.get(setting, 256)
    env = os.environ if env is None else env
    if env.get("NO_COLOR"):
        return 1
    if env.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return 2**24
    term = env.get("TERM", "")
    if "256" in term or env.get("COLORTERM") or term.startswith(("tmux", "screen", "xterm-kitty")):
        return 256
    return 16


def palette(depth: int = 256) -> list[tuple[str, str, str, str, str, str]]:
    """urwid palette entries for ``depth`` colours (1, 16, 256 or 2**24)."""
    entries = []
    for name, (fg16, bg16, fg_high, bg_high, mono) in STYLES.items():
        if depth <= 16:
            # Without high colours urwid uses the 16-colour pair (and mono on monochrome).
            entries.append((name, fg16, bg16, mono, fg16, bg16))
        else:
            entries.append((name, fg16, bg16, mono, fg_high, bg_high))
    return entries
