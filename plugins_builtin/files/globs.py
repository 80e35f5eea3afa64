"""Glob patterns over relative posix paths, translated to anchored regular expressions.

Syntax: ``*`` (any run of characters except ``/``), ``?`` (one character except ``/``),
``**`` as a whole segment (any number of directories, zero included), ``[abc]``/``[!abc]``
classes, ``{a,b}`` alternatives (nestable) and ``\\`` escapes.  ``*`` matches dotfiles too.

Two flavours: :func:`path_glob` matches the whole relative path (``glob``); with
:func:`file_glob` a pattern without ``/`` matches the file name in any directory, like
ripgrep's ``--glob`` (``grep``'s ``include``).
"""

from __future__ import annotations

import re
from functools import lru_cache

META = set("*?[{\\")


def _class(pattern: str, i: int) -> tuple[str, int] | None:
    """Translate a ``[...]`` class starting at ``pattern[i] == "["``; None if unclosed."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    if negate:
        j += 1
    start = j
    if j < len(pattern) and pattern[j] == "]":  # a leading ] is literal
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    if j >= len(pattern):
        return None
    body = pattern[start:j].replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
    body = body.replace("/", "")  # a class never matches a separator
    if not body:
        return None
    return (f"[^/{body}]" if negate else f"[{body}]"), j + 1


def _split_alternatives(body: str) -> list[str]:
    """Split the inside of ``{...}`` on top-level commas."""
    parts, depth, current, i = [], 0, [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            current.append(body[i:i + 2])
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _closing_brace(pattern: str, i: int) -> int:
    depth = 0
    j = i
    while j < len(pattern):
        ch = pattern[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def translate(pattern: str) -> str:
    """The regex (unanchored source) for a glob matched against a whole relative path."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                while j < n and pattern[j] == "*":
                    j += 1
                if at_start and j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    i = j + 1
                    continue
                if at_start and j == n:
                    out.append(".*")  # trailing "**": everything below
                    i = j
                    continue
                out.append("[^/]*")  # "**" inside a segment is just "*"
                i = j
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            cls = _class(pattern, i)
            if cls is None:
                out.append(re.escape(ch))
            else:
                out.append(cls[0])
                i = cls[1]
                continue
        elif ch == "{":
            end = _closing_brace(pattern, i)
            alternatives = _split_alternatives(pattern[i + 1:end]) if end > 0 else []
            if end > 0 and len(alternatives) > 1:
                out.append("(?:" + "|".join(translate(a) for a in alternatives) + ")")
                i = end + 1
                continue
            out.append(re.escape(ch))
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _clean(pattern: str) -> str:
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


@lru_cache(maxsize=256)
def path_glob(pattern: str) -> re.Pattern[str]:
    """A glob matched against the whole relative path (``src/**/*.py``)."""
    return re.compile(translate(_clean(pattern).lstrip("/")), re.DOTALL)


@lru_cache(maxsize=256)
def file_glob(pattern: str) -> re.Pattern[str]:
    """ripgrep-style: without a ``/`` the glob matches the file name in any directory."""
    pattern = _clean(pattern)
    if pattern.startswith("/"):
        return re.compile(translate(pattern.lstrip("/")), re.DOTALL)
    if "/" not in pattern.rstrip("/"):
        return re.compile("(?:.*/)?" + translate(pattern), re.DOTALL)
    return re.compile(translate(pattern), re.DOTALL)


def static_prefix(pattern: str) -> str:
    """The leading directories of ``pattern`` that contain no glob syntax (a walk start)."""
    segments = _clean(pattern).lstrip("/").split("/")
    fixed: list[str] = []
    for segment in segments[:-1]:
        if any(ch in META for ch in segment) or segment in ("", ".", ".."):
            break
        fixed.append(segment)
    return "/".join(fixed)
