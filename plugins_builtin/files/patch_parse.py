"""Parsing ``apply_patch`` envelopes (Codex-style markers, with context lines and many hunks).

::

    *** Begin Patch                 (optional)
    *** Add File: path/new.py
    +every line starts with +
    *** Update File: path/old.py
    *** Move to: path/renamed.py    (optional, directly after its Update line)
    @@ def anchor_line():           (optional; "@@" alone separates hunks)
     context line (leading space)
    -removed line
    +added line
    *** End of File                 (optional: the hunk belongs at the end of the file)
    *** Delete File: path/gone.py
    *** End Patch                   (optional)

CRLF is normalised.  Blank lines outside Update hunks are skipped; inside a hunk a blank line
is an empty context line (models often drop the leading space), except at the hunk's edges
where it is dropped.  Like Codex, the parser accepts whitespace around the envelope and the
file markers, a shell heredoc around the whole patch (``apply_patch <<'EOF'`` ... ``EOF``,
also after ``cd DIR &&``, which makes the paths relative to DIR),
and hunks of only ``+`` lines (appended at the end of the file, or after their ``@@`` line).
Parsing never touches the filesystem; :mod:`.patch` applies the result.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Literal

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, UPDATE, DELETE, MOVE = "*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"
END_OF_FILE = "*** End of File"
_UNIFIED_HEADER = re.compile(r"@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")


class PatchError(Exception):
    """The patch text is malformed; the message names the line and the problem."""


@dataclass
class Hunk:
    """One change inside an Update: lines tagged ``" "`` (context), ``"-"`` or ``"+"``."""

    line_no: int  # patch line the hunk starts on
    anchor: str | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)
    at_eof: bool = False
    # indices into ``lines`` of context lines that came from blank patch lines
    blank: set[int] = field(default_factory=set)

    @property
    def old(self) -> list[str]:
        """The lines the file must contain (context and removed)."""
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def changes(self) -> bool:
        return any(kind != " " for kind, _ in self.lines)

    def trim_blank_edges(self) -> None:
        """Drop blank-derived context lines at the start and end of the hunk."""
        start, end = 0, len(self.lines)
        while start < end and start in self.blank:
            start += 1
        while end > start and (end - 1) in self.blank:
            end -= 1
        self.lines = self.lines[start:end]
        self.blank = {i - start for i in self.blank if start <= i < end}


@dataclass
class FileOp:
    """One file's part of the patch."""

    kind: Literal["add", "update", "delete"]
    path: str
    line_no: int
    move_to: str | None = None
    add_lines: list[str] = field(default_factory=list)
    hunks: list[Hunk] = field(default_factory=list)

    def content_started(self) -> bool:
        return bool(self.add_lines or self.hunks)


def _marker_path(line: str, marker: str, n: int) -> str:
    path = line[len(marker):].strip()
    if not path:
        raise PatchError(f"patch line {n}: {marker[4:-1]!r} has no path")
    return path


def _finish(op: FileOp | None) -> None:
    """Validate a completed file section."""
    if op is None or op.kind != "update":
        return
    kept = []
    for hunk in op.hunks:
        hunk.trim_blank_edges()
        if hunk.lines or hunk.at_eof:
            kept.append(hunk)
    op.hunks = kept
    if not op.hunks and op.move_to is None:
        raise PatchError(f"{op.path}: an Update needs at least one hunk of - and + lines "
                         "(or a Move to)")
    for i, hunk in enumerate(op.hunks, start=1):
        if not hunk.changes:
            raise PatchError(f"{op.path}: hunk {i} changes nothing (it has no + or - lines)")


_HEREDOC = re.compile(
    r"\s*(?:cd\s+(?P<dir>'[^']*'|\"[^\"]*\"|[^\s;&|'\"]+)\s*&&\s*)?"
    r"(?:(?:apply_patch|applypatch)\s*)?<<-?\s*(?P<q>['\"]?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=q)"
    r"\s*$")


def _unwrap(numbered: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], str | None]:
    """The patch lines without a shell heredoc around them (``apply_patch <<'EOF'`` ...
    ``EOF``, as models trained on shell calls send it) and without an indentation every
    line shares; plus the directory of a ``cd DIR && apply_patch <<'EOF'`` opening (the
    patch's paths are relative to it), else None."""
    directory = None
    nonblank = [i for i, (_, ln) in enumerate(numbered) if ln.strip()]
    if nonblank:
        opening = _HEREDOC.match(numbered[nonblank[0]][1])
        if opening:
            end = len(numbered)
            if len(nonblank) > 1 and numbered[nonblank[-1]][1].strip() == opening["word"]:
                end = nonblank[-1]
            numbered = numbered[nonblank[0] + 1:end]
            if opening["dir"]:
                directory = opening["dir"].strip("'\"")
    body = [ln for _, ln in numbered if ln.strip()]
    if body and body[0].strip() == BEGIN and body[0][:1].isspace():
        pad = body[0][:len(body[0]) - len(body[0].lstrip())]
        if all(ln.startswith(pad) for ln in body):
            numbered = [(n, ln[len(pad):]) for n, ln in numbered]
    return numbered, directory


