"""Resuming a 10,000-message session in the full-screen UI: launch to first frame (the prompt
on screen) and the resident set at that moment, for `agent -r ID` against the same launch
of a new session in the same pass; then the time of a scroll to the top of the transcript.
The session is built through the store API (bench/long_session.py's synthetic session).
Linux only (/proc).  Run `python bench/resume_ui.py [--messages 10000] [--runs 3]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts tests/ on sys.path for fakeprovider)
from fakeprovider import FakeProvider
from long_session import build, synthetic
from ui_bench import IDLE, Stamped


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def launch(fake: FakeProvider, ws: Path, home: Path, *extra: str) -> tuple[float, float, float]:
    """(ms to first frame, MiB resident then, ms for the second ctrl+home to redraw: the
    first reaches the top of the last page, the second brings the page before it in)."""
    t0 = time.perf_counter()
    term = Stamped(["--provider", "openai", "--base-url", fake.openai_url, "--model", "m",
                    *extra], cwd=ws, home=home, env={"OPENAI_API_KEY": "x"})
    term.wait_for(IDLE, timeout=60)
    first = (time.perf_counter() - t0) * 1000
    rss = rss_mib(term.proc.pid)
    term.send("\x1b[1;5H")  # ctrl+home: scroll to the top
    time.sleep(0.5)  # let that frame go out (not a measurement)
    mark = len(term.raw)
    t1 = time.perf_counter()
    term.send("\x1b[1;5H")
    try:
        term.wait_bytes(b"\x1b[?25l", mark, timeout=20)  # the next painted frame
        top = (time.perf_counter() - t1) * 1000
    except TimeoutError:
        top = float("nan")
    term.send("/exit\r")
    term.wait_exit()
    return first, rss, top


def main(count: int = 10_000, runs: int = 3) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="agent-resume-") as tmp, \
            FakeProvider.start() as fake:
        base = Path(tmp)
        rows = {"new": [], "resume": []}
        for n in range(runs):
            ws, home = (base / f"ws{n}").resolve(), base / f"home{n}"
            ws.mkdir()
            sid, _, _ = build(home / "state", ws, synthetic(count))
            rows["new"].append(launch(fake, ws, home))
            rows["resume"].append(launch(fake, ws, home, "-r", sid))

    def med(kind: str, i: int) -> float:
        return statistics.median(r[i] for r in rows[kind])

    return [
        "| measurement | ours | baseline | ratio |", "|---|---|---|---|",
        f"| `agent -r` of a {count:,}-message session: launch to first frame | "
        f"{med('resume', 0):.0f} ms | new session: {med('new', 0):.0f} ms | "
        f"{med('resume', 0) / med('new', 0):.2f}x |",
        f"| resident set at the first frame | {med('resume', 1):.0f} MiB | new session: "
        f"{med('new', 1):.0f} MiB | {med('resume', 1) / med('new', 1):.2f}x |",
        f"| second ctrl+home (an earlier page of 200 messages built) to the next frame | "
        f"{med('resume', 2):.0f} ms | | |",
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sys.exit(print("\n".join(main(args.messages, args.runs))))
