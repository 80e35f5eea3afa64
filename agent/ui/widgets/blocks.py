"""Turning transcript blocks into widgets: plugins first (``agent_render_block``), then the
plain renderers here.

Block kinds the app produces: ``user``, ``markdown`` (the assistant's answer), ``tool``,
``info``, ``notice``, ``error``, ``diff`` (an approval's or an applied edit's), ``reasoning``
(a step's thinking, folded), ``turn`` (the per-turn usage line) and ``header``.  A block with
``data["foldable"]`` shows one line until ``ctrl o`` expands it (``data["expanded"]``).
Renderers should return width-adaptive widgets (``urwid.Text`` wraps itself), so a resize never
re-renders the transcript; ``width`` is a hint for renderers that draw rules or boxes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import urwid

from agent.contract.blocks import Block
from agent.lib.visible import visible

log = logging.getLogger("agent.ui")


@dataclass
class Theme:
    """What renderers get as ``theme``: the colour depth and the palette's style names."""

    depth: int
    styles: frozenset[str]

    def has(self, name: str) -> bool:
        return name in self.styles


class Renderer:
    """Renders blocks through the hook, falling back to the plain renderers."""

    def __init__(self, hooks: Any, theme: Theme) -> None:
        self.hooks = hooks
        self.theme = theme
        self.failed: set[str] = set()  # kinds whose plugin renderer raised (reported once)

    def render(self, block: Block, width: int) -> urwid.Widget:
        if self.hooks is not None and block.kind not in self.failed:
            try:
                widget = self.hooks.render_block(block, width, self.theme)
            except Exception as exc:  # a broken renderer must not break the transcript
                log.warning("renderer for %s blocks failed", block.kind, exc_info=exc)
                self.failed.add(block.kind)
                widget = None
            if widget is not None:
                return widget
        return plain(block)


def _lines(prefix: str, text: str, style: str, indent: str = "  ") -> list[Any]:
    out: list[Any] = []
    for i, line in enumerate(text.split("\n")):
        if i:
            out.append("\n")
        out.append((style, (prefix if i == 0 else indent) + line))
    return out


def tool_markup(data: dict[str, Any]) -> list[Any]:
    """``* name  detail`` + indented details + ``-> summary`` / ``x error``."""
    status = data.get("status", "running")
    failed = status in ("error", "denied")
    head_style = "tool-error" if failed else "tool"
    mark = "x" if failed else "*"
    details = list(data.get("details") or [])
    markup: list[Any] = [(head_style, f"{mark} {data.get('name', '?')}")]
    origin = data.get("origin") or ""
    if origin and origin != "model":
        markup.append(("origin", f" [{origin}]"))
    if details:
        markup.append(("tool-detail", "  " + details[0]))
    for more in details[1:]:
        markup.append(("tool-detail", "\n    " + more))
    summary = data.get("summary")
    if summary:
        if status == "error":
            markup.append(("tool-error", "\n  x " + summary))
        elif status == "denied":
            markup.append(("tool-error", "\n  x denied: " + summary))
        else:
            markup.append(("tool-result", "\n  -> " + summary))
    tail = data.get("output_tail") or []
    if data.get("output_cut"):
        markup.append(("tool-detail", f"\n  | ... {data['output_cut']} earlier lines"))
    for line in tail:
        markup.append(("tool-detail", "\n  | " + visible(line)))
    return markup


def plain(block: Block) -> urwid.Widget:
    """The core's renderers: readable without any plugin."""
    kind, text = block.kind, block.text
    if kind == "user":
        return urwid.Text(_lines("> ", text, "user"))
    if kind == "tool":
        return urwid.Text(tool_markup(block.data))
    if kind == "error":
        return urwid.Text(_lines("error: ", text, "error"))
    if kind == "notice":
        return urwid.Text(("notice", text))
    if kind in ("info", "turn"):
        return urwid.Text(("info", text))
    if kind == "header":
        return urwid.Text([("caption", text.split("\n", 1)[0])]
                          + ([("dim", "\n" + text.split("\n", 1)[1])] if "\n" in text else []))
    if kind == "diff":
        return plain_diff(block)
    if kind == "reasoning":
        return urwid.Text(("reasoning", text))
    return urwid.Text(text)


def plain_diff(block: Block) -> urwid.Widget:
    """Diff rows without colours beyond the basics (the ``diff`` plugin draws the real one)."""
    ds = block.data.get("diff")
    if ds is None:
        return urwid.Text(block.text)
    rejected = set(block.data.get("rejected") or ())
    out: list[Any] = []
    for row in ds.rows(rejected):
        sign = {"add": "+", "del": "-", "ctx": " "}.get(row.kind, "")
        style = {"add": "diff-add", "del": "diff-del", "head": "diff-head"}.get(row.kind,
                                                                              "diff-ctx")
        if row.hunk in rejected and row.kind in ("add", "del"):
            style = "diff-rejected"
        num = f"{row.number:>4} " if row.number is not None else ""
        out.append((style, f"{num}{sign} {row.text}" if sign else row.text))
        out.append("\n")
    return urwid.Text(out[:-1] or "")
