"""The judge against the real programs, at length: random command lines it lets run without a
prompt are run under ``strace -f`` on a scratch copy; any write, change or program it did not
name is a miss.  ``python bench/shell_differential.py [COUNT] [SEED]`` (default 400, 1).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from random import Random

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import shell_differential as diff  # noqa: E402


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    rng = Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    root = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    original = diff.workspace(root)
    allowed = 0
    misses: list[tuple[str, list[str]]] = []
    start = time.perf_counter()
    for _ in range(count):
        text = diff.command(rng)
        if not diff.auto_allowed(text, original):
            continue
        allowed += 1
        found = diff.audit(text, original)
        if found:
            misses.append((text, found))
    took = time.perf_counter() - start
    print(f"generated: {count}; run without a prompt: {allowed}; audited under strace: "
          f"{allowed}; misses: {len(misses)} (goal 0); {took:.0f} s")
    for text, found in misses[:20]:
        print(f"  {text!r}: {'; '.join(found[:3])}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
