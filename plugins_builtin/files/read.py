"""``read_file`` and ``read_many_files``: numbered text, windows, binary refusal."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent import Effects, Tool, ToolContext, ToolError, ToolResult
from agent.contain.secrets import policy_for

from . import seen
from .common import READ_LIMIT, arg, os_errors, resolve_readable
from .window import Window, read_window

MAX_MANY = 20

_WINDOW_PROPS: dict[str, Any] = {
    "offset": {"type": "integer", "minimum": 1,
               "description": "1-based line to start at (default 1)"},
    "limit": {"type": "integer", "minimum": 1,
              "description": f"how many lines to return (default {READ_LIMIT})"},
}


def refuse_secret(ctx: ToolContext, path: str) -> None:
    """The secrets policy, applied by the tool itself: a second wall behind the ``secrets``
    guard, which holds even when that plugin is disabled."""
    verdict = policy_for(ctx.config, ctx.workspace).check(path) if isinstance(path, str) \
        else None
    if verdict is not None:
        raise ToolError(verdict.message("read"))


async def run_read_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = args["path"]
    refuse_secret(ctx, path)
    real = resolve_readable(ctx, path)
    window = read_window(real, path, arg(args, "offset", 1), arg(args, "limit", READ_LIMIT))
    note_seen(ctx, real, window)
    return ToolResult(window.body, summary=f"{window.count} lines")


def note_seen(ctx: ToolContext, real: Path, window: Window) -> None:
    """The model now knows what ``real`` holds: a later change is checked against it."""
    if window.data is not None:
        seen.record(ctx, real, window.data)
    else:
        seen.record_digest(ctx, real, window.digest, window.size)


READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file in the workspace. Returns its lines numbered `N: text` (1-based). "
        f"Use offset/limit to page through long files (default: the first {READ_LIMIT} lines)."),
    run=os_errors(run_read_file),
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "file path, relative to the "
                                                                  "workspace"},
                       **_WINDOW_PROPS},
        "required": ["path"],
        "additionalProperties": False,
    },
    effects=lambda args: Effects(reads=(str(args.get("path", "")),)),
    tool_set="core",
    read_only=True,
    prompt="read before you edit; page long files with offset/limit; line numbers are not part "
           "of the text.",
)


def _read_one(ctx: ToolContext, item: dict[str, Any]) -> str:
    path = item.get("path")
    try:
        refuse_secret(ctx, path)
        real = resolve_readable(ctx, path)
        window = read_window(real, path, arg(item, "offset", 1), arg(item, "limit", READ_LIMIT))
        note_seen(ctx, real, window)
        body = window.body
    except ToolError as exc:
        body = f"[unreadable: {exc}]"
    return f"===== {path} =====\n{body}"


async def run_read_many(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    items = args["files"]
    blocks = await asyncio.gather(*(asyncio.to_thread(_read_one, ctx, item) for item in items))
    bad = sum(1 for b in blocks if "\n[unreadable: " in b)
    summary = f"{len(items)} files" + (f", {bad} unreadable" if bad else "")
    return ToolResult("\n\n".join(blocks), summary=summary)


def _many_effects(args: dict[str, Any]) -> Effects:
    files = args.get("files")
    if not isinstance(files, list):
        return Effects(reads=())
    return Effects(reads=tuple(str(f.get("path", "")) for f in files if isinstance(f, dict)))


READ_MANY_FILES = Tool(
    name="read_many_files",
    description=(
        f"Read up to {MAX_MANY} text files at once, each with its own optional offset/limit. "
        "Returns one block per file, in the order given, headed `===== path =====`; a file "
        "that cannot be read gets an `[unreadable: reason]` block instead of failing the call."),
    run=os_errors(run_read_many),
    parameters={
        "type": "object",
        "properties": {
            "files": {
                "type": "array", "minItems": 1, "maxItems": MAX_MANY,
                "items": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, **_WINDOW_PROPS},
                    "required": ["path"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["files"],
        "additionalProperties": False,
    },
    effects=_many_effects,
    tool_set="edit-plus",
    read_only=True,
    prompt="read several related files in one call instead of one read_file each.",
)
