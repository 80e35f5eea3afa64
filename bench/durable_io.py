#!/usr/bin/env python3
"""What durability costs, and what the MCP transport saves.

1. ``atomic_write`` (temp file, fsync, rename, directory fsync) against the truncating
   in-place write the file tools used before, for a small and a large file.
2. Reading one large MCP tool result from an SDK-built stdio server: the SDK's
   ``stdio_client`` against ours (``plugins_builtin/mcp/stdio.py``), same server,
   same client session, in the same run.

    python bench/durable_io.py            # 5 MB MCP result (the SDK's reader is quadratic)
    python bench/durable_io.py --mb 20    # the size from the report (the SDK takes minutes)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SERVER = ROOT / "tests" / "mcp_big_server.py"


def _best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_writes(runs: int) -> None:
    from agent.lib.atomic import atomic_write

    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        for size in (4_000, 4_000_000):
            data = b"x" * size
            target = Path(tmp) / f"f{size}"
            target.write_bytes(data)

            def in_place(target=target, data=data):
                with open(target, "wb") as fh:
                    fh.write(data)

            def atomic(target=target, data=data):
                atomic_write(target, data)

            base = _best(in_place, runs)
            ours = _best(atomic, runs)
            print(f"write {size:>9,} bytes: in place {base * 1000:8.2f} ms, atomic "
                  f"{ours * 1000:8.2f} ms  (x{ours / base:.1f}, the price of fsync + rename)")


def bench_mcp(mb: int) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp import stdio_client as sdk_client

    from plugins_builtin.mcp.stdio import stdio_client as our_client

    size = mb * 1_000_000
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])

    async def once(client) -> float:
        async with client(params, None) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                start = time.perf_counter()
                result = await session.call_tool("big", {"size": size},
                                                 read_timeout_seconds=1800)
                took = time.perf_counter() - start
                assert len(result.content[0].text) >= size - 8
                return took

    ours = anyio.run(once, our_client)
    sdk = anyio.run(once, lambda p, e: sdk_client(p, errlog=sys.stderr))
    print(f"MCP result of {mb} MB: SDK stdio_client {sdk:8.2f} s, ours {ours:6.2f} s "
          f"(x{sdk / ours:.0f} faster)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    bench_writes(args.runs)
    bench_mcp(args.mb)


if __name__ == "__main__":
    main()
