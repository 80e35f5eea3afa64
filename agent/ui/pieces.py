"""Cutting a markdown answer into pieces and chunks that render independently.

A *piece* ends at a blank line outside a code fence when the next line starts in column 0 (an
indented line continues a list item or a paragraph).  Once the text after a blank line has
begun, the piece before it can never change.

A piece can itself be huge (a 2,000-item list, a 3,000-line code block, a 500-row table, a
100 KB paragraph), so it is cut further into *chunks*: 4 top-level list items, 10 lines of
code, 10 table rows, or about 1,000 characters of a paragraph (cut after a sentence or at a
space where no inline code, bold or link is open).  A chunk joins the one above it without a
blank row; a chunk that starts inside a code fence or a table carries a *prefix* (the fence's
opening line, the table's header and delimiter rows) so it parses alone, and flags telling the
renderer not to draw that prefix again (see :meth:`Chunk.data`).

While an answer streams, :class:`Chunker` keeps the chunks that are complete (each rendered
once, as its own transcript entry) and re-scans only the growing last one, so the work per
frame is bounded by a chunk's size, not by the answer's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LIST_MARK = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?: |$)")
_TABLE_DELIM = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
#: characters a paragraph chunk must not start with (they would begin another block)
_BLOCK_START = set("#-*+>|`~=<_0123456789 \t")

# Small chunks: the growing one is parsed and laid out again on every frame, finished ones
# never (a 10-item list chunk made a frame cost 6 ms, a 4-item one 4 ms).
LIST_ITEMS = 4       # top-level items of a list per chunk
CODE_LINES = 10      # lines of a fenced code block per chunk
TABLE_ROWS = 10      # body rows of a table per chunk
PARA_CHARS = 1_000   # characters of a paragraph after which a chunk is cut


def spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the pieces of ``text`` (blank lines between are left out)."""
    out: list[tuple[int, int]] = []
    fence: str | None = None
    start: int | None = None   # start of the current piece
    end = 0                    # end of its last non-blank line
    pending_blank = False
    pos = 0
    length = len(text)
    while pos <= length:
        nl = text.find("\n", pos)
        line_end = length if nl < 0 else nl
        line = text[pos:line_end]
        if fence is not None:
            if _closes(line, fence):
                fence = None
            end = line_end
        elif not line.strip():
            pending_blank = start is not None
        else:
            if start is not None and pending_blank and not line[:1].isspace():
                out.append((start, end))
                start = None
            if start is None:
                start = pos
            pending_blank = False
            m = _FENCE.match(line)
            if m:
                fence = m.group(1)
            end = line_end
        if nl < 0:
            break
        pos = nl + 1
    if start is not None:
        out.append((start, end))
    return out


def split(text: str) -> list[str]:
    return [text[a:b] for a, b in spans(text)]


def _closes(line: str, fence: str) -> bool:
    m = _FENCE.match(line)
    return bool(m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
                and not line.strip()[len(m.group(1)):].strip())


@dataclass(frozen=True)
class _State:
    """What is open where a chunk starts."""

    join: bool = False              # the chunk continues the one above (no blank row)
    fence: str | None = None        # the marker of the fence the chunk starts inside
    fence_line: str = ""            # that fence's opening line (the prefix)
    table_head: str = ""            # header + delimiter rows of the table it starts inside
    in_list: bool = False           # the piece is a list: a column-0 item starts a chunk
    piece_start: bool = True        # the chunk starts a piece


@dataclass(frozen=True)
class Chunk:
    """One chunk: ``text`` is a slice of the answer, ``prefix`` what makes it parse alone."""

    text: str
    join: bool = False
    prefix: str = ""
    fence_cont: bool = False   # starts inside a code fence (the prefix reopens it)
    fence_open: bool = False   # ends inside a code fence the next chunk continues
    table_cont: bool = False   # starts inside a table (the prefix repeats its header)
    table_open: bool = False   # ends inside a table the next chunk continues

    @property
    def source(self) -> str:
        """What the renderer parses: the prefix and the text."""
        return self.prefix + self.text

    def data(self) -> dict[str, Any]:
        """The ``markdown`` block's data for this chunk: ``join`` (no blank row above),
        ``fence_cont`` (do not draw the reopened fence's top rule), ``fence_open`` (the
        last fence goes on in the next block: no bottom rule), ``table_cont`` (the first
        table's header rows are a repeated prefix: do not draw them, nor its top border),
        ``table_open`` (the table goes on in the next block: no bottom border)."""
        out: dict[str, Any] = {}
        for key in ("join", "fence_cont", "fence_open", "table_cont", "table_open"):
            if getattr(self, key):
                out[key] = True
        return out


class Chunker:
    """Cuts a growing answer into chunks; :meth:`advance` returns the chunks completed since
    the last call and the growing tail, scanning only from where the tail starts."""

    def __init__(self) -> None:
        self.base = 0
        self.state = _State()

    def advance(self, text: str) -> tuple[list[Chunk], Chunk | None]:
        done, tail = _scan(text, self.base, self.state)
        if done:
            _, self.base, self.state = done[-1]
        return [c for c, _, _ in done], tail

    def finish(self, text: str) -> list[Chunk]:
        """Every chunk not yet returned, the tail included (the answer is complete)."""
        done, tail = self.advance(text)
        self.base, self.state = len(text), _State()
        return done + ([tail] if tail is not None else [])


def chunks(text: str) -> list[Chunk]:
    """All chunks of a complete text."""
    return Chunker().finish(text)


def _is_item(line: str) -> bool:
    return bool(line[:1] and not line[:1].isspace() and _LIST_MARK.match(line))


