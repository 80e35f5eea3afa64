"""Subagents: the task tool hands a job to a fresh explore, review or worker session.

A subagent is a nested :class:`agent.loop.session.Session` with its own messages (it sees nothing
of the parent conversation), a kind-specific system prompt, a small tool set and a cap of
20 steps.  It ends with one text report, which is the ``task`` call's result.

- ``explore`` (default) and ``review`` read: read_file, read_many_files, glob, grep, list_dir
  and the git read tools.  They never ask the user anything: a call that would need approval
  is refused and the subagent is told to report what it could not check.
- ``worker`` may also write_file, edit_file, multi_edit, apply_patch and run bash.  Every
  call goes through the parent's gate (guards, permission rules, "always" grants, --yolo,
  and the parent's approver, labelled with origin ``worker``).  The subagent cannot approve
  anything itself; a refusal by a guard or the user is final.  Without an approval channel
  (headless) or in a read-only agent (plan, review) the worker kind is not offered.

``task`` has no effects of its own (the worker's writes are gated inside), so several
``task`` calls in one step run together, at most ``subagent_concurrency`` at a time.

Progress, for front ends: short lines through the call's live output, and a structured
record per subagent in ``parent.data["subagents"]`` (see :func:`new_record`), updated as the
subagent works and emptied of finished entries when the parent's next turn starts.  Tokens
and cost land in the parent's spend ledger (the ``budget`` plugin, through
``agent_request_done``) as the subagent's steps finish: ``session.data["subagent_usage"]``
holds the subagents' totals.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
import weakref
from dataclasses import dataclass, field, replace
from typing import Any

from agent import (
    Description,
    Effects,
    Fragment,
    Option,
    Panel,
    Tool,
    ToolError,
    ToolResult,
    hookimpl,
)
from agent.contract import events as ev
from agent.loop.gate import Gate, GateDecision
from agent.loop.session import root_session

KINDS = ("explore", "review", "worker")
READ_TOOLS = ("read_file", "read_many_files", "glob", "grep", "list_dir", "git_status",
              "git_diff", "git_log", "git_show", "git_blame", "git_branch")
WRITE_TOOLS = ("write_file", "edit_file", "multi_edit", "apply_patch", "bash")
STEP_CAP = 20
RECENT_CALLS = 4  # calls kept per record for a progress panel

NO_FINDINGS = "Subagent returned no findings."
NO_CHANNEL = ("The worker kind needs an approval channel, which this session has not "
              "provided.")
READ_ONLY_AGENT = ("The worker kind is not available in the {agent} agent, which changes "
                   "nothing. Use explore or review, or describe the change in your answer.")
DATA_KEY = "subagents"

EXPLORE_PROMPT = """\
You are an explore subagent of agent, a coding agent. Another agent gave you one question
about the codebase in the current workspace; you see nothing of its conversation. Find the
answer with your read-only tools, then reply with one report, which is all the other agent
will see. Report paths with line numbers (`path:line`), quote code only where the quote is
the answer, and say plainly what you could not determine. Keep the report under 30 lines.
You cannot change files, run commands or ask anyone anything."""

REVIEW_PROMPT = """\
You are a review subagent of agent, a coding agent. Another agent asked you to review code in
the current workspace; you see nothing of its conversation. Read what you need with your
read-only tools, then reply with one report, which is all the other agent will see. List
defects in order of severity (incorrect behaviour, missing validation at trust boundaries,
security, resource leaks, clarity), each with file and line, what is wrong, and the fix. If
the code is correct, say so. You cannot change files, run commands or ask anyone anything."""

WORKER_PROMPT = """\
You are a worker subagent of agent, a coding agent. Another agent delegated one change to
you; you see nothing of its conversation. Every write and every command you make is shown to
the user for approval through that agent, under the user's rules. A denied call is final: do
not retry it or work around it; stop and report what was denied. You cannot ask questions:
when the task is ambiguous, take the smaller reading and say which. Do only what was asked,
verify it (run the relevant tests when there are any), and finish with one report: the files
you changed, the commands you ran and their outcomes, and anything left undone."""

PROMPTS = {"explore": EXPLORE_PROMPT, "review": REVIEW_PROMPT, "worker": WORKER_PROMPT}

DESCRIPTION = (
    "Hand a self-contained job to a subagent with its own context window and get back one "
    "report. It sees nothing of this conversation, so put everything it needs in prompt. "
    "Kinds: {kinds}. Several task calls in one step run in parallel.")

KIND_HELP = {
    "explore": "explore (default): find things out and report, read-only",
    "review": "review: critique code in severity order, read-only",
    "worker": "worker: make a change (its writes and commands ask the user, like yours)",
}


@dataclass
class TaskTool(Tool):
    """The ``task`` tool; ``kinds`` are the kinds offered this step (the schema's enum).

    The validating schema takes any string for ``kind`` so that a request for a withheld
    kind gets a specific refusal from :func:`run_task` instead of a schema error."""

    kinds: tuple[str, ...] = KINDS
    help: dict[str, str] = field(default_factory=dict)  # agent-file kinds' descriptions

    def spec(self) -> dict[str, Any]:
        params = copy.deepcopy(self.parameters)
        kind = params["properties"]["kind"]
        kind["enum"] = list(self.kinds)
        kind["description"] = "; ".join(KIND_HELP.get(k) or f"{k}: {self.help.get(k, '')}"
                                        for k in self.kinds)
        text = DESCRIPTION.format(kinds=", ".join(self.kinds))
        return {"name": self.name, "description": text, "parameters": params}


PARAMETERS = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "minLength": 1,
                        "description": "3-7 words saying what the subagent does (shown to "
                                       "the user)."},
        "prompt": {"type": "string", "minLength": 1,
                   "description": "The complete task: what to find or do, where to look, "
                                  "and what the report must contain."},
        "kind": {"type": "string"},
    },
    "required": ["description", "prompt"],
    "additionalProperties": False,
}


# ---- which kinds a session may use ----------------------------------------------------------


def worker_refusal(session: Any) -> str | None:
    """Why ``session`` may not start a worker, or None when it may."""
    if session is None or session.runtime.approver is None:
        return NO_CHANNEL
    if session.data.get("read_only"):
        return READ_ONLY_AGENT.format(agent=session.data.get("agent") or "current")
    return None


def kinds_for(session: Any) -> tuple[str, ...]:
    builtin = KINDS if worker_refusal(session) is None else ("explore", "review")
    return builtin + tuple(custom_kinds(session.config) if session is not None else ())


# ---- kinds from agent files (Claude Code's .claude/agents) ------------------------------------

#: Claude Code's tool names in an agent's ``tools`` -> ours
CLAUDE_TOOLS: dict[str, tuple[str, ...]] = {
    "Read": ("read_file", "read_many_files"), "Grep": ("grep",), "Glob": ("glob",),
    "LS": ("list_dir",), "Bash": ("bash",), "WebFetch": ("web_fetch",),
    "Edit": ("edit_file", "multi_edit", "apply_patch"), "MultiEdit": ("multi_edit",),
    "Write": ("write_file",),
}


def agent_dirs(config: Any) -> list[Any]:
    """``~/.claude/agents`` then the project's ``.claude/agents`` (it wins); none with
    ``compat = false``."""
    import os
    from pathlib import Path

    if config.get("compat") is False:
        return []
    home = Path(config.get("compat_home") or os.path.expanduser("~"))
    return [home / ".claude" / "agents", Path(config.workspace) / ".claude" / "agents"]


def custom_kinds(config: Any) -> dict[str, Any]:
    """Subagent kinds from agent files, by name (a builtin kind's name is kept for it)."""
    from agent.lib.agentfiles import read_dirs

    found, _ = read_dirs(agent_dirs(config))
    return {name: a for name, a in found.items() if name not in KINDS}


def custom_tools(agent: Any, available: dict[str, Any]) -> list[str]:
    """Our tools an agent file's ``tools`` names (all but ``task`` when it names none);
    names with no counterpart are left out, never widened."""
    if agent.tools is None:
        return [n for n in available if n != "task"]
    names: list[str] = []
    for tool in agent.tools:
        names += [n for n in CLAUDE_TOOLS.get(tool, (tool,)) if n in available and n != "task"]
    return list(dict.fromkeys(names))


class ListedGate:
    """The gate of an agent-file subagent: a call of a tool outside the agent's ``tools`` is
    denied here, before the inner gate (the parent's, or a quiet one) sees it."""

    def __init__(self, inner: Any, allowed: list[str], kind: str) -> None:
        self.inner = inner
        self.allowed = frozenset(allowed)
        self.kind = kind

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def decide(self, call: Any, tool: Any, effects: Any, session: Any) -> GateDecision:
        if call.name not in self.allowed:
            return GateDecision(False, "rule", f"{call.name} is not among the tools of the "
                                f"{self.kind} agent ({', '.join(sorted(self.allowed))}).")
        return await self.inner.decide(call, tool, effects, session)


# ---- subagent gates -------------------------------------------------------------------------


class QuietGate(Gate):
    """The parent's guards, rules, grants and --yolo, for subagents that never ask: a call
    that would need the user's approval is refused with a note for the subagent."""

    def __init__(self, parent: Gate, kind: str) -> None:
        super().__init__(parent.hooks, parent.config, None, yolo=parent.yolo)
        self.grants = parent.grants
        self.user_rules = parent.user_rules
        self.project_rules = parent.project_rules
        self.kind = kind

    async def decide(self, call: Any, tool: Any, effects: Any, session: Any) -> GateDecision:
        decision = await super().decide(call, tool, effects, session)
        if decision.by == "headless":
            decision.message = (
                f"{call.name} needs the user's approval, and a {self.kind} subagent never "
                "asks for it. Do without it and say in your report what you could not check.")
        return decision


# ---- progress records -----------------------------------------------------------------------


def new_record(call_id: str, kind: str, description: str, model: str) -> dict[str, Any]:
    """A subagent's progress record (plain JSON, updated in place while it runs).

    ``status``: ``queued`` (waiting for a concurrency slot), ``running``, ``done``,
    ``failed`` (``error`` says why) or ``cancelled``.  ``steps``: model requests so far.
    ``calls``: its last four tool calls, each ``{"id", "tool", "summary", "status"
    ("running"|"ok"|"failed"), "outcome"}``.  ``started``/``ended`` are epoch seconds.
    """
    return {"id": call_id, "kind": kind, "description": description, "model": model,
            "status": "queued", "steps": 0, "calls": [], "error": None,
            "started": time.time(), "ended": None}


def summarize_args(args: dict[str, Any], limit: int = 58) -> str:
    """A short, one-line view of a call's arguments for progress lines."""
    for key in ("path", "pattern", "command", "paths", "ref", "description"):
        value = args.get(key)
        if value:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            break
    else:
        text = json.dumps(args, ensure_ascii=False, default=str) if args else ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(text: str, limit: int = 80) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Progress:
    """Turns a subagent's events into its record and short output lines."""

    def __init__(self, record: dict[str, Any], child: Any, emit: Any) -> None:
        self.record = record
        self.child = child
        self.emit = emit
        self.reason = ""
        self.error = ""

    def line(self, text: str) -> None:
        self.emit(f"{self.record['kind']}: {text}\n")

    def _call(self, call_id: str) -> dict[str, Any] | None:
        return next((c for c in self.record["calls"] if c["id"] == call_id), None)

    def _finish_call(self, call_id: str, ok: bool, outcome: str) -> None:
        entry = self._call(call_id)
        if entry is not None:
            entry["status"] = "ok" if ok else "failed"
            entry["outcome"] = outcome
        self.line(f"  {'->' if ok else 'x'} {outcome}")

    def __call__(self, event: ev.Event) -> None:
        self.record["steps"] = sum(1 for m in self.child.messages if m.role == "assistant")
        if isinstance(event, ev.ToolCallEvent):
            summary = summarize_args(event.input)
            calls = self.record["calls"]
            calls.append({"id": event.id, "tool": event.name, "summary": summary,
                          "status": "running", "outcome": ""})
            del calls[:-RECENT_CALLS]
            self.line(f"  {event.name} {summary}".rstrip())
        elif isinstance(event, ev.ToolResultEvent):
            self._finish_call(event.id, True, event.summary or _first_line(event.output))
        elif isinstance(event, ev.ToolErrorEvent):
            self._finish_call(event.id, False, _first_line(event.error))
        elif isinstance(event, ev.ToolDeniedEvent):
            self._finish_call(event.id, False, "denied: " + _first_line(event.reason))
        elif isinstance(event, ev.NoticeEvent):
            self.line(event.text)
        elif isinstance(event, ev.ErrorEvent):
            self.error = event.error
        elif isinstance(event, ev.DoneEvent):
            self.reason = event.reason
            self.record["steps"] = event.steps


# ---- running one subagent -------------------------------------------------------------------

_slots: weakref.WeakKeyDictionary[Any, tuple[Any, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary())


def _semaphore(root: Any, limit: int) -> asyncio.Semaphore:
    """The root session's concurrency limiter (one per event loop)."""
    loop = asyncio.get_running_loop()
    found = _slots.get(root)
    if found is None or found[0] is not loop:
        found = (loop, asyncio.Semaphore(max(1, limit)))
        _slots[root] = found
    return found[1]


def _findings(child: Any) -> str:
    for message in reversed(child.messages):
        if message.role == "assistant" and message.text.strip():
            return message.text.strip()
    return ""


def build_child(parent: Any, kind: str, agent: Any = None) -> Any:
    """The subagent's session: kind-specific tools and gate, the parent's runtime.  An
    agent file's kind (``agent``) gets the tools it lists, enforced by its gate too; it asks
    the user only where a worker could."""
    from agent.loop.session import Session

    gate: Any
    if agent is not None:
        names = tuple(custom_tools(agent, parent.tools))
        inner = parent.gate if worker_refusal(parent) is None else QuietGate(parent.gate, kind)
        gate = ListedGate(inner, list(names), kind)
    else:
        names = READ_TOOLS + (WRITE_TOOLS if kind == "worker" else ())
        gate = parent.gate if kind == "worker" else QuietGate(parent.gate, kind)
    tools = {n: parent.tools[n] for n in names if n in parent.tools}
    recorder = None
    if parent.recorder is not None and hasattr(parent.recorder, "child"):
        recorder = parent.recorder.child(f"subagent:{kind}")
    child = Session(parent.runtime, origin=kind, tools=tools, gate=gate, max_steps=STEP_CAP,
                    thinking=parent.thinking, recorder=recorder, parent=parent)
    child.model = str(parent.config.get("subagent_model") or parent.model)
    if agent is not None:
        child.data[AGENT_PROMPT_KEY] = agent.prompt
    return child


#: ``session.data`` key holding an agent-file subagent's system prompt
AGENT_PROMPT_KEY = "subagent_prompt"


async def run_task(args: dict[str, Any], ctx: Any) -> ToolResult:
    parent = ctx.session
    if parent is None:
        raise ToolError("task needs a running session.")
    kind = str(args.get("kind") or "explore")
    agent = None if kind in KINDS else custom_kinds(parent.config).get(kind)
    if kind not in KINDS and agent is None:
        raise ToolError(f'Unknown subagent kind "{kind}". Use one of: '
                        f"{', '.join(kinds_for(parent))}.")
    if kind == "worker":
        refusal = worker_refusal(parent)
        if refusal:
            raise ToolError(refusal)
    description = " ".join(str(args["description"]).split())
    child = build_child(parent, kind, agent)
    record = new_record(ctx.call.id, kind, description, child.model)
    parent.data.setdefault(DATA_KEY, []).append(record)
    progress = Progress(record, child, ctx.emit_output)
    slots = _semaphore(root_session(parent), int(parent.config.get("subagent_concurrency") or 3))
    progress.line(description + (" (queued)" if slots.locked() else ""))
    try:
        async with slots:
            record["status"] = "running"
            async with contextlib.aclosing(child.run(str(args["prompt"]))) as events:
                async for event in events:
                    progress(event)
    except asyncio.CancelledError:
        record["status"] = "cancelled"
        raise
    except Exception as exc:  # the session itself broke: the call fails with the reason
        record["status"], record["error"] = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        record["ended"] = time.time()
        # whatever the child still had in flight will not finish: release what was held for it
        child.hooks.request_done(child, child.model, None)
    findings = _findings(child)
    steps = record["steps"]
    if progress.reason in ("error", "budget"):
        record["status"], record["error"] = "failed", progress.error
        progress.line(f"failed after {steps} steps: {progress.error}")
        partial = f"\n\nWhat it reported before stopping:\n{findings}" if findings else ""
        verb = "stopped" if progress.reason == "budget" else "failed"
        raise ToolError(f"The {kind} subagent {verb}: {progress.error}{partial}")
    record["status"] = "done"
    progress.line(f"done in {steps} steps")
    output = findings or NO_FINDINGS
    if progress.reason == "max_steps":
        output += (f"\n\n(The subagent stopped at its {STEP_CAP}-step cap; this report may "
                   "be incomplete.)")
    return ToolResult(output, summary=f"{kind}: {steps} steps",
                      display={"subagent": dict(record)})


# ---- hooks ----------------------------------------------------------------------------------


@hookimpl
def agent_addoption(options):
    options.add(Option("subagent", type="bool", default=True, flag="--no-subagent",
                       negate=True,
                       help="offer no task tool: no subagents this run (default: offer it)"))
    options.add(Option("subagent_concurrency", type="int", default=3,
                       help="subagents that may run at the same time"))
    options.add(Option("subagent_model", help="model id for subagents (default: the "
                                              "session's model)"))


@hookimpl
def agent_configure(config):
    from agent import ConfigError

    if int(config.get("subagent_concurrency") or 0) < 1:
        raise ConfigError("subagent_concurrency must be at least 1, got "
                          f"{config.get('subagent_concurrency')!r}")


def task_effects(args: dict[str, Any]) -> Effects:
    """The subagent's kind is what rules match (``task = {"*" = "allow", "worker" = "ask"}``);
    the worker's own calls are gated one by one inside it."""
    return Effects(targets=(str(args.get("kind") or "explore"),))


def describe_task(args: dict[str, Any]) -> Description:
    kind = str(args.get("kind") or "explore")
    what = str(args.get("description") or "")
    writes = " (writes)" if kind == "worker" else ""
    return Description((f"{kind}{writes}: {what}",),
                       f"Start {'an' if kind[:1] in 'aeiou' else 'a'} {kind} subagent: {what}?")


@hookimpl
def agent_register_tools(register, config):
    if config.get("subagent") is False:
        return
    register(TaskTool(
        name="task", description=DESCRIPTION.format(kinds=", ".join(KINDS)), run=run_task,
        parameters=PARAMETERS, effects=task_effects, read_only=True, describe=describe_task,
        prompt="delegate a self-contained search, review or change to a subagent; it sees "
               "none of this conversation, so give it a complete prompt."))


@hookimpl
def agent_offered_tools(tools, session):
    if session.origin != "model":
        return None
    kinds = kinds_for(session)
    helps = {name: a.description for name, a in custom_kinds(session.config).items()}
    return [replace(t, kinds=kinds, help=helps) if isinstance(t, TaskTool) else t
            for t in tools]


@hookimpl
def agent_prompt_fragments(session):
    prompt = PROMPTS.get(session.origin) or session.data.get(AGENT_PROMPT_KEY)
    if prompt is None or getattr(session, "parent", None) is None:
        return None
    return Fragment("identity", prompt, order=0)  # replaces the main agent's identity


@hookimpl
def agent_event(event, session):
    if isinstance(event, ev.TurnStartEvent) and getattr(session, "parent", None) is None:
        records = session.data.get(DATA_KEY)
        if records:
            session.data[DATA_KEY] = [r for r in records
                                      if r["status"] in ("queued", "running")]


# ---- the live panel -------------------------------------------------------------------------

PANEL_CALL_CLIP = 58   # a subagent call's summary
PANEL_RECENT_CALLS = 4
KIND_STYLES = {"explore": "sub-explore", "review": "sub-review", "worker": "sub-worker"}


def _clip(text: Any, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def subagent_markup(records: list[dict[str, Any]], spinner: str) -> list[Any]:
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
        for call in list(record.get("calls") or [])[-PANEL_RECENT_CALLS:]:
            style = {"failed": "tool-error", "running": "live"}.get(str(call.get("status")),
                                                                     "dim")
            text = f"{call.get('tool', '?')}({_clip(call.get('summary', ''), PANEL_CALL_CLIP)})"
            out += ["\n    ", (style, text)]
        if status == "failed" and record.get("error"):
            out += ["\n    ", ("sub-failed", _clip(str(record["error"]), 90))]
    return out


@hookimpl
def agent_live_panels(session, state):
    """The subagents the running turn started, in place of their ``task`` calls' lines."""
    if not state.busy:
        return None
    records = [r for r in session.data.get(DATA_KEY) or []
               if isinstance(r, dict) and float(r.get("started") or 0) >= state.turn_started]
    if not records:
        return None
    return Panel(DATA_KEY, subagent_markup(records, state.spinner), order=10,
                 calls=tuple(str(r.get("id")) for r in records))
