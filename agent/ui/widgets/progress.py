"""Progress panels of the live area: the task list and the running subagents.

Both are urwid text markup built from plain data the plugins keep in ``session.data``: the
``todos`` plugin's list (``{"content", "status", "note"?}`` items) and the ``subagents``
plugin's records (see ``docs/agents.md``).  Nothing here imports a plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BAR_WIDTH = 40
TODO_ITEMS = 12      # tasks listed before "... N more"
TODO_CLIP = 80
CALL_CLIP = 58       # a subagent call's summary
RECENT_CALLS = 4

TODO_MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "blocked": "[!]"}
TODO_STYLES = {"pending": "todo", "in_progress": "todo-active", "done": "todo-done",
               "blocked": "todo-blocked"}
KIND_STYLES = {"explore": "sub-explore", "review": "sub-review", "worker": "sub-worker"}


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def todo_items(todos: Any) -> list[Mapping[str, Any]]:
    """The well-formed items of a task list (anything else is ignored)."""
    if not isinstance(todos, Sequence) or isinstance(todos, str):
        return []
    return [t for t in todos if isinstance(t, Mapping)]


def todo_markup(todos: Any) -> list[Any] | None:
    """``tasks  ####....  d/t  N blocked`` and one line per task; None for an empty list."""
    items = todo_items(todos)
    if not items:
        return None
    done = sum(1 for t in items if t.get("status") == "done")
    blocked = sum(1 for t in items if t.get("status") == "blocked")
    filled = round(BAR_WIDTH * done / len(items))
    out: list[Any] = [("todo-title", "tasks"), "  ", ("todo-bar", "#" * filled),
                      ("todo-rest", "." * (BAR_WIDTH - filled)), ("todo", f"  {done}/{len(items)}")]
    if blocked:
        out.append(("todo-blocked", f"  {blocked} blocked"))
    for t in items[:TODO_ITEMS]:
        status = str(t.get("status") or "pending")
        note = f" ({_clip(t['note'], TODO_CLIP)})" if t.get("note") else ""
        text = f"{TODO_MARKS.get(status, '[ ]')} {_clip(t.get('content', ''), TODO_CLIP)}{note}"
        out += ["\n  ", (TODO_STYLES.get(status, "todo"), text)]
    if len(items) > TODO_ITEMS:
        out.append(("dim", f"\n  ... {len(items) - TODO_ITEMS} more"))
    return out


def unfinished(todos: Any) -> bool:
    """True while some task is not done."""
    return any(t.get("status") != "done" for t in todo_items(todos))


def subagent_markup(records: Sequence[Mapping[str, Any]], spinner: str) -> list[Any]:
    """One block per subagent: its state, kind, description and step count, then its last
    four calls as ``tool(summary)``."""
    out: list[Any] = []
    for record in records:
        if out:
            out.append("\n")
        status = str(record.get("status") or "")
        kind = str(record.get("kind") or "explore")
        if status == "done":
            out.append(("sub-done", "*"))
        elif status in ("failed", "cancelled"):
            out.append(("sub-failed", "x"))
        else:
            out.append(("working", spinner))
        out += [" ", (KIND_STYLES.get(kind, "sub-explore"), kind)]
        if kind == "worker":
            out.append(("sub-worker", " (writes)"))
        steps = int(record.get("steps") or 0)
        out.append(f": {_clip(record.get('description', ''), 70)}")
        out.append(("dim", f"  {steps} step{'' if steps == 1 else 's'}"))
        if status in ("queued", "cancelled"):
            out.append(("dim", f"  {status}"))
        for call in list(record.get("calls") or [])[-RECENT_CALLS:]:
            style = {"failed": "tool-error", "running": "live"}.get(str(call.get("status")),
                                                                     "dim")
            text = f"{call.get('tool', '?')}({_clip(call.get('summary', ''), CALL_CLIP)})"
            out += ["\n    ", (style, text)]
        if status == "failed" and record.get("error"):
            out += ["\n    ", ("sub-failed", _clip(str(record["error"]), 90))]
    return out
