"""The approval dialog: what the call would do, why it asks, and y / a / n.

For edits it shows the diff (rendered by the ``diff`` renderer); with more than one hunk the
user can move between hunks and reject single ones: the rest is applied and the model is told
which hunks were left out (see :mod:`agent.ui.approvals`).

It shows exactly what runs: characters a terminal would hide or reorder are spelled out and
counted, and while some of its lines have never been on screen it says how many and takes
no "yes" (page down shows them).  "Always" is its own step: ``a`` shows the patterns it
would grant, editable, and only enter saves them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import urwid

from agent.contract.blocks import Block
from agent.lib.visible import visible
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
        self.refused = False   # a "yes" was refused because lines were never shown
        self.grant_edits: list[urwid.Edit] | None = None  # "always": the patterns, editable
        self._footer_text = urwid.Text(self._footer())
        self._status = _LiveLine(self._status_line)
        parts += [self._status, self._footer_text]
        self._parts = parts
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
        out = [(style, visible(text)) for style, text in out]  # paths and reasons too
        hidden = approvals.hidden_chars(r.call.name, r.call.arguments, r.tool,
                                        getattr(r.effects, "command", None), self.diffs)
        if hidden:
            out.append(("error", f"\nthe text contains {hidden} hidden, control or reordering "
                                 f"character{'s' if hidden > 1 else ''}: shown as ⟨U+XXXX⟩"))
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

            lines = visible(json.dumps(call.arguments, indent=2, ensure_ascii=False,
                                       default=str)).splitlines()
        return urwid.Text([("tool-detail", "\n".join(lines))])

    def _footer(self) -> list[Any]:
        if self.grant_edits is not None:
            return [("key", "enter"), " always allow these patterns  ", ("key", "esc"),
                    " back  ", ("dim", "(edit them: narrower is safer)")]
        grant = visible(self.request.grant) or "*"
        always = "a always" + ("" if grant == "*" else f" ({grant})")
        out: list[Any] = [("key", "y"), " yes once  ", ("key", "a"), always[1:], "  ",
                          ("key", "n"), " no (esc)"]
        if self.diverted and not self.armed:
            switch = self.switch_key or "ctrl t"
            out.append(("dim", f"\ntyping goes to the prompt: {switch} to answer this "
                               "dialog" if self.prompt_busy else
                               "\ntyping goes to the prompt: pause to answer"))
        return out

    #: the key that moves the keys from the prompt to the dialog (set by the key router)
    switch_key = ""
    #: the prompt holds text, so only the switch key gives the dialog the keys
    prompt_busy = False

    def _status_line(self, width: int) -> Any:
        """The row under the body: how many lines were never shown (no "yes" until they
        are), else how many are scrolled out of view; nothing when all fit."""
        unseen = self.fit.unseen_at(width)
        if unseen:
            style = "error" if self.refused else "approval"
            return (style, f"{unseen} more line{'s' if unseen > 1 else ''} not shown yet: "
                           "page down to read before answering yes")
        top, height, total = self.fit.window(width)
        if total > height:
            below = total - top - height
            return ("dim", f"{top} lines above, {below} below, all shown: page up/down")
        return ""

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        if not self._drawn:  # visible from now on: the quiet interval starts here
            import time

            self._drawn = True
            self.opened_at = (self._clock or time.monotonic)()
        # While the "always" patterns are edited, the cursor belongs to the edit.
        return super().render(size, focus or self.grant_edits is not None)

    def typed_ahead(self, prompt_busy: bool = False) -> None:
        """A key went to the prompt instead (see agent.ui.keys): say why, and how to answer
        (the switch key while the prompt holds text, a pause otherwise)."""
        if not self.diverted or prompt_busy != self.prompt_busy:
            self.diverted, self.prompt_busy = True, prompt_busy
            self._footer_text.set_text(self._footer())

    def take_keys(self) -> None:
        """The switch key was pressed: the dialog takes keys from now on."""
        self.armed = True
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

    def answer(self, kind: str, grants: tuple[str, ...] | None = None) -> Any:
        """The approver's reply for ``yes``/``always``/``no`` given the rejected hunks (and,
        for ``always``, the patterns as the user left them)."""
        if grants is not None and tuple(grants) != tuple(self.request.grants):
            inner = self.answer(kind)
            if isinstance(inner, Approval):
                inner.grants = grants
                return inner
            return Approval(inner, grants=grants) if inner != "no" else inner
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

    @property  # type: ignore[override]
    def context(self) -> str:
        """``approval``, or ``picker`` while the "always" patterns are being edited."""
        return "approval" if self.grant_edits is None else "picker"

    def action(self, name: str, size: tuple[int]) -> bool:
        if self.grant_edits is not None:
            return self._grant_action(name)
        if name in ("approve", "approve-always") and self.fit.unseen > 0:
            self.refused = True  # lines nobody was shown are never approved
            self._invalidate()
        elif name == "approve":
            self.resolve(self.answer("yes"))
        elif name == "approve-always":
            self._edit_grants()
        elif name == "dialog-focus":
            pass
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

    # ---- "always": the patterns, shown and editable before they are saved ----

    def _edit_grants(self) -> None:
        grants = self.request.grants
        if not grants:  # an unresolved command grants nothing: "always" is this call only
            self.resolve(self.answer("always"))
            return
        self.grant_edits = [urwid.Edit(("caption", "always: "), g) for g in grants]
        self._grant_pile = urwid.Pile(self.grant_edits)
        self._swap_footer(self._grant_pile)

    def _swap_footer(self, extra: urwid.Widget | None) -> None:
        pile = self._w.original_widget.original_widget  # AttrMap > LineBox > Pile
        contents = [w for w in self._parts if w is not None]
        if extra is not None:
            contents.insert(len(contents) - 1, extra)
        pile.contents[:] = [(w, pile.options()) for w in contents]
        self._footer_text.set_text(self._footer())
        self._invalidate()

    def _grant_action(self, name: str) -> bool:
        assert self.grant_edits is not None
        if name == "pick-accept":
            patterns = tuple(dict.fromkeys(
                e.edit_text.strip() for e in self.grant_edits if e.edit_text.strip()))
            self.resolve(self.answer("always", patterns) if patterns else self.answer("yes"))
        elif name == "pick-cancel":
            self.grant_edits = None
            self._swap_footer(None)
        elif name in ("pick-up", "pick-down"):
            pile = self._grant_pile
            step = -1 if name == "pick-up" else 1
            pile.focus_position = (pile.focus_position + step) % len(self.grant_edits)
            self._invalidate()
        else:
            return False
        return True

    def type_key(self, size: tuple[int], key: str) -> bool:
        if self.grant_edits is None:
            return False
        edit = self._grant_pile.focus
        handled = edit.keypress((max(1, size[0] - 4),), key) is None
        self._invalidate()
        return handled

class _LiveLine(urwid.Widget):
    """A line whose markup is ``source(width)``, asked each time it is measured and drawn:
    no rows while it is empty."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    no_cache = ["render", "rows"]  # what it says depends on the rows drawn above it

    def __init__(self, source: Callable[[int], Any]) -> None:
        super().__init__()
        self.source = source

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return 1 if self.source(size[0]) else 0

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        markup = self.source(size[0])
        if not markup:
            return urwid.SolidCanvas(" ", size[0], 0)
        return urwid.Text(markup, wrap="clip").render(size)
