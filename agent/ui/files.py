"""The ``@`` file picker's index: workspace paths (directories too), ignore-aware, ranked.

The index is built in a worker thread on the first ``@`` and refreshed in the background when
it is older than :data:`FRESH_SECONDS`, so files created during the session show up and typing
never waits for a walk.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agent.lib.walk import walk_entries

MAX_FILES = 5_000
FRESH_SECONDS = 15.0
SHOWN = 8

#: ``@`` at the start of the text or after whitespace, up to the cursor, no whitespace inside.
_TOKEN = re.compile(r"(?:^|(?<=\s))@(\S*)$")


def at_token(text: str, cursor: int) -> tuple[int, str] | None:
    """``(start, query)`` of the ``@path`` token ending at ``cursor``, or None."""
    m = _TOKEN.search(text[:cursor])
    if m is None:
        return None
    return m.start(), m.group(1)


def rank(paths: list[str], query: str, limit: int = SHOWN) -> list[str]:
    """Case-insensitive: prefix matches (of the path or its last part) before substring
    matches; ties by shorter path, then alphabetically."""
    q = query.lower()
    prefix: list[str] = []
    inner: list[str] = []
    for path in paths:
        low = path.lower()
        name = low.rstrip("/").rsplit("/", 1)[-1]
        if low.startswith(q) or name.startswith(q):
            prefix.append(path)
        elif q in low:
            inner.append(path)
    key = lambda p: (len(p), p)  # noqa: E731
    return (sorted(prefix, key=key) + sorted(inner, key=key))[:limit]


class FileIndex:
    """Paths under ``root``: files, and directories with a trailing ``/``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: list[str] = []
        self.built_at = 0.0
        self.ready = False
        self._task: asyncio.Future[list[str]] | None = None

    def _scan(self) -> list[str]:
        out: list[str] = []
        for entry in _entries(self.root):
            out.append(entry)
            if len(out) >= MAX_FILES:
                break
        return out

    def refresh(self, on_ready: Callable[[], None] | None = None) -> None:
        """Start a background scan unless one runs or the index is fresh."""
        if self._task is not None and not self._task.done():
            return
        if self.ready and time.monotonic() - self.built_at < FRESH_SECONDS:
            return
        loop = asyncio.get_running_loop()
        self._task = loop.run_in_executor(None, self._scan)

        def done(fut: asyncio.Future[list[str]]) -> None:
            if fut.cancelled() or fut.exception() is not None:
                return
            self.paths = fut.result()
            self.built_at = time.monotonic()
            self.ready = True
            if on_ready is not None:
                on_ready()

        self._task.add_done_callback(done)

    def load_now(self) -> None:
        """Scan synchronously (tests)."""
        self.paths = self._scan()
        self.built_at = time.monotonic()
        self.ready = True


def _entries(root: Path) -> Iterator[str]:
    for entry in walk_entries(root, include_dirs=True):
        yield entry.path + "/" if entry.is_dir else entry.path

