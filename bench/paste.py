"""Benchmark: a bracketed paste into the prompt, from the paste to the model's request.

    python bench/paste.py            # 5 KB (the baseline), 100 KB and 1 MB, best of 3
    python bench/paste.py --runs 5

The installed ``agent`` runs in a pseudo-terminal against the fake provider.  For each size
it prints the time from sending the paste to the folded label on screen, and from Enter to
the request reaching the server, with the ratio to the 5 KB paste measured in the same run.
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from fakeprovider import FakeProvider, Reply  # noqa: E402
from pty_term import Term  # noqa: E402

IDLE = "ask agent... (/ commands, @ files)"


def text_of(size: int) -> str:
    line = "line caf\u00e9 \u2192 " + "x" * 60 + "\r"
    return (line * (size // len(line) + 1))[:size]


def one(size: int) -> tuple[float, float]:
    """(paste to label, enter to request) in seconds."""
    with tempfile.TemporaryDirectory() as tmp, FakeProvider.start() as srv:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir()
        srv.script(Reply.text("warm"), Reply.text("ok"))
        term = Term(["--provider", "openai", "--base-url", srv.openai_url, "--model", "m"],
                    cwd=ws, home=home, env={"OPENAI_API_KEY": "x"})
        try:
            term.wait_for(IDLE, timeout=30)
            # One turn first: the SDK imported, the connection open, as in a session.
            term.type("hi")
            term.wait_for("warm", timeout=60)
            term.wait_for(IDLE, timeout=30)
            text = text_of(size)
            start = time.monotonic()
            term.send(b"\x1b[200~" + text.encode() + b"\x1b[201~")
            term.wait_for(f"[pasted {len(text):,} chars]", timeout=120)
            shown = time.monotonic() - start
            enter = time.monotonic()
            term.send("\r")
            request = srv.wait_requests(2, timeout=120)[1]
            return shown, request.time - enter
        finally:
            term.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = [("5 KB", 5_000), ("100 KB", 100_000), ("1 MB", 1_000_000)]
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.runs):
        for label, size in sizes:
            shown, sent = one(size)
            old = best.get(label, (float("inf"), float("inf")))
            best[label] = (min(old[0], shown), min(old[1], sent))
    base_shown, base_sent = best["5 KB"]
    print(f"{'paste':<8} {'to label':>10} {'ratio':>7} {'enter to request':>17} {'ratio':>7}")
    for label, _ in sizes:
        shown, sent = best[label]
        print(f"{label:<8} {shown * 1000:>8.0f}ms {shown / base_shown:>7.2f} "
              f"{sent * 1000:>15.0f}ms {sent / base_sent:>7.2f}")


if __name__ == "__main__":
    main()
