"""Running the installed ``agent`` command as a user would, with an isolated AGENT_HOME."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

SCRUBBED = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_API_KEY", "AGENT_PROVIDER",
            "AGENT_MODEL", "AGENT_BASE_URL", "AGENT_DISABLE_PLUGINS", "AGENT_OPENAI_API")


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["AGENT_HOME"] = str(home)
    env.update(extra)
    return env


def run_agent(args: list[str], *, home: Path, cwd: Path, input: str | None = None,
              timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """``agent ARGS`` (via ``python -m agent`` so the test's interpreter is used)."""
    return subprocess.run([sys.executable, "-m", "agent", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env=agent_env(home, **env))


def run_agent_here(args: list[str], *, home: Path, cwd: Path, input: str | None = None,
                   **env: str) -> subprocess.CompletedProcess[str]:
    """``agent ARGS`` through the real ``agent.boot.cli.main`` in this process: what
    :func:`run_agent` proves, without the cost of a new interpreter importing the SDKs.

    For tests of what the CLI decides (flags, rules, exit codes, stdout); the ones about the
    process itself (signals, kill -9, the entry point, startup imports) use :func:`run_agent`.
    The environment, working directory and standard streams are this process's for the
    duration and restored after; stdin holds ``input`` (empty without it), not a terminal.
    """
    from agent.boot.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    streams = sys.stdin, sys.stdout, sys.stderr
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    os.environ.clear()
    os.environ.update(agent_env(home, **env))
    os.chdir(cwd)
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(input or ""), out, err
    try:
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out.flush()
        err.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(
        args, code, out.buffer.getvalue().decode("utf-8", "surrogateescape"),
        err.buffer.getvalue().decode("utf-8", "replace"))
