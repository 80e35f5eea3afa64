"""Lines plugins add to a front end's startup header (skills, memory, MCP servers...).

A plugin calls :func:`add_line` from ``agent_configure`` or ``agent_session_start``; the
full-screen UI shows the lines in its header, sorted by ``order`` among its own lines.  The
lines live in ``config.extra["startup_lines"]`` keyed by name, so a plugin that runs again
(a new session after ``/clear``) replaces its line instead of adding a second one.

The UI's own lines use these orders, so a plugin can place itself between them: version 0,
``agent:`` 10, ``cwd:`` 20, ``resumed`` 30, ``plugins:`` 60 (and load errors right after it),
approvals 90, tool sets 95, ``/help`` 100.  The builtin plugins use ``instructions:`` 40,
``skills:`` 50, ``memory:`` 70 and ``mcp:`` 80.

Headless runs have no header: plugins skip work for it when ``config.headless`` is true.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DATA_KEY = "startup_lines"


def add_line(config: Any, key: str, text: str, order: int = 85) -> None:
    """Show ``text`` in the startup header (replacing an earlier line with the same key)."""
    config.extra.setdefault(DATA_KEY, {})[key] = (order, text)


def add_session_line(session: Any, key: str, make_text: Callable[[], str],
                     order: int = 85) -> None:
    """From ``agent_session_start``: add a line for a session the user sees, calling
    ``make_text`` only then (headless runs and subagents have no header, so the work that
    builds the line, such as counting notes in the database, is skipped)."""
    if session.config.headless or getattr(session, "parent", None) is not None:
        return
    add_line(session.config, key, make_text(), order)


def lines(config: Any) -> list[tuple[int, str]]:
    """The plugins' lines as ``(order, text)``, sorted by order (then key)."""
    found = getattr(config, "extra", {}).get(DATA_KEY) or {}
    return [(order, text) for key, (order, text) in
            sorted(found.items(), key=lambda kv: (kv[1][0], kv[0]))]
