"""Glob patterns for registry manifests: ``*`` any run of characters, ``?`` one character.

Matching is the core's :func:`agent.globmatch.glob_match`, the same as the permission rules
use: linear in the subject per chunk, no pattern can make it backtrack.

Patterns are never regular expressions.  A pattern using regex-only syntax is refused when
the manifest is installed, so a manifest written for a regex engine fails loudly instead of
silently matching nothing.
"""

from __future__ import annotations

from agent.globmatch import glob_match

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


__all__ = ["MAX_PATTERN", "REGEX_ONLY", "glob_match", "pattern_problem"]
