"""The full-screen terminal UI (urwid).  :func:`launch` is the entry point from the CLI."""

from __future__ import annotations

from typing import Any


def launch(boot: Any, prompt: str | None = None) -> int:
    """Start the full-screen UI; returns the exit code."""
    import_urwid()
    from agent.ui.app import run

    return run(boot, prompt)


def import_urwid() -> None:
    """Import urwid without its trio event loop.

    ``urwid.event_loop`` imports every loop whose library is installed; with trio present
    that is ~0.1 s (0.4 s cold) of the first frame for a loop this UI never uses (it runs on
    asyncio).  While urwid is imported, ``import trio`` fails as if trio were missing (urwid
    catches the ImportError and leaves ``TrioEventLoop`` out); afterwards trio imports as
    usual for whoever needs it (an SDK's HTTP stack, a plugin)."""
    import sys

    if "urwid" in sys.modules or "trio" in sys.modules:
        return
    sys.modules["trio"] = None  # type: ignore[assignment]
    try:
        import urwid  # noqa: F401
    finally:
        if "trio" in sys.modules and sys.modules["trio"] is None:
            del sys.modules["trio"]
