"""Text shown to a person exactly as it will run: characters a terminal hides or reorders
are spelled out, and terminal control sequences are removed from text a program prints.

A command, path or diff can carry characters that change what a person sees without
changing what runs: bidi overrides (Trojan Source: ``U+202E`` makes a terminal draw the
rest of the line reversed), zero-width spaces and joiners, control characters (a carriage
return draws the next text over the line, an escape starts a terminal command), and spaces
that look like a space but are part of a word to the shell.  :func:`visible` replaces each
with ``⟨U+XXXX⟩`` so what is on screen is what runs; :func:`hidden_count` says how many there
were, so a dialog can say so.

:func:`strip_controls` is for text that is printed for a terminal to interpret (the model's
answer in headless text mode): every escape sequence and control character is removed, so a
model's text cannot set the clipboard (OSC 52), retitle or clear the screen.
"""

from __future__ import annotations

import re
import unicodedata

#: Characters shown as they are: a line break and a tab lay text out, they hide nothing.
_LAYOUT = frozenset("\n\t")

#: Invisible characters whose Unicode category is a letter or a mark, so the category
#: test below does not catch them: Hangul fillers, the Mongolian vowel separator and the
#: Braille blank draw as nothing, variation selectors change a glyph without a glyph.
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u180e\u2800")


def _hidden(ch: str) -> bool:
    if ch in _LAYOUT:
        return False
    if ch < " " or "\x7f" <= ch <= "\x9f":
        return True
    if ch.isascii():
        return False
    if ch in _INVISIBLE_LETTERS or "\ufe00" <= ch <= "\ufe0f" \
            or "\U000e0100" <= ch <= "\U000e01ef":
        return True
    # Cf: format characters (bidi controls, zero-width space/joiners, word joiner, BOM,
    # tags); Zl/Zp: line and paragraph separators; Zs other than the ASCII space: spaces a
    # person reads as a word break where the shell sees one word; Co/Cn/Cs: nothing to draw.
    return unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Zs", "Co", "Cn", "Cs")


def _spell(ch: str) -> str:
    return f"⟨U+{ord(ch):04X}⟩"


def visible(text: str) -> str:
    """``text`` with every hidden, reordering or control character (but a line break and a
    tab) written as ``⟨U+XXXX⟩``."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_spell(ch) if _hidden(ch) else ch for ch in text)


def hidden_count(text: str) -> int:
    """How many characters :func:`visible` spells out in ``text``."""
    if text.isascii() and text.isprintable():
        return 0
    return sum(1 for ch in text if _hidden(ch))


# ESC or the 8-bit CSI/OSC/DCS introducers, then what the sequence holds (see ECMA-48):
# a string sequence (OSC, DCS, SOS, PM, APC) up to its terminator (BEL or ST) or the end,
# a control sequence (CSI) up to its final byte, or one character after ESC.
_SEQUENCE = re.compile(
    r"(?:\x1b[\]P X^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (line breaks and
    tabs kept; a CR LF becomes a line break).  Stateless: a sequence cut between two calls
    loses its introducer in the first, so what is left of it in the second is plain text."""
    if text.isascii() and text.isprintable():
        return text
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub("", _SEQUENCE.sub("", text))
