"""Run ``agent`` under tracemalloc, for bench/long_turn.py's ``--trace``: a debugging aid that
lives in the bench, so the agent itself carries no tracing code at all.

``python bench/_traced_agent.py DIR [agent arguments]`` starts tracemalloc (``TRACE_FRAMES``
frames, 12 by default; 0 traces nothing), then runs ``agent``'s main.  Each SIGUSR1 writes,
into DIR: ``snap-N.pickle`` (the tracemalloc snapshot), ``types-N.json`` (live objects
counted by type, after a full collection), ``pymalloc-N.txt`` (``sys._debugmallocstats``),
``mem-N.json`` (tracemalloc's traced total, glibc's mallinfo2 and the process's RSS), then
``done-N`` last so the sender can poll for it.  ``TRACE_MALLOC_TRIM=1`` then calls
``malloc_trim(0)`` and records RSS again (an experiment: how much of RSS is free memory
malloc holds).  The handler runs on the main thread between
byte codes, while the agent waits for the model's answer.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import signal
import sys
import tempfile
import tracemalloc
from pathlib import Path


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _mallinfo() -> dict[str, int]:
    """glibc's heap figures (mallinfo2): what malloc holds from the system and how much of
    it is in use; empty where there is no glibc."""
    try:
        libc = ctypes.CDLL(None)
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return {}
    fields = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
              "uordblks", "fordblks", "keepcost")

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in fields]

    fn.restype = MallInfo2
    info = fn()
    return {name: int(getattr(info, name)) for name in fields}


def _pymalloc() -> str:
    """pymalloc's own statistics (arenas, pools, blocks in use), as sys._debugmallocstats
    prints them to the C stderr."""
    with tempfile.TemporaryFile(mode="w+") as tmp:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read()


def _dump(out: Path, n: int) -> None:
    gc.collect()
    counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    traced, peak = tracemalloc.get_traced_memory()
    if tracemalloc.is_tracing():
        tracemalloc.take_snapshot().dump(str(out / f"snap-{n}.pickle"))
    (out / f"types-{n}.json").write_text(json.dumps(counts.most_common(400)))
    (out / f"pymalloc-{n}.txt").write_text(_pymalloc())
    figures = {"traced": traced, "peak": peak, "rss_kib": _rss_kib(),
               "objects": sum(counts.values()), "mallinfo": _mallinfo()}
    if os.environ.get("TRACE_MALLOC_TRIM") == "1":
        # An experiment, not a fix: how much of RSS is free memory malloc still holds.
        ctypes.CDLL(None).malloc_trim(0)
        figures["rss_trimmed_kib"] = _rss_kib()
    (out / f"mem-{n}.json").write_text(json.dumps(figures))
    (out / f"done-{n}").write_text("")


def main() -> int:
    out = Path(sys.argv[1])
    sys.argv = ["agent", *sys.argv[2:]]
    seen = [0]

    def on_signal(signum: int, frame: object) -> None:
        seen[0] += 1
        _dump(out, seen[0])

    signal.signal(signal.SIGUSR1, on_signal)
    frames = int(os.environ.get("TRACE_FRAMES", "12"))
    if frames > 0:  # 0: no tracing, only the counts, malloc's figures and RSS
        tracemalloc.start(frames)
    from agent.boot.cli import main as agent_main

    return agent_main()


if __name__ == "__main__":
    raise SystemExit(main())
