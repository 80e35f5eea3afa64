"""Glob patterns for registry manifests: ``*`` any run of characters, ``?`` one character.

Matching is the core's :func:`agent.lib.globmatch.glob_match`, the same as the permission rules
use: linear in the subject per chunk, no pattern can make it backtrack.

Patterns are never regular expressions.  A pattern using regex-only syntax is refused when
the manifest is installed, so a manifest written for a regex engine fails loudly instead of
silently matching nothing.
"""

from __future__ import annotations

from agent.lib.globmatch import glob_match

#: Longest pattern accepted (characters).
MAX_PATTERN = 200

#: Characters with a meaning in regular expressions but none in these globs.
REGEX_ONLY = frozenset("^$+|\\()[]{}")


def pattern_problem(pattern: object) -> str | None:
    """Why ``pattern`` cannot be used, or None when it is a valid glob."""
    if not isinstance(pattern, str):
        return "must be a string"
    if not pattern.strip():
        return "must not be empty"
    if len(pattern) > MAX_PATTERN:
        return f"is {len(pattern)} characters long; the limit is {MAX_PATTERN}"
    if any(ord(c) < 32 or ord(c) == 127 for c in pattern):
        return "contains control characters"
    regexy = list(dict.fromkeys(c for c in pattern if c in REGEX_ONLY))
    if regexy:
        return (f"uses regular-expression syntax ({' '.join(regexy)}); patterns are globs: "
                "* matches any characters, ? exactly one (write ? where one of these "
                "characters must match)")
    return None


#: Characters that make a read a file glob (grep's include, the glob tool's pattern).
GLOB_CHARS = frozenset("*?[{")

_STAR, _ONE = object(), object()


def _tokens(pattern: str, *, file_glob: bool) -> list[object]:
    """A pattern as literal characters, ``_ONE`` (one character) and ``_STAR`` (any run).

    A file glob is widened to what it could match at most: ``**``, ``*`` and ``{a,b}`` become
    any run (``/`` included), ``?`` and ``[...]`` one character.  Widening only ever finds
    more overlaps, never fewer, so a rule cannot be dodged through a glob's spelling.
    """
    out: list[object] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            if not out or out[-1] is not _STAR:
                out.append(_STAR)
        elif c == "?":
            out.append(_ONE)
        elif file_glob and c == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(c)
            else:
                out.append(_ONE)
                i = end
        elif file_glob and c == "{":
            end = pattern.find("}", i + 1)
            if end == -1:
                out.append(c)
            else:
                if not out or out[-1] is not _STAR:
                    out.append(_STAR)
                i = end
        else:
            out.append(c)
        i += 1
    return out


def globs_overlap(pattern: str, file_glob: str) -> bool:
    """True when some path could match both the manifest ``pattern`` and ``file_glob``.

    Both sides are compared as written (callers lower-case them).  A file glob without a
    ``/`` matches in every directory, as ripgrep's ``--glob`` does, so it is taken as
    ``*/glob`` or ``glob``.  The search walks pairs of positions, so it costs at most
    ``len(pattern) * len(file_glob)`` steps.
    """
    left = _tokens(pattern, file_glob=False)
    text = file_glob[2:] if file_glob.startswith("./") else file_glob
    right = _tokens(text, file_glob=True)
    if "/" not in text.rstrip("/") and (not right or right[0] is not _STAR):
        right = [_STAR, *right]  # "*.env" also matches "secrets/x.env"
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(left) and j == len(right):
            return True
        a = left[i] if i < len(left) else None
        b = right[j] if j < len(right) else None
        if a is _STAR:
            todo.append((i + 1, j))  # the run is empty
            if b is not None:
                todo.append((i, j + 1))  # the run takes what the other side makes
        if b is _STAR:
            todo.append((i, j + 1))
            if a is not None:
                todo.append((i + 1, j))
        if a is not None and b is not None and a is not _STAR and b is not _STAR:
            if a is _ONE or b is _ONE or a == b:
                todo.append((i + 1, j + 1))
    return False


__all__ = ["GLOB_CHARS", "MAX_PATTERN", "REGEX_ONLY", "glob_match", "globs_overlap",
           "pattern_problem"]
