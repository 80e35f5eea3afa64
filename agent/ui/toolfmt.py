"""How a tool call and its outcome read in the transcript, when the tool does not say.

Tools describe their own calls (``Tool.describe``: the detail lines and the approval
question); this module keeps only the generic fallback for tools that do not (plugin and MCP
tools): their first string argument, and the first line of their output.
"""

from __future__ import annotations

import json
from typing import Any

from agent.lib.visible import visible

FIRST = 68   # the first detail shares the line with the tool name
MORE = 90    # further detail lines
RESULT = 78


def clip(text: str, limit: int) -> str:
    """``text`` on one row of at most ``limit`` characters, hidden characters spelled out."""
    text = visible(text.replace("\t", "  "))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_line(text: Any) -> str:
    lines = str(text or "").splitlines()
    return lines[0] if lines else ""


def _get(args: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in args and args[name] not in (None, ""):
            return args[name]
    return None


def details(name: str, args: dict[str, Any], tool: Any = None) -> list[str]:
    """Detail lines for a call (possibly empty): the tool's own (``Tool.describe``), else
    its first string argument; the first is clipped to FIRST chars."""
    described = tool.description_of(args or {}) if tool is not None else None
    out = list(described.details) if described is not None else _generic(args or {})
    out = [str(d) for d in out if d]
    return [clip(d, FIRST if i == 0 else MORE) for i, d in enumerate(out)]


def question(name: str, args: dict[str, Any], tool: Any = None) -> str:
    """The approval dialog's title: the tool's own question, else ``allow <name>?``."""
    described = tool.description_of(args or {}) if tool is not None else None
    if described is not None and described.question:
        return visible(described.question)
    return f"allow {visible(name)}?"


def _generic(args: dict[str, Any]) -> list[str]:
    for value in args.values():
        if isinstance(value, str) and value.strip():
            return [_first_line(value)]
    if not args:
        return []
    return [json.dumps(args, ensure_ascii=False, default=str)]


def summary(name: str, output: str, *, is_error: bool = False, given: str | None = None) -> str:
    """The one-line outcome: the tool's own summary (``ToolResult.summary``), else the first
    line of the output."""
    if given:
        return clip(_first_line(given), RESULT)
    first = _first_line(output or "")
    if is_error:
        return clip(first or "failed", RESULT)
    return clip(first, RESULT) if first else "done"
