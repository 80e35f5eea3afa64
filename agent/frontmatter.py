"""Markdown files that start with a ``---`` frontmatter block (skills, custom commands).

Only flat ``key: value`` lines are read: single-line values, surrounding quotes stripped.
This is deliberately not YAML: lists, nested tables and multi-line values are ignored rather
than interpreted, so a file means the same thing to every reader and parsing cannot fail::

    ---
    name: review
    description: "Review a change for correctness first"
    ---
    The body, everything after the closing line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_KEY_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*?)[ \t]*$")


@dataclass(frozen=True)
class Document:
    """A parsed file: ``meta`` holds the frontmatter's flat keys (empty when the file has no
    frontmatter), ``body`` the text after it, untrimmed."""

    meta: dict[str, str] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False


def unquote(value: str) -> str:
    """``"x"`` or ``'x'`` → ``x``; anything else unchanged."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse(text: str) -> Document:
    """Split ``text`` into frontmatter keys and body.

    The frontmatter is the block between a first line ``---`` and the next line ``---``.
    Without both lines the whole text is the body.  Indented lines, list items, comments
    and keys with an empty value (the start of a nested block) are skipped; a repeated key
    keeps its last value.
    """
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return Document(body=text)
    for end in range(1, len(lines)):
        if lines[end].rstrip("\r\n").rstrip() == "---":
            break
    else:
        return Document(body=text)
    meta: dict[str, str] = {}
    for raw in lines[1:end]:
        line = raw.rstrip("\r\n")
        if not line.strip() or line[0] in " \t-#":
            continue
        match = _KEY_VALUE.match(line)
        if match is None:
            continue
        key, value = match.group(1), unquote(match.group(2))
        if value:
            meta[key] = value
    return Document(meta=meta, body="".join(lines[end + 1:]), has_frontmatter=True)
