"""Runs the project's formatter after each turn that changed files (opt-in).

The formatter runs as after-turn work (``agent_after_turn``): a subprocess awaited on the
event loop, so the screen stays live for the up to 60 s it may take; the next turn and the
end of the run wait for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

from agent import WORKSPACE_WRITE, Panel, Sandbox, hookimpl, sandbox_for

log = logging.getLogger("agent.plugins.format")

TIMEOUT = 60.0
KEY = "format"


def formatter_for(workspace: Path) -> list[str] | None:
    """The project's own formatter command, first match only, or None.

    ``ruff format`` or ``black`` when pyproject.toml mentions them, ``npm run format`` when
    package.json has a ``format`` script, ``cargo fmt`` for Cargo.toml, ``gofmt -w .`` for
    go.mod.
    """
    pyproject = _read(workspace / "pyproject.toml")
    if pyproject is not None:
        if re.search(r"\bruff\b", pyproject):
            return ["ruff", "format", "."]
        if re.search(r"\bblack\b", pyproject):
            return ["black", "."]
    package = _read(workspace / "package.json")
    if package is not None:
        try:
            scripts = json.loads(package).get("scripts") or {}
        except (ValueError, AttributeError):
            scripts = {}
        if isinstance(scripts, dict) and "format" in scripts:
            return ["npm", "run", "format"]
    if (workspace / "Cargo.toml").is_file():
        return ["cargo", "fmt"]
    if (workspace / "go.mod").is_file():
        return ["gofmt", "-w", "."]
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


async def format_workspace(workspace: Path, timeout: float = TIMEOUT,
                           config: Any = None) -> None:
    """Run the formatter in ``workspace`` under the sandbox (workspace-write: it may rewrite
    the project's files, nothing else, and has no network), awaited without blocking the
    event loop; every failure is logged and swallowed.  On timeout, or when the awaiting
    task is cancelled, the formatter and everything it started are stopped."""
    argv = formatter_for(workspace)
    if argv is None:
        return
    sandbox = sandbox_for(config) if config is not None else Sandbox.standalone(workspace)
    shown = " ".join(argv)
    try:
        proc = await sandbox.spawn(argv, mode=WORKSPACE_WRITE, cwd=workspace,
                                   stdout=asyncio.subprocess.PIPE,
                                   stderr=asyncio.subprocess.STDOUT)
    except OSError as exc:
        log.warning("format: could not run %s: %s", shown, exc)
        return
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await proc.terminate()
        log.warning("format: %s took longer than %ss and was killed", shown, timeout)
        return
    except asyncio.CancelledError:
        await asyncio.shield(proc.terminate())  # a formatter never outlives the run
        raise
    if proc.returncode != 0:
        log.warning("format: %s exited %s: %s", shown, proc.returncode,
                    output.decode("utf-8", "replace")[-2000:])


def run_formatter(workspace: Path, timeout: float = TIMEOUT, config: Any = None) -> None:
    """:func:`format_workspace` for synchronous callers (no event loop running)."""
    asyncio.run(format_workspace(workspace, timeout, config))


def _state(session) -> dict:
    return session.data.setdefault(KEY, {"changed": False})


@hookimpl
def agent_tool_result(call, result, session):
    """Note that this turn changed files: a call succeeded whose effects write or delete."""
    if session is None:
        return None
    tool = getattr(session, "tools", {}).get(call.name)
    if tool is None or result.is_error:
        return None
    try:
        effects = tool.effects(call.arguments)
    except Exception:
        return None
    if effects.writes or effects.deletes:
        _state(session)["changed"] = True
    return None


@hookimpl
def agent_after_turn(session, done):
    """At the end of the user's turn, format once if files changed (awaited by the session
    as after-turn work, so the screen is not blocked while the formatter runs)."""
    if getattr(session, "origin", "model") != "model":
        return None
    state = _state(session)
    if not state["changed"]:
        return None
    state["changed"] = False
    return _format_for(session, state)


async def _format_for(session, state: dict) -> None:
    workspace = Path(session.workspace)
    state["running"] = " ".join(formatter_for(workspace) or [])
    try:
        await format_workspace(workspace, config=getattr(session, "config", None))
    finally:
        state["running"] = ""


@hookimpl
def agent_live_panels(session, state):
    """While the formatter runs after a turn: one line saying so above the prompt."""
    running = (session.data.get(KEY) or {}).get("running") if session is not None else None
    if running:
        return Panel("format", [("dim", f"formatting: {running}")], order=90)
    return None
