"""What plugins publish to the front end: live panels, status facts and header lines.

The UI names no plugin: it asks every plugin (``agent_live_panels``, ``agent_status`` in
:mod:`agent.contract.hookspecs`) what to show, whenever the status refreshes and a few times a
second while a turn runs.  A task list, the subagents at work or a third-party plugin's own panel
all arrive the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LiveState:
    """What the front end tells panel publishers about the moment they draw for."""

    #: a turn is running
    busy: bool = False
    #: epoch seconds at which the running (or last) turn started
    turn_started: float = 0.0
    #: the current frame of the working spinner, for "still running" marks
    spinner: str = "*"


@dataclass(frozen=True)
class Panel:
    """A live panel above the prompt.

    ``markup`` is text or urwid-style markup (``[("style", "text"), "\\n", ...]``, styles
    from the palette).  Panels show in ``(order, key)`` order; ``calls`` names running tool
    calls the panel stands for (their own spinner lines are then not shown).  While a dialog
    is open every panel folds into one line naming its ``key``.
    """

    key: str
    markup: Any
    order: int = 50
    calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class HeaderLine:
    """A line of the startup header (``agent_header_lines``), placed by ``order`` among the
    UI's own: version 0, ``agent:`` 10, ``cwd:`` 20, ``resumed`` 30, ``plugins:`` 60 (load
    errors right after), notices 85, approvals 90, tool sets 95, ``/help`` 100."""

    text: str
    order: int = 85


@dataclass(frozen=True)
class StatusInfo:
    """Facts for the status bar, the per-turn line and ``/cost``; None: not known here.

    ``agent`` is the agent variant in use; ``context_tokens`` the estimated tokens of the last
    request (system prompt, tool schemas and history), ``context_limit`` the estimate at
    which compaction starts.  When several plugins answer, the first (by plugin name) that
    knows a field gives it.
    """

    agent: str | None = None
    context_tokens: int | None = None
    context_limit: int | None = None
