"""How an event loop learns that a child process exited: from a pidfd, not a thread.

Python 3.11's asyncio waits for every child it starts with a thread of its own, blocked in
``waitpid`` (``ThreadedChildWatcher``): a thread start, a thread switch and a cross-thread
wake-up for every git, bash or ripgrep the agent runs, about 0.4 ms of CPU each.  Python
3.12 made a pidfd the default on Linux (the child's exit makes a file descriptor readable,
and the loop that started the child reaps it); :func:`install` gives 3.11 the same, for
every loop in the process, in any thread.  Nothing changes on 3.12 and later, where no
kernel pidfd exists, or where another event loop policy or child watcher was chosen.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVarTuple

_Ts = TypeVarTuple("_Ts")

_lock = threading.Lock()
_installed: list[bool] = []


class PidfdReaper(asyncio.AbstractChildWatcher):
    """Python 3.12's pidfd child watcher: each child is reaped by the loop that started it
    (``loop.add_reader`` on the child's pidfd), so it needs no loop attached and works in
    every thread.  A child whose pidfd cannot be opened (no descriptor left) is waited for
    by a thread, as before."""

    def __init__(self) -> None:
        self._fallback = asyncio.ThreadedChildWatcher()

    def __enter__(self) -> PidfdReaper:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def is_active(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def attach_loop(self, loop: Any) -> None:
        pass

    def add_child_handler(self, pid: int,
                          callback: Callable[[int, int, *_Ts], object],
                          *args: *_Ts) -> None:
        loop = asyncio.get_running_loop()
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            self._fallback.add_child_handler(pid, callback, *args)
            return
        loop.add_reader(pidfd, self._reap, loop, pid, pidfd, callback, args)

    def _reap(self, loop: Any, pid: int, pidfd: int, callback: Any,
              args: tuple[Any, ...]) -> None:
        loop.remove_reader(pidfd)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # reaped elsewhere: the status is lost, as asyncio says
            returncode = 255
        else:
            returncode = os.waitstatus_to_exitcode(status)
        finally:
            os.close(pidfd)
        callback(pid, returncode, *args)

    def remove_child_handler(self, pid: int) -> bool:
        # asyncio never calls it; the base class requires it.
        return True


def install() -> bool:
    """Make :class:`PidfdReaper` the child watcher of asyncio's default policy, once per
    process, where that is what Python 3.12 would do anyway: Python 3.11, Linux with
    ``pidfd_open``, the default policy and no watcher but its threaded default.  Returns
    whether a pidfd reaper is in use (True on 3.12+, where it is the default)."""
    if _installed:
        return _installed[0]
    with _lock:
        if not _installed:
            _installed.append(_install())
    return _installed[0]


def _install() -> bool:
    if sys.version_info >= (3, 12):
        return True  # the default there (and child watchers are deprecated)
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # a kernel before 5.3, or pidfd_open filtered out
        return False
    policy = asyncio.get_event_loop_policy()
    if type(policy) is not asyncio.DefaultEventLoopPolicy:
        return False
    current = policy.get_child_watcher()
    if type(current) is not asyncio.ThreadedChildWatcher:
        return False  # someone chose a watcher: theirs stands
    # The threaded watcher's threads of children started before keep running (each holds
    # the watcher) and still reap those children.
    policy.set_child_watcher(PidfdReaper())
    return True
