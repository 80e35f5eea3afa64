"""``write_file``, ``edit_file`` and ``multi_edit``: whole-file writes and replacements.

Each tool reads, changes and writes without awaiting in between, so calls running in the same
batch never interleave their read-modify-write cycles.  Files keep their layout (BOM,
encoding, line ends; :mod:`.textfile`); replacements match exactly, then by the tolerances of
:mod:`.matching`, and a miss explains itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent import Effects, Tool, ToolContext, ToolError, ToolResult

from . import seen
from .common import file_problem, load_bytes, os_errors, resolve, resolve_new_file
from .matching import NotFound, find_text, near_miss
from .textfile import (
    EOL_NAMES,
    Layout,
    LineEndView,
    convention,
    decode,
    encode,
    strip_bom,
    to_lf,
    with_eol,
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


def _existing_layout(data: bytes | None, shown: str) -> tuple[str, Layout | None]:
    """(old text, layout) of a file's bytes ``data`` when it exists and is text; ("", None)
    when it is new or not text (it is then written as plain UTF-8)."""
    if data is None:
        return "", None
    try:
        return decode(data, shown, for_display=True)
    except ToolError:
        return "", None  # binary or undecodable: replaced whole, as UTF-8


def _replaceable(ctx: ToolContext, real: Path, shown: str) -> bytes | None:
    """The bytes ``write_file`` is about to replace (None for a new file), refused when the
    model never saw them or they changed since it did."""
    problem = file_problem(real)
    if problem == "directory":
        raise ToolError(f"{shown} is a directory, not a file.")
    if problem == "special":
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device).")
    if problem == "missing":
        return None
    data = seen.current_bytes(real)
    if data is not None and seen.last_seen(ctx, real) is None:
        raise ToolError(f"{shown} already exists and you have not read it in this session, so "
                        "it was not overwritten; nothing was written. Read it first (read_file)"
                        ", then write it, or use edit_file to change part of it.")
    seen.check_fresh(ctx, real, data, shown, "overwritten")
    return data


async def run_write_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path, content = args["path"], strip_bom(args["content"])
    real = resolve_new_file(ctx, path)
    before = _replaceable(ctx, real, path)
    old, layout = _existing_layout(before, path)
    eol, mixed = convention(content)
    note = ""
    if layout is not None and layout.eol is not None and eol is not None:
        # An existing file keeps its convention, whatever the model typed.
        content = with_eol(content, layout.eol)
        if eol != layout.eol or mixed:
            note = f" (line ends written as {EOL_NAMES[layout.eol]}, like the file)"
    elif mixed:
        # A new file gets one convention: the one most of its lines use.
        content = with_eol(content, eol)
        note = f" (mixed line ends made {EOL_NAMES[eol]})"
    layout = layout or Layout()
    seen.commit_checked(ctx, real, path, before, encode(content, layout, path), "overwritten")
    if layout.special:
        note += f" (kept as {layout.encoding_name()})"
    collapsed = collapse_warning(to_lf(old), to_lf(content))
    if collapsed:
        before, after = collapsed
        return ToolResult(
            f"Wrote {len(content)} chars to {path}{note}, but it collapsed {before} lines into "
            f"{after}: the line breaks or indentation were probably lost. If that was not "
            "intended, write the file again with its original newlines and indentation.",
            summary=f"collapsed {before} lines into {after}")
    return ToolResult(f"Wrote {len(content)} chars to {path}{note}",
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


def _load_for_edit(ctx: ToolContext, path: str) -> tuple[Path, bytes, str, Layout]:
    """(real path, bytes, text, layout) of the file to edit, refused when it changed since the
    model last saw it: its oldString may still match, but the model would be working from a
    view of the file that is no longer true."""
    real = resolve(ctx, path)
    problem = file_problem(real)
    if problem == "directory":
        raise ToolError(f"{path} is a directory, not a file.")
    data = load_bytes(real, path)
    seen.check_fresh(ctx, real, data, path, "edited")
    text, layout = decode(data, path)
    return real, data, text, layout


def replace_once(raw: str, layout: Layout, old: str, new: str, replace_all: bool, path: str,
                 prefix: str = "", suffix: str = "") -> tuple[str, int, str]:
    """Apply one replacement to the file text ``raw``; returns (new raw text, occurrences
    replaced, a note naming the tolerance used or "").

    The model's strings are matched against the text as read_file shows it (LF line ends,
    no BOM); the replacement goes back with the line ends of the lines it replaces.
    """
    def fail(message: str, hint: str = "") -> ToolError:
        if suffix and not message.endswith("."):
            message += "."
        return ToolError(prefix + message + suffix + (f"\n{hint}" if hint else ""))

    if old == new:
        raise fail("oldString and newString are identical")
    if old == "":
        raise fail("oldString is empty; to create or overwrite a file use write_file")
    view = LineEndView(raw, layout)
    cr = layout.eol == "\r"
    old_lf, new_lf = to_lf(strip_bom(old), cr), to_lf(strip_bom(new), cr)
    if old_lf == new_lf:
        raise fail(f"oldString and newString differ only in line ends, and {path} keeps its "
                   f"own ({layout.ends_name()}); to change a file's line ends use "
                   "bash")
    try:
        found = find_text(view.text, old_lf, new_lf, replace_all)
    except NotFound as miss:
        if miss.kind == "repeated":
            raise fail(f"oldString appears {miss.count} times in {path}. Add surrounding "
                       "context or set replaceAll.", f"It starts {miss.detail}.") from None
        lines = view.text.split("\n")
        ends = view.text.endswith("\n")
        if ends:
            lines.pop()
        body = old_lf[:-1].split("\n") if old_lf.endswith("\n") else old_lf.split("\n")
        hint = near_miss(lines, body, final_newline=ends, path=path)
        if miss.kind == "loose":
            raise fail(f"oldString not found exactly in {path}; {miss.detail}",
                       hint if "indentation" in miss.detail else "") from None
        raise fail(f"oldString not found in {path}", hint) from None
    note = ""
    if found.tolerance:
        note = f"matched ignoring {found.tolerance}"
        if found.note:
            note += f"; {found.note}"
    return view.replace(found.spans, layout.eol), len(found.spans), note


async def run_edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    path = args["path"]
    old, new = args["oldString"], args["newString"]
    if old == new:
        raise ToolError("oldString and newString are identical")
    real, data, text, layout = _load_for_edit(ctx, path)
    updated, count, note = replace_once(text, layout, old, new, bool(args.get("replaceAll")),
                                        path)
    seen.commit_checked(ctx, real, path, data, encode(updated, layout, path), "edited")
    return ToolResult(f"Replaced {count} occurrence(s) in {path}" + (f" ({note})" if note else ""),
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
    real, data, original, layout = _load_for_edit(ctx, path)
    text = original
    counts = []
    notes = []
    for i, edit in enumerate(edits, start=1):
        text, count, note = replace_once(text, layout, edit["oldString"], edit["newString"],
                                         bool(edit.get("replaceAll")), path,
                                         prefix=f"edit {i}: ", suffix=NOTHING_APPLIED)
        counts.append(count)
        if note:
            notes.append(f"edit {i} {note}")
    if text == original:
        raise ToolError(f"No change to {path}: the edits cancel out.")
    seen.commit_checked(ctx, real, path, data, encode(text, layout, path), "edited")
    detail = ", ".join(f"{c}x" for c in counts)
    tail = "".join(f"\n{note}" for note in notes)
    return ToolResult(f"Applied {len(edits)} edit(s) to {path} ({detail}){tail}",
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
