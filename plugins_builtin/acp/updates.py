"""The event stream as ACP ``session/update`` payloads: answer and reasoning chunks, tool
calls with a kind, a title and the locations they touch, their live output and status,
edits as ACP ``diff`` content, and the task list as ``plan`` entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
from acp.schema import ToolCallLocation

from agent.contract import events as ev

#: ACP tool kinds of the builtin tools (anything else is ``other``).
KINDS = {
    "read_file": "read", "read_many_files": "read", "list_dir": "read",
    "glob": "search", "grep": "search",
    "edit_file": "edit", "write_file": "edit", "multi_edit": "edit", "apply_patch": "edit",
    "delete_file": "delete", "move_file": "move",
    "bash": "execute", "web_fetch": "fetch", "todo_write": "think",
}

#: The largest file whose text goes into a diff (the editor shows its own diff).
MAX_DIFF_BYTES = 1_000_000

_PLAN_STATUS = {"completed": "completed", "done": "completed", "in_progress": "in_progress"}


def tool_kind(name: str) -> str:
    return KINDS.get(name, "other")


def tool_title(name: str, args: dict[str, Any]) -> str:
    """A one-line title: the tool and what it acts on."""
    for key in ("command", "path", "pattern", "url", "source"):
        value = args.get(key)
        if isinstance(value, str) and value:
            first = value.splitlines()[0] if value.strip() else value
            return f"{name}: {first[:200]}"
    return name


def _paths(args: dict[str, Any]) -> list[str]:
    found = [args[k] for k in ("path", "source", "destination") if isinstance(args.get(k), str)]
    paths = args.get("paths")
    if isinstance(paths, list):
        found.extend(p for p in paths if isinstance(p, str))
    return found


def _inside(workspace: Path, path: str) -> Path | None:
    """``path`` resolved against the workspace, or None when it leaves it."""
    try:
        real = (workspace / path).resolve()
        real.relative_to(workspace.resolve())
    except (OSError, ValueError):
        return None
    return real


def locations(workspace: Path, args: dict[str, Any]) -> list[ToolCallLocation]:
    out = []
    for path in _paths(args):
        real = _inside(workspace, path)
        out.append(ToolCallLocation(path=str(real if real is not None else path)))
    return out


def _read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_DIFF_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def diff_content(workspace: Path, name: str, args: dict[str, Any]) -> list[Any]:
    """ACP ``diff`` content of an edit, computed from its arguments and the file on disk
    (nothing when it cannot be known: a file outside the workspace, binary or too large)."""
    path = args.get("path")
    if name not in ("edit_file", "write_file", "multi_edit") or not isinstance(path, str):
        return []
    real = _inside(workspace, path)
    if real is None:
        return []
    old = _read_text(real) if real.exists() else None
    if name == "write_file":
        new = args.get("content")
        return [acp.tool_diff_content(str(real), new, old)] if isinstance(new, str) else []
    if old is None:
        return []
    edits = args.get("edits") if name == "multi_edit" else [args]
    new = old
    for edit in edits if isinstance(edits, list) else []:
        if not isinstance(edit, dict):
            continue
        find, replace = edit.get("oldString"), edit.get("newString")
        if not isinstance(find, str) or not isinstance(replace, str) or find not in new:
            return []
        new = new.replace(find, replace) if edit.get("replaceAll") else \
            new.replace(find, replace, 1)
    return [acp.tool_diff_content(str(real), new, old)]


def plan_update(args: dict[str, Any]) -> Any | None:
    """``todo_write``'s task list as an ACP ``plan``."""
    todos = args.get("todos")
    if not isinstance(todos, list):
        return None
    entries = [acp.plan_entry(str(t.get("content", "")), priority="medium",
                              status=_PLAN_STATUS.get(str(t.get("status")), "pending"))
               for t in todos if isinstance(t, dict)]
    return acp.update_plan(entries)


def _text(text: str) -> Any:
    return acp.tool_content(acp.text_block(text))


