"""Shared pieces of the file tools: the jail, text decoding, binary detection, numbering."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent import AtomicWriteError, ToolContext, ToolError
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


def display_path(ctx: ToolContext, real: Path) -> str:
    """``real`` relative to the workspace, posix style (``.`` for the root)."""
    root = os.path.realpath(ctx.workspace)
    return Path(os.path.relpath(real, root)).as_posix()


def arg(args: dict[str, Any], name: str, default: Any = None) -> Any:
    """An optional argument; JSON ``null`` counts as absent."""
    value = args.get(name)
    return default if value is None else value
