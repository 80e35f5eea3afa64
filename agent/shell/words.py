"""Quote removal as the shell does it: ``$'\\x72m'``, ``r\\m``, ``"a\\"b"``.

:mod:`agent.shell.parse` cuts words out of the syntax tree; these turn their source text into the
value the program receives.
"""

from __future__ import annotations

import re

_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_escape(text: str, i: int) -> tuple[str, int]:
    """Decode the escape at ``text[i]`` (after the backslash): (char, characters used)."""
    c = text[i]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], 1
    if c == "x":
        digits = re.match(r"[0-9a-fA-F]{1,2}", text[i + 1:i + 3])
        if digits:
            return chr(int(digits.group(), 16)), 1 + len(digits.group())
    if c in "uU":
        width = 4 if c == "u" else 8
        digits = re.match(f"[0-9a-fA-F]{{1,{width}}}", text[i + 1:i + 1 + width])
        if digits:
            code = int(digits.group(), 16)
            return (chr(code) if code <= 0x10FFFF else "?"), 1 + len(digits.group())
    if c == "c" and i + 1 < len(text):
        return chr(ord(text[i + 1]) & 0x1F), 2
    digits = re.match(r"[0-7]{1,3}", text[i:i + 3])
    if digits:
        return chr(int(digits.group(), 8) & 0xFF), len(digits.group())
    return "\\" + c, 1


def decode_ansi_c(body: str) -> str:
    """The value of ``$'body'``."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            char, used = _ansi_escape(body, i + 1)
            out.append(char)
            i += 1 + used
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def unescape_bare(text: str) -> str:
    r"""Quote removal for an unquoted word: ``\x`` is ``x``, ``\<newline>`` is nothing."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def unescape_double(text: str) -> str:
    r"""Quote removal inside ``"..."``: only ``\$ \` \" \\ \<newline>`` are escapes."""
    return _drop_backslashes(text, '$`"\\\n')


def _drop_backslashes(text: str, escapable: str) -> str:
    """``text`` with each backslash before one of ``escapable`` removed (a backslash-newline
    is removed whole)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in escapable:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def continuation_at(data: bytes, newline: int) -> bool:
    """True when the newline at ``data[newline]`` ends a line continuation: an odd run of
    backslashes before it (``\\\\<newline>`` is an escaped backslash, then a newline)."""
    run = 0
    i = newline - 1
    while i >= 0 and data[i] == 0x5C:
        run += 1
        i -= 1
    return run % 2 == 1


def join_continuations(data: bytes, protected: list[tuple[int, int]]) -> bytes:
    r"""``data`` with every ``\<newline>`` bash removes before it reads words: all of them
    outside ``protected`` byte ranges (single-quoted and ``$'...'`` strings, comments, the
    bodies of quoted here-documents), so ``r\<newline>m`` is ``rm``."""
    out = bytearray()
    start = 0
    index = data.find(b"\\\n")
    while index >= 0:
        newline = index + 1
        if continuation_at(data, newline) and not any(
                lo <= index < hi for lo, hi in protected):
            out += data[start:index]
            start = newline + 1
        index = data.find(b"\\\n", newline)
    out += data[start:]
    return bytes(out)


def backtick_body(text: str) -> str:
    r"""The script inside ```...``` as bash reads it: ``\\``, ``\``` and ``\$`` lose their
    backslash (so nested backticks become real ones); any other backslash stays."""
    return _drop_backslashes(text, "\\`$")


def loose_backticks(text: str) -> list[str] | None:
    """The bodies of backtick substitutions in ``text`` that the grammar left inside a
    plain word (``${x:-`cmd`}``); None when a backtick is left open."""
    bodies: list[str] = []
    i = 0
    start = -1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            if start < 0:
                start = i + 1
            else:
                bodies.append(text[start:i])
                start = -1
        i += 1
    return None if start >= 0 else bodies