class Translator:
    """Turns one session's events into ACP updates (a list per event, maybe empty); keeps
    the output each running tool call has streamed so far."""

    def __init__(self, workspace: Path, diffs: bool = True) -> None:
        self.workspace = workspace
        #: edits carry a diff against the file on disk (not when replaying old calls)
        self.diffs = diffs
        self._output: dict[str, str] = {}
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}

    def updates(self, event: ev.Event) -> list[Any]:
        if isinstance(event, ev.TextEvent):
            return [acp.update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, ev.ReasoningEvent):
            return [acp.update_agent_thought_text(event.text)] if event.text else []
        if isinstance(event, ev.ToolCallEvent):
            return self._call(event)
        if isinstance(event, ev.ToolOutputEvent):
            text = self._output.get(event.id, "") + event.chunk
            self._output[event.id] = text
            return [acp.update_tool_call(event.id, status="in_progress", content=[_text(text)])]
        if isinstance(event, ev.ToolResultEvent):
            self._output.pop(event.id, None)
            out = [acp.update_tool_call(event.id, status="completed",
                                        content=[_text(event.output)] if event.output else None,
                                        raw_output=event.output)]
            name, args = self.calls.pop(event.id, (event.name, {}))
            plan = plan_update(args) if name == "todo_write" else None
            return out + ([plan] if plan is not None else [])  # the list the tool accepted
        if isinstance(event, ev.ToolErrorEvent):
            self._output.pop(event.id, None)
            self.calls.pop(event.id, None)
            return [acp.update_tool_call(event.id, status="failed",
                                         content=[_text(event.error)])]
        if isinstance(event, ev.ToolDeniedEvent):
            self.calls.pop(event.id, None)
            return [acp.update_tool_call(event.id, status="failed",
                                         content=[_text(f"denied ({event.by}): {event.reason}")])]
        if isinstance(event, (ev.NoticeEvent, ev.ErrorEvent)):
            text = event.text if isinstance(event, ev.NoticeEvent) else f"error: {event.error}"
            return [acp.update_agent_thought_text(text + "\n")]
        return []

    def _call(self, event: ev.ToolCallEvent) -> list[Any]:
        args = event.input if isinstance(event.input, dict) else {}
        self.calls[event.id] = (event.name, args)
        return [self.start(event.id, event.name, args)]

    def start(self, call_id: str, name: str, args: dict[str, Any]) -> Any:
        """The ``tool_call`` that announces a call, pending until it runs."""
        return acp.start_tool_call(
            call_id, tool_title(name, args), kind=tool_kind(name), status="pending",
            content=(diff_content(self.workspace, name, args) if self.diffs else []) or None,
            locations=locations(self.workspace, args) or None, raw_input=args)


def replay(messages: list[Any], workspace: Path) -> list[Any]:
    """A saved conversation as the updates that would have shown it: the user's text, the
    answer and reasoning, each tool call with its result (no diffs: the files have moved
    on since)."""
    from agent.contract.messages import ReasoningPart, TextPart, ToolCallPart, ToolResultPart

    translator = Translator(workspace, diffs=False)
    out: list[Any] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                if message.role == "user":
                    out.append(acp.update_user_message_text(part.text))
                elif message.role == "assistant":
                    out.append(acp.update_agent_message_text(part.text))
            elif isinstance(part, ReasoningPart) and part.text:
                out.append(acp.update_agent_thought_text(part.text))
            elif isinstance(part, ToolCallPart):
                out.extend(translator.updates(ev.ToolCallEvent(part.id, part.name,
                                                               dict(part.arguments))))
            elif isinstance(part, ToolResultPart):
                if part.is_error:
                    out.extend(translator.updates(ev.ToolErrorEvent(part.call_id, part.name,
                                                                    part.output)))
                else:
                    out.extend(translator.updates(ev.ToolResultEvent(part.call_id, part.name,
                                                                     part.output)))
    return out
