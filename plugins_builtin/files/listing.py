"""``glob`` and ``list_dir``: what is in the workspace, through the ignore-aware walker."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent import Effects, Tool, ToolContext, ToolError, ToolResult
from agent.lib.walk import walk_entries

from .common import arg, display_path, os_errors, resolve
from .globs import path_glob, static_prefix

GLOB_LIMIT = 200
LIST_DEPTH = 2
LIST_MAX_DEPTH = 6
LIST_CAP = 300


def relative_pattern(ctx: ToolContext, pattern: str) -> str:
    """A glob relative to the workspace; an absolute one must point inside it."""
    if pattern.startswith(("/", "~")):
        root = os.path.realpath(ctx.workspace)
        expanded = os.path.expanduser(pattern)
        if expanded == root:
            return ""
        if not expanded.startswith(root + "/"):
            raise ToolError(f"Path escapes workspace: {pattern}")
        pattern = expanded[len(root) + 1:]
    if ".." in pattern.split("/"):
        raise ToolError(f"Path escapes workspace: {pattern}")
    return pattern


def _start_dir(ctx: ToolContext, prefix: str) -> str | None:
    """The jailed walk start for a pattern's literal prefix; None when it does not exist."""
    if not prefix:
        return ""
    real = resolve(ctx, prefix)
    if not real.is_dir():
        return None
    return display_path(ctx, real)


async def run_glob(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = relative_pattern(ctx, args["pattern"])
    limit = arg(args, "limit", GLOB_LIMIT)
    matcher = path_glob(pattern)
    start = _start_dir(ctx, static_prefix(pattern))
    hits: list[str] = []
    more = False
    if start is not None:
        for entry in walk_entries(ctx.workspace, start=start,
                                  include_ignored=bool(args.get("includeIgnored"))):
            if matcher.fullmatch(entry.path):
                if len(hits) == limit:
                    more = True
                    break
                hits.append(entry.path)
    if not hits:
        text = "No files matched."
        if "/" not in pattern and "**" not in pattern:
            text += (f" Patterns match the whole relative path: try **/{pattern} to look in "
                     "every directory.")
        return ToolResult(text, summary="No files matched.")
    out = "\n".join(hits)
    if more:
        out += f"\n... [limit {limit} reached; narrow the pattern or raise limit]"
    return ToolResult(out, summary=f"{len(hits)} paths")


GLOB = Tool(
    name="glob",
    description=(
        "Find files by glob pattern, e.g. `src/**/*.ts` or `**/test_*.py` (the pattern matches "
        "the whole path relative to the workspace; `{a,b}` alternatives work). Skips files "
        "ignored by .gitignore/.agentignore unless includeIgnored is set."),
    run=os_errors(run_glob),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "glob pattern"},
            "limit": {"type": "integer", "minimum": 1,
                      "description": f"most paths to return (default {GLOB_LIMIT})"},
            "includeIgnored": {"type": "boolean", "description": "also list ignored files"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    effects=lambda args: Effects(reads=(str(args.get("pattern", "")),)),
    tool_set="core",
    read_only=True,
    prompt="find files by name; use **/ to search every directory.",
)


def human_size(size: int) -> str:
    """``512B``, ``3K`` (rounded) or ``1.5M``."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)}K"
    return f"{size / (1024 * 1024):.1f}M"


def _size_of(path: Path, is_link: bool) -> str:
    try:
        if is_link:
            return "symlink"
        return human_size(path.stat().st_size)
    except OSError:
        return "?"


async def run_list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = arg(args, "path", ".")
    depth = arg(args, "depth", LIST_DEPTH)
    real = resolve(ctx, path)
    if not real.exists():
        raise ToolError(f"No such directory: {path}")
    if not real.is_dir():
        raise ToolError(f"Not a directory: {path}")
    rel = display_path(ctx, real)
    start = "" if rel == "." else rel
    found = list(walk_entries(ctx.workspace, start=start, include_dirs=True, max_depth=depth,
                              include_ignored=bool(args.get("includeIgnored")),
                              max_count=LIST_CAP + 1))
    label = "." if not start else f"{start}/"
    if not found:
        name = "The workspace" if not start else start
        return ToolResult(f"{name} is empty (or everything in it is ignored).",
                          summary="empty")
    capped = len(found) > LIST_CAP
    found = sorted(found[:LIST_CAP], key=lambda e: e.path.split("/"))
    root = Path(os.path.realpath(ctx.workspace))
    lines = [label]
    for entry in found:
        name = entry.path.rsplit("/", 1)[-1]
        indent = "  " * entry.depth
        if entry.is_dir:
            lines.append(f"{indent}{name}/")
        else:
            lines.append(f"{indent}{name}  {_size_of(root / entry.path, entry.is_symlink)}")
    if capped:
        lines.append(f"... [{LIST_CAP}-entry limit reached]")
    return ToolResult("\n".join(lines), summary=f"{len(found)} entries")


LIST_DIR = Tool(
    name="list_dir",
    description=(
        "Show a directory as an indented tree (directories end with `/`, files show their "
        f"size), {LIST_DEPTH} levels deep by default (1-{LIST_MAX_DEPTH}). Skips ignored "
        "files unless includeIgnored is set."),
    run=os_errors(run_list_dir),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "directory (default: the workspace root)"},
            "depth": {"type": "integer", "minimum": 1, "maximum": LIST_MAX_DEPTH,
                      "description": f"levels to show (default {LIST_DEPTH})"},
            "includeIgnored": {"type": "boolean", "description": "also list ignored files"},
        },
        "additionalProperties": False,
    },
    effects=lambda args: Effects(reads=(str(args.get("path") or "."),)),
    tool_set="edit-plus",
    read_only=True,
    prompt="get the lay of the land before reading files.",
)
