"""The final record of a headless turn: the ``result`` event.

``agent -p --output-format stream-json`` ends every turn with ``done`` and then exactly one
``result``; ``--output-format json`` prints only the ``result``.  It carries what a script
needs to go on without reading the rest of the stream: the session id to resume, the final
answer, why the turn stopped, the exit code, tokens, cost and the files the turn changed.

Field names follow Claude Code's ``-p`` result object where they mean the same thing
(``subtype``, ``is_error``, ``result``, ``session_id``, ``duration_ms``, ``num_turns``,
``total_cost_usd``, ``usage`` with ``input_tokens``, ``output_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``, ``permission_denials``), so
wrappers written for it work; ``stop_reason``, ``exit_code``, ``num_steps``, ``cost_usd``
and ``files_changed`` are ours (docs/headless.md).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from agent.contract import events as ev

#: ``done`` reasons as ``stop_reason`` values (a turn that ended normally after a denied
#: call says ``denied``).
STOP_REASONS = {"end": "done", "max_steps": "max_steps", "budget": "budget",
                "error": "error", "interrupted": "interrupted"}

#: ``stop_reason`` as Claude Code's ``subtype``.
SUBTYPES = {"done": "success", "denied": "success", "max_steps": "error_max_turns",
            "budget": "error_max_budget_usd", "error": "error_during_execution",
            "interrupted": "error_during_execution"}


@dataclass
class TurnRecord:
    """Watches the events of one turn and builds its ``result`` event."""

    started: float = field(default_factory=time.monotonic)
    #: the text of the turn's last model step (the final answer)
    answer: list[str] = field(default_factory=list)
    done: ev.DoneEvent | None = None
    errors: list[str] = field(default_factory=list)
    denials: list[dict[str, Any]] = field(default_factory=list)
    save_failed: bool = False
    _inputs: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)

    def see(self, event: ev.Event) -> None:
        """Take note of one event of the turn."""
        if isinstance(event, ev.TextEvent):
            self.answer.append(event.text)
        elif isinstance(event, (ev.ToolStartEvent, ev.ToolCallEvent)):
            self.answer.clear()  # text before a tool call is not the final answer
            if isinstance(event, ev.ToolCallEvent):
                self._inputs[event.id] = (event.name, event.input)
        elif isinstance(event, ev.ToolDeniedEvent):
            name, given = self._inputs.get(event.id, (event.name, {}))
            self.denials.append({"tool_name": name, "tool_use_id": event.id,
                                 "tool_input": given, "by": event.by,
                                 "reason": event.reason})
        elif isinstance(event, ev.ErrorEvent):
            self.errors.append(event.error)
        elif isinstance(event, ev.SaveFailedEvent):
            self.save_failed = True
        elif isinstance(event, ev.DoneEvent):
            self.done = event

    @property
    def stop_reason(self) -> str:
        reason = STOP_REASONS.get(self.done.reason if self.done else "interrupted", "error")
        if reason == "done" and self.denials:
            return "denied"
        return reason

    def build(self, session: Any, exit_code: int, total_cost: float | None = None,
              files_changed: list[str] | None = None) -> ev.ResultEvent:
        """The ``result`` event; ``total_cost`` is what this process's turns cost so far."""
        done = self.done or ev.DoneEvent("interrupted")
        stop = self.stop_reason
        is_error = stop not in ("done", "denied")
        cost = None if done.cost_usd is None else round(done.cost_usd, 6)
        fields: dict[str, Any] = {
            "subtype": SUBTYPES[stop],
            "is_error": is_error,
            "session_id": getattr(session, "id", ""),
            "result": "".join(self.answer),
            "stop_reason": stop,
            "exit_code": exit_code,
            "num_steps": done.steps,
            "num_turns": done.steps,
            "duration_ms": int((time.monotonic() - self.started) * 1000),
            "usage": {
                "input_tokens": done.input_tokens or 0,
                "output_tokens": done.output_tokens or 0,
                "cache_read_input_tokens": done.cached_tokens or 0,
                "cache_creation_input_tokens": done.cache_write_tokens or 0,
                "reasoning_tokens": done.reasoning_tokens or 0,
            },
            "cost_usd": cost,
            "total_cost_usd": None if total_cost is None else round(total_cost, 6),
            "files_changed": list(files_changed or []),
            "permission_denials": list(self.denials),
        }
        if is_error and self.errors:
            fields["error"] = self.errors[-1]
        return ev.ResultEvent(fields)


def files_changed(session: Any) -> list[str]:
    """The files the session's last turn changed: what the plugins watching the files say
    (``agent_turn_files_changed``), else the paths its finished calls declared, relative to
    the workspace where they are inside it."""
    hooks = getattr(session, "hooks", None)
    found = hooks.turn_files_changed(session) if hooks is not None else None
    if found is not None:
        return [str(path) for path in found]
    workspace = os.path.realpath(str(getattr(session, "workspace", ".")))
    paths = set()
    for raw in getattr(session, "turn_changed_paths", ()):
        full = os.path.realpath(os.path.join(workspace, os.path.expanduser(raw)))
        inside = full.startswith(workspace.rstrip("/") + "/")
        paths.add(os.path.relpath(full, workspace) if inside else full)
    return sorted(paths)


class CostTotal:
    """What the turns of this process cost together (None once one of them is unpriced)."""

    def __init__(self) -> None:
        self.usd: float | None = 0.0

    def add(self, record: TurnRecord) -> float | None:
        done = record.done
        if self.usd is not None:
            if done is not None and done.cost_usd is None and done.steps:
                self.usd = None
            elif done is not None and done.cost_usd is not None:
                self.usd += done.cost_usd
        return self.usd
