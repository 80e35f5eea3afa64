"""The approval dialog: what the call would do, why it asks, and y / a / n.

For edits it shows the diff (rendered by the ``diff`` renderer); with more than one hunk the
user can move between hunks and reject single ones: the rest is applied and the model is told
which hunks were left out (see :mod:`agent.ui.approvals`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import urwid

from agent.contract.blocks import Block
from agent.loop.gate import Approval, ApprovalRequest
from agent.ui import approvals, toolfmt
from agent.ui.diffing import DiffSet
from agent.ui.widgets.panels import FitBox, Modal, boxed


def _few(items: tuple[str, ...]) -> str:
    shown = ", ".join(items[:3])
    return shown + (f" and {len(items) - 3} more" if len(items) > 3 else "")


def effects_reason(effects: Any) -> str:
    """Why the default policy asks, from what the call would touch."""
    parts = []
    changed = tuple(getattr(effects, "writes", ())) + tuple(getattr(effects, "deletes", ()))
    if changed:
        parts.append(f"it changes {_few(changed)}")
    if getattr(effects, "command", None):
        parts.append("it runs a shell command")
    if getattr(effects, "urls", ()):
        parts.append(f"it reaches {_few(tuple(effects.urls))}")
    if getattr(effects, "opaque", False) and not parts:
        parts.append("what it does cannot be known before it runs")
    if not parts:
        return ""
    return "asks because " + " and ".join(parts) + " (the default policy)"


class ApprovalDialog(Modal):
    context = "approval"

    def __init__(self, request: ApprovalRequest, *, workspace: Path,
                 render: Callable[[Block], urwid.Widget],
                 max_rows: Callable[[], int] = lambda: 16,
                 clock: Callable[[], float] | None = None) -> None:
        self.request = request
        self._clock = clock  # monotonic seconds; None: time.monotonic
        self.workspace = workspace
        self._render = render
        call = request.call
        self.diffs: DiffSet | None = None
        try:
            self.diffs = approvals.diffs_for(request.tool, call.arguments, workspace) or None
        except Exception:  # a malformed argument shows as detail lines instead
            self.diffs = None
        self.rejected: set[int] = set()
        self.selected = 1 if self.diffs and len(self.diffs.hunks) > 1 else 0
        self.opened_at = 0.0   # when it was first drawn (monotonic seconds)
        self.armed = False     # takes answers (see agent.ui.keys: never type-ahead)
        self.diverted = False  # keys went to the prompt while it was not armed
        self._drawn = False
        self.question = toolfmt.question(call.name, call.arguments, request.tool)
        self.fit = FitBox(self._body(), max_rows)
        self.hunk_line = urwid.Text("")
        parts: list[urwid.Widget] = [urwid.Text(self._why()), self.fit]
        if self.diffs and len(self.diffs.hunks) > 1:
            parts.append(self.hunk_line)
        self._footer_text = urwid.Text(self._footer())
        parts.append(self._footer_text)
        origin = request.origin
        title = (f"a {origin} subagent wants to run {call.name}"
                 if origin not in ("", "model") else self.question)
        super().__init__(boxed(urwid.Pile(parts), title, "approval"))
        self._update_hunk_line()

    # ---- content ----

    def _why(self) -> list[Any]:
        r = self.request
        out: list[Any] = []
        if r.origin not in ("", "model"):
            out.append(("approval-title", self.question + "\n"))
        reason = r.reason or "this call needs your approval"
        if r.rule == "default":  # the default policy's reason is generic: say it from effects
            reason = effects_reason(r.effects) or reason
        out.append(("approval", reason))
        if r.network:
            out.append(("approval", "\nwith network access (the sandbox blocks it otherwise)"))
        if r.repeating:
            out.append(("dim", "\nthe same call, a third time this turn: check it is not stuck"))
        if r.origin not in ("", "model"):
            out.append(("dim", "\ndelegated work, gated by your rules exactly as a direct call is"))
        rule = r.rule or ""
        if rule and not rule.endswith('"*"') and ":" in rule:
            out.append(("dim", f"\nmatched {rule}"))
        if getattr(r, "network", False):
            out.append(("approval", "\nruns with network access (the sandbox blocks it "
                                    "otherwise)"))
        for note in getattr(r.effects, "notes", ()) or ():
            out.append(("dim", f"\n{note}"))
        return out

    def _body(self) -> urwid.Widget:
        call = self.request.call
        if self.diffs:
            block = Block("diff", data={"diff": self.diffs, "rejected": set(self.rejected),
                                        "selected": self.selected, "tool": call.name})
            return self._render(block)
        lines = approvals.detail_lines(call.name, call.arguments, self.request.tool,
                                       getattr(self.request.effects, "command", None))
        if not lines:
            import json

            lines = json.dumps(call.arguments, indent=2, ensure_ascii=False,
                               default=str).splitlines()
        return urwid.Text([("tool-detail", "\n".join(lines))])

    def _footer(self) -> list[Any]:
        grant = self.request.grant or "*"
        always = "a always" + ("" if grant == "*" else f" ({grant})")
        out: list[Any] = [("key", "y"), " yes once  ", ("key", "a"), always[1:], "  ",
                          ("key", "n"), " no (esc)"]
        if self.diverted and not self.armed:
            out.append(("dim", "\ntyping goes to the prompt: pause to answer"))
        return out

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        if not self._drawn:  # visible from now on: the quiet interval starts here
            import time

            self._drawn = True
            self.opened_at = (self._clock or time.monotonic)()
        return super().render(size, focus)

    def typed_ahead(self) -> None:
        """A key went to the prompt instead (see agent.ui.keys): say why."""
        if not self.diverted:
            self.diverted = True
            self._footer_text.set_text(self._footer())

    def _update_hunk_line(self) -> None:
        if not self.diffs or len(self.diffs.hunks) < 2:
            self.hunk_line.set_text("")
            return
        n = len(self.diffs.hunks)
        state = "rejected" if self.selected in self.rejected else "accepted"
        rejected = (f"  ({len(self.rejected)} rejected: the rest is applied)"
                    if self.rejected else "")
        self.hunk_line.set_text([
            ("dim", f"hunk {self.selected}/{n} {state}  "), ("key", "up/down"),
            ("dim", " select  "), ("key", "space"), ("dim", " reject/accept"), ("dim", rejected)])

    def _refresh(self) -> None:
        self.fit.body = self._body()
        self.fit.listbox.body[:] = [self.fit.body]
        self._update_hunk_line()
        self._scroll_to_selected()
        self._invalidate()

    def _scroll_to_selected(self) -> None:
        if not self.diffs or not self.selected:
            return
        rows = self.diffs.rows(self.rejected)
        first = next((i for i, r in enumerate(rows) if r.hunk == self.selected), 0)
        width, height = self.fit._last
        if width:
            self.fit.listbox.change_focus((width, height), 0, offset_inset=-max(0, first - 1))

    # ---- answers ----

    def answer(self, kind: str) -> Any:
        """The approver's reply for ``yes``/``always``/``no`` given the rejected hunks."""
        if kind == "no" or not self.rejected or not self.diffs:
            return kind
        if len(self.rejected) >= len(self.diffs.hunks):
            return "no"
        call = self.request.call
        part = approvals.partial(self.request.tool, call.arguments, self.diffs, self.rejected,
                                 self.workspace)
        if part is None:
            return "no"
        return Approval(kind, part.arguments, part.note)  # type: ignore[arg-type]

    def action(self, name: str, size: tuple[int]) -> bool:
        if name == "approve":
            self.resolve(self.answer("yes"))
        elif name == "approve-always":
            self.resolve(self.answer("always"))
        elif name == "deny":
            self.resolve("no")
        elif name in ("hunk-next", "hunk-prev"):
            if not self.diffs or len(self.diffs.hunks) < 2:
                return name in ("hunk-next", "hunk-prev") and self._scroll(name)
            n = len(self.diffs.hunks)
            step = 1 if name == "hunk-next" else -1
            self.selected = (self.selected - 1 + step) % n + 1
            self._refresh()
        elif name == "hunk-toggle":
            if not self.diffs or len(self.diffs.hunks) < 2:
                return True
            self.rejected ^= {self.selected}
            self._refresh()
        elif name in ("dialog-scroll-up", "dialog-scroll-down"):
            self.fit.scroll("page up" if name == "dialog-scroll-up" else "page down")
        else:
            return False
        return True

    def _scroll(self, name: str) -> bool:
        self.fit.scroll("up" if name == "hunk-prev" else "down")
        return True
