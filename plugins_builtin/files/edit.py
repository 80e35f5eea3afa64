"""``write_file``, ``edit_file`` and ``multi_edit``: whole-file writes and exact replacements.

Each tool reads, changes and writes without awaiting in between, so calls running in the same
batch never interleave their read-modify-write cycles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent import Effects, Tool, ToolContext, ToolError, ToolResult

from .common import (
    binary_message,
    decode_for_edit,
    file_problem,
    is_binary,
    load_bytes,
    os_errors,
    resolve,
    resolve_new_file,
    write_text,
)


def _path_effects(args: dict[str, Any]) -> Effects:
    return Effects(writes=(str(args.get("path", "")),))


def _line_count(text: str) -> int:
    return len(text.splitlines())


def collapse_warning(old: str, new: str) -> tuple[int, int] | None:
    """(old lines, new lines) when a rewrite looks like it lost its newlines, else None.

    Flagged when the old file was non-empty, the new text is 0.5-1.5 times its size, and has
    fewer than half its lines: the usual sign of content sent with its line breaks collapsed.
    """
    if not old:
        return None
    ratio = len(new) / len(old)
    old_lines, new_lines = _line_count(old), _line_count(new)
    if 0.5 <= ratio <= 1.5 and new_lines < old_lines / 2:
        return old_lines, new_lines
    return None


async def run_write_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path, content = args["path"], args["content"]
    real = resolve_new_file(ctx, path)
    old = ""
    if file_problem(real) is None:
        try:
            data = real.read_bytes()
        except OSError:
            data = b""
        old = "" if is_binary(data) else data.decode("utf-8", errors="replace")
    write_text(real, path, content)
    collapsed = collapse_warning(old, content)
    if collapsed:
        before, after = collapsed
        return ToolResult(
            f"Wrote {len(content)} chars to {path}, but it collapsed {before} lines into "
            f"{after}: the line breaks or indentation were probably lost. If that was not "
            "intended, write the file again with its original newlines and indentation.",
            summary=f"collapsed {before} lines into {after}")
    return ToolResult(f"Wrote {len(content)} chars to {path}",
                      summary=f"{_line_count(content)} lines, {len(content)} chars")


WRITE_FILE = Tool(
    name="write_file",
    description=("Create a file or replace its whole content; parent directories are created. "
                 "Prefer edit_file for changes to an existing file."),
    run=os_errors(run_write_file),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, relative to the workspace"},
            "content": {"type": "string", "description": "the complete new content"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    effects=_path_effects,
    tool_set="core",
    prompt="only for new files or full rewrites; send the complete content with real newlines.",
)


def _load_for_edit(ctx: ToolContext, path: str) -> tuple[Path, str]:
    real = resolve(ctx, path)
    problem = file_problem(real)
    if problem == "directory":
        raise ToolError(f"{path} is a directory, not a file.")
    data = load_bytes(real, path)
    if is_binary(data):
        raise ToolError(binary_message(path))
    return real, decode_for_edit(data)


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def replace_once(text: str, old: str, new: str, replace_all: bool, path: str,
                 prefix: str = "", suffix: str = "") -> tuple[str, int]:
    """Apply one exact replacement; returns (new text, occurrences replaced).

    Matching is exact.  Only when the text has CRLF line ends, the model's LF-only strings
    match nowhere, and their CRLF form does, is the CRLF form used: read_file hides the
    carriage returns, so the model cannot be expected to send them.
    """
    def fail(message: str) -> ToolError:
        if suffix and not message.endswith("."):
            message += "."
        return ToolError(prefix + message + suffix)

    if old == new:
        raise fail("oldString and newString are identical")
    if old == "":
        raise fail("oldString is empty; to create or overwrite a file use write_file")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        if text.count(_crlf(old)):
            old, new = _crlf(old), _crlf(new)
            count = text.count(old)
    if count == 0:
        raise fail(f"oldString not found in {path}")
    if count > 1 and not replace_all:
        raise fail(f"oldString appears {count} times in {path}. Add surrounding context or "
                   "set replaceAll.")
    if replace_all:
        return text.replace(old, new), count
    return text.replace(old, new, 1), 1


async def run_edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = args["path"]
    old, new = args["oldString"], args["newString"]
    if old == new:
        raise ToolError("oldString and newString are identical")
    real, text = _load_for_edit(ctx, path)
    updated, count = replace_once(text, old, new, bool(args.get("replaceAll")), path)
    write_text(real, path, updated)
    return ToolResult(f"Replaced {count} occurrence(s) in {path}",
                      summary=f"replaced {count} occurrence(s)")


_EDIT_PROPS: dict[str, Any] = {
    "oldString": {"type": "string", "description": "exact text to find (whitespace included)"},
    "newString": {"type": "string", "description": "replacement text"},
    "replaceAll": {"type": "boolean",
                   "description": "replace every occurrence (default: oldString must be unique)"},
}

EDIT_FILE = Tool(
    name="edit_file",
    description=(
        "Replace exact text in a file. oldString must match the file exactly (whitespace and "
        "indentation included) and be unique unless replaceAll is set."),
    run=os_errors(run_edit_file),
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "file path, relative to "
                                                                  "the workspace"},
                       **_EDIT_PROPS},
        "required": ["path", "oldString", "newString"],
        "additionalProperties": False,
    },
    effects=_path_effects,
    tool_set="core",
    prompt="copy oldString exactly from read_file output (without the `N: ` prefixes); include "
           "enough context to be unique.",
)

NOTHING_APPLIED = " No edits were applied."


async def run_multi_edit(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path, edits = args["path"], args["edits"]
    for i, edit in enumerate(edits, start=1):
        if edit["oldString"] == edit["newString"]:
            raise ToolError(f"edit {i}: oldString and newString are identical.{NOTHING_APPLIED}")
    real, original = _load_for_edit(ctx, path)
    text = original
    counts = []
    for i, edit in enumerate(edits, start=1):
        text, count = replace_once(text, edit["oldString"], edit["newString"],
                                   bool(edit.get("replaceAll")), path,
                                   prefix=f"edit {i}: ", suffix=NOTHING_APPLIED)
        counts.append(count)
    if text == original:
        raise ToolError(f"No change to {path}: the edits cancel out.")
    write_text(real, path, text)
    detail = ", ".join(f"{c}x" for c in counts)
    return ToolResult(f"Applied {len(edits)} edit(s) to {path} ({detail})",
                      summary=f"applied {len(edits)} edit(s)")


MULTI_EDIT = Tool(
    name="multi_edit",
    description=(
        "Apply several exact replacements to one file, in order, each seeing the result of the "
        "previous one. All or nothing: if any edit fails, the file is left untouched."),
    run=os_errors(run_multi_edit),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, relative to the workspace"},
            "edits": {
                "type": "array", "minItems": 1,
                "items": {"type": "object", "properties": _EDIT_PROPS,
                          "required": ["oldString", "newString"],
                          "additionalProperties": False},
            },
        },
        "required": ["path", "edits"],
        "additionalProperties": False,
    },
    effects=_path_effects,
    tool_set="edit-plus",
    prompt="several changes to one file in one atomic call; each edit sees the previous ones.",
)
