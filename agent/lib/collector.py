"""The garbage collector held off while the program starts.

Start-up makes tens of thousands of objects that all live as long as the process (modules,
classes, the plugins' registrations), and the collector's passes over them cost 25-40 ms of a
150 ms boot while finding nothing to free.  The CLI pauses it for the boot; the headless turn
or the UI's first frame resumes it (the UI also moving what exists out of its reach,
``gc.freeze``, so the full passes of a long session stay short).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
    its reach for good (the UI, whose session lives long: its full passes stay short)."""
    if freeze:
        gc.freeze()
    gc.enable()
