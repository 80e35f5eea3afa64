"""Two writers: two `agent -c -p` processes continue one saved session, the second started a
random moment (uniform over 0 to --max-offset seconds) after the first, --trials times, all
in one state directory.  Counts lost messages, mixed sessions and runs not told of a fork
(the oracle is in tests/twowriters.py).  Prints a markdown summary; exits 1 on any problem.

    python bench/two_writers.py [--trials 50] [--seed 0] [--max-offset 2.5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts tests/ on sys.path)
from twowriters import run_trials


def main(trials: int = 50, seed: int = 0, max_offset: float = 2.5,
         verbose: bool = False) -> tuple[list[str], bool]:
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="agent-two-") as tmp:

        def progress(o):
            if verbose:
                mark = "FAIL " + "; ".join(o.problems) if o.problems else "ok"
                print(f"  trial {o.trial:>3}: second run {o.offset:4.2f} s later, "
                      f"{o.sessions} session(s): {mark}", file=sys.stderr)

        outcomes = run_trials(trials, Path(tmp), seed=seed, max_offset=max_offset,
                              progress=progress)
    elapsed = time.monotonic() - start
    forked = sum(1 for o in outcomes if o.sessions == 2)
    lost = sum(o.lost for o in outcomes)
    mixed = sum(o.mixed for o in outcomes)
    untold = sum(o.untold for o in outcomes)
    failed = sum(1 for o in outcomes if o.problems)
    lines = [f"- {trials} trials; the second run starts 0 to {max_offset:g} s after the first",
             f"- {forked} trials forked (the runs overlapped), {trials - forked} ran one "
             "after the other in one session",
             f"- lost messages: {lost}; mixed sessions: {mixed}; forks not told to both "
             f"runs: {untold}; trials with any problem: {failed}",
             f"- {elapsed:.0f} s for all trials"]
    return lines, failed == 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-offset", type=float, default=2.5)
    args = parser.parse_args()
    lines, ok = main(args.trials, args.seed, args.max_offset, verbose=True)
    print("\n".join(lines))
    raise SystemExit(0 if ok else 1)
