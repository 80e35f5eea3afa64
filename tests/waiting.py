"""Waiting for something to happen: poll it with a bound, never sleep a fixed time.

A fixed sleep is too short on a loaded machine (the test fails for nothing) and wasted on a
fast one; a poll returns as soon as the thing happened and fails, saying what it waited for,
only when it never did within a bound far above the usual time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], what: str, timeout: float = 20.0,
               every: float = 0.01) -> T:
    """Poll ``check`` until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(every)
    return got


async def until(check: Callable[[], T], what: str, timeout: float = 20.0,
                every: float = 0.01) -> T:
    """:func:`wait_until` on an event loop: the loop runs while it waits."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        await asyncio.sleep(every)
    return got


class LoopClock:
    """The running event loop's clock, moved on by hand.

    A deadline the code under test keeps on its event loop's clock (``asyncio`` timers and
    ``loop.time()``: the stream deadlines of ``agent.loop.streaming``) fires when the test
    moves the clock past it.  So the deadline can be generous in real time (a loaded machine
    never reaches it first) and still cost nothing to fire.  Real time goes on as well; the
    clock is only ever moved forward, and stays moved for the rest of the loop's life (a
    test's loop is its own)."""

    #: How far past the instant asked for the clock is moved (float rounding aside).
    MARGIN = 0.001

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        #: the running loop, or ``loop`` (one that runs in another thread)
        self.loop = loop or asyncio.get_running_loop()
        self.offset = 0.0
        self._real = self.loop.time
        self.loop.time = self.now  # type: ignore[method-assign]  # every timer reads it

    def now(self) -> float:
        """The loop's time: its own clock plus every move so far."""
        return self._real() + self.offset

    def move_past(self, since: float, seconds: float) -> None:
        """Move the clock on until just over ``seconds`` have passed on it since ``since``, a
        ``time.monotonic()`` reading taken after the last move (when a request arrived, say:
        ``fakeprovider.Request.time``)."""
        gap = since + self.offset + seconds + self.MARGIN - self.now()
        if gap > 0:
            self.offset += gap
            # A loop in another thread sleeps in select() until its next timer as it was
            # due before the move: wake it to see what is due now.
            self.loop.call_soon_threadsafe(_nothing)


def _nothing() -> None:
    pass
