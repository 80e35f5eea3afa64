"""Shared pieces of the file tools: the jail, text decoding, binary detection, numbering."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent import AtomicWriteError, ToolContext, ToolError, atomic_write
from agent.contain.paths import jail, jail_entry
from agent.loop.saved_results import resolve_saved

#: A NUL byte within this many leading bytes makes a file binary.
BINARY_PROBE = 8192

#: Default and cap values from the tool specification.
READ_LIMIT = 2000


def resolve(ctx: ToolContext, path: str) -> Path:
    """``path`` inside the workspace (the real path), or ``Path escapes workspace``."""
    return jail(ctx.workspace, path)


def resolve_readable(ctx: ToolContext, path: str) -> Path:
    """Like :func:`resolve`, for the read tools: also the path of a large tool result this
    session saved (the one pointer outside the workspace they may follow; see
    :mod:`agent.loop.saved_results`).  Never used for writes."""
    try:
        return resolve(ctx, path)
    except ToolError:
        saved = resolve_saved(path, ctx.state_dir, ctx.session)
        if saved is None:
            raise
        return saved


def resolve_new_file(ctx: ToolContext, path: str) -> Path:
    """Like :func:`resolve`, for a file about to be created: a trailing ``/`` names a
    directory, so it is refused rather than silently dropped."""
    real = resolve(ctx, path)
    if path.endswith(("/", "/.")):
        raise ToolError(f"{path} names a directory; give the path of a file.")
    return real


def resolve_entry(ctx: ToolContext, path: str) -> Path:
    """The directory entry ``path`` names (a symlink itself, not its target), jailed."""
    return jail_entry(ctx.workspace, path)


def is_binary(head: bytes) -> bool:
    """A NUL byte in the first 8,192 bytes means the file is not text."""
    return b"\x00" in head[:BINARY_PROBE]


def binary_message(path: str) -> str:
    return f"{path} is a binary file, not text. Use bash if you need to inspect it."


def os_message(exc: OSError) -> str:
    """A short human reason for an OS error (``Permission denied``, ``File name too long``)."""
    return exc.strerror or type(exc).__name__


def os_errors(run: Callable[[dict[str, Any], ToolContext], Awaitable[Any]]
              ) -> Callable[[dict[str, Any], ToolContext], Awaitable[Any]]:
    """Turn an OS error the tool did not foresee into a clear failure of the call."""

    @functools.wraps(run)
    async def guarded(args: dict[str, Any], ctx: ToolContext) -> Any:
        try:
            return await run(args, ctx)
        except AtomicWriteError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:
            where = ""
            if exc.filename:
                try:
                    where = f" ({display_path(ctx, Path(exc.filename))})"
                except ValueError:
                    pass
            raise ToolError(f"{ctx.call.name} failed: {os_message(exc)}{where}") from None

    return guarded


#: Larger files are refused by the read, edit and patch tools (they are read whole).
MAX_FILE_BYTES = 64 * 1024 * 1024


def file_problem(real: Path) -> str | None:
    """Why ``real`` cannot be read as a file: ``missing``, ``directory``, ``special`` (a
    pipe, socket or device: reading could block forever), ``large``; None when it can."""
    try:
        info = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    if stat.S_ISDIR(info.st_mode):
        return "directory"
    if not stat.S_ISREG(info.st_mode):
        return "special"
    if info.st_size > MAX_FILE_BYTES:
        return "large"
    return None


def load_bytes(real: Path, shown: str) -> bytes:
    """The bytes of a regular file, or the tool error that says why not."""
    problem = file_problem(real)
    if problem == "missing":
        raise ToolError(f"No such file: {shown}")
    if problem == "directory":
        raise ToolError(f"{shown} is a directory, not a file. Use list_dir to see what "
                        "it holds.")
    if problem == "special":
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device).")
    if problem == "large":
        raise ToolError(f"{shown} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB; use "
                        "bash (head, tail, sed -n) to work with part of it.")
    try:
        with open(real, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {os_message(exc)}") from None


def read_text(real: Path, shown: str) -> str:
    """Read a text file for a tool, with the spec's errors for missing, directory and binary.

    The text is as the model sees it: no byte-order mark, UTF-16 decoded, CR line ends as
    line breaks."""
    from .textfile import decode, to_lf  # textfile builds on this module

    text, layout = decode(load_bytes(real, shown), shown, for_display=True)
    # A classic-Mac file (CR line ends) is shown line by line, as the edit tools see it.
    return to_lf(text, cr=True) if layout.eol == "\r" else text


def make_dirs(directory: Path) -> None:
    """``mkdir -p`` without recursion: ``os.makedirs`` recurses once per level and a
    path 1,500 directories deep (still under PATH_MAX) would blow Python's stack."""
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            if not path.is_dir():
                raise


