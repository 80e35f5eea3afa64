"""The task list: todo_write, the list in the system prompt every step, and /todos.

The list lives in ``session.data["todos"]`` (a list of ``{content, status, note?}``), which is
saved with the session and restored by ``-c``/``-r``/``/resume``.  It is re-injected into the
system prompt before every model request, never into the message history, so pruning and
``/compact`` cannot drop it.  The front end shows it as a live panel (``agent_live_panels``)
during a turn, and between turns while a task is unfinished.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent import (
    NO_EFFECTS,
    Description,
    Fragment,
    Panel,
    SlashCommand,
    Tool,
    ToolError,
    ToolResult,
    hookimpl,
)

DATA_KEY = "todos"
STATUSES = ("pending", "in_progress", "done", "blocked")
MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "blocked": "[!]"}
NO_LIST = "No task list yet."

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The whole task list, in order. It replaces the previous list.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "What the task is."},
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "note": {"type": "string",
                             "description": "Optional: why it is blocked, or a short remark."},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["todos"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Write your task list for multi-step work. Send the WHOLE list every time (it replaces "
    "the previous one). Statuses: pending, in_progress, done, blocked (say why in note). "
    "Keep exactly one task in_progress while you work, and mark tasks done as soon as they "
    "are finished.")


# ---- pure helpers -----------------------------------------------------------------------------


def normalise(items: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Trimmed copies of the items; empty content is refused."""
    out: list[dict[str, str]] = []
    for number, item in enumerate(items, 1):
        content = " ".join(str(item.get("content", "")).split())
        if not content:
            raise ToolError(f"Task {number} has no content. Give every task a short "
                            "description and call todo_write again.")
        entry = {"content": content, "status": str(item["status"])}
        note = " ".join(str(item.get("note") or "").split())
        if note:
            entry["note"] = note
        out.append(entry)
    return out


def render(todos: list[dict[str, Any]]) -> str:
    """``- [x] content (note)`` per task."""
    lines = []
    for item in todos:
        note = f" ({item['note']})" if item.get("note") else ""
        lines.append(f"- {MARKS.get(item.get('status', ''), '[ ]')} {item['content']}{note}")
    return "\n".join(lines)


def counts(todos: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(done, total, blocked)."""
    done = sum(1 for t in todos if t.get("status") == "done")
    blocked = sum(1 for t in todos if t.get("status") == "blocked")
    return done, len(todos), blocked


def warnings(todos: list[dict[str, Any]]) -> list[str]:
    """What is wrong with how the list is kept (shown to the model, never refused)."""
    out = []
    active = sum(1 for t in todos if t["status"] == "in_progress")
    if active > 1:
        out.append(f"{active} tasks are in_progress; keep it to one.")
    if active == 0 and any(t["status"] == "pending" for t in todos):
        out.append("nothing is in_progress; mark what you are working on.")
    for t in todos:
        if t["status"] == "blocked" and not t.get("note"):
            out.append(f'"{t["content"]}" is blocked with no note saying why.')
    return out


def result_text(todos: list[dict[str, Any]]) -> str:
    done, total, _ = counts(todos)
    parts = [f"Task list updated: {done}/{total} done."]
    if todos:
        parts.append(render(todos))
    parts.extend(f"Warning: {w}" for w in warnings(todos))
    return "\n".join(parts)


def prompt_block(todos: list[dict[str, Any]]) -> str:
    """The system prompt block, or "" when there is no list."""
    if not todos:
        return ""
    done, total, blocked = counts(todos)
    head = f"Your task list ({done}/{total} done" + (f", {blocked} blocked" if blocked else "")
    return head + "). Keep it current with todo_write:\n" + render(todos)


def todos_text(session: Any) -> str:
    """``/todos``: the rendered list or ``No task list yet.``"""
    todos = (getattr(session, "data", None) or {}).get(DATA_KEY) or []
    return render(todos) if todos else NO_LIST


# ---- the tool, the fragment, the command ------------------------------------------------------


async def _todo_write(args: dict[str, Any], ctx: Any) -> ToolResult:
    todos = normalise(args["todos"])
    if ctx.session is not None:
        ctx.session.data[DATA_KEY] = todos
    done, total, blocked = counts(todos)
    summary = f"{done}/{total} done" + (f", {blocked} blocked" if blocked else "")
    return ToolResult(result_text(todos), summary=summary, display={"todos": todos})


def describe(args: dict[str, Any]) -> Description:
    todos = [t for t in (args.get("todos") or []) if isinstance(t, dict)]
    lines = [f"{t.get('status', '?')}: {t.get('content', '')}" for t in todos[:6]]
    more = [f"... {len(todos) - 6} more"] if len(todos) > 6 else []
    return Description(tuple(lines + more), f"Update the task list ({len(todos)} tasks)?")


TODO_WRITE = Tool(
    name="todo_write",
    describe=describe,
    description=DESCRIPTION,
    run=_todo_write,
    parameters=PARAMETERS,
    effects=lambda args: NO_EFFECTS,
    subjectless=True,
    tool_set=None,
    read_only=True,
    prompt="for work of three or more steps, keep a task list; one task in_progress at a time",
)


@hookimpl
def agent_persisted_keys(config):
    return [DATA_KEY]  # the task list comes back with the session (-c, -r, /resume)


@hookimpl
def agent_register_tools(register, config):
    register(TODO_WRITE)


@hookimpl
def agent_prompt_fragments(session):
    text = prompt_block(session.data.get(DATA_KEY) or [])
    return Fragment("todos", text, order=300) if text else None


def run_todos(app: Any, args: str) -> str | None:
    text = todos_text(getattr(app, "session", None))
    info = getattr(app, "info", None)
    if callable(info):
        info(text)
        return None
    return text


@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("todos", "show the task list", run_todos, info=True))


# ---- the live panel -------------------------------------------------------------------------

BAR_WIDTH = 40
PANEL_ITEMS = 12     # tasks listed before "... N more"
PANEL_CLIP = 80
PANEL_STYLES = {"pending": "todo", "in_progress": "todo-active", "done": "todo-done",
                "blocked": "todo-blocked"}


def _clip(text: Any, limit: int) -> str:
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
    for t in items[:PANEL_ITEMS]:
        status = str(t.get("status") or "pending")
        note = f" ({_clip(t['note'], PANEL_CLIP)})" if t.get("note") else ""
        text = f"{MARKS.get(status, '[ ]')} {_clip(t.get('content', ''), PANEL_CLIP)}{note}"
        out += ["\n  ", (PANEL_STYLES.get(status, "todo"), text)]
    if len(items) > PANEL_ITEMS:
        out.append(("dim", f"\n  ... {len(items) - PANEL_ITEMS} more"))
    return out


def unfinished(todos: Any) -> bool:
    """True while some task is not done."""
    return any(t.get("status") != "done" for t in todo_items(todos))


@hookimpl
def agent_live_panels(session, state):
    todos = session.data.get(DATA_KEY)
    if not (state.busy or unfinished(todos)):
        return None
    markup = todo_markup(todos)
    return Panel(DATA_KEY, markup) if markup else None
