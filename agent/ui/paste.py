"""Bracketed paste read as one event, and a large paste folded in the prompt.

urwid reads the terminal at most 64 KB at a time (a pseudo-terminal hands over a few KB per
read) and turns every byte into a key of its own.  A paste of a megabyte was a million keys,
and one that spanned reads arrived in pieces, each of which looked like a paste of its own
and restarted the collection: everything before the last piece was lost.  The screen class
made by :func:`paste_screen` takes what lies between the terminal's ``ESC [200~`` and
``ESC [201~`` markers out of the input before urwid parses it, however many reads it spans,
and hands it over as one key: ``begin paste``, a :class:`Pasted` string, ``end paste``.

A paste longer than :data:`FOLD_CHARS` characters (or :data:`FOLD_LINES` lines) is not laid
out in the prompt: the prompt shows ``[pasted 1,000,030 chars]`` and keeps the text beside
it (:class:`Folds`); submitting sends the whole text, and the expand key puts it in the
prompt for editing.
"""

from __future__ import annotations

import re
from typing import Any

BEGIN = b"\x1b[200~"
END = b"\x1b[201~"

#: A paste is folded from this many characters, or lines, on.
FOLD_CHARS = 2000
FOLD_LINES = 25


class Pasted(str):
    """The whole text of one bracketed paste, as a single key."""

    __slots__ = ()


class PasteReader:
    """Splits raw input codes into stretches of ordinary input and whole pastes, keeping a
    paste that is not finished yet across reads."""

    def __init__(self) -> None:
        self.pending: bytearray | None = None  # inside a paste: what arrived so far

    def split(self, codes: list[int]) -> list[list[int] | Pasted] | None:
        """The input in order: lists of codes for urwid to parse, :class:`Pasted` texts.
        None when there is no paste in it at all (the common case: parse as usual)."""
        if self.pending is None and 27 not in codes:
            return None
        try:
            data = bytes(codes)
        except ValueError:  # a code above 255 (a curses key): no paste to find here
            return None
        if self.pending is None and BEGIN not in data:
            return None
        out: list[list[int] | Pasted] = []
        while data:
            if self.pending is None:
                at = data.find(BEGIN)
                if at < 0:
                    out.append(list(data))
                    break
                if at:
                    out.append(list(data[:at]))
                self.pending = bytearray()
                data = data[at + len(BEGIN):]
                continue
            # Search from just before the new bytes: the end marker may straddle two reads.
            start = max(0, len(self.pending) - len(END) + 1)
            self.pending += data
            end = self.pending.find(END, start)
            if end < 0:
                break
            rest = bytes(self.pending[end + len(END):])
            out.append(Pasted(self.pending[:end].decode("utf-8", "replace")))
            self.pending = None
            data = rest
        return out


def paste_screen(base: type) -> type:
    """A subclass of the urwid raw screen class ``base`` that reads bracketed pastes whole."""

    class PasteScreen(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.paste_reader = PasteReader()

        def parse_input(self, event_loop: Any, callback: Any, codes: list[int],
                        wait_for_more: bool = True) -> Any:
            pieces = self.paste_reader.split(codes) if callback is not None else None
            if pieces is None:
                return super().parse_input(event_loop, callback, codes, wait_for_more)
            for piece in pieces:
                if isinstance(piece, Pasted):
                    callback(["begin paste", piece, "end paste"], [])
                elif piece:
                    super().parse_input(event_loop, callback, piece, wait_for_more)
            return None

    PasteScreen.__name__ = PasteScreen.__qualname__ = "Paste" + base.__name__
    return PasteScreen


def fold_label(text: str) -> str:
    """What the prompt shows for a folded paste: ``[pasted 1,000,030 chars]``."""
    return f"[pasted {len(text):,} chars]"


def should_fold(text: str) -> bool:
    return len(text) >= FOLD_CHARS or text.count("\n") >= FOLD_LINES


class Folds:
    """The folded pastes of one prompt: each label, and the text it stands for."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, text: str) -> str:
        """Keep ``text``; returns the label to put in the prompt (numbered when two
        pastes of one size would read alike)."""
        label = fold_label(text)
        taken = {lbl for lbl, _ in self.items}
        n = 2
        base = label
        while label in taken:
            label = f"{base[:-1]} #{n}]"
            n += 1
        self.items.append((label, text))
        return label

    def expand(self, prompt: str) -> str:
        """``prompt`` with every label still in it replaced by its text (a label the person
        edited away is dropped with its paste)."""
        present = [(label, text) for label, text in self.items if label in prompt]
        if not present:
            return prompt
        texts = dict(present)
        pattern = re.compile("|".join(re.escape(label) for label, _ in present))
        return pattern.sub(lambda m: texts.pop(m.group(), m.group()), prompt)

    def clear(self) -> None:
        self.items = []
