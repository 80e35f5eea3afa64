"""Benchmark: the memory read_file and grep (its Python search) take on a large file.

    python bench/read_memory.py              # a 50 MB log file
    python bench/read_memory.py --mb 200

Prints the tracemalloc peak of each call beside the file's size, what the call returned and
a baseline measured in the same run: reading the file whole and splitting it into lines (what
both tools did before).  Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.testing import make_boot, run_tool  # noqa: E402


def peak(fn):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("-v", action="store_true", help="print each result's start")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir()
        home.mkdir()
        config, hooks = make_boot(ws, home, builtins=["files"], file_data={"grep_fallback": True})
        tools = hooks.tools(config)
        line = " caf\u00e9 event payload " + "x" * 80 + " done\n"
        lines = args.mb * 1024 * 1024 // (len(line) + 8)
        with open(ws / "big.log", "w") as fh:
            for block in range(0, lines, 10_000):
                fh.write("".join(f"{i:07d}{line}" for i in range(block, min(lines,
                                                                            block + 10_000))))
        size = (ws / "big.log").stat().st_size
        (ws / "warm.txt").write_text("warm\n")
        asyncio.run(run_tool(tools["read_file"], {"path": "warm.txt"}, config))
        asyncio.run(run_tool(tools["grep"], {"pattern": "warm"}, config))

        def whole() -> int:
            text = (ws / "big.log").read_bytes().decode("utf-8", "replace")
            return len("\n".join(text.split("\n")[:2000]))

        _, base = peak(whole)
        print(f"file: {size / 1e6:.1f} MB, {lines:,} lines")
        print(f"{'call':<36} {'returned':>10} {'peak':>10} {'peak/file':>10} {'vs whole':>9}")
        print(f"{'baseline: read whole, split':<36} {'':>10} {base / 1e6:>8.1f}MB "
              f"{base / size:>10.2f} {1.0:>9.2f}")
        calls = [
            ("read_file (first 2,000 lines)", "read_file", {"path": "big.log"}),
            ("read_file (2,000 lines mid-file)", "read_file",
             {"path": "big.log", "offset": lines // 2, "limit": 2000}),
            ("grep, Python search (1 hit)", "grep", {"pattern": f"^{lines - 1:07d} "}),
        ]
        for label, name, call in calls:
            result, used = peak(lambda n=name, c=call: asyncio.run(  # type: ignore[misc]
                run_tool(tools[n], c, config)))
            returned = 2000 * (len(line) + 14) if name == "read_file" else len(result.output)
            print(result.output[:200]) if "-v" in sys.argv else None
            print(f"{label:<36} {returned / 1e3:>8.1f}kB {used / 1e6:>8.1f}MB "
                  f"{used / size:>10.3f} {used / base:>9.3f}")


if __name__ == "__main__":
    main()
