"""Markdown files that start with a ``---`` frontmatter block (skills, custom commands).

The block is YAML, as in the skill and command files of other agents::

    ---
    name: review
    description: |
      Review a change for correctness first,
      then for style.
    ---
    The body, everything after the closing line.

Only scalar values are kept (strings, numbers, booleans, as text); lists and nested tables are
left out of ``meta``.  A block of plain one-line ``key: value`` pairs is read without loading
the YAML parser (most files, and the cheap path at startup); anything else — block scalars
(``|``, ``>``), continuation lines, flow collections — goes through PyYAML's safe loader.
Frontmatter that is not valid YAML is reported in ``problem`` with its line, never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_KEY_VALUE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*?)[ \t]*$")
#: A value that starts YAML syntax the flat reader does not speak: a block scalar (``|``,
#: ``>``), a flow collection, an anchor, alias or tag, or a reserved character.
_YAML_VALUE = re.compile(r"^[|>\[{&*!%@`]")


@dataclass(frozen=True)
class Document:
    """A parsed file: ``meta`` holds the frontmatter's scalar keys (empty when the file has
    no frontmatter), ``body`` the text after it, untrimmed; ``problem`` says why the
    frontmatter could not be read (then ``meta`` is empty)."""

    meta: dict[str, str] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False
    problem: str = ""


def unquote(value: str) -> str:
    """``"x"`` or ``'x'`` → ``x``; anything else unchanged."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse(text: str, *, lenient: bool = False) -> Document:
    """Split ``text`` into frontmatter keys and body.

    The frontmatter is the block between a first line ``---`` and the next line ``---``.
    Without both lines the whole text is the body.  A repeated key keeps its last value.
    ``lenient`` reads frontmatter that is not valid YAML as Claude Code does: each
    ``key: value`` line as text (``argument-hint: [pr-number] [focus]`` is two flow
    sequences in a row to YAML, an error), continuation lines ignored.
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
    block = [raw.rstrip("\r\n") for raw in lines[1:end]]
    body = "".join(lines[end + 1:])
    flat = _read_flat(block)
    if flat is not None:
        return Document(meta=flat, body=body, has_frontmatter=True)
    meta, problem = _read_yaml("\n".join(block))
    if problem and lenient:
        return Document(meta=_read_lines(block), body=body, has_frontmatter=True)
    return Document(meta=meta, body=body, has_frontmatter=True, problem=problem)


def _read_lines(block: list[str]) -> dict[str, str]:
    """Every top-level ``key: value`` line, its value as written (quotes removed)."""
    meta: dict[str, str] = {}
    for line in block:
        m = _KEY_VALUE.match(line)
        if m and not line[:1].isspace():
            meta[m.group(1)] = unquote(m.group(2))
    return meta


def _read_flat(block: list[str]) -> dict[str, str] | None:
    """The keys of a block made only of one-line ``key: value`` pairs, or None."""
    meta: dict[str, str] = {}
    for line in block:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY_VALUE.match(line)
        if match is None or not match.group(2) or _YAML_VALUE.match(match.group(2)):
            return None
        meta[match.group(1)] = unquote(match.group(2))
    return meta


def _read_yaml(source: str) -> tuple[dict[str, str], str]:
    import yaml  # only for the files that need it: ~25 ms to import

    try:
        data: Any = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return {}, f"frontmatter is not valid YAML{where}: {reason}"
    if data is None:
        return {}, ""
    if not isinstance(data, dict):
        return {}, "frontmatter is not a table of keys and values"
    meta: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            meta[str(key)] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            meta[str(key)] = str(value)
    return meta, ""
