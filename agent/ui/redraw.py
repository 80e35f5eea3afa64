"""Coalesced redraws: background changes ask for a frame, at most ``fps`` frames a second.

Input already redraws (urwid paints after every key batch); everything else (stream chunks,
tool output, timers) calls :meth:`Redraw.request`, which schedules one frame no sooner than
``1/fps`` after the previous one.  A burst of a thousand chunks therefore costs one frame.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class Redraw:
    """Schedules ``draw()`` on the running asyncio loop, coalescing requests."""

    def __init__(self, draw: Callable[[], None], *, fps: float = 30.0) -> None:
        self._draw = draw
        self.interval = 1.0 / fps
        self.last = 0.0
        self.frames = 0
        self._handle: asyncio.TimerHandle | None = None

    def request(self) -> None:
        """Ask for a frame; cheap to call any number of times."""
        if self._handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (widget tests): nothing to schedule
            return
        delay = max(0.0, self.last + self.interval - time.monotonic())
        self._handle = loop.call_later(delay, self._fire)

    @property
    def pending(self) -> bool:
        """A frame is scheduled (it will flush what changed since the last one)."""
        return self._handle is not None

    def drew(self) -> None:
        """Record a frame painted by someone else (urwid after input)."""
        self.last = time.monotonic()
        self.frames += 1

    def _fire(self) -> None:
        self._handle = None
        self._draw()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
