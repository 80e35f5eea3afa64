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
            return super().calculate_text_segments(text, width, wrap)
        return _ascii_segments(text, width, wrap == "space")


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
