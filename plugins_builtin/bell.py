"""Rings the terminal bell when a turn ends (opt-in)."""

from __future__ import annotations

import sys

from agent import hookimpl

BEL = "\a"


def ring() -> None:
    """Write BEL to stderr: the terminal rings (or flashes) without touching the screen."""
    try:
        sys.stderr.write(BEL)
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed or gone: nothing to ring
        pass


@hookimpl
def agent_event(event, session):
    """Ring when the user's own turn ends; a subagent finishing its task stays quiet."""
    if event.type == "done" and getattr(session, "origin", "model") == "model":
        ring()
