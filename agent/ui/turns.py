"""Turning the event stream of one turn into transcript blocks and the live area.

Text chunks only append to a buffer; the streaming answer is cut into chunks
(:mod:`agent.ui.pieces`) once per frame (:meth:`TurnView.flush`, called right before drawing):
finished chunks are rendered once and never again, and only the growing one is re-rendered,
so a thousand deltas between two frames cost one render of one chunk.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent.contract import events as ev
from agent.contract.blocks import Block
from agent.lib.visible import visible
from agent.ui import pieces, toolfmt
from agent.ui.widgets.status import ActiveTool, format_cost

if TYPE_CHECKING:
    from agent.ui.app import App
    from agent.ui.widgets.transcript import Entry


#: every this many finished chunks the collector stops tracking what exists (gc.freeze)
FREEZE_EVERY = 100


class TurnView:
    """Presents the events of the running turn."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._parts: list[str] = []
        self._dirty = False
        self._chunker = pieces.Chunker()
        self._current: Entry | None = None   # the growing chunk's entry
        self.finished = 0                    # chunks finished (see FREEZE_EVERY)
        self.tools: dict[str, Entry] = {}
        self.commands: dict[str, str] = {}  # call id -> bash command, for ctrl-c notices
        #: call id -> (the diff the call would make, the hunks the user rejected)
        self.diffs: dict[str, tuple[Any, set[int]]] = {}
        self._reasoning: list[str] = []     # this step's reasoning, for the transcript
        self._reasoning_at = 0              # where in the transcript it began

    # ---- streaming text ----

    def _text(self, chunk: str) -> None:
        self._parts.append(chunk)
        self._dirty = True

    def _joined(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def flush(self) -> None:
        """Show the text that arrived since the last frame: chunks that are complete become
        final entries (rendered once), the last one grows.  Only the growing chunk is
        scanned and rendered again, so a frame's work is bounded by one chunk."""
        if not self._dirty:
            return
        self._dirty = False
        done, tail = self._chunker.advance(self._joined())
        for chunk in done:
            self._finish(chunk)
        if tail is not None:
            self._grow(tail)

    def _finish(self, chunk: pieces.Chunk) -> None:
        self.finished += 1
        if self.finished % FREEZE_EVERY == 0:
            # Finished chunks live as long as the transcript: move them out of the
            # collector's reach, or each full collection walks thousands of widgets and
            # stalls a frame (~70 ms in a 2,000-item list; 15 ms with this).
            gc.freeze()
        if self._current is not None:
            block = self._current.block
            block.text, block.data, block.final = chunk.source, chunk.data(), True
            self.app.transcript.update(self._current)
            self._current = None
        else:
            self.app.transcript.add(Block("markdown", chunk.source, chunk.data()))

    def _grow(self, chunk: pieces.Chunk) -> None:
        if self._current is None:
            self._current = self.app.transcript.add(
                Block("markdown", chunk.source, chunk.data(), final=False))
            return
        block = self._current.block
        if block.text != chunk.source or block.data != chunk.data():
            block.text, block.data = chunk.source, chunk.data()
            self.app.transcript.update(self._current)

    def end_text(self) -> None:
        """The answer so far is final (a tool call follows, or the turn ended)."""
        for chunk in self._chunker.finish(self._joined()):
            self._finish(chunk)
        if self._current is not None:  # the tail vanished (only blank lines): keep it final
            self._current.block.final = True
            self.app.transcript.update(self._current)
        self._current = None
        self._parts = []
        self._chunker = pieces.Chunker()
        self._dirty = False

    # ---- events ----

    def on_event(self, event: ev.Event) -> None:
        app = self.app
        live = app.live
        if self._reasoning and not isinstance(event, ev.ReasoningEvent):
            self.end_reasoning()
        if isinstance(event, ev.TextEvent):
            self._text(event.text)
        elif isinstance(event, ev.ReasoningEvent):
            if not self._reasoning:
                self.end_text()
                self._reasoning_at = len(app.transcript.walker)
            self._reasoning.append(event.text)
            live.reasoning += event.text
            live.refresh()
        elif isinstance(event, ev.ToolStartEvent):
            self.end_text()
            live.tools.setdefault(event.id, ActiveTool(event.id, event.name))
            live.refresh()
        elif isinstance(event, ev.ToolCallEvent):
            self.end_text()
            self._tool_call(event)
            app.refresh_panels()
        elif isinstance(event, ev.ToolOutputEvent):
            live.add_output(event.id, event.chunk)
            live.refresh()
        elif isinstance(event, ev.ToolResultEvent):
            self._tool_done(event.id, event.name, "ok",
                            toolfmt.summary(event.name, event.output, given=event.summary))
            self._applied_diff(event.id)
            app.refresh_panels()  # a call may have changed what a plugin's panel shows
        elif isinstance(event, ev.ToolErrorEvent):
            self._tool_done(event.id, event.name, "error",
                            toolfmt.summary(event.name, event.error, is_error=True))
        elif isinstance(event, ev.ToolDeniedEvent):
            reason = "by you" if event.by == "user" else toolfmt.clip(
                event.reason.splitlines()[0] if event.reason else event.by, 90)
            self._tool_done(event.id, event.name, "denied", reason)
            if event.by != "user":
                self._denial_in_full(event, reason)
        elif isinstance(event, ev.CompactedEvent):
            app.add("info", f"context compacted: {event.before} messages pruned to "
                            f"{event.after} on the wire")
        elif isinstance(event, ev.NoticeEvent):
            self.end_text()
            app.add("notice", event.text)
        elif isinstance(event, ev.ErrorEvent):
            self.end_text()
            app.add("error", event.error)
        elif isinstance(event, ev.SaveFailedEvent):
            self.end_text()
            app.add("error", f"could not save this session: {event.error}")
            show_unsaved(app, event.unsaved, event.error)
        elif isinstance(event, ev.SessionForkedEvent) and not event.moved:
            self.end_text()
            app.add("notice", f"another agent process continued this session at the same "
                              f"time; its messages were saved as session {event.session[:8]} "
                              f"(agent -r {event.session[:18]}), this one holds only yours")
        elif isinstance(event, ev.SessionForkedEvent):
            self.end_text()
            app.add("notice", f"another agent process continued session "
                              f"{event.forked_from[:8]} at the same time: this conversation "
                              f"goes on as session {event.session[:8]}; {event.forked_from[:8]} "
                              "keeps the other one's messages, untouched")
        elif isinstance(event, ev.DoneEvent):
            self.end_text()
            self._done(event)
        app.redraw.request()

    def _denial_in_full(self, event: ev.ToolDeniedEvent, shown: str) -> None:
        """A refusal's whole reason (the tool line cuts it) and what would allow it, since
        no answer and no --yolo can."""
        full = visible(event.reason or "")
        if full.strip() == shown.strip() and not event.allow:
            return
        text = full + (f"\nto allow it: {visible(event.allow)}" if event.allow else "")
        self.app.add("notice", text)

    # ---- folded blocks: reasoning and applied diffs (ctrl-o expands them) ----

    def end_reasoning(self) -> None:
        """The step's reasoning is over: keep it in the transcript where it began, folded."""
        text = "".join(self._reasoning).strip()
        self._reasoning = []
        if not text:
            return
        tokens = max(1, len(text) // 4)
        block = Block("reasoning", text, {
            "foldable": True, "expanded": self.app.folds_open,
            "summary": f"thought for ~{tokens} tokens"})
        self.app.transcript.insert(self._reasoning_at, block)

    def diff_for(self, call_id: str, name: str, args: Any) -> None:
        """Remember the diff a call would make, to keep it once the call applied it."""
        try:
            from agent.ui.approvals import diffs_for

            ds = diffs_for(self.app.tool_named(name), args, self.app.workspace)
        except Exception:
            ds = None
        if ds is not None and ds.hunks:
            self.diffs[call_id] = (ds, set())

    def rejected(self, call_id: str, ds: Any, hunks: set[int]) -> None:
        """The approval dialog's answer: these hunks of ``ds`` were left out."""
        self.diffs[call_id] = (ds, set(hunks))

    def _applied_diff(self, call_id: str) -> None:
        found = self.diffs.pop(call_id, None)
        if found is None:
            return
        ds, rejected = found
        rows = ds.rows(rejected)
        plus = sum(1 for r in rows if r.kind == "add" and r.hunk not in rejected)
        minus = sum(1 for r in rows if r.kind == "del" and r.hunk not in rejected)
        paths = ", ".join(dict.fromkeys(d.path for d in ds.diffs))
        summary = f"{paths}  +{plus} \u2212{minus}"
        marks = [h.describe(ds) for h in ds.hunks if h.number in rejected]
        if marks:
            summary += f"  ({len(marks)} of {len(ds.hunks)} hunks rejected)"
        self.app.transcript.add(Block("diff", summary, {
            "diff": ds, "rejected": set(rejected), "foldable": True,
            "expanded": self.app.folds_open, "summary": summary,
            "marks": [f"rejected, not applied: {m}" for m in marks]}))

    def _tool_call(self, event: ev.ToolCallEvent) -> None:
        details = toolfmt.details(event.name, event.input, self.app.tool_named(event.name))
        data = {"name": event.name, "details": details, "status": "running",
                "origin": event.origin, "id": event.id}
        entry = self.app.transcript.add(Block("tool", event.name, data))
        self.tools[event.id] = entry
        self.diff_for(event.id, event.name, event.input)
        live = self.app.live
        tool = live.tools.setdefault(event.id, ActiveTool(event.id, event.name))
        tool.details, tool.origin = details, event.origin
        command = event.input.get("command") if isinstance(event.input, dict) else None
        if isinstance(command, str) and command:  # for the ctrl-c notice
            self.commands[event.id] = command.split("\n")[0]
        live.refresh()

    def _tool_done(self, call_id: str, name: str, status: str, summary: str) -> None:
        entry = self.tools.pop(call_id, None)
        if entry is None:  # a result without a call line (should not happen): show one
            entry = self.app.transcript.add(Block("tool", name, {"name": name, "details": []}))
        entry.block.data.update(status=status, summary=summary)
        active = self.app.live.tools.get(call_id)
        if status == "error" and active is not None and active.output.strip():
            # What a command printed before it failed or was interrupted stays on screen
            # under its line (the live view of it goes with the call).
            lines = active.output.rstrip("\n").split("\n")
            entry.block.data["output_tail"] = lines[-OUTPUT_TAIL_LINES:]
            entry.block.data["output_cut"] = max(0, len(lines) - OUTPUT_TAIL_LINES)
        self.app.transcript.update(entry)
        self.app.live.tools.pop(call_id, None)
        self.commands.pop(call_id, None)
        if status != "ok":
            self.diffs.pop(call_id, None)
        self.app.live.refresh()

    def _done(self, event: ev.DoneEvent) -> None:
        app = self.app
        if UNSAVED_PANEL in app.live.panels:
            recorder = getattr(app.session, "recorder", None)
            left = recorder.flush(app.session) if hasattr(recorder, "flush") else 0
            if left:
                show_unsaved(app, left, getattr(recorder, "error", "") or "")
            else:  # a later write caught up: everything is in the store again
                app.set_live(UNSAVED_PANEL, None)
                app.add("info", "the session is saved again")
        if event.input_tokens:
            cost = (format_cost(event.cost_usd) if event.cost_usd is not None
                    else f"({app.model_name() or 'this model'} is unpriced)")
            line = (f"{event.input_tokens} in / {event.output_tokens or 0} out tokens - {cost}"
                    f"  (~{app.context_tokens():,} tokens in context)")
            app.add("turn", line)

    def interrupted(self) -> None:
        """The turn was aborted (esc): close what was open."""
        self.end_reasoning()
        self.end_text()
        for call_id in list(self.tools):
            self._tool_done(call_id, self.tools[call_id].block.data.get("name", "?"), "error",
                            "interrupted")
        self.app.add("notice", "interrupted")

    def running_commands(self, ids: list[str]) -> list[str]:
        return [self.commands.get(i) or self.app.live.tools.get(i, ActiveTool(i, "?")).name
                for i in ids]


#: lines of a failed or interrupted command's output kept under its line in the transcript
OUTPUT_TAIL_LINES = 20

#: the live panel holding the "not saved" banner; it stays up until the store catches up
UNSAVED_PANEL = "~unsaved"


def show_unsaved(app: App, count: int, reason: str) -> None:
    """The persistent banner over the prompt: messages are not being saved, and why."""
    app.set_live(UNSAVED_PANEL, ("error", f"NOT SAVED: {count} message(s) of this session are "
                                          f"not in the state database ({reason})"))


#: Messages a resumed session shows at first, and shows more of each time the user scrolls
#: up past the top: a 10,000-message session must not build 10,000 widget trees up front.
REPLAY_PAGE = 200


def replay(app: App, messages: list[Any], limit: int = REPLAY_PAGE) -> None:
    """Show a resumed session's last ``limit`` messages in the transcript (compactly); the
    earlier ones come a page at a time when the user scrolls up past the top."""
    results: dict[str, Any] = {}
    for message in messages:
        for part in message.tool_results:
            results[part.call_id] = part
    start = max(0, len(messages) - limit)
    for block in _replayed(app, messages[start:], results):
        app.transcript.add(block)
    shown = [start]

    def earlier() -> list[Block]:
        """The blocks of the page before the earliest message shown (none once the start
        of the session is shown, or after the session changed)."""
        if shown[0] == 0 or app.session is None or app.session.messages is not messages:
            return []
        first = max(0, shown[0] - limit)
        blocks = list(_replayed(app, messages[first:shown[0]], results))
        shown[0] = first
        return blocks

    app.transcript.earlier = earlier if start > 0 else None


def _replayed(app: App, messages: list[Any], results: dict[str, Any]) -> Iterator[Block]:
    for message in messages:
        if message.role == "user" and message.text.strip():
            yield Block("user", message.text)
        elif message.role == "assistant":
            for chunk in pieces.chunks(message.text):
                yield Block("markdown", chunk.source, chunk.data())
            for call in message.tool_calls:
                res = results.get(call.id)
                status = "ok" if res is None or not res.is_error else "error"
                summary = toolfmt.summary(call.name, res.output if res else "",
                                          is_error=status == "error") if res else ""
                yield Block("tool", call.name, {
                    "name": call.name,
                    "details": toolfmt.details(call.name, call.arguments,
                                               app.tool_named(call.name)),
                    "status": status, "summary": summary})
