"""Cutting a markdown text into top-level pieces that render independently.

A piece ends at a blank line outside a code fence when the next line starts in column 0 (an
indented line continues a list item or a paragraph).  Once the text after a blank line has
begun, the piece before it can never change, so a streaming answer is shown as finished
pieces (each rendered once) plus one growing piece: a frame costs the same for a 5,000-token
answer as for a one-liner.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


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
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
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
