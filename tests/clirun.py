"""Running the installed ``agent`` command as a user would, with an isolated AGENT_HOME."""

from __future__ import annotations

import importlib
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
    A ``PYTHONPATH=`` given here is what a new interpreter would make of it: its folders
    lead ``sys.path`` for the run (plugins installed there are found and imported), the ones
    of this process's own ``PYTHONPATH`` that it leaves out are taken off, and after the run
    the path is restored and the modules imported from those folders are forgotten.
    """
    from agent.boot.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    streams = sys.stdin, sys.stdout, sys.stderr
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    os.environ.clear()
    os.environ.update(agent_env(home, **env))
    os.chdir(cwd)
    saved_path, sites = list(sys.path), _use_pythonpath(env.get("PYTHONPATH"))
    roots = _roots(sites)  # in the run's folder, where a relative PYTHONPATH entry means it
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(input or ""), out, err
    try:
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out.flush()
        err.flush()
    finally:
        # The process's own state first: nothing after this may leave a later test in the
        # run's folder or environment.
        sys.stdin, sys.stdout, sys.stderr = streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path
        _forget_modules_from(roots)
    return subprocess.CompletedProcess(
        args, code, out.buffer.getvalue().decode("utf-8", "surrogateescape"),
        err.buffer.getvalue().decode("utf-8", "replace"))


def _use_pythonpath(given: str | None) -> list[str]:
    """Put ``given`` (a PYTHONPATH value) on ``sys.path`` as a new interpreter would; the
    folders added, to forget their modules after."""
    if given is None:
        return []
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    wanted = [p for p in given.split(os.pathsep) if p]
    sys.path[:] = wanted + [p for p in sys.path if p not in wanted and p not in inherited]
    importlib.invalidate_caches()
    return wanted


def _roots(folders: list[str]) -> tuple[str, ...]:
    """The prefixes the ``__file__`` of a module found in ``folders`` starts with."""
    # A module's __file__ is the sys.path entry it was found through joined with its own
    # path, so a prefix test on the text finds them all; resolving every module's path
    # instead (thousands of them) cost about 0.3 s a run.
    return tuple({os.path.join(form(f), "") for f in folders
                  for form in (os.path.abspath, os.path.realpath)})


def _forget_modules_from(roots: tuple[str, ...]) -> None:
    """Drop the modules imported from below ``roots``: the next run's plugins of the same
    name (another test's site) are imported afresh, as in a new process."""
    if not roots:
        return
    # a copy taken at once: the SDK warm-up thread may still be importing (adding modules)
    for name, module in sys.modules.copy().items():
        where = getattr(module, "__file__", None)
        if where and where.startswith(roots):
            sys.modules.pop(name, None)
    importlib.invalidate_caches()
