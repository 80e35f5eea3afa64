"""Shared helpers for the benchmarks: timing, the baseline, the fake provider."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fake provider lives with the tests


def wall(cmd: list[str], *, env: dict[str, str] | None = None, runs: int = 7,
         cwd: str | None = None, input: str | None = None) -> float:
    """Median wall time (seconds) of running ``cmd``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=cwd, input=input, capture_output=True, text=True,
                       check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def walls_alternating(cmds: list[list[str]], *, env: dict[str, str] | None = None,
                      runs: int = 7) -> list[float]:
    """Median wall times (seconds) of ``cmds``, run in turn round after round, so a change in
    the machine's load during the measurement weighs on each of them alike."""
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for i, cmd in enumerate(cmds):
            start = time.perf_counter()
            subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def python_pass() -> float:
    """The machine's ``python -c pass`` time: the scale every other number is read against."""
    return wall([sys.executable, "-c", "pass"], runs=9)


def compile_bytecode() -> None:
    """Byte-compile agent and its builtin plugins, as an installed package always is (an
    editable checkout under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile every
    module on every start and measure that instead)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "agent"),
                    str(ROOT / "plugins_builtin")], env=env, capture_output=True, check=False)


def isolated_env(**extra: str) -> dict[str, str]:
    """A fresh AGENT_HOME, no provider settings from the caller, byte code cached."""
    home = tempfile.mkdtemp(prefix="agent-bench-")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "AGENT_"))
           and k != "PYTHONDONTWRITEBYTECODE"}
    env["AGENT_HOME"] = home
    env.update(extra)
    return env


def row(name: str, ours: float, base: float, base_name: str, unit: str = "ms") -> str:
    scale = 1000 if unit == "ms" else 1
    return (f"| {name} | {ours * scale:.1f} {unit} | {base_name}: {base * scale:.1f} {unit} | "
            f"{ours / base:.2f}x |")
