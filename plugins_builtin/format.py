"""Runs the project's formatter after each turn that changed files (opt-in)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from agent import WORKSPACE_WRITE, Sandbox, hookimpl, sandbox_for

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


def run_formatter(workspace: Path, timeout: float = TIMEOUT, config: Any = None) -> None:
    """Run the formatter in ``workspace`` under the sandbox (workspace-write: it may rewrite
    the project's files, nothing else, and has no network); every failure is logged and
    swallowed."""
    argv = formatter_for(workspace)
    if argv is None:
        return
    sandbox = sandbox_for(config) if config is not None else Sandbox.standalone(workspace)
    try:
        code, output = sandbox.run(argv, mode=WORKSPACE_WRITE, cwd=workspace, timeout=timeout)
    except OSError as exc:
        log.warning("format: could not run %s: %s", " ".join(argv), exc)
        return
    if code is None:
        log.warning("format: %s took longer than %ss and was killed", " ".join(argv), timeout)
        return
    if code != 0:
        log.warning("format: %s exited %s: %s", " ".join(argv), code,
                    output.decode("utf-8", "replace")[-2000:])


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
def agent_event(event, session):
    """At the end of the user's turn, format once if files changed."""
    if event.type != "done" or getattr(session, "origin", "model") != "model":
        return
    state = _state(session)
    if not state["changed"]:
        return
    state["changed"] = False
    try:
        run_formatter(Path(session.workspace), config=getattr(session, "config", None))
    except Exception:  # never let formatting break the session
        log.exception("format: failed")