def decode_for_edit(data: bytes) -> str:
    """Text to edit: bytes that are not UTF-8 are carried as surrogates, so that writing the
    text back (:func:`encode_text`) restores them exactly instead of corrupting a Latin-1
    file's accents everywhere but the edited spot."""
    return data.decode("utf-8", errors="surrogateescape")


def encode_text(text: str, shown: str) -> bytes:
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(f"Cannot write {shown}: the text holds a character that is not valid "
                        f"Unicode ({exc.object[exc.start:exc.end]!r} at character "
                        f"{exc.start}).") from None


def write_text(real: Path, shown: str, text: str) -> None:
    """Replace ``real`` with ``text`` as UTF-8; see :func:`write_bytes`."""
    write_bytes(real, shown, encode_text(text, shown))


def write_bytes(real: Path, shown: str, data: bytes) -> None:
    """Replace ``real`` with ``data``, atomically (keeping the file's mode and owner),
    creating parent dirs.  On any failure the file is byte-identical and the error says that
    nothing changed and why (``nothing changed: a.py: no space left on device ...``)."""
    problem = file_problem(real)
    if problem == "directory":
        raise ToolError(f"{shown} is a directory, not a file.")
    if problem == "special":
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device).")
    try:
        atomic_write(real, data, shown=shown, make_parents=True)
    except AtomicWriteError as exc:
        raise ToolError(str(exc)) from None


def number_lines(text: str, offset: int = 1, limit: int = READ_LIMIT) -> tuple[str, int, int]:
    """``N: text`` lines from 1-based ``offset``, at most ``limit`` of them.

    A trailing newline yields a final empty numbered line (the file's real last line
    number).  Returns (text, first line shown, total lines).  A carriage return ending a line
    (CRLF files) is not shown.
    """
    lines = text.split("\n")
    total = len(lines)
    window = lines[offset - 1: offset - 1 + limit]
    out = [f"{n}: {line[:-1] if line.endswith(chr(13)) else line}"
           for n, line in enumerate(window, start=offset)]
    return "\n".join(out), offset, total


def read_window(real: Path, shown: str, offset: int, limit: int) -> tuple[str, int]:
    """The numbered window of one file, with a note when more lines follow.

    Returns (output, number of lines shown).
    """
    text = read_text(real, shown)
    if text == "":
        return f"{shown} is empty (0 bytes).", 0
    body, first, total = number_lines(text, offset, limit)
    if offset > total:
        raise ToolError(f"{shown} has {total} lines; offset {offset} is past the end.")
    shown_count = min(limit, total - offset + 1)
    last = first + shown_count - 1
    if last < total:
        body += (f"\n... [lines {first}-{last} of {total} shown; "
                 f"continue with offset={last + 1}]")
    return body, shown_count


def display_path(ctx: ToolContext, real: Path) -> str:
    """``real`` relative to the workspace, posix style (``.`` for the root)."""
    root = os.path.realpath(ctx.workspace)
    return Path(os.path.relpath(real, root)).as_posix()


def arg(args: dict[str, Any], name: str, default: Any = None) -> Any:
    """An optional argument; JSON ``null`` counts as absent."""
    value = args.get(name)
    return default if value is None else value
