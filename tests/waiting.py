"""Waiting for something to happen: poll it with a bound, never sleep a fixed time.

A fixed sleep is too short on a loaded machine (the test fails for nothing) and wasted on a
fast one; a poll returns as soon as the thing happened and fails, saying what it waited for,
only when it never did within a bound far above the usual time.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
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
        self.move_to(since + self.offset + seconds)

    def fire(self, since: float, seconds: float, *, spare: float = 0.1) -> bool:
        """Move the clock past a timeout of ``seconds`` that started after ``since`` (a
        ``time.monotonic()`` reading taken after the last move), unless it may come in real
        time first (less than ``spare`` left of it, or gone): the code under test is then at
        or past it, and a move would cut short what follows (a kill's grace, the next
        command).  Returns whether it moved."""
        now = time.monotonic()
        if now > since + seconds - spare:
            return False
        self.move_past(now, seconds)
        return True

    def move_to(self, when: float) -> None:
        """Move the clock on to just past ``when``, a time on this clock (:meth:`now`)."""
        gap = when + self.MARGIN - self.now()
        if gap > 0:
            self.offset += gap
            # A loop in another thread sleeps in select() until its next timer as it was
            # due before the move: wake it to see what is due now.
            with contextlib.suppress(RuntimeError):  # closed meanwhile: nothing to wake
                self.loop.call_soon_threadsafe(_nothing)


def _nothing() -> None:
    pass


class LoopClocks:
    """A :class:`LoopClock` on every event loop made from now on (the policy's
    ``new_event_loop``, which ``asyncio.run`` calls): for code that makes its own loops, such
    as ``agent.cli.main`` run in this process by ``clirun.run_agent_here``.  A move moves
    every one of them, as time passing would.  Undone with ``monkeypatch``."""

    def __init__(self, monkeypatch) -> None:
        self.clocks: list[LoopClock] = []
        self._lock = threading.Lock()
        policy = asyncio.get_event_loop_policy()
        make = policy.new_event_loop

        def new_event_loop() -> asyncio.AbstractEventLoop:
            loop = make()
            with self._lock:
                self.clocks.append(LoopClock(loop))
            return loop

        monkeypatch.setattr(policy, "new_event_loop", new_event_loop)

    def move_past(self, since: float, seconds: float) -> None:
        """:meth:`LoopClock.move_past` on every loop made so far."""
        with self._lock:
            clocks = [clock for clock in self.clocks if not clock.loop.is_closed()]
        assert clocks, "no event loop was made, or all of them are closed"
        for clock in clocks:
            clock.move_past(since, seconds)


@contextlib.contextmanager
def beside(work: Callable[[], object],
           unblock: Callable[[], object] | None = None) -> Iterator[None]:
    """Run ``work`` on a thread while the block runs (a test that blocks in a call, say,
    while ``work`` waits for something and moves a clock); joined at the end of the block,
    and what it raised is raised.  ``unblock`` is called if ``work`` fails, to end what the
    block waits for (stop the server a blocked run talks to), so the test fails at once."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the test's thread
            failed.append(exc)
            if unblock is not None:
                unblock()

    thread = threading.Thread(target=run, name="beside", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(60)
    if failed:
        raise failed[0]
