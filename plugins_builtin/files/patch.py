"""``apply_patch``: validate every file operation first, then write all or nothing.

The patch is parsed by :mod:`.patch_parse` (Codex's format, leniently) and each Update's hunks
are matched by :mod:`.patch_apply` (exact first, then Codex's tolerances, each only when it
finds one place).  Files keep their BOM, encoding and line ends.  Deleted files, and files an
Add or a Move to replaces, go to the trash, like ``delete_file``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import (
    UNKNOWN_EFFECTS,
    AtomicWriteError,
    Effects,
    Staged,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    atomic_write,
)

from . import seen, trash
from .common import (
    display_path,
    file_problem,
    os_errors,
    os_message,
    resolve,
    resolve_entry,
    resolve_new_file,
)
from .fsops import session_id
from .patch_apply import apply_hunks
from .patch_parse import FileOp, PatchError, parse_patch, touched_paths
from .textfile import Layout, decode, encode, with_eol

NOTHING = " Nothing was written."


@dataclass
class _Planned:
    """One validated operation, ready to write."""

    op: FileOp
    source: Path  # the file as named (real path; the entry itself for deletes)
    target: Path | None = None  # where new content goes (None for a pure delete)
    content: str | None = None
    delete_source: bool = False
    layout: Layout = field(default_factory=Layout)
    notes: list[str] = field(default_factory=list)
    #: the bytes of the file this write replaces (an Add or a Move to over an existing file)
    replaced: bytes | None = None
    #: the bytes the change was based on: the target must still hold them when it is
    #: written (None: it must still not exist), and a moved source too
    based_on: bytes | None = None
    source_bytes: bytes | None = None


def _read_for_update(real: Path, shown: str) -> tuple[bytes, str, Layout]:
    problem = file_problem(real)
    reasons = {"missing": "no such file", "directory": "it is a directory",
               "special": "it is not a regular file", "large": "it is too large"}
    if problem is not None:
        raise ToolError(f"Cannot update {shown}: {reasons[problem]}.{NOTHING}")
    try:
        data = real.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot update {shown}: {os_message(exc)}.{NOTHING}") from None
    try:
        return (data, *decode(data, shown))
    except ToolError as exc:
        reason = "it is a binary file" if "binary file" in str(exc) else str(exc).rstrip(".")
        raise ToolError(f"Cannot update {shown}: {reason}.{NOTHING}") from None


def _replaced(real: Path, shown: str, verb: str) -> tuple[bytes, Layout] | None:
    """(bytes, layout) of the file an Add or a Move to is about to replace (None when there
    is none); refused when it is not a regular file."""
    if not os.path.lexists(real):
        return None
    problem = file_problem(real)
    if problem == "directory":
        raise ToolError(f"Cannot {verb} {shown}: it is a directory.{NOTHING}")
    if problem is not None:
        raise ToolError(f"Cannot {verb} {shown}: it is not a regular file.{NOTHING}")
    try:
        data = real.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot {verb} {shown}: {os_message(exc)}.{NOTHING}") from None
    try:
        return data, decode(data, shown)[1]
    except ToolError:
        return data, Layout()  # binary: replaced by plain UTF-8 text


def plan(ctx: ToolContext, ops: list[FileOp]) -> list[_Planned]:
    """Check every operation against the filesystem; nothing is written here."""
    claimed: dict[Path, str] = {}

    def claim(real: Path, shown: str) -> None:
        if real in claimed:
            raise ToolError(f"{shown} appears more than once in the patch (also as "
                            f"{claimed[real]}). Combine its changes.{NOTHING}")
        claimed[real] = shown

    planned: list[_Planned] = []
    for op in ops:
        if op.kind == "add":
            real = resolve_new_file(ctx, op.path)
            claim(real, op.path)
            old = _replaced(real, op.path, "add")
            layout = old[1] if old else Layout()
            body = "\n".join(op.add_lines) + "\n" if op.add_lines else ""
            planned.append(_Planned(op, real, real, with_eol(body, layout.eol), layout=layout,
                                    replaced=old[0] if old else None,
                                    based_on=old[0] if old else None))
        elif op.kind == "delete":
            resolve(ctx, op.path)  # the jail checks the target too
            entry = resolve_entry(ctx, op.path)
            claim(entry, op.path)
            if not os.path.lexists(entry):
                raise ToolError(f"Cannot delete {op.path}: no such file.{NOTHING}")
            if entry.is_dir() and not entry.is_symlink():
                raise ToolError(f"Cannot delete {op.path}: it is a directory.{NOTHING}")
            planned.append(_Planned(op, entry, None, None, delete_source=True))
        else:
            real = resolve(ctx, op.path)
            claim(real, op.path)
            data, text, layout = _read_for_update(real, op.path)
            seen.check_fresh(ctx, real, data, op.path, "updated")
            notes: list[str] = []
            content = text
            if op.hunks:
                content, notes = apply_hunks(text, layout, op.hunks, op.path)
            target = real
            replaced = None
            based_on: bytes | None = data
            if op.move_to is not None:
                target = resolve_new_file(ctx, op.move_to)
                if target == real:
                    raise ToolError(f"Cannot move {op.path} to {op.move_to}: that is the same "
                                    f"file.{NOTHING}")
                claim(target, op.move_to)
                old = _replaced(target, op.move_to, "move to")
                replaced = based_on = old[0] if old else None
            planned.append(_Planned(op, real, target, content, delete_source=op.move_to
                                    is not None, layout=layout, notes=notes,
                                    replaced=replaced, based_on=based_on, source_bytes=data))
    return planned


def _verify_all(planned: list[_Planned], staged: list[Staged]) -> None:
    """Under the directories' locks: every target and moved source still holds the bytes
    its change was based on."""
    writes = [item for item in planned if item.target is not None and item.content is not None]
    for item, each in zip(writes, staged, strict=True):
        seen.verify(each.target, item.based_on, seen.current_bytes(each.target),
                    item.op.move_to or item.op.path, "updated")
        if item.source_bytes is not None and item.source != item.target:
            seen.verify(item.source, item.source_bytes, seen.current_bytes(item.source),
                        item.op.path, "moved")


def _write_all(ctx: ToolContext, planned: list[_Planned]) -> None:
    """Write every new content, all or nothing.

    Every file is first staged whole beside its target (written and synced under a temporary
    name), so a full disk or a refused directory fails before any target changed.  Only then
    are the staged files renamed into place; if a rename fails (rare: staging proved the
    directory writable), the files already replaced are put back.
    """
    staged: list[Staged] = []
    try:
        for item in planned:
            if item.target is None or item.content is None:
                continue
            shown = item.op.move_to or item.op.path
            staged.append(Staged(item.target, encode(item.content, item.layout, shown),
                                 shown=shown, make_parents=True))
    except AtomicWriteError as exc:
        for each in staged:
            each.discard()
        raise ToolError(f"{exc}; no file of the patch was changed.") from None
    done: list[tuple[Path, bytes | None]] = []
    directories = [each.target.parent for each in staged]
    directories += [item.source.parent for item in planned if item.source_bytes is not None]
    try:
        with seen.directories_locked(directories, planned[0].op.path if planned else ""):
            try:
                _verify_all(planned, staged)
            except ToolError as exc:
                raise ToolError(f"{exc}\nNo file of the patch was changed.") from None
            for each in staged:
                before = each.target.read_bytes() if each.target.is_file() else None
                each.commit()
                done.append((each.target, before))
    except ToolError:
        for each in staged:
            each.discard()
        raise
    except (AtomicWriteError, OSError) as exc:
        for each in staged:
            each.discard()
        for path, data in reversed(done):
            try:
                if data is None:
                    path.unlink(missing_ok=True)
                else:
                    atomic_write(path, data)
            except OSError:
                pass
        raise ToolError(f"Writing failed ({exc}); every file was put back as it was.") from None
    for item in planned:
        if item.target is not None and item.content is not None:
            seen.record(ctx, item.target, encode(item.content, item.layout,
                                                 item.op.move_to or item.op.path))
        if item.delete_source:
            seen.forget(ctx, item.source)


async def run_apply_patch(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        ops = parse_patch(args["patch"])
    except PatchError as exc:
        raise ToolError(str(exc)) from None
    planned = plan(ctx, ops)
    _write_all(ctx, planned)
    report: list[str] = []
    problems: list[str] = []
    for item in planned:  # writes are done; now the deletions
        op = item.op
        shown = op.move_to or op.path
        if item.replaced is not None and item.target is not None:
            try:
                entry = trash.keep_copy(ctx.state_dir, session_id(ctx), ctx.workspace,
                                        item.target, display_path(ctx, item.target),
                                        item.replaced)
                kept = f" (it existed; the old content is in the trash as {entry.id})"
            except OSError as exc:
                kept = f" (it existed; its old content could not be kept: {os_message(exc)})"
        else:
            kept = ""
        how = "".join(f"; {note}" for note in item.notes)
        how = f" ({how[2:]})" if how else ""
        if not item.delete_source:
            verb = "added" if op.kind == "add" else "updated"
            if op.kind == "add" and item.replaced is not None:
                verb = "replaced"
            report.append(f"- {verb} {shown}{kept}{how}")
            continue
        try:
            if op.kind == "delete":
                trash.move_to_trash(ctx.state_dir, session_id(ctx), ctx.workspace,
                                    item.source, display_path(ctx, item.source))
                report.append(f"- deleted {op.path}")
            else:
                os.unlink(resolve_entry(ctx, op.path))
                report.append(f"- moved {op.path} to {op.move_to}{kept}{how}")
        except OSError as exc:
            problems.append(f"- could not remove {op.path}: {os_message(exc)}")
    text = f"Applied {len(planned)} change(s):\n" + "\n".join(report)
    if problems:
        text += "\nBut:\n" + "\n".join(problems)
    return ToolResult(text, is_error=bool(problems), summary=f"applied {len(planned)} change(s)")


def patch_effects(args: dict[str, Any]) -> Effects:
    """Every path the patch names; an unparsable patch is opaque (asked about)."""
    try:
        ops = parse_patch(args.get("patch", ""))
    except Exception:  # effects must never raise
        return UNKNOWN_EFFECTS
    writes, deletes = touched_paths(ops)
    return Effects(writes=tuple(writes), deletes=tuple(deletes))


APPLY_PATCH = Tool(
    name="apply_patch",
    description=(
        "Apply a multi-file patch, all or nothing. Format:\n"
        "*** Begin Patch\n"
        "*** Add File: path\n+line\n"
        "*** Update File: path\n*** Move to: new/path   (optional)\n"
        "@@ optional line above the change\n context line\n-removed line\n+added line\n"
        "*** Delete File: path\n"
        "*** End Patch\n"
        "Each hunk's context and - lines must match the file exactly once; separate hunks "
        "with @@ lines. Every line of a hunk starts with ' ', '-' or '+'."),
    run=os_errors(run_apply_patch),
    parameters={
        "type": "object",
        "properties": {"patch": {"type": "string", "description": "the patch text"}},
        "required": ["patch"],
        "additionalProperties": False,
    },
    effects=patch_effects,
    tool_set="edit-plus",
    prompt="for changes across several files or many hunks; include 1-3 context lines per hunk.",
)
