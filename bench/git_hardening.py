"""Benchmark: what the git hardening costs per call, and what it stops.

    python bench/git_hardening.py            # 15 calls per command
    python bench/git_hardening.py --runs 5

For each command the git tools run, the median wall time through ``agent.contain.safegit`` (the
config listing, then the command, with every program-valued setting overridden) against
plain ``git`` on the same repository in the same run, and the ratio; then all of them at
once, as a model step asking for several git tools runs them (one listing serves them all).
Then the CPU this process spends per ``git status`` (the agent's own work: locating and
checking the repository, the environment, the listing's parse, the sandbox's policy and
process start; git's own CPU is not counted) with the run's read-only sandbox and with
``sandbox = "off"``, against a bare ``asyncio`` start of the same git, alternating.
Then every hostile repository of ``tests/hostile_repos.py``: plain git (armed: did the marker
appear?) and ``agent.contain.safegit`` (escaped: did it?).  Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from hostile_repos import FACTORIES, base, run_control  # noqa: E402

from agent.contain import safegit  # noqa: E402

COMMANDS = [
    ["status", "--porcelain=v1", "--branch", "-z"],
    ["diff", "--no-textconv", "--no-ext-diff"],
    ["log", "-n15", "--format=%h %s"],
    ["show", "--no-textconv", "--no-ext-diff", "HEAD"],
]


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def cost(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = base(Path(tmp))
        print(f"Cost per call (median of {runs}, ms)")
        print(f"{'command':<10} {'safegit':>9} {'plain git':>10} {'ratio':>7} {'added':>7}")
        for argv in COMMANDS:
            ours = median_ms(lambda argv=argv: asyncio.run(safegit.run(ws, argv)), runs)
            plain = median_ms(lambda argv=argv: subprocess.run(["git", *argv], cwd=ws,
                                                               capture_output=True), runs)
            print(f"{argv[0]:<10} {ours:>9.1f} {plain:>10.1f} {ours / plain:>6.2f}x "
                  f"{ours - plain:>6.1f}")
        # One model step asking for all of them at once: the calls run concurrently and
        # share the config listing that is in flight.
        ours = median_ms(lambda: asyncio.run(_at_once(ws)), runs)
        plain = median_ms(lambda: asyncio.run(_plain_at_once(ws)), runs)
        print(f"{str(len(COMMANDS)) + ' at once':<10} {ours:>9.1f} {plain:>10.1f} "
              f"{ours / plain:>6.2f}x {ours - plain:>6.1f}")


async def _at_once(ws: Path) -> None:
    await asyncio.gather(*(safegit.run(ws, argv) for argv in COMMANDS))


async def _plain_at_once(ws: Path) -> None:
    async def one(argv: list[str]) -> None:
        proc = await asyncio.create_subprocess_exec("git", *argv, cwd=ws,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        await proc.communicate()

    await asyncio.gather(*(one(argv) for argv in COMMANDS))


def _self_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _cpu_per_call(ws: Path, config, calls: int) -> list[float]:
    argv = ["status", "--porcelain"]
    out = []
    for _ in range(calls):
        start = _self_cpu()
        if config is None:
            proc = await asyncio.create_subprocess_exec(
                "git", *argv, cwd=ws, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            await proc.communicate()
        else:
            await safegit.run(ws, argv, config=config)
        out.append(_self_cpu() - start)
    return out


def cpu(runs: int) -> None:
    from agent.testing import make_boot

    with tempfile.TemporaryDirectory() as tmp:
        ws = base(Path(tmp))
        kinds = {"safegit, read-only sandbox": make_boot(ws, Path(tmp) / "h1",
                                                         builtins=["git"])[0],
                 "safegit, sandbox off": make_boot(ws, Path(tmp) / "h2", builtins=["git"],
                                                   flags={"sandbox": "off"})[0],
                 "bare asyncio git": None}
        samples: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(max(1, runs // 5)):
            for kind, config in kinds.items():
                samples[kind] += asyncio.run(_cpu_per_call(ws, config, 10))
        bare = statistics.median(samples["bare asyncio git"])
        print(f"\nCPU of this process per git status (median of {len(samples[kind])}, ms)")
        for kind, values in samples.items():
            mine = statistics.median(values)
            print(f"{kind:<28} {mine * 1000:>6.2f} {mine / bare:>6.2f}x")


async def _through_safegit(hostile) -> None:
    for argv in (["status", "--porcelain"], ["diff", "--no-textconv", "--no-ext-diff"],
                 ["log", "-p", "-3", "--no-textconv", "--no-ext-diff"], ["show", "HEAD:b.txt"],
                 ["blame", "--no-textconv", "a.txt"], ["-p", "log", "-1"]):
        try:
            await safegit.run(hostile.ws, argv)
        except (safegit.GitRefused, safegit.GitFailed):
            pass


def hostile() -> None:
    print("\nHostile repositories (tests/hostile_repos.py)")
    print(f"{'mechanism':<20} {'plain git':>10} {'safegit':>9}")
    tried = escaped = 0
    for name, factory in sorted(FACTORIES.items()):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            armed = bool(run_control(factory(Path(a))))
            repo = factory(Path(b))
            asyncio.run(_through_safegit(repo))
            fired = bool(repo.fired())
        tried += 1
        escaped += fired
        print(f"{name:<20} {'ran' if armed else 'did not run':>10} "
              f"{'ESCAPED' if fired else 'held':>9}")
    print(f"tried {tried}, escaped {escaped}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    cost(args.runs)
    cpu(args.runs * 4)
    hostile()


if __name__ == "__main__":
    main()
