"""Runs the project's formatter after each turn that changed files (opt-in)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
from pathlib import Path

from agent import hookimpl

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


def run_formatter(workspace: Path, timeout: float = TIMEOUT) -> None:
    """Run the formatter in ``workspace``; every failure is logged and swallowed."""
    argv = formatter_for(workspace)
    if argv is None:
        return
    try:
        proc = subprocess.Popen(argv, cwd=workspace, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as exc:
        log.warning("format: could not run %s: %s", " ".join(argv), exc)
        return
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # npm and friends spawn children
        except OSError:
            pass
        proc.communicate()
        log.warning("format: %s took longer than %ss and was killed", " ".join(argv), timeout)
        return
    if proc.returncode != 0:
        log.warning("format: %s exited %s: %s", " ".join(argv), proc.returncode,
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
        run_formatter(Path(session.workspace))
    except Exception:  # never let formatting break the session
        log.exception("format: failed")