def _balanced(segment: str) -> bool:
    """No inline code, emphasis or link left open in ``segment``."""
    return (segment.count("`") % 2 == 0 and segment.count("**") % 2 == 0
            and segment.count("__") % 2 == 0 and segment.count("[") <= segment.count("]")
            and segment.count("<") <= segment.count(">"))


def _para_cut(text: str, start: int, stop: int) -> int:
    """Where to cut the paragraph text ``text[start:stop]``: the offset of a space whose next
    character is known and starts no block, with no inline markup open before it; a sentence
    end is preferred, near ``PARA_CHARS`` characters in.  -1 when there is none yet."""
    lo, hi = start + PARA_CHARS // 2, min(stop, start + PARA_CHARS)

    def good(cut: int) -> bool:
        after = text[cut + 1:cut + 2]
        return bool(after) and after not in _BLOCK_START and _balanced(text[start:cut])

    for sep in (". ", " "):
        at = hi
        for _ in range(40):  # backwards from PARA_CHARS
            at = text.rfind(sep, lo, at)
            if at < 0:
                break
            if good(at + len(sep) - 1):
                return at + len(sep) - 1
    at = hi
    for _ in range(200):     # nothing before it: the first good space after
        at = text.find(" ", at, stop)
        if at < 0:
            break
        if good(at):
            return at
        at += 1
    return -1


def _scan(text: str, base: int, state: _State) -> tuple[list[tuple[Chunk, int, _State]],
                                                       Chunk | None]:
    """Chunks completed in ``text`` from ``base`` (each with the offset and state where the
    next one starts) and the unfinished tail."""
    done: list[tuple[Chunk, int, _State]] = []
    fence, fence_line = state.fence, state.fence_line
    table_head, in_list = state.table_head, state.in_list
    cur = state                    # flags of the chunk being built
    start: int | None = base if (fence or table_head or cur.join) else None
    end = base                     # end of the chunk's last non-blank line
    fence_lines = table_rows = items = 0
    pending_blank = False
    prev_line = ""
    pos, length = base, len(text)

    def emit(stop: int, next_pos: int, nxt: _State, fence_open: bool = False,
             table_open: bool = False) -> None:
        nonlocal start, cur
        assert start is not None
        chunk = Chunk(text[start:stop].rstrip("\n"), join=cur.join,
                      prefix=cur.fence_line if cur.fence else cur.table_head,
                      fence_cont=cur.fence is not None, fence_open=fence_open,
                      table_cont=bool(cur.table_head), table_open=table_open)
        if chunk.text.strip() or chunk.prefix:
            done.append((chunk, next_pos, nxt))
        cur, start = nxt, None

    while pos <= length:
        nl = text.find("\n", pos)
        complete = nl >= 0
        line_end = nl if complete else length
        line = text[pos:line_end]
        if fence is not None:
            if _closes(line, fence) and (complete or len(line.strip()) >= len(fence)):
                fence, fence_line = None, ""
            elif complete and start is not None and fence_lines >= CODE_LINES and pos > start \
                    and line.strip():
                emit(pos, pos, replace(_State(), join=True, fence=fence, fence_line=fence_line,
                                       in_list=in_list, piece_start=False), fence_open=True)
                start, fence_lines = pos, 0
            if start is None:
                start = pos
            fence_lines += 1
            end = line_end
            prev_line = ""
        elif not line.strip():
            pending_blank = start is not None
            prev_line = ""
        else:
            if start is not None and pending_blank and not line[:1].isspace():
                emit(end, pos, _State())      # a new piece
                table_head, in_list, items = "", False, 0
            elif start is not None and pos > start and (complete or len(line) > 3):
                if in_list and _is_item(line) and (items >= LIST_ITEMS
                                                   or pos - start > PARA_CHARS):
                    emit(end, pos, replace(_State(), join=True, in_list=True,
                                           piece_start=False))
                    items = 0
                elif table_head and table_rows >= TABLE_ROWS:
                    emit(end, pos, replace(_State(), join=True, table_head=table_head,
                                           piece_start=False), table_open=True)
                    start, table_rows = pos, 0
                elif not table_head and pos - start > PARA_CHARS \
                        and line[:1] not in _BLOCK_START and _balanced(text[start:end]):
                    # many short lines of one paragraph: cut at a line start
                    emit(end, pos, replace(_State(), join=True, in_list=in_list,
                                           piece_start=False))
            pending_blank = False
            if start is None:
                start = pos
            m = _FENCE.match(line)
            if m and complete:
                fence, fence_line, fence_lines = m.group(1), line + "\n", 0
            elif table_head:
                table_rows += 1
            elif complete and "|" in prev_line and "|" in line and _TABLE_DELIM.match(line):
                table_head, table_rows = prev_line + "\n" + line + "\n", 0
            if _is_item(line):
                in_list, items = True, items + 1
            end = line_end
            # A long paragraph line is cut at spaces (repeatedly, if much arrived at once).
            if not table_head and fence is None:
                while start is not None and end - start > PARA_CHARS:
                    cut = _para_cut(text, max(start, pos), end)
                    if cut < 0:
                        break
                    emit(cut, cut + 1, replace(_State(), join=True, in_list=in_list,
                                               piece_start=False))
                    start = cut + 1
            prev_line = line
        if not complete:
            break
        pos = nl + 1
    tail = None
    if start is not None and start < max(end, length):
        body = text[start:end] if end > start else ""
        if body.strip():
            tail = Chunk(body, join=cur.join, prefix=cur.fence_line if cur.fence else
                         cur.table_head, fence_cont=cur.fence is not None,
                         table_cont=bool(cur.table_head))
    return done, tail
