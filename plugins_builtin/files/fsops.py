"""``move_file`` and ``delete_file``.  Deleting moves the file into the session's trash."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent import AtomicWriteError, Effects, Tool, ToolContext, ToolError, ToolResult, atomic_move

from . import seen, trash
from .common import (
    display_path,
    os_errors,
    os_message,
    resolve_entry,
    resolve_new_file,
)


def session_id(ctx: ToolContext) -> str | None:
    return getattr(ctx.session, "id", None) if ctx.session is not None else None


async def run_move_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    src_arg, dst_arg = args["from"], args["to"]
    src = resolve_entry(ctx, src_arg)
    resolve_new_file(ctx, dst_arg)
    dst = resolve_entry(ctx, dst_arg)
    if src == dst:
        raise ToolError("from and to are the same path")
    if not os.path.lexists(src):
        raise ToolError(f"No such file: {src_arg}")
    if src.is_dir() and not src.is_symlink():
        raise ToolError(f"{src_arg} is a directory; move_file moves one file at a time.")
    if os.path.lexists(dst):
        raise ToolError(f"{dst_arg} already exists. Delete it first or pick another name.")
    realsrc = os.path.realpath(src)
    try:
        # A rename; across filesystems a staged copy renamed into place, so a full disk
        # never leaves half a file at the target or loses the source.
        atomic_move(src, dst, shown=dst_arg, make_parents=True)
    except AtomicWriteError as exc:
        raise ToolError(f"Cannot move {src_arg} to {dst_arg}: {exc}") from None
    except OSError as exc:
        raise ToolError(f"Cannot move {src_arg} to {dst_arg}: {os_message(exc)}") from None
    seen.moved(ctx, Path(realsrc), dst)
    return ToolResult(f"Moved {src_arg} to {dst_arg}", summary=f"moved to {dst_arg}")


MOVE_FILE = Tool(
    name="move_file",
    description=("Rename or move one file inside the workspace, creating the target's "
                 "directories. Refuses to overwrite an existing file."),
    run=os_errors(run_move_file),
    parameters={
        "type": "object",
        "properties": {
            "from": {"type": "string", "description": "current path of the file"},
            "to": {"type": "string", "description": "new path (must not exist yet)"},
        },
        "required": ["from", "to"],
        "additionalProperties": False,
    },
    effects=lambda args: Effects(writes=(str(args.get("to", "")),),
                                 deletes=(str(args.get("from", "")),)),
    tool_set="edit-plus",
    prompt="rename or relocate a file instead of rewriting it.",
)


async def run_delete_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = args["path"]
    real = resolve_entry(ctx, path)
    if not os.path.lexists(real):
        raise ToolError(f"No such file: {path}")
    if real.is_dir() and not real.is_symlink():
        raise ToolError(f"{path} is a directory. Delete its files individually.")
    try:
        entry = trash.move_to_trash(ctx.state_dir, session_id(ctx), ctx.workspace, real,
                                    display_path(ctx, real))
    except OSError as exc:
        raise ToolError(f"Cannot delete {path}: {os_message(exc)}") from None
    seen.forget(ctx, real)
    return ToolResult(
        f"Deleted {path} ({entry.size} bytes). It is kept in the trash as {entry.id}; the "
        f"user can restore it with /trash restore {entry.id}.",
        summary=f"deleted ({entry.size} bytes)")


DELETE_FILE = Tool(
    name="delete_file",
    description=("Delete one file (not a directory). The file is moved to the session's "
                 "trash, from which the user can restore it."),
    run=os_errors(run_delete_file),
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "file to delete"}},
        "required": ["path"],
        "additionalProperties": False,
    },
    effects=lambda args: Effects(deletes=(str(args.get("path", "")),)),
    tool_set="edit-plus",
    prompt="delete one file at a time; never use it to empty a file (write_file does that).",
)
