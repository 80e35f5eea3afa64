"""Running hooks with Claude Code's protocol: JSON on stdin, exit code 2 blocks, JSON out.

A hook is the person's own command.  It gets the event as JSON on stdin (``session_id``,
``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name`` and, per event,
``tool_name``, ``tool_input``, ``tool_use_id``, ``tool_response``, ``prompt``), runs in the
workspace with ``CLAUDE_PROJECT_DIR`` set, and answers by its exit code and stdout:

- exit 0: go on; stdout may be JSON with ``decision``/``reason``,
  ``hookSpecificOutput.permissionDecision`` (``allow|deny|ask``) and
  ``permissionDecisionReason``, and ``additionalContext``;
- exit 2: block, with stderr as the reason;
- anything else, a crash or a timeout: for ``PreToolUse`` the call is denied (fail closed)
  unless the hook says ``on_error = "allow"`` (Claude Code's behaviour); for other events it
  is logged and the work goes on.

A hook can deny or ask; an ``allow`` never turns a guard's or a rule's deny into an allow
(it is a guard, and only the gate allows).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Any

from .found import Hook
from .rules import TOOL_NAMES

log = logging.getLogger("agent.compat")

#: the events Claude Code documents; those in :data:`RUN` are run here, the rest reported
EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop",
          "SessionStart", "SessionEnd", "PreCompact", "Notification")
RUN = frozenset({"PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart",
                 "SessionEnd", "Stop", "SubagentStop"})
#: seconds a hook may take when it names no timeout (Claude Code's default is 60)
DEFAULT_TIMEOUT = 60.0
#: characters of a hook's stdout/stderr kept
OUTPUT_CAP = 10_000

#: our tool name -> the name Claude Code's matchers use for it
CLAUDE_NAME = {ours: theirs for theirs, tools in reversed(list(TOOL_NAMES.items()))
               for ours in tools}
CLAUDE_NAME.update({"write_file": "Write", "edit_file": "Edit", "multi_edit": "MultiEdit",
                    "read_file": "Read"})


@dataclass
class Outcome:
    """What one hook run said: ``block`` (exit 2 or a deny/block decision), ``ask``,
    ``failed`` (crash, timeout, other exit code), the reason, and added context."""

    block: bool = False
    ask: bool = False
    failed: bool = False
    reason: str = ""
    context: str = ""


def matches(hook: Hook, tool_name: str) -> bool:
    """Does the hook's matcher (a regular expression, ``*`` or empty for all) cover the
    tool, by our name or by Claude Code's?"""
    pattern = hook.matcher.strip()
    if pattern in ("", "*"):
        return True
    names = {tool_name, CLAUDE_NAME.get(tool_name, tool_name)}
    try:
        rx = re.compile(pattern)
    except re.error:
        return pattern in names
    return any(rx.fullmatch(n) for n in names)


def tool_input(args: dict[str, Any]) -> dict[str, Any]:
    """Our arguments, with Claude Code's names added where ours differ."""
    out = dict(args)
    if "path" in args:
        out.setdefault("file_path", args["path"])
    if "oldString" in args:
        out.setdefault("old_string", args["oldString"])
    if "newString" in args:
        out.setdefault("new_string", args["newString"])
    return out


def run_hook(hook: Hook, payload: dict[str, Any], cwd: str) -> Outcome:
    """Run one hook; never raises."""
    env = dict(os.environ)
    env["CLAUDE_PROJECT_DIR"] = cwd
    timeout = hook.timeout or DEFAULT_TIMEOUT
    try:
        done = subprocess.run(hook.command, shell=True, input=json.dumps(payload), cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=timeout,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        return Outcome(failed=True, reason=f"the {hook.event} hook `{hook.command}` timed out "
                                           f"after {timeout:g} s")
    except OSError as exc:
        return Outcome(failed=True, reason=f"the {hook.event} hook `{hook.command}` could not "
                                           f"start: {exc}")
    stderr = (done.stderr or "")[:OUTPUT_CAP].strip()
    if done.returncode == 2:
        return Outcome(block=True, reason=stderr or f"blocked by the {hook.event} hook")
    if done.returncode != 0:
        return Outcome(failed=True, reason=f"the {hook.event} hook `{hook.command}` exited "
                                           f"{done.returncode}: {stderr}".rstrip(": "))
    return _read_output((done.stdout or "")[:OUTPUT_CAP])


def _read_output(stdout: str) -> Outcome:
    text = stdout.strip()
    if not text.startswith("{"):
        return Outcome(context=text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return Outcome(context=text)
    if not isinstance(data, dict):
        return Outcome()
    specific = data.get("hookSpecificOutput") if isinstance(
        data.get("hookSpecificOutput"), dict) else {}
    decision = str(specific.get("permissionDecision") or data.get("decision") or "").lower()
    reason = str(specific.get("permissionDecisionReason") or data.get("reason") or "")
    context = str(specific.get("additionalContext") or data.get("additionalContext") or "")
    if data.get("continue") is False:
        return Outcome(block=True, reason=str(data.get("stopReason") or reason or
                                              "stopped by a hook"), context=context)
    return Outcome(block=decision in ("deny", "block"), ask=decision == "ask", reason=reason,
                   context=context)


def base_payload(event: str, session: Any, cwd: str) -> dict[str, Any]:
    """The fields every event carries."""
    mode = "default"
    flags = getattr(getattr(session, "gate", None), "flags", None)
    if flags is not None:
        mode = {"accept-edits": "acceptEdits"}.get(flags.mode, flags.mode)
    return {"session_id": str(getattr(session, "id", "") or ""), "transcript_path": "",
            "cwd": cwd, "permission_mode": mode, "hook_event_name": event}