def parse_patch(text: str) -> list[FileOp]:
    """Parse a patch into file operations, or raise :class:`PatchError`."""
    if not isinstance(text, str):
        raise PatchError("the patch must be a string")
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    numbered, directory = _unwrap(list(enumerate(lines, start=1)))
    nonblank = [i for i, (_, ln) in enumerate(numbered) if ln.strip()]
    # The envelope is optional; drop it when present (whitespace around it is no matter).
    if nonblank and numbered[nonblank[0]][1].strip() == BEGIN:
        numbered = numbered[nonblank[0] + 1:]
        nonblank = [i - nonblank[0] - 1 for i in nonblank[1:]]
    last_line = numbered[nonblank[-1]][0] if nonblank else None
    ops: list[FileOp] = []
    op: FileOp | None = None
    hunk: Hunk | None = None
    ended_at: int | None = None
    for n, line in numbered:
        if ended_at is not None:
            if line.strip():
                raise PatchError(f"patch line {n}: text after {END!r} (line {ended_at})")
            continue
        in_hunk = op is not None and op.kind == "update" and hunk is not None
        if line.startswith("*** ") or (
                line[:1].isspace() and line.strip().startswith("*** ")
                and (not in_hunk or (n == last_line and line.strip() == END))):
            # A marker; one padded with whitespace counts too, except inside a hunk, where
            # " *** x" is a context line (as in Codex), unless it ends the patch.
            marker = line.strip()
            if marker == END:
                ended_at = n
                continue
            if marker.startswith(MOVE):
                target = _marker_path(marker, MOVE, n)
                if op is None or op.kind != "update":
                    raise PatchError(f'patch line {n}: "Move to" is only valid on an Update')
                if op.content_started() or op.move_to is not None:
                    raise PatchError(f'patch line {n}: "Move to" must come directly after '
                                     f'"*** Update File: {op.path}"')
                op.move_to = target
                continue
            if marker == END_OF_FILE:
                if op is None or op.kind != "update" or hunk is None or not hunk.lines:
                    raise PatchError(f'patch line {n}: "{END_OF_FILE}" belongs at the end '
                                     "of an Update hunk")
                hunk.at_eof = True
                hunk = None  # whatever follows starts a new hunk
                continue
            for prefix, kind in ((ADD, "add"), (UPDATE, "update"), (DELETE, "delete")):
                if marker.startswith(prefix):
                    _finish(op)
                    op = FileOp(kind, _marker_path(marker, prefix, n), n)  # type: ignore[arg-type]
                    ops.append(op)
                    hunk = None
                    break
            else:
                raise PatchError(f"patch line {n} is not a marker or part of a hunk: {line}")
            continue
        if op is None:
            if line.strip():
                raise PatchError(f"patch line {n} is not a marker or part of a hunk: {line}")
            continue
        if op.kind == "delete":
            if line.strip():
                raise PatchError(f"patch line {n}: a Delete takes no lines: {line}")
            continue
        if op.kind == "add":
            if not line.strip():
                continue
            if line.startswith("+"):
                op.add_lines.append(line[1:])
            elif line.startswith("-"):
                raise PatchError(f"patch line {n}: an Add cannot remove lines")
            elif line.startswith((" ", "@@")):
                raise PatchError(f"patch line {n}: an Add holds only + lines")
            else:
                raise PatchError(f"hunk line {n} starts with neither + nor -: {line}")
            continue
        # An Update's hunks.
        if line.startswith("@@"):
            header = _UNIFIED_HEADER.match(line.rstrip())
            anchor = (header.group(1) if header else line[2:]).strip() or None
            hunk = Hunk(n, anchor)
            op.hunks.append(hunk)
            continue
        if line.startswith("\\ No newline"):
            continue  # unified-diff noise: the file's final newline is kept as it is
        if line == "" or line[0] in " -+":
            if hunk is None:
                hunk = Hunk(n)
                op.hunks.append(hunk)
            if line == "":
                hunk.blank.add(len(hunk.lines))
                hunk.lines.append((" ", ""))
            else:
                hunk.lines.append((line[0], line[1:]))
            continue
        if not line.strip():  # whitespace-only, yet not starting with a space: a tab, say
            raise PatchError(f"hunk line {n} starts with neither +, - nor a space: {line!r}")
        raise PatchError(f"hunk line {n} starts with neither +, - nor a space: {line}")
    _finish(op)
    if not ops:
        raise PatchError("the patch is empty")
    if directory:
        for each in ops:
            each.path = posixpath.join(directory, each.path)
            if each.move_to is not None:
                each.move_to = posixpath.join(directory, each.move_to)
    return ops


def touched_paths(ops: list[FileOp]) -> tuple[list[str], list[str]]:
    """(writes, deletes) as written in the patch: every marker path and every Move-to path.

    An Update writes its file (or, when moved, writes the target and deletes the source).
    Like ``edit_file``, an Update is not counted as a read: its content is never shown.
    """
    writes: list[str] = []
    deletes: list[str] = []
    for op in ops:
        if op.kind == "add":
            writes.append(op.path)
        elif op.kind == "delete":
            deletes.append(op.path)
        elif op.move_to is not None:
            writes.append(op.move_to)
            deletes.append(op.path)
        else:
            writes.append(op.path)
    return writes, deletes
