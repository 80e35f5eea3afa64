"""Benchmark: how many of the public peer edit fixtures our file tools get right.

    python bench/edit_compat.py            # every suite
    python bench/edit_compat.py -v         # and the name and reason of every miss

Runs the fixtures vendored under tests/fixtures/ (OpenAI Codex's apply-patch scenarios,
opencode's and aider's edit-matching cases) through the real tools, each in a fresh
workspace, exactly as tests/plugins/test_edit_compat.py does, and prints the pass rate per suite.  A
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
    print()
    await big_file_costs()
    return 0


async def big_file_costs(size: int = 50_000, runs: int = 5) -> None:
    """What exact, tolerant and missed edits cost on a big file, against the bare minimum
    (read the bytes, find the text, write them back) measured in the same run."""
    import random
    import time

    from files_support import boot_files

    random.seed(7)
    lines = [f"    value_{i} = compute({random.randint(0, 10**6)}, 'x{i}')" for i in range(size)]
    text = "\n".join(lines) + "\n"
    env = boot_files(Path(tempfile.mkdtemp(prefix="edit-compat-big-")))
    path = env.workspace / "big.py"
    target = lines[size * 3 // 4]
    calls = {
        "exact hit": {"oldString": target, "newString": target + "  # x"},
        "tolerant hit (indentation)": {"oldString": target.strip() + "\n",
                                       "newString": target.strip() + "  # x\n"},
        "miss, with the hint": {"oldString": target.replace("compute", "computed"),
                                "newString": "x"},
    }

    async def best(fn) -> float:
        times = []
        for _ in range(runs):
            path.write_text(text)
            start = time.perf_counter()
            result = fn()
            if asyncio.iscoroutine(result):
                await result
            times.append(time.perf_counter() - start)
        return min(times)

    def baseline() -> None:
        data = path.read_bytes()
        data.count(target.encode())
        path.write_bytes(data.replace(target.encode(), (target + "  # x").encode(), 1))

    base = await best(baseline)
    print(f"| edit_file on a {size:,}-line file | ours | baseline (read, count, write) | "
          "ratio |")
    print("|---|---|---|---|")
    for name, call in calls.items():
        ours = await best(lambda call=call: env.call("edit_file", {"path": "big.py", **call}))
        print(f"| {name} | {ours * 1000:.0f} ms | {base * 1000:.0f} ms | {ours / base:.1f}x |")


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
