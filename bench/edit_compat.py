"""Benchmark: how many of the public peer edit fixtures our file tools get right.

    python bench/edit_compat.py            # every suite
    python bench/edit_compat.py -v         # and the name and reason of every miss

Runs the fixtures vendored under tests/fixtures/ (OpenAI Codex's apply-patch scenarios,
opencode's and aider's edit-matching cases) through the real tools, each in a fresh
workspace, exactly as tests/test_edit_compat.py does, and prints the pass rate per suite.  A
documented deviation (tests/compat_suites.py DEVIATIONS, docs/tools.md) counts as a miss of
the peer's expectation and is listed apart.  Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the suites and the files-plugin host live there

from compat_suites import SUITES, run_case  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    print("| suite | cases | pass | documented deviations | fail | pass rate |")
    print("|---|---|---|---|---|---|")
    misses: list[str] = []
    for suite, load in SUITES.items():
        cases = load()
        passed = deviations = failed = 0
        for case in cases:
            outcome = await run_case(case, Path(tempfile.mkdtemp(prefix="edit-compat-")))
            if outcome.deviation:
                deviations += 1
                misses.append(f"{case.key}: deviation ({outcome.detail})")
            elif outcome.passed:
                passed += 1
            else:
                failed += 1
                misses.append(f"{case.key}: FAIL {outcome.detail}")
        rate = f"{100 * passed / len(cases):.0f} %" if cases else "-"
        print(f"| {suite} | {len(cases)} | {passed} | {deviations} | {failed} | {rate} |")
    if args.verbose and misses:
        print()
        for line in misses:
            print(f"- {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
