"""``apply_patch``: validate every file operation first, then write all or nothing.

Each Update hunk's context and ``-`` lines must occur exactly once in the file, searching after
the previous hunk (an ``@@ anchor`` line narrows the search to after that line, and the first
match there is taken).  Exact matches are tried first; only if there is none, a match that
ignores trailing whitespace is accepted when unique.  Context lines keep the file's own text.
Deleted files go to the trash, like ``delete_file``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
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

from . import trash
from .common import (
    decode_for_edit,
    display_path,
    encode_text,
    file_problem,
    is_binary,
    os_errors,
    os_message,
    resolve,
    resolve_entry,
    resolve_new_file,
)
from .fsops import session_id
from .patch_parse import FileOp, Hunk, PatchError, parse_patch, touched_paths

NOTHING = " Nothing was written."


@dataclass
class _Planned:
    """One validated operation, ready to write."""

    op: FileOp
    source: Path  # the file as named (real path; the entry itself for deletes)
    target: Path | None = None  # where new content goes (None for a pure delete)
    content: str | None = None
    delete_source: bool = False


def _find(lines: list[str], old: list[str], start: int, same: Any) -> list[int]:
    """Every index >= start where ``old`` occurs in ``lines`` (``same`` compares lines)."""
    hits = []
    last = len(lines) - len(old)
    first = old[0]
    for i in range(start, last + 1):
        if same(lines[i], first) and all(same(lines[i + k], old[k]) for k in range(1, len(old))):
            hits.append(i)
    return hits


def _exact(a: str, b: str) -> bool:
    return a == b


def _loose(a: str, b: str) -> bool:
    return a.rstrip() == b.rstrip()


def _hint(lines: list[str], old: list[str], start: int) -> str:
    """Where the hunk comes closest to matching, to help the model fix it."""
    best, best_at = 0, -1
    for i in range(start, len(lines)):
        k = 0
        while k < len(old) and i + k < len(lines) and _loose(lines[i + k], old[k]):
            k += 1
        if k > best:
            best, best_at = k, i
    if best == 0:
        return f'\nIts first line "{old[0][:120]}" is not in the file' + (
            " after the previous hunk." if start else ".")
    if best_at + best >= len(lines):
        return (f"\nThe file's lines {best_at + 1}-{best_at + best} match the hunk's first "
                f"{best} line(s), then the file ends.")
    return (f"\nThe file's lines {best_at + 1}-{best_at + best} match the hunk's first {best} "
            f'line(s); then line {best_at + best + 1} is "{lines[best_at + best][:120]}" '
            f'where the hunk has "{old[best][:120]}".')


def apply_hunks(text: str, hunks: list[Hunk], path: str) -> str:
    """The file's new text after ``hunks``; raises :class:`ToolError` naming the failed hunk."""
    eol = "\r\n" if "\r\n" in text else "\n"
    lines = text.split("\n")
    ends_with_newline = text == "" or text.endswith("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if eol == "\r\n":
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    pos = 0
    placed: list[tuple[int, Hunk]] = []
    for number, hunk in enumerate(hunks, start=1):
        start = pos
        if hunk.anchor is not None:
            found = [i for i in range(pos, len(lines)) if lines[i] == hunk.anchor]
            found = found or [i for i in range(pos, len(lines))
                              if lines[i].strip() == hunk.anchor.strip()]
            if not found:
                raise ToolError(f'{path}: hunk {number}: the @@ line "{hunk.anchor}" was not '
                                f"found{' after the previous hunk' if pos else ''}.{NOTHING}")
            start = found[0]
        old = hunk.old
        if not old:  # only with *** End of File: append
            placed.append((len(lines), hunk))
            pos = len(lines)
            continue
        for same in (_exact, _loose):
            hits = _find(lines, old, start, same)
            if hunk.at_eof:
                hits = [i for i in hits if i + len(old) == len(lines)]
            if hunk.anchor is not None:
                hits = hits[:1]
            if hits:
                break
        if not hits:
            raise ToolError(f"{path}: hunk {number} does not match the file.{NOTHING}"
                            + _hint(lines, old, start))
        if len(hits) > 1:
            at = ", ".join(str(i + 1) for i in hits[:5])
            raise ToolError(f"{path}: hunk {number} matches {len(hits)} places (lines {at}). "
                            f"Add context lines or an @@ anchor to make it unique.{NOTHING}")
        placed.append((hits[0], hunk))
        pos = hits[0] + len(old)
    out: list[str] = []
    cursor = 0
    for at, hunk in placed:
        out.extend(lines[cursor:at])
        i = at
        for kind, body in hunk.lines:
            if kind == " ":
                out.append(lines[i])  # the file's own text, trailing whitespace included
                i += 1
            elif kind == "-":
                i += 1
            else:
                out.append(body)
        cursor = i
    out.extend(lines[cursor:])
    result = eol.join(out)
    if out and ends_with_newline:
        result += eol
    return result


def _read_for_update(real: Path, shown: str) -> str:
    problem = file_problem(real)
    reasons = {"missing": "no such file", "directory": "it is a directory",
               "special": "it is not a regular file", "large": "it is too large"}
    if problem is not None:
        raise ToolError(f"Cannot update {shown}: {reasons[problem]}.{NOTHING}")
    try:
        data = real.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot update {shown}: {os_message(exc)}.{NOTHING}") from None
    if is_binary(data):
        raise ToolError(f"Cannot update {shown}: it is a binary file.{NOTHING}")
    return decode_for_edit(data)


def plan(ctx: ToolContext, ops: list[FileOp]) -> list[_Planned]:
    """Check every operation against the filesystem; nothing is written here."""
    seen: dict[Path, str] = {}

    def claim(real: Path, shown: str) -> None:
        if real in seen:
            raise ToolError(f"{shown} appears more than once in the patch (also as "
                            f"{seen[real]}). Combine its changes.{NOTHING}")
        seen[real] = shown

    planned: list[_Planned] = []
    for op in ops:
        if op.kind == "add":
            real = resolve_new_file(ctx, op.path)
            claim(real, op.path)
            if os.path.lexists(real):
                raise ToolError(f"Cannot add {op.path}: it already exists. Use an Update to "
                                f"change it.{NOTHING}")
            body = "\n".join(op.add_lines) + "\n" if op.add_lines else ""
            planned.append(_Planned(op, real, real, body))
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
            text = _read_for_update(real, op.path)
            content = apply_hunks(text, op.hunks, op.path) if op.hunks else text
            target = real
            if op.move_to is not None:
                target = resolve_new_file(ctx, op.move_to)
                if target == real:
                    raise ToolError(f"Cannot move {op.path} to {op.move_to}: that is the same "
                                    f"file.{NOTHING}")
                claim(target, op.move_to)
                if os.path.lexists(target):
                    raise ToolError(f"Cannot move {op.path} to {op.move_to}: {op.move_to} "
                                    f"already exists.{NOTHING}")
            planned.append(_Planned(op, real, target, content,
                                    delete_source=op.move_to is not None))
    return planned


def _write_all(planned: list[_Planned]) -> None:
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
            staged.append(Staged(item.target, encode_text(item.content, shown), shown=shown,
                                 make_parents=True))
    except AtomicWriteError as exc:
        for each in staged:
            each.discard()
        raise ToolError(f"{exc}; no file of the patch was changed.") from None
    done: list[tuple[Path, bytes | None]] = []
    try:
        for each in staged:
            before = each.target.read_bytes() if each.target.is_file() else None
            each.commit()
            done.append((each.target, before))
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


async def run_apply_patch(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        ops = parse_patch(args["patch"])
    except PatchError as exc:
        raise ToolError(str(exc)) from None
    planned = plan(ctx, ops)
    _write_all(planned)
    report: list[str] = []
    problems: list[str] = []
    for item in planned:  # writes are done; now the deletions
        op = item.op
        if not item.delete_source:
            report.append(f"- {'added' if op.kind == 'add' else 'updated'} {op.path}")
            continue
        try:
            if op.kind == "delete":
                trash.move_to_trash(ctx.state_dir, session_id(ctx), ctx.workspace,
                                    item.source, display_path(ctx, item.source))
                report.append(f"- deleted {op.path}")
            else:
                os.unlink(resolve_entry(ctx, op.path))
                report.append(f"- moved {op.path} to {op.move_to}")
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
