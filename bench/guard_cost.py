"""Benchmark: what running guards on worker threads (with a deadline) costs per gate decision,
against calling the same guards inline on the event loop, as the gate did before.

    python bench/guard_cost.py              # 300 decisions of each kind
    python bench/guard_cost.py --runs 100

Both sides judge the same calls (a read, a write, a shell command) with every builtin plugin
loaded, alternating call by call in one process so both see the same machine load.  Printed:
medians per decision (microseconds), the added time at the median and the ratio.  Not a test:
nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.contract.tools import Effects, ToolCall  # noqa: E402
from agent.contract.verdict import Verdict  # noqa: E402
from agent.loop.gate import Gate  # noqa: E402
from agent.testing import make_boot  # noqa: E402

CALLS = [
    (ToolCall("r", "read_file", {"path": "src/a.py"}), Effects(reads=("src/a.py",))),
    (ToolCall("w", "write_file", {"path": "src/b.py"}), Effects(writes=("src/b.py",))),
    (ToolCall("b", "bash", {"command": "git status && pytest -x tests"}),
     Effects(command="git status && pytest -x tests")),
]


def inline_guards(hooks, call, effects, session) -> list[Verdict]:
    """The previous way: each guard called in turn on the caller's thread."""
    out = []
    for plugin, fn, argnames in hooks._impls("agent_guard_tool_call"):
        kwargs = {"call": call, "effects": effects, "session": session}
        try:
            verdict = fn(**{k: kwargs[k] for k in argnames})
        except Exception as exc:
            verdict = Verdict.deny(str(exc), plugin)
        if isinstance(verdict, Verdict):
            out.append(verdict)
    return out


async def measure(runs: int) -> tuple[list[float], list[float], int]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "src").mkdir(parents=True)
        config, hooks = make_boot(ws, Path(tmp) / "home")
        gate = Gate(hooks, config, None)
        guards = len(list(hooks._impls("agent_guard_tool_call")))
        threaded: list[float] = []
        inline: list[float] = []
        for i in range(runs):
            call, effects = CALLS[i % len(CALLS)]
            start = time.perf_counter()
            await gate._verdict(call, effects, None)
            threaded.append(time.perf_counter() - start)
            start = time.perf_counter()
            gate._combine(call, effects, inline_guards(hooks, call, effects, None))
            inline.append(time.perf_counter() - start)
        return threaded, inline, guards


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    threaded, inline, guards = asyncio.run(measure(args.runs))
    t, i = statistics.median(threaded) * 1e6, statistics.median(inline) * 1e6
    print(f"guard plugins loaded: {guards}; decisions of each kind: {args.runs}")
    print(f"- inline (before): median {i:.0f} us per decision")
    print(f"- threads with a deadline (now): median {t:.0f} us per decision")
    print(f"- added: {t - i:.0f} us at the median, ratio {t / i:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
