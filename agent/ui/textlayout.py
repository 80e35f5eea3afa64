"""Wrapping plain ASCII text without measuring it character by character.

urwid's :class:`~urwid.StandardTextLayout` measures every line through ``wcwidth``'s grapheme
segmenter, so a streaming 1,000-character chunk costs about 1.5 ms per layout and most of a
frame.  Printable ASCII has one column per character, so :class:`FastLayout` wraps such text by
offsets alone and produces exactly the segments the standard layout would (a property test
compares both on random text).  Anything else (wide, combining or control characters, tabs, the
clip and ellipsis modes) goes to the standard layout unchanged.
"""

from __future__ import annotations

from typing import Any

import urwid
from urwid import text_layout


def _plain_ascii(text: str) -> bool:
    # str.isprintable() is False for "\n": strip the line ends first (ASCII only: a printable
    # non-ASCII character may be wide or combining).
    return text.isascii() and text.replace("\n", "").isprintable()


class FastLayout(urwid.StandardTextLayout):
    """The standard layout, with a column-per-character path for printable ASCII text."""

    def calculate_text_segments(self, text: Any, width: int, wrap: Any) -> Any:
        if (not isinstance(text, str) or width < 1 or wrap not in ("space", "any")
                or not _plain_ascii(text)):
            segments = super().calculate_text_segments(text, width, wrap)
            if isinstance(text, str) and width >= 1 and wrap in ("space", "any"):
                return _fit_lines(text, width, segments)
            return segments
        return _ascii_segments(text, width, wrap == "space")


def _fit_lines(text: str, width: int, segments: list[list[tuple[int, ...]]]
               ) -> list[list[tuple[int, ...]]]:
    """The standard layout's lines, each re-split where the canvas would find it wider than
    ``width``.

    The standard layout measures a line piece by piece, the canvas measures the whole line
    (``calc_width``, by grapheme): a zero-width character (a control, U+200B, a soft hyphen)
    between a letter and a spacing mark such as U+1C24 makes the whole line one column wider
    than its pieces, and urwid raises ``CanvasError`` while drawing: model text could stop the
    screen.  Such a line is cut again by the canvas's own measure."""
    from urwid.str_util import calc_width

    fitted: list[list[tuple[int, ...]]] = []
    for line in segments:
        # (columns, start, end): a run of the text; (0, offset): where the line ended; any
        # other segment (inserted spaces or bytes, a tab's) leaves the line as it is
        ranges = [seg for seg in line if len(seg) == 3 and isinstance(seg[2], int)]
        marks = [seg for seg in line if len(seg) == 2]
        if ranges and len(ranges) + len(marks) == len(line) and not any(
                mark[0] for mark in marks) and all(
                a[2] == b[1] for a, b in zip(ranges, ranges[1:], strict=False)):
            start, end = ranges[0][1], ranges[-1][2]
            if calc_width(text, start, end) > width:
                cut = _cut_by_width(text, start, end, width, calc_width)
                cut[-1].extend(marks)
                fitted.extend(cut)
                continue
        fitted.append(line)
    return fitted


def _cut_by_width(text: str, start: int, end: int, width: int, calc_width: Any
                  ) -> list[list[tuple[int, ...]]]:
    """``text[start:end]`` in lines the canvas measures at most ``width`` wide (a single
    character wider than that still gets a line of its own, as the standard layout gives it;
    a run that measures nothing on its own is left out, as a wrap leaves out a space)."""
    lines: list[list[tuple[int, ...]]] = []
    pos = start
    while pos < end:
        stop = pos + 1
        while stop < end and calc_width(text, pos, stop + 1) <= width:
            stop += 1
        columns = calc_width(text, pos, stop)
        if columns:
            lines.append([(columns, pos, stop)])
        pos = stop
    return lines or [[(0, end)]]


def _ascii_segments(text: str, width: int, at_spaces: bool) -> list[list[tuple[int, ...]]]:
    """``StandardTextLayout.calculate_text_segments`` for printable ASCII (step for step the
    same decisions, with a character's width always 1)."""
    segments: list[list[tuple[int, ...]]] = []
    length = len(text)
    idx = 0
    nl_pos = -1
    while idx <= length:
        if nl_pos < idx:
            nl_pos = text.find("\n", idx)
            if nl_pos < 0:
                nl_pos = length
        if nl_pos - idx <= width:  # the rest of the line fits
            cols = nl_pos - idx
            segments.append([(cols, idx, nl_pos), (0, nl_pos)] if cols else [(0, nl_pos)])
            idx = nl_pos + 1
            continue
        pos = idx + width
        if not at_spaces:
            segments.append([(width, idx, pos)])
            idx = pos
            continue
        if text[pos] == " ":  # a space right at the edge
            segments.append([(width, idx, pos), (0, pos)])
            idx = pos + 1
            continue
        space = text.rfind(" ", idx, pos)
        if space >= 0:  # break at the last space that fits
            cols = space - idx
            segments.append([(cols, idx, space), (0, space)] if cols else [(0, space)])
            idx = space + 1
            continue
        # A word longer than the line: the standard layout first pulls the previous line's
        # removed space back in, when that fits more of the word on the line above.
        last = segments[-1] if segments else None
        if last and (len(last) == 2 or (len(last) == 1 and len(last[0]) == 2)):
            if len(last) == 1:
                (h_sc, h_off), = last
                p_sc, p_off = 0, h_off
            else:
                (p_sc, p_off, _), (h_sc, h_off) = last
            joined = min(p_off + width, nl_pos)
            if p_sc < width and h_sc == 0 and text[h_off] == " " and joined > h_off:
                del segments[-1]
                segments.append([(joined - p_off, p_off, joined)])
                idx = joined
                if idx < length and text[idx] in " \n":
                    segments[-1].append((0, idx))
                    idx += 1
                continue
        segments.append([(width, idx, pos)])
        idx = pos
    return segments


def install() -> None:
    """Make :class:`FastLayout` the layout of every ``urwid.Text`` created from now on (plugin
    renderers' too: they do not pass a layout, and urwid reads this default at construction)."""
    if not isinstance(text_layout.default_layout, FastLayout):
        text_layout.default_layout = FastLayout()
