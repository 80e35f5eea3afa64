"""The garbage collector held off while the program starts.

Start-up makes tens of thousands of objects that all live as long as the process (modules,
classes, the plugins' registrations), and the collector's passes over them cost 25-40 ms of a
150 ms boot while finding nothing to free.  The CLI pauses it for the boot; the headless turn
or the UI's first frame resumes it (the UI also moving what exists out of its reach,
``gc.freeze``, so the full passes of a long session stay short).

The SDK import that ``agent -p`` starts on a thread (:mod:`agent.boot.sdk_warmup`) makes
hundreds of thousands of long-lived objects more, and usually outlasts the boot: it
:func:`holds <held>` the collector off until it is done, and what it made is then frozen, so
the full passes its objects would trigger (each walking everything, 40-110 ms) never run.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
#: how many :func:`held` blocks are running, on any thread
_holds = 0
#: a :func:`resume` asked for while held: (freeze) applied when the last hold ends
_pending: list[bool] = []
#: whether the collector ran when the first of the current holds began
_ran_before = [False]


@contextmanager
def paused_for_startup() -> Iterator[None]:
    """No collection inside the block unless :func:`resume` is called in it; on leaving,
    the collector is running again if it was before."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting and not gc.isenabled():
            gc.enable()


def resume(*, freeze: bool = False) -> None:
    """Start-up is over: the collector runs again; with ``freeze`` what exists now leaves
    its reach for good (the UI, whose session lives long: its full passes stay short).
    While a :func:`held` block runs, this happens when the last one ends."""
    with _lock:
        if _holds:
            _pending.append(freeze)
            return
    if freeze:
        gc.freeze()
    gc.enable()


@contextmanager
def held() -> Iterator[None]:
    """No collection while the block runs (whatever another thread does meanwhile); at its
    end what exists is frozen, and a :func:`resume` asked for meanwhile takes effect."""
    global _holds
    with _lock:
        if not _holds:
            _ran_before[0] = gc.isenabled()
        _holds += 1
        gc.disable()
    try:
        yield
    finally:
        with _lock:
            _holds -= 1
            if not _holds:
                gc.freeze()  # what the block made lives on: no full pass should walk it again
                if _pending or _ran_before[0]:
                    _pending.clear()
                    gc.enable()
