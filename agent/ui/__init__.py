"""The full-screen terminal UI (urwid).  :func:`launch` is the entry point from the CLI."""

from __future__ import annotations

from typing import Any


def launch(boot: Any, prompt: str | None = None) -> int:
    """Start the full-screen UI; returns the exit code."""
    from agent.ui.app import run

    return run(boot, prompt)
