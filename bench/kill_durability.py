"""Durability: `kill -9` a running `agent -p` at random moments, in one state directory,
until --trials kills have landed mid-run.  After every kill: `PRAGMA integrity_check`, nothing
the fake server saw committed is missing from the store, and `agent -c -p` works with a valid
history.  At the end every saved session must still load.  Prints a markdown summary; exits
1 on any problem.

    python bench/kill_durability.py [--trials 50] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts tests/ on sys.path)
from killtrial import calibrate, run_trials, summary


def main(trials: int = 50, seed: int = 0, verbose: bool = False) -> tuple[list[str], bool]:
    with tempfile.TemporaryDirectory(prefix="agent-kill-") as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        ws.mkdir()
        span = calibrate(home, ws, seed)
        start = time.monotonic()

        def progress(outcome):
            if verbose:
                mark = "FAIL " + "; ".join(outcome.problems) if outcome.problems else "ok"
                print(f"  trial {outcome.trial:>3}: kill at {outcome.delay:5.2f} s, "
                      f"{outcome.landed}: {mark}", file=sys.stderr)

        # Most turns are shorter than the calibration run: aim the kills at the first 80 %
        # and keep going until `trials` of them landed mid-run.
        outcomes, final = run_trials(trials, home, ws, seed=seed, max_delay=span * 0.8,
                                     progress=progress, kills=trials)
        elapsed = time.monotonic() - start
    lines = [f"- a whole run (nothing killed) takes {span:.2f} s; kill moments are uniform "
             f"over 0.05 to {span * 0.8:.2f} s after the process starts; trials run until "
             f"{trials} kills landed mid-run",
             *summary(outcomes, final),
             f"- {elapsed:.0f} s for all trials (each: the killed run, the checks, "
             "`agent -c -p`)"]
    ok = not final and all(not o.problems for o in outcomes)
    return lines, ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lines, ok = main(args.trials, args.seed, verbose=True)
    print("\n".join(lines))
    raise SystemExit(0 if ok else 1)
