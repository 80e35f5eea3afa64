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
