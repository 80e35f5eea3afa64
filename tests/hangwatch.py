"""One watchdog thread for the whole run in place of pytest-timeout's thread per test.

``timeout_method = "thread"`` (pyproject.toml) makes pytest-timeout start a
``threading.Timer`` for every test and join it afterwards: a thread started and ended per
test, over two thousand a run.  This plugin answers pytest-timeout's own extension hooks
(``pytest_timeout_set_timer`` / ``pytest_timeout_cancel_timer``) for that method with a single
daemon thread that sleeps until the current test's deadline; arming it for the next test
costs a lock and no wake-up (each deadline is later than the one it is sleeping towards).
What happens when a deadline passes is pytest-timeout's own ``timeout_timer``: the captured
output and every thread's stack are written, and the process ends (an xdist worker is then
replaced).  Timeouts, markers and the signal method are still pytest-timeout's.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import pytest


class Watchdog:
    """Ends the process when the armed test outlives its deadline."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: tuple[Any, Any, float] | None = None  # item, settings, deadline
        #: when the thread's current wait ends (math.inf: until notified)
        self._waking_at = math.inf
        self._thread: threading.Thread | None = None

    def arm(self, item: Any, settings: Any) -> None:
        deadline = time.monotonic() + settings.timeout
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="hangwatch",
                                                daemon=True)
                self._thread.start()
            self._armed = item, settings, deadline
            if deadline < self._waking_at:
                self._cond.notify()

    def disarm(self, item: Any) -> bool:
        """Stop watching ``item``; False if it was not being watched."""
        with self._cond:
            if self._armed is None or self._armed[0] is not item:
                return False
            self._armed = None  # the thread wakes at the old deadline and waits again
            return True

    def _watch(self) -> None:
        from pytest_timeout import timeout_timer

        while True:
            with self._cond:
                while True:
                    armed = self._armed
                    left = math.inf if armed is None else armed[2] - time.monotonic()
                    if armed is not None and left <= 0:
                        self._armed = None
                        break
                    self._waking_at = time.monotonic() + left
                    self._cond.wait(None if left == math.inf else left)
                    self._waking_at = math.inf
            # Writes the captured output and every thread's stack, then os._exit(1); it
            # returns only when a debugger is attached (the test is left to run on).
            timeout_timer(armed[0], armed[1])


WATCHDOG = Watchdog()


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # no hook without pytest-timeout
def pytest_timeout_set_timer(item: Any, settings: Any) -> bool | None:
    if settings.method != "thread":
        return None  # pytest-timeout's own signal timer
    WATCHDOG.arm(item, settings)
    return True


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # no hook without pytest-timeout
def pytest_timeout_cancel_timer(item: Any) -> bool | None:
    return True if WATCHDOG.disarm(item) else None
