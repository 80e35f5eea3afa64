"""The numbered window ``read_file`` returns, read in bounded memory.

A small file is read whole and decoded (every encoding the tools know).  A large UTF-8 file is
read in fixed chunks: lines before the window are only counted, lines in it are kept, lines
after it only counted, so the memory a read takes is the window it returns plus one chunk,
whatever the size of the file (``bench/read_memory.py`` measures it).  Either way the digest of
every byte read is noted, for :mod:`.seen`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from agent import ToolError

from .common import BINARY_PROBE, binary_message, file_problem, load_bytes, os_message
from .textfile import UTF8_BOM, decode, to_lf

#: Files up to this size are read whole; larger ones in chunks of :data:`CHUNK`.
WHOLE_LIMIT = 1024 * 1024
CHUNK = 1024 * 1024


@dataclass
class Window:
    """What one read returns, and what it saw."""

    body: str
    count: int  # lines shown
    digest: str  # sha256 of the file's bytes
    size: int
    data: bytes | None = None  # the bytes, when the file was read whole


def _finish(shown: str, lines: list[str], offset: int, total: int) -> tuple[str, int]:
    if offset > total:
        raise ToolError(f"{shown} has {total} lines; offset {offset} is past the end.")
    out = [f"{n}: {line[:-1] if line.endswith(chr(13)) else line}"
           for n, line in enumerate(lines, start=offset)]
    body = "\n".join(out)
    last = offset + len(lines) - 1
    if last < total:
        body += (f"\n... [lines {offset}-{last} of {total} shown; "
                 f"continue with offset={last + 1}]")
    return body, len(lines)


def _whole(real: Path, shown: str, offset: int, limit: int) -> Window:
    data = load_bytes(real, shown)
    digest = hashlib.sha256(data).hexdigest()
    text, layout = decode(data, shown, for_display=True)
    if layout.eol == "\r":  # a classic-Mac file is shown line by line, as the edits see it
        text = to_lf(text, cr=True)
    if text == "":
        return Window(f"{shown} is empty (0 bytes).", 0, digest, len(data), data)
    total = text.count("\n") + 1
    lines = text.split("\n")[offset - 1: offset - 1 + limit]
    body, count = _finish(shown, lines, offset, total)
    return Window(body, count, digest, len(data), data)


def _scan(real: Path, sep: bytes, skip: int, offset: int, limit: int
          ) -> tuple[list[bytes], int, str, int, bool]:
    """One pass over the file: (the window's lines as bytes, total lines, digest, size,
    whether it holds an LF).  ``skip`` leading bytes (a BOM) are not part of any line."""
    hasher = hashlib.sha256()
    first, stop = offset, offset + limit  # the window is lines [first, stop)
    picked: list[bytes] = []
    current = bytearray()
    line = 1
    size = 0
    has_lf = False
    with open(real, "rb") as fh:
        while chunk := fh.read(CHUNK):
            hasher.update(chunk)
            if size == 0 and skip:
                size, chunk = len(chunk), chunk[skip:]
            else:
                size += len(chunk)
            has_lf = has_lf or b"\n" in chunk
            breaks = chunk.count(sep)
            if line + breaks < first or line >= stop:
                line += breaks  # wholly outside the window: count only
                continue
            start = 0
            while True:
                at = chunk.find(sep, start)
                inside = first <= line < stop
                if at == -1:
                    if inside:
                        current += chunk[start:]
                    break
                if inside:
                    current += chunk[start:at]
                    picked.append(bytes(current))
                    current.clear()
                line += 1
                start = at + 1
    if first <= line < stop:
        picked.append(bytes(current))
    return picked, line, hasher.hexdigest(), size, has_lf


def _streamed(real: Path, shown: str, offset: int, limit: int) -> Window:
    try:
        with open(real, "rb") as fh:
            head = fh.read(BINARY_PROBE + len(UTF8_BOM))
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {os_message(exc)}") from None
    skip = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
    if b"\x00" in head[skip:skip + BINARY_PROBE]:
        raise ToolError(binary_message(shown))
    try:
        picked, total, digest, size, has_lf = _scan(real, b"\n", skip, offset, limit)
        if not has_lf and b"\r" in head:  # no LF at all: CR ends the lines (classic Mac)
            picked, total, digest, size, _ = _scan(real, b"\r", skip, offset, limit)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {os_message(exc)}") from None
    lines = [raw.decode("utf-8", errors="replace") for raw in picked]
    body, count = _finish(shown, lines, offset, total)
    return Window(body, count, digest, size)


def read_window(real: Path, shown: str, offset: int, limit: int) -> Window:
    """The numbered window ``[offset, offset + limit)`` of one file, with a note when more
    lines follow.  UTF-16 files (the only encoding a byte scan cannot split into lines) are
    read whole, as files of any encoding up to :data:`WHOLE_LIMIT` are."""
    problem = file_problem(real)
    if problem == "large" or (problem is None and real.stat().st_size > WHOLE_LIMIT):
        with open(real, "rb") as fh:
            mark = fh.read(4)
        if not mark.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
            return _streamed(real, shown, offset, limit)
    return _whole(real, shown, offset, limit)
