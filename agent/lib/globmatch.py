"""Glob matching that no pattern can slow down: ``*`` any run of characters (``/`` and
newlines included), ``?`` exactly one, everything else literal.

Used by the permission rules and by registry manifests, whose patterns are untrusted and whose
subjects can be long (a shell command can be tens of kilobytes).  The pattern is cut at its
stars into fixed-length chunks, and each chunk is found by a forward scan from where the
previous one ended.  With ``*`` as the only variable-length element, taking the leftmost place
of each chunk is always right, so nothing is ever retried: the work is one scan of the
subject per chunk, in C (``str.find``, or a regex without any repetition operator when the
chunk holds ``?``).  A regex translation, by contrast, backtracks catastrophically on
``*a*a*a...b``.
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=1024)
def _chunk_regex(chunk: str) -> re.Pattern[str]:
    # Literal characters and "." only: no repetition, no alternation, nothing to backtrack.
    return re.compile("".join("." if c == "?" else re.escape(c) for c in chunk), re.DOTALL)


def _matches_at(chunk: str, subject: str, at: int) -> bool:
    """``chunk`` (no ``*``) matches ``subject`` exactly at index ``at``."""
    if at < 0 or at + len(chunk) > len(subject):
        return False
    if "?" not in chunk:
        return subject.startswith(chunk, at)
    return all(p == "?" or p == subject[at + i] for i, p in enumerate(chunk))


def _find(chunk: str, subject: str, start: int, end: int) -> int:
    """The leftmost index >= ``start`` where ``chunk`` matches, ending by ``end``; or -1."""
    if "?" not in chunk:
        return subject.find(chunk, start, end)
    found = _chunk_regex(chunk).search(subject, start, end)
    return found.start() if found else -1


def glob_match(pattern: str, subject: str) -> bool:
    """Whether ``pattern`` matches the whole of ``subject`` (case-sensitive)."""
    chunks = pattern.split("*")
    if len(chunks) == 1:
        return len(pattern) == len(subject) and _matches_at(pattern, subject, 0)
    head, *middle, tail = chunks
    if len(head) + len(tail) > len(subject):
        return False
    if not _matches_at(head, subject, 0):
        return False
    end = len(subject) - len(tail)
    if not _matches_at(tail, subject, end):
        return False
    pos = len(head)
    for chunk in middle:
        if not chunk:
            continue
        at = _find(chunk, subject, pos, end)
        if at < 0:
            return False
        pos = at + len(chunk)
    return True
