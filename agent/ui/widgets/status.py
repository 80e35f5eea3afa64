"""The live area above the prompt and the status bar under it.

``LiveArea`` shows what is happening now: the reasoning line (collapsed ``thinking... ~N
tokens``), the running tools with their last output lines, the live panels plugins publish
(``agent_live_panels``: a task list, the subagents at work), panels set through the command
context (``set_live``), the queue, and the working line with the elapsed time.  Each part
is a ``Text`` changed in place, so a frame redraws only the rows that changed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import urwid

from agent.contract.panels import Panel

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
OUTPUT_TAIL = 2000
OUTPUT_LINES = 8
REASONING_LINES = 8
QUEUE_CLIP = 70


def elapsed(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    return f"{seconds // 60}m {seconds % 60}s"


@dataclass
class ActiveTool:
    id: str
    name: str
    details: list[str] = field(default_factory=list)
    output: str = ""
    origin: str = "model"


class LiveArea(urwid.WidgetWrap):
    """Reasoning, running tools, the plugins' panels, panels, the queue and the working line."""

    def __init__(self) -> None:
        self.reasoning = ""
        self.reasoning_open = False
        self.tools: dict[str, ActiveTool] = {}
        #: what the plugins publish (``agent_live_panels``), in their order
        self.plugin_panels: list[Panel] = []
        #: panels set through the command context (``app.set_live``), shown in key order
        self.panels: dict[str, Any] = {}
        self.queue: list[str] = []
        self.busy_since: float | None = None
        self.hide_tools = False  # while an approval dialog shows the call
        #: while a dialog is open the panels fold to one line, so the dialog (every hunk of
        #: a diff) fits a small terminal
        self.folded = False
        self.frame = 0
        self._reasoning = urwid.Text("")
        self._tools = urwid.Text("")
        self._plugin_panels = urwid.Text("")
        self._panels = urwid.Text("")
        self._queue = urwid.Text("")
        self._working = urwid.Text("")
        self._pile = urwid.Pile([])
        super().__init__(self._pile)
        self.refresh()

    # ---- state changes (each followed by refresh) ----

    def start(self) -> None:
        self.busy_since = time.monotonic()
        self.reasoning = ""
        self.tools.clear()

    def stop(self) -> None:
        self.busy_since = None
        self.reasoning = ""
        self.reasoning_open = False
        self.tools.clear()
        self.plugin_panels = []

    def add_output(self, call_id: str, chunk: str) -> None:
        tool = self.tools.get(call_id)
        if tool is not None:
            tool.output = (tool.output + chunk)[-OUTPUT_TAIL:]

    # ---- drawing ----

    def refresh(self) -> None:
        parts: list[urwid.Widget] = []
        if self.reasoning:
            self._reasoning.set_text(self._reasoning_markup())
            parts.append(self._reasoning)
        if self._shown_tools() and not self.hide_tools:
            self._tools.set_text(self._tools_markup())
            parts.append(self._tools)
        if self.folded:
            names = [p.key for p in self.plugin_panels] + sorted(self.panels)
            hidden = [", ".join(names),
                      f"{len(self.queue)} queued" if self.queue else ""]
            hidden = [h for h in hidden if h]
            if hidden:
                self._panels.set_text(("dim", f"({'; '.join(hidden)}: folded while the "
                                              "dialog is open)"))
                parts.append(self._panels)
        if self.plugin_panels and not self.folded:
            self._plugin_panels.set_text(self._plugin_markup())
            parts.append(self._plugin_panels)
        if self.panels and not self.folded:
            markup: list[Any] = []
            for key in sorted(self.panels):
                markup += (["\n"] if markup else []) + [self.panels[key]]
            self._panels.set_text(markup)
            parts.append(self._panels)
        if self.queue and not self.folded:
            lines = [f"queued: {len(self.queue)}"] + [
                f"  {i}. {_clip(q, QUEUE_CLIP)}" for i, q in enumerate(self.queue, 1)]
            self._queue.set_text(("queue", "\n".join(lines)))
            parts.append(self._queue)
        if self.busy_since is not None:
            self._working.set_text(self._working_markup())
            parts.append(self._working)
        current = [w for w, _ in self._pile.contents]
        if current != parts:
            self._pile.contents[:] = [(w, ("pack", None)) for w in parts]

    def tick(self) -> None:
        """Advance the spinner and the clock (called a few times a second while busy)."""
        self.frame += 1
        if self.busy_since is not None:
            self._working.set_text(self._working_markup())
        if self._shown_tools():
            self._tools.set_text(self._tools_markup())

    def set_plugin_panels(self, panels: list[Panel]) -> None:
        """Show what the plugins publish now; redraws only when it changed."""
        if panels != self.plugin_panels:
            self.plugin_panels = list(panels)
            self.refresh()

    def _plugin_markup(self) -> list[Any]:
        markup: list[Any] = []
        for panel in self.plugin_panels:
            markup += (["\n"] if markup else []) + [panel.markup]
        return markup

    def _shown_tools(self) -> list[ActiveTool]:
        """Running tools, except calls a panel stands for (a subagent's ``task`` call)."""
        covered = {c for p in self.plugin_panels for c in p.calls}
        return [t for t in self.tools.values() if t.id not in covered]

    def spinner(self) -> str:
        """The spinner's current frame (panel publishers draw their own with it)."""
        return self._spin()

    def _spin(self) -> str:
        return SPINNER[self.frame % len(SPINNER)]

    def _working_markup(self) -> list[Any]:
        assert self.busy_since is not None
        secs = time.monotonic() - self.busy_since
        return [("working", f"{self._spin()} working... {elapsed(secs)}"),
                ("dim", "  esc to interrupt")]

    def _reasoning_markup(self) -> list[Any]:
        tokens = max(1, len(self.reasoning) // 4)
        if not self.reasoning_open:
            return [("reasoning", f"thinking... ~{tokens} tokens"), ("dim", "  ctrl-r to expand")]
        lines = [ln for ln in self.reasoning.splitlines() if ln.strip()][-REASONING_LINES:]
        return [("reasoning", f"thinking (~{tokens} tokens)"), ("dim", "  ctrl-r to collapse"),
                ("reasoning", "".join("\n  " + ln for ln in lines))]

    def _tools_markup(self) -> list[Any]:
        out: list[Any] = []
        for tool in self._shown_tools():
            if out:
                out.append("\n")
            out.append(("tool", f"{self._spin()} {tool.name}"))
            if tool.origin not in ("", "model"):
                out.append(("origin", f" [{tool.origin}]"))
            details = tool.details[:6]
            if details:
                out.append(("tool-detail", "  " + details[0]))
                for d in details[1:]:
                    out.append(("tool-detail", "\n    " + d))
                if len(tool.details) > 6:
                    out.append(("dim", f"\n    ... {len(tool.details) - 6} more"))
            if tool.output:
                lines = tool.output.rstrip("\n").split("\n")[-OUTPUT_LINES:]
                out.append(("live", "".join("\n  | " + _clip(ln, 200) for ln in lines)))
        return out


def _clip(text: str, n: int) -> str:
    text = text.replace("\t", "  ").replace("\r", "")
    return text if len(text) <= n else text[: n - 3] + "..."


@dataclass
class StatusInfo:
    model: str = ""
    agent: str = "default"
    thinking: str = "medium"
    tools: int = 0
    context_pct: int = 0
    cost: float | None = None
    priced: bool = True
    cap: float | None = None
    note: str = ""
    sandbox: str = ""  # "sandbox off" / "no sandbox": shown whenever commands run unconfined
    mode: str = "default"  # the permission mode (shift-tab cycles it); shown unless default


#: how the status bar names a permission mode other than ``default``
MODE_LABELS = {"accept-edits": "accept-edits on (shift-tab)", "plan": "plan mode (shift-tab)"}

#: context use (percent of the compaction threshold) from which the status bar warns
CONTEXT_WARN, CONTEXT_BAD = 66, 90


class StatusBar(urwid.WidgetWrap):
    """``<model>  <agent>/<thinking>  N tools  P% ctx[ compacting soon]  <$cost|unpriced>[ /
    $cap]``; the context share turns amber at 66 % and red at 90 %."""

    def __init__(self) -> None:
        self.info = StatusInfo()
        self._text = urwid.Text("", wrap="ellipsis")
        super().__init__(self._text)

    def update(self, **changes: Any) -> None:
        for key, value in changes.items():
            setattr(self.info, key, value)
        i = self.info
        pct = i.context_pct
        ctx_style = ("status-bad" if pct >= CONTEXT_BAD else "status-warn" if pct >= CONTEXT_WARN
                     else "status")
        ctx = f"{pct}% ctx" + (" compacting soon" if pct >= CONTEXT_BAD else "")
        if i.cost is None or (not i.priced and not i.cost):
            cost = "" if i.priced else "unpriced"
        else:
            cost = format_cost(i.cost)
        if i.cap:
            cost = f"{cost or format_cost(0)} / {format_cost(i.cap)}"
        markup: list[Any] = [("status-key", i.model or "no model"), ("status", "  ")]
        if i.mode and i.mode != "default":  # first after the model: never cut off
            markup += [("status-warn", MODE_LABELS.get(i.mode, i.mode)), ("status", "  ")]
        markup += [("status", f"{i.agent}/{i.thinking}"), ("status", "  "),
                   ("status", f"{i.tools} tools"), ("status", "  "), (ctx_style, ctx)]
        if cost:
            markup += [("status", "  "), ("status", cost)]
        if i.sandbox:
            markup += [("status", "  "), ("status-bad", i.sandbox)]
        if i.note:
            markup += [("status", "  "), ("dim", i.note)]
        self._text.set_text(markup)


def format_cost(usd: float) -> str:
    """``$0.00`` for zero, 4 decimals below a cent, else 2."""
    if usd == 0:
        return "$0.00"
    if usd < 0.01:
        return f"${usd:.4f}"
    return f"${usd:.2f}"
