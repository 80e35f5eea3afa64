"""The full-screen app: widgets, keys, turns and the prompt queue.

``App`` owns the widget tree (transcript above; live area, panels, prompt and status bar
below) and everything that changes it.  It never waits: a key handler schedules work and
returns; turns and commands run as supervised asyncio tasks; background changes ask the
:class:`~agent.ui.redraw.Redraw` for a frame.  :func:`run` (in :mod:`agent.ui.screen`) joins
it to a real terminal; tests drive :attr:`App.root` directly.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import Any

import urwid

from agent.blocks import Block
from agent.ui.context import CommandContext
from agent.ui.keymap import Keymap
from agent.ui.palette import STYLES
from agent.ui.redraw import Redraw
from agent.ui.supervise import Supervisor
from agent.ui.turns import TurnView
from agent.ui.widgets.blocks import Renderer, Theme
from agent.ui.widgets.editor import ACTIONS as EDIT_ACTIONS
from agent.ui.widgets.editor import History, PromptEditor
from agent.ui.widgets.panels import InfoPanel, Modal
from agent.ui.widgets.status import LiveArea, StatusBar
from agent.ui.widgets.transcript import Transcript

log = logging.getLogger("agent.ui")

IDLE_PLACEHOLDER = "ask agent... (/ commands, @ files)"
BUSY_PLACEHOLDER = "type to queue for the next turn..."
NO_PROVIDER = "no provider configured yet - run /provider"
CONTEXT_LIMIT = 120_000  # estimated tokens at which compaction starts


class Root(urwid.WidgetWrap):
    """The top widget: every key goes to :meth:`App.handle_key`."""

    def __init__(self, app: App, widget: urwid.Widget) -> None:
        super().__init__(widget)
        self.app = app

    def selectable(self) -> bool:
        return True

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        self.app.size = size
        self.app.handle_key(size, key)
        return None

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        self.app.size = size
        return super().render(size, focus=True)

    def mouse_event(self, size: Any, event: str, button: int, col: int, row: int,
                    focus: bool) -> bool:
        if event == "mouse press" and button in (4, 5):  # the wheel (only with mouse = true)
            self.app.transcript.scroll("scroll-line-up" if button == 4 else "scroll-line-down")
            self.app.transcript.scroll("scroll-line-up" if button == 4 else "scroll-line-down")
            return True
        return False


class App:
    """The UI of one ``agent`` run."""

    def __init__(self, boot: Any, *, depth: int = 256) -> None:
        self.boot = boot
        self.config = boot.config
        self.hooks = boot.hooks
        self.workspace = self.config.workspace
        self.runtime: Any = None
        self.session: Any = None
        self.size: tuple[int, int] = (100, 30)
        self.busy = False
        self.queue: list[str] = []
        self.turn_task: asyncio.Task[Any] | None = None
        self.modal: Modal | None = None
        self.info_panel: InfoPanel | None = None
        self.cost: float | None = None
        self.unpriced = False
        self.exit = asyncio.Event()
        self.screen: Any = None  # the urwid screen, when running in a terminal
        self.loop: Any = None    # the urwid MainLoop, when running in a terminal
        self._last_ctrl_c = 0.0
        #: seconds after an approval dialog opens during which keys do not answer it
        self.approval_guard = 0.4
        self._pasting: list[str] | None = None
        self._approval_lock = asyncio.Lock()
        self._ticker: asyncio.Task[Any] | None = None

        self.theme = Theme(depth, frozenset(STYLES))
        self.renderer = Renderer(self.hooks, self.theme)
        self.supervisor = Supervisor(lambda text: self.add("error", text))
        self.redraw = Redraw(self.draw)
        self.commands = self.hooks.commands(self.config)
        self.keymap = Keymap()
        self.hooks.register_keys(self.keymap)
        keys = self.config.get("keys") or {}
        if isinstance(keys, dict):
            self.keymap.apply_overrides(keys, known=self.commands.commands)
        self.ctx = CommandContext(self)

        self.transcript = Transcript(lambda block, width: self.renderer.render(block, width))
        self.live = LiveArea()
        self.status = StatusBar()
        self.editor = PromptEditor(placeholder=IDLE_PLACEHOLDER, history=History())
        self.editor.on_change = self._on_edit
        self.view = TurnView(self)
        from agent.ui.menus import Completion

        self.completion = Completion(self)
        self.slot = urwid.Pile([])
        self.footer = urwid.Pile([("pack", self.live), ("pack", self.slot),
                                  ("pack", self.editor), ("pack", self.status)])
        self.footer.focus_position = 2
        self.frame = urwid.Frame(body=self.transcript, footer=self.footer, focus_part="footer")
        self.root = Root(self, self.frame)

    # ---- drawing ---------------------------------------------------------------------------

    def render_block(self, block: Block) -> urwid.Widget:
        return self.renderer.render(block, self.size[0])

    def before_draw(self) -> None:
        self.view.flush()

    def draw(self) -> None:
        """Paint a frame now (the Redraw calls this, coalesced)."""
        if self.loop is not None:
            self.loop.draw_screen()  # flushes first (see screen._Loop)
        else:
            self.before_draw()
            self.redraw.drew()

    def render(self, size: tuple[int, int] | None = None) -> list[str]:
        """The screen as text rows (tests)."""
        self.before_draw()
        canvas = self.root.render(size or self.size, focus=True)
        return [row.decode("utf-8") for row in canvas.text]

    def add(self, kind: str, text: str, **data: Any) -> None:
        self.transcript.add(Block(kind, text, data))
        self.redraw.request()

    def max_panel_rows(self) -> int:
        return max(4, self.size[1] - 12)

    # ---- panels ----------------------------------------------------------------------------

    def refresh_slot(self) -> None:
        parts: list[urwid.Widget] = []
        if self.info_panel is not None and self.modal is None:
            parts.append(self.info_panel)
        if self.completion.open and self.modal is None:
            parts.append(self.completion.widget)
        if self.modal is not None:
            parts.append(self.modal)
        self.slot.contents[:] = [(w, ("pack", None)) for w in parts]
        wants_cursor = self.modal is not None and self.modal.context == "picker"
        if wants_cursor and parts:
            self.slot.focus_position = len(parts) - 1
        self.footer.focus_position = 1 if wants_cursor else 2
        self.redraw.request()

    def show_info(self, title: str, body: str, hint: str = "") -> None:
        widget = self.render_block(Block("markdown", body)) if body else urwid.Text("")
        self.info_panel = InfoPanel(title, widget, hint, self.max_panel_rows)
        self.refresh_slot()

    def dismiss_info(self) -> bool:
        if self.info_panel is None:
            return False
        self.info_panel = None
        self.refresh_slot()
        return True

    async def run_modal(self, modal: Modal) -> Any:
        """Show ``modal`` until it resolves; returns its result."""
        previous = self.modal
        self.modal = modal
        self.completion.close()
        self.refresh_slot()
        try:
            return await modal.wait()
        finally:
            if self.modal is modal:
                self.modal = previous if previous is not None and not previous.done else None
            self.refresh_slot()

    def set_live(self, key: str, text: str | None) -> None:
        if text is None:
            self.live.panels.pop(key, None)
        else:
            self.live.panels[key] = text
        self.live.refresh()
        self.redraw.request()

    def clear_transcript(self, wipe_scrollback: bool = True) -> None:
        self.transcript.clear()
        if wipe_scrollback and self.screen is not None:
            try:
                self.screen.write("\x1b[2J\x1b[3J\x1b[H")
                self.screen.clear()
            except Exception:  # a screen without raw writes (tests)
                log.debug("could not wipe the scrollback", exc_info=True)
        self.redraw.request()

    # ---- status ----------------------------------------------------------------------------

    def model_name(self) -> str:
        if self.session is not None:
            return str(self.session.model or "")
        return str(self.config.get("model") or "")

    def context_tokens(self) -> int:
        if self.session is None:
            return 0
        chars = 0
        for message in self.session.messages:
            for part in message.parts:
                chars += len(getattr(part, "text", "") or getattr(part, "output", "") or "")
                args = getattr(part, "arguments", None)
                if args:
                    chars += len(str(args))
        return chars // 4

    def update_status(self, **extra: Any) -> None:
        tools = 0
        if self.session is not None:
            try:
                tools = len(self.session.offered_tools or self.session.tools_for_step())
            except Exception:
                tools = len(self.session.tools)
        pct = min(999, self.context_tokens() * 100 // int(
            self.config.get("context_limit") or CONTEXT_LIMIT))
        self.status.update(model=self.model_name(), agent=str(self.config.get("agent") or
                                                                "default"),
                           thinking=str(getattr(self.session, "thinking", None)
                                        or self.config.get("thinking") or "medium"),
                           tools=tools, context_pct=pct, cost=self.cost,
                           priced=not self.unpriced, **extra)
        self.redraw.request()

    # ---- keys ------------------------------------------------------------------------------

    def contexts(self) -> list[str]:
        if self.modal is not None:
            return [self.modal.context, "global"]
        if self.completion.open:
            return ["menu", "prompt", "global"]
        return ["prompt", "global"]

    def handle_key(self, size: tuple[int, int], key: str) -> None:
        try:
            self._handle_key(size, key)
        except Exception as exc:  # a key must never take the app down
            self.supervisor.report(f"the {key!r} key", exc)

    def _handle_key(self, size: tuple[int, int], key: str) -> None:
        if not isinstance(key, str):
            return
        if self._paste(key):
            return
        modal = self.modal
        if modal is not None and modal.context == "approval" and \
                time.monotonic() - getattr(modal, "opened_at", 0.0) < self.approval_guard:
            # Keys typed ahead before the dialog appeared must not answer it: they go on to
            # the prompt (a stray enter or "y" never approves a command nobody has read).
            hit = self.keymap.get(key, ["prompt", "global"])
            if hit is not None and hit[1] in EDIT_ACTIONS:
                self.editor.do(hit[1], (size[0],))
            elif hit is None:
                self.editor.type_key((size[0],), key)
            return
        hit = self.keymap.get(key, self.contexts())
        if hit is not None and self.run_action(hit[1], size):
            return
        if self.modal is not None:
            self.modal.type_key((size[0],), key)
        elif self.editor.type_key((size[0],), key):
            pass

    def _paste(self, key: str) -> bool:
        """Bracketed paste: collect everything between the markers, insert it in one go."""
        if key == "begin paste":
            self._pasting = []
            return True
        if self._pasting is None:
            return False
        if key == "end paste":
            text, self._pasting = "".join(self._pasting), None
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            if self.modal is not None:
                for ch in text.replace("\n", " "):
                    self.modal.type_key((self.size[0],), ch)
            elif text:
                self.editor.insert_text(text)
                self._on_edit()
            return True
        if key == "enter":
            self._pasting.append("\n")
        elif key == "tab":
            self._pasting.append("\t")
        elif len(key) == 1 or self.editor.valid_char(key):
            self._pasting.append(key)
        return True

    def run_action(self, command: str, size: tuple[int, int]) -> bool:
        """Run a bound command; False if it does not apply (the key falls through)."""
        cols = (size[0],)
        if self.modal is not None and command in _MODAL_ACTIONS:
            return self.modal.action(command, cols)
        if command in EDIT_ACTIONS:
            return self.editor.do(command, cols)
        if command.startswith("menu-"):
            return self.completion.action(command)
        handler = _APP_ACTIONS.get(command)
        if handler is not None:
            result = handler(self)
            return True if result is None else bool(result)
        if self.commands.get(command) is not None:
            self.submit("/" + command)
            return True
        return False

    def _on_edit(self) -> None:
        self.completion.update()

    # ---- actions ----

    def action_submit(self) -> None:
        text = self.editor.text
        if text.endswith("\\") and not text.endswith("\\\\"):
            self.editor.set(text[:-1] + "\n")  # a trailing backslash continues the prompt
            return
        if not text.strip():
            return
        self.editor.take()
        self.editor.history.index = len(self.editor.history.items)
        self.submit(text)

    def action_complete(self) -> bool:
        if self.completion.open:
            return self.completion.action("menu-complete")
        return False

    def action_cancel(self) -> None:
        if self.busy:
            self.abort_turn()
        elif self.dismiss_info():
            pass
        elif self.completion.open:
            self.completion.close(dismissed=True)

    def action_interrupt(self) -> None:
        session = self.session
        running = session.running_calls() if session is not None else []
        if running:
            ids = session.interrupt_tools()
            names = self.view.running_commands(ids)
            self.add("notice", "interrupted: " + ", ".join(n for n in names if n))
            return
        now = time.monotonic()
        if self.busy and now - self._last_ctrl_c > 2.0:
            self._last_ctrl_c = now
            self.add("info", "no command is running: esc stops the turn, ctrl-c again quits")
            return
        self.quit()

    def action_toggle_reasoning(self) -> None:
        self.live.reasoning_open = not self.live.reasoning_open
        self.live.refresh()

    def action_scroll(self, which: str) -> None:
        panel = self.info_panel
        if panel is not None and self.modal is None and panel.fit.scrollable and which in (
                "scroll-up", "scroll-down"):
            panel.fit.scroll("page up" if which == "scroll-up" else "page down")
            return
        self.transcript.scroll(which)

    def action_redraw(self) -> None:
        if self.screen is not None:
            self.screen.clear()

    def action_suspend(self) -> None:
        import os
        import signal

        if self.screen is not None and hasattr(signal, "SIGTSTP"):
            os.kill(os.getpid(), signal.SIGTSTP)

    # ---- prompts, commands and turns -------------------------------------------------------

    def submit(self, text: str, *, as_prompt: bool = False) -> None:
        """A prompt or slash command from the user (or a queued one)."""
        self.dismiss_info()
        stripped = text.strip()
        command = None
        if stripped.startswith("/") and not as_prompt:
            name = stripped[1:].split(None, 1)[0] if len(stripped) > 1 else ""
            command = self.commands.get(name)
            if command is not None and command.name == "exit":
                self.quit()  # never queued
                return
        if self.busy:
            self.queue.append(text)
            self.live.queue = self.queue
            self.live.refresh()
            self.redraw.request()
            return
        if stripped.startswith("/") and not as_prompt:
            self.run_command(stripped)
        else:
            self.start_turn(text, remember=not as_prompt)

    def run_command(self, text: str) -> None:
        name, _, args = text[1:].partition(" ")
        self.add("user", text)
        command = self.commands.get(name)
        if command is None:
            self.add("error", f"unknown command /{name} - try /help")
            return
        if self.session is None and not command.info and command.name != "provider":
            self.add("error", NO_PROVIDER)
            return
        try:
            result = command.run(self.ctx, args.strip())
        except Exception as exc:
            self.supervisor.report(f"/{command.name}", exc)
            return
        if inspect.isawaitable(result):
            self.supervisor.spawn(self._finish_command(command.name, result),
                                  f"/{command.name}")
        else:
            self._command_result(result)

    async def _finish_command(self, name: str, awaitable: Any) -> None:
        self._command_result(await awaitable)
        self.update_status()

    def _command_result(self, result: Any) -> None:
        if isinstance(result, str) and result:
            self.add("info", result)
        self.update_status()

    def start_turn(self, text: str, *, remember: bool = True) -> None:
        if self.session is None:
            self.add("user", text)
            self.add("error", NO_PROVIDER)
            return
        if remember:
            self.editor.history.add(text)
        self.add("user", text)
        self.transcript.follow = True
        self.turn_task = self.supervisor.spawn(self._turn(text), "the turn")

    async def _turn(self, text: str) -> None:
        self.busy = True
        self.completion.close()
        self.live.start()
        self.live.refresh()
        self.editor.set_placeholder(BUSY_PLACEHOLDER)
        self._ticker = asyncio.get_running_loop().create_task(self._tick())
        try:
            async for event in self.session.run(text):
                self.view.on_event(event)
        except asyncio.CancelledError:
            self.view.interrupted()
        except Exception as exc:
            self.view.end_text()
            self.supervisor.report("the turn", exc)
        finally:
            if self._ticker is not None:
                self._ticker.cancel()
            self.view.end_text()
            self.busy = False
            self.turn_task = None
            self.live.stop()
            self.live.refresh()
            self.editor.set_placeholder(IDLE_PLACEHOLDER)
            self.update_status()
            asyncio.get_running_loop().call_soon(self.drain_queue)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            self.live.tick()
            self.redraw.request()

    def drain_queue(self) -> None:
        """Run the next queued prompt; its turn drains the rest when it ends."""
        while self.queue and not self.busy and not self.exit.is_set():
            text = self.queue.pop(0)
            self.live.queue = self.queue
            self.live.refresh()
            self.submit(text)
        self.redraw.request()

    def abort_turn(self) -> None:
        """esc during a turn: stop it and forget the queue."""
        self.queue.clear()
        self.live.queue = self.queue
        if self.turn_task is not None and not self.turn_task.done():
            self.turn_task.cancel()
        self.live.refresh()

    def quit(self) -> None:
        self.exit.set()

    def set_model(self, model: str) -> None:
        if self.session is not None:
            self.session.model = model
        if self.runtime is not None:
            self.runtime.model = model
        self.update_status()

    async def setup_provider(self) -> bool:
        from agent.ui.onboarding import run_setup

        return await run_setup(self)

    # ---- approvals -------------------------------------------------------------------------

    async def approve(self, request: Any) -> Any:
        """The runtime's approver: show the dialog, wait for y / a / n."""
        from agent.ui.widgets.approval import ApprovalDialog

        async with self._approval_lock:
            dialog = ApprovalDialog(request, workspace=self.workspace, render=self.render_block,
                                    max_rows=self.max_panel_rows)
            if self.config.get("bell_on_approval"):
                self._bell()
            dialog.opened_at = time.monotonic()
            self.live.hide_tools = True
            self.live.refresh()
            try:
                return await self.run_modal(dialog)
            finally:
                self.live.hide_tools = False
                self.live.refresh()

    def _bell(self) -> None:
        if self.screen is not None:
            try:
                self.screen.write("\a")
                self.screen.flush()
            except Exception:
                log.debug("no bell", exc_info=True)

    # ---- startup ---------------------------------------------------------------------------

    def start(self, prompt: str | None = None) -> None:
        """Build the runtime (or open the provider setup) and show the header; call inside
        the running loop."""
        from agent.ui import startup

        startup.start(self, prompt)


_MODAL_ACTIONS = frozenset({
    "approve", "approve-always", "deny", "hunk-next", "hunk-prev", "hunk-toggle",
    "dialog-scroll-up", "dialog-scroll-down", "pick-up", "pick-down", "pick-accept",
    "pick-toggle", "pick-cancel"})

_APP_ACTIONS: dict[str, Any] = {
    "submit": App.action_submit,
    "complete": App.action_complete,
    "cancel": App.action_cancel,
    "interrupt": App.action_interrupt,
    "toggle-reasoning": App.action_toggle_reasoning,
    "redraw": App.action_redraw,
    "suspend": App.action_suspend,
    "quit": App.quit,
    **{name: (lambda self, _n=name: self.action_scroll(_n)) for name in (
        "scroll-up", "scroll-down", "scroll-line-up", "scroll-line-down", "scroll-top",
        "scroll-bottom")},
}

def run(boot: Any, prompt: str | None = None) -> int:
    """Start the full-screen UI in this terminal; returns the exit code."""
    from agent.ui.screen import run_app

    return run_app(boot, prompt)
