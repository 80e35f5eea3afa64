"""The full-screen app: widgets, keys, turns and the prompt queue.

``App`` owns the widget tree (transcript above; live area, panels, prompt and status bar
below) and everything that changes it.  It never waits: a key handler schedules work and
returns; turns and commands run as supervised asyncio tasks; background changes ask the
:class:`~agent.ui.redraw.Redraw` for a frame.  :func:`run` (in :mod:`agent.ui.screen`) joins
it to a real terminal; tests drive :attr:`App.root` directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from typing import Any

import urwid

from agent.contain.sandbox import sandbox_label
from agent.contract.blocks import Block
from agent.contract.panels import LiveState, Panel, StatusInfo
from agent.ui.context import CommandContext
from agent.ui.keymap import Keymap
from agent.ui.keys import KeyRouter
from agent.ui.menus import Completion
from agent.ui.palette import STYLES
from agent.ui.redraw import Redraw
from agent.ui.supervise import Supervisor
from agent.ui.textlayout import install as install_fast_layout
from agent.ui.turns import TurnView
from agent.ui.widgets.blocks import Renderer, Theme
from agent.ui.widgets.editor import History, PromptEditor
from agent.ui.widgets.panels import InfoPanel, Modal
from agent.ui.widgets.status import LiveArea, StatusBar
from agent.ui.widgets.transcript import Transcript

log = logging.getLogger("agent.ui")

IDLE_PLACEHOLDER = "ask agent... (/ commands, @ files)"
BUSY_PLACEHOLDER = "type to queue for the next turn..."
NO_PROVIDER = "no provider configured yet - run /provider"
CONTEXT_LIMIT = 120_000  # estimated tokens at which compaction starts
#: the turn hands the loop over to keys and frames at least this often (seconds)
YIELD_EVERY = 0.004


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
            for _ in range(3):  # three lines a notch, like a terminal's own scrollback
                self.app.transcript.scroll("scroll-line-up" if button == 4
                                           else "scroll-line-down")
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
        self.queue: list[tuple[str, bool]] = []  # (text, as_prompt) typed during a turn
        #: (label, text) of the large pastes in prompts submitted and not yet started: the
        #: transcript and the queue show the label, the model gets the text
        self.folded_pastes: list[tuple[str, str]] = []
        self.turn_task: asyncio.Task[Any] | None = None
        self.modal: Modal | None = None
        self.info_panel: InfoPanel | None = None
        #: what a resumed session cost in earlier runs (this run's spend is in its ledger)
        self.earlier_cost: float | None = None
        self.earlier_unpriced = False
        self.turn_started = 0.0  # epoch seconds: subagents started since belong to the turn
        self.exit = asyncio.Event()
        self.screen: Any = None  # the urwid screen, when running in a terminal
        self.loop: Any = None    # the urwid MainLoop, when running in a terminal
        self.inline = False      # inline mode: final blocks go to the terminal's scrollback
        self.folds_open = False  # ctrl-o: reasoning and applied diffs shown in full
        self.header_entry: Any = None  # the startup header's transcript entry
        self.term_rows = 0  # the terminal's height in inline mode (0: the screen is ours)
        #: seconds after an approval dialog opens during which keys do not answer it
        self.approval_guard = float(self.config.get("approval_guard"))
        #: the monotonic clock the approval guard reads (when a dialog opened, when a key
        #: came); a test sets a clock it steps by hand instead of sleeping through the guard
        self.clock = time.monotonic
        self._approval_lock = asyncio.Lock()
        self._ticker: asyncio.Task[Any] | None = None

        install_fast_layout()  # before any widget exists: plain text wraps by offsets
        self.theme = Theme(depth, frozenset(STYLES))
        self.renderer = Renderer(self.hooks, self.theme)
        self.supervisor = Supervisor(lambda text: self.add("error", text))
        self.redraw = Redraw(self.draw)
        self.commands = self.hooks.commands(self.config)
        #: things a prompt can mention (``@server:uri``): the @ picker lists them, a sent
        #: prompt attaches them
        self.mentions = self.hooks.mentions(self.config)
        self.keymap = Keymap()
        self.hooks.register_keys(self.keymap)
        keys = self.config.get("keys") or {}
        if isinstance(keys, dict):
            self.keymap.apply_overrides(keys, known=self.commands.commands)
        self.ctx = CommandContext(self)
        self.keys = KeyRouter(self)

        self.transcript = Transcript(lambda block, width: self.renderer.render(block, width))
        self.transcript.jump_key = (self.keymap.keys_for("scroll-bottom") or ["ctrl end"])[0]
        from agent.ui.widgets import transcript as transcript_widget

        transcript_widget.FOLD_KEY[0] = (self.keymap.keys_for("toggle-folds") or ["ctrl o"])[0]
        self.live = LiveArea()
        self.status = StatusBar()
        self.editor = PromptEditor(placeholder=IDLE_PLACEHOLDER, history=History())
        self.editor.on_change = self._on_edit
        self.view = TurnView(self)
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
        # Keep it, as a real screen keeps its last frame: urwid's canvas cache holds canvases
        # weakly, so without this a widget that forgot to invalidate would look fine here.
        self._last_canvas = canvas
        return [row.decode("utf-8") for row in canvas.text]

    def add(self, kind: str, text: str, **data: Any) -> None:
        self.transcript.add(Block(kind, text, data))
        self.redraw.request()

    def max_panel_rows(self) -> int:
        """Rows a panel's scrolling body may take: what is left of the screen after the
        prompt, the status bar, the panel's own frame and lines, and a few transcript rows."""
        rows = self.term_rows or self.size[1]  # inline mode draws a region, not the screen
        return max(4, rows - 13)

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
        # Panels hold lines (lists of sessions, files, commands): keep every line break.
        widget = (self.render_block(Block("markdown", body, {"breaks": True})) if body
                  else urwid.Text(""))
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

    def set_live(self, key: str, text: Any) -> None:
        """Show ``text`` (a string or urwid markup) as the live panel ``key``; None hides
        it."""
        if text is None:
            self.live.panels.pop(key, None)
        else:
            self.live.panels[key] = text
        self.live.refresh()
        self.redraw.request()

    def clear_transcript(self, wipe_scrollback: bool = True) -> None:
        self.transcript.clear()
        if wipe_scrollback and self.screen is not None and not self.inline:
            try:
                self.screen.write("\x1b[2J\x1b[3J\x1b[H")
                self.screen.clear()
            except Exception:  # a screen without raw writes (tests)
                log.debug("could not wipe the scrollback", exc_info=True)
        self.redraw.request()

    # ---- status ----------------------------------------------------------------------------

    def tool_named(self, name: str) -> Any:
        """The session's tool called ``name`` (None if unknown)."""
        tools = getattr(self.session, "tools", None) or getattr(self.runtime, "tools", None)
        return tools.get(name) if isinstance(tools, dict) else None

    def model_name(self) -> str:
        if self.session is not None:
            return str(self.session.model or "")
        return str(self.config.get("model") or "")

    def context_tokens(self) -> int:
        """The one context figure (the turn line, the status bar and ``/cost`` all show it):
        the estimated tokens of the last request, system prompt, tool schemas and history
        together.  A plugin may measure each request it sees (``StatusInfo.context_tokens``);
        before the first one (or without one) the same measure is taken here: characters / 4."""
        if self.session is None:
            return 0
        measured = self.status_info().context_tokens
        if measured:
            return int(measured)
        import json

        chars = 0
        try:
            chars += len(self.session.system_prompt())
            chars += len(json.dumps([t.spec() for t in self.session.tools_for_step()],
                                    default=str))
        except Exception:
            log.debug("could not measure the prompt and tools", exc_info=True)
        for message in self.session.messages:
            for part in message.parts:
                chars += len(getattr(part, "text", "") or getattr(part, "output", "") or "")
                args = getattr(part, "arguments", None)
                if args:
                    chars += len(json.dumps(args, default=str))
        return chars // 4

    def status_info(self) -> StatusInfo:
        """What the plugins say for the status bar (``agent_status``)."""
        if self.session is None:
            return StatusInfo()
        return self.hooks.status(self.session)

    def agent_name(self) -> str:
        """The agent variant: what a plugin reports for the session, else the config's."""
        return str(self.status_info().agent or self.config.get("agent") or "default")

    def context_pct(self) -> int:
        """Context use in percent of where compaction starts (a plugin's
        ``StatusInfo.context_limit``, else ``compact_threshold``)."""
        threshold = self.status_info().context_limit
        if not threshold:
            threshold = self.config.get("compact_threshold") or CONTEXT_LIMIT
        return min(999, int(self.context_tokens()) * 100 // max(1, int(threshold)))

    def spent(self) -> tuple[float | None, bool]:
        """(US dollars this session has cost, priced): this run's spend ledger (subagents
        included) plus what a resumed session cost before.  ``(None, True)`` before a
        session; not priced while nothing could be priced."""
        if self.session is None:
            return None, True
        spent = self.session.hooks.session_spent(self.session)
        if spent is None:  # no plugin keeps a ledger (the cost plugin is disabled)
            return None, True
        usd = (self.earlier_cost or 0.0) + spent[0]
        unpriced = spent[1] or self.earlier_unpriced
        return usd, not (unpriced and not usd)

    def update_status(self, **extra: Any) -> None:
        tools = 0
        if self.session is not None:
            try:
                # what the next step would offer: it follows an /agent switch at once
                tools = len(self.session.tools_for_step())
            except Exception:
                tools = len(self.session.tools)
        cost, priced = self.spent()
        cap = self.config.get("max_spend_usd")
        self.status.update(model=self.model_name(), agent=self.agent_name(),
                           thinking=str(getattr(self.session, "thinking", None)
                                        or self.config.get("thinking") or "medium"),
                           tools=tools, context_pct=self.context_pct(), cost=cost,
                           priced=priced, cap=float(cap) if cap else None,
                           sandbox=sandbox_label(self.config), mode=self.permission_mode(),
                           **extra)
        self.refresh_panels()
        self.redraw.request()

    # ---- plugin panels ---------------------------------------------------------------------

    def refresh_panels(self) -> None:
        """Ask the plugins for their live panels (``agent_live_panels``): after each status
        refresh and tool call, and on the ticker while a turn runs."""
        if self.session is None:
            panels: list[Panel] = []
        else:
            state = LiveState(busy=self.busy, turn_started=self.turn_started,
                              spinner=self.live.spinner())
            panels = self.hooks.live_panels(self.session, state)
        self.live.set_plugin_panels(panels)

    # ---- keys ------------------------------------------------------------------------------

    def handle_key(self, size: tuple[int, int], key: str) -> None:
        self.keys.handle(size, key)

    def _on_edit(self) -> None:
        self.completion.update()

    # ---- prompts, commands and turns -------------------------------------------------------

    def submit(self, text: str, *, as_prompt: bool = False) -> None:
        """A prompt or slash command from the user (or a queued one)."""
        self.dismiss_info()
        stripped = text.strip()
        if stripped.startswith("/") and not as_prompt:
            name = stripped[1:].split(None, 1)[0] if len(stripped) > 1 else ""
            command = self.commands.get(name)
            if command is not None and command.name == "exit":
                self.quit()  # never queued
                return
        if self.busy:
            self.queue.append((text, as_prompt))
            self._show_queue()
            return
        if stripped.startswith("//") and not as_prompt:
            self.start_turn(stripped[1:])  # "//x" sends the prompt "/x"
        elif stripped.startswith("/") and not as_prompt:
            self.run_command(stripped)
        elif stripped.startswith("!") and len(stripped) > 1 and not as_prompt:
            self.start_turn(stripped, shell=True)  # "!cmd": the person runs it
        elif stripped.startswith("#") and len(stripped) > 1 and not as_prompt \
                and self.commands.get("remember") is not None:
            # "#note": saved to project memory (Claude Code's habit), never sent
            self.run_command("/remember " + stripped[1:].strip(), shown=stripped)
        else:
            self.start_turn(text, remember=not as_prompt)

    def _show_queue(self) -> None:
        self.live.queue = [self.folded(text) for text, _ in self.queue]
        self.live.refresh()
        self.redraw.request()

    def refresh_commands(self) -> None:
        """Ask the plugins for their slash commands again: some appear while the app runs (an
        MCP server's prompts once it has connected), not only at start."""
        try:
            self.commands = self.hooks.commands(self.config)
        except Exception as exc:
            self.supervisor.report("slash commands", exc)

    def run_command(self, text: str, *, shown: str | None = None) -> None:
        name, _, args = text[1:].partition(" ")
        self.transcript.follow_end()  # what the command prints is brought into view
        self.add("user", shown or text)
        command = self.commands.get(name)
        if command is None:
            self.refresh_commands()
            command = self.commands.get(name)
        if command is None:
            self.add("error", f"unknown command /{name} - try /help "
                              "(start with // to send it as a prompt)")
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
            self.ctx.info(result)  # exactly as if the command had called app.info(text)
        self.update_status()

    def start_turn(self, text: str, *, remember: bool = True, shell: bool = False) -> None:
        """Start a turn for prompt ``text``; with ``shell``, run ``text`` (``!cmd``) as the
        person's own command instead (its output goes into the next request)."""
        if self.session is None:
            self.add("user", text)
            self.add("error", NO_PROVIDER)
            return
        if remember:
            self.editor.history.add(text)
        self.transcript.follow_end()
        self.add("user", self.folded(text, used=True))
        self.turn_task = self.supervisor.spawn(self._turn(text, shell=shell), "the turn")

    def folded(self, text: str, *, used: bool = False) -> str:
        """``text`` as the transcript shows it: a large paste as its label
        (``[pasted 1,000,030 chars]``); ``used``: the prompt has started, forget its pastes."""
        shown = text
        for label, pasted in self.folded_pastes:
            if pasted in shown:
                shown = shown.replace(pasted, label, 1)
        if used:
            self.folded_pastes = [(lbl, p) for lbl, p in self.folded_pastes if p not in text]
        return shown

    def _events(self, text: str, prompt: Any, shell: bool) -> Any:
        """The event stream of a turn: the model's, or a ``!command``'s."""
        if not shell:
            return self.session.run(prompt)
        from agent.loop.user_command import run_user_command

        return run_user_command(self.session, text.strip()[1:].strip())

    def _show_shell_output(self, event: Any) -> None:
        """A ``!command``'s whole output, under its call line (the model's calls show a
        summary; here the person asked to see it)."""
        output = getattr(event, "output", None) or getattr(event, "error", None) or ""
        if not output.strip():
            return
        fence = "````" if "```" in output else "```"
        self.add("markdown", f"{fence}\n{output.rstrip()}\n{fence}")

    async def _turn(self, text: str, shell: bool = False) -> None:
        self.busy = True
        self.turn_started = time.time()
        self.completion.close()
        self.live.start()
        self.live.refresh()
        self.editor.set_placeholder(BUSY_PLACEHOLDER)
        self._ticker = self.supervisor.spawn(self._tick(), "the working line")
        try:
            # A fast stream never blocks: every read finds bytes waiting, so the turn would
            # keep the loop to itself and no key or frame would get through until it ends.
            # Hand the loop over every few milliseconds (two passes: one reads the keys, the
            # next paints them).
            handover = time.monotonic() + YIELD_EVERY
            prompt = text if shell else await self._attach_mentions(text)
            # aclosing: esc may land while this frame, not the session's, is waiting (the
            # hand-over below); the turn must then end here and now -- its partial answer
            # recorded -- not when the collector finalises the generator, which could be
            # after the next prompt was added to the history.
            async with contextlib.aclosing(self._events(text, prompt, shell)) as events:
                async for event in events:
                    self.view.on_event(event)
                    if shell and event.type in ("tool-result", "tool-error"):
                        self._show_shell_output(event)
                    if time.monotonic() >= handover:
                        await asyncio.sleep(0)
                        await asyncio.sleep(0)
                        handover = time.monotonic() + YIELD_EVERY
        except asyncio.CancelledError:
            self.view.interrupted()
        except Exception as exc:
            self.view.end_text()
            self.supervisor.report("the turn", exc)
        finally:
            if self._ticker is not None:
                self._ticker.cancel()
            self.view.end_reasoning()
            self.view.end_text()
            self.busy = False
            self.turn_task = None
            self.live.stop()
            self.live.refresh()
            self.editor.set_placeholder(IDLE_PLACEHOLDER)
            self.update_status()
            if self.session is not None and self.session.after_turn_pending:
                # Panels about that work (the formatter's) go when it ends, not at the next key.
                self.supervisor.spawn(self._refresh_after(self.session), "after-turn work")
            asyncio.get_running_loop().call_soon(self.drain_queue)

    async def _refresh_after(self, session: Any) -> None:
        # The work may start after the turn's last refresh, so its panel (the formatter's
        # "formatting: ...") is asked for on a ticker until the work ends, then once more.
        idle = asyncio.ensure_future(session.after_turn_idle())
        try:
            while not idle.done():
                self.refresh_panels()
                self.redraw.request()
                await asyncio.wait({idle}, timeout=0.1)
        finally:
            idle.cancel()
        self.update_status()

    async def _attach_mentions(self, text: str) -> Any:
        """The prompt with what its ``@server:uri`` mentions name attached (the text alone
        when there are none); a mention that cannot be read is named in a warning."""
        if not self.mentions or "@" not in text:
            return text
        from agent.contract.mentions import expand

        message, warnings = await expand(text, self.mentions)
        for warning in warnings:
            self.add("error", warning)
        return message

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            self.refresh_panels()  # what they show changes as the turn works
            self.live.tick()
            self.redraw.request()

    def drain_queue(self) -> None:
        """Run the next queued prompt; its turn drains the rest when it ends."""
        while self.queue and not self.busy and not self.exit.is_set():
            text, as_prompt = self.queue.pop(0)
            self._show_queue()
            self.submit(text, as_prompt=as_prompt)
        self.redraw.request()

    def abort_turn(self) -> None:
        """esc during a turn: stop it and forget the queue."""
        self.queue.clear()
        self._show_queue()
        if self.turn_task is not None and not self.turn_task.done():
            self.turn_task.cancel()

    def toggle_folds(self) -> None:
        """ctrl-o: a large paste folded in the prompt is put there whole, for editing;
        otherwise show every folded block (reasoning, applied diffs) in full, or fold them."""
        if self.modal is None and self.editor.unfold():
            self.redraw.request()
            return
        self.folds_open = not self.folds_open
        if not self.transcript.set_folds(self.folds_open):
            self.add("info", "nothing folded yet: reasoning and applied diffs fold here")
        self.redraw.request()

    def quit(self) -> None:
        self.exit.set()

    def permission_mode(self) -> str:
        """The mode the gate decides in now: ``default``, ``accept-edits`` or ``plan``."""
        flags = getattr(getattr(self.session, "gate", None), "flags", None)
        if flags is not None:
            return str(flags.mode)
        return str(self.config.get("permission_mode") or "default")

    def cycle_mode(self) -> None:
        """shift-tab: default -> accept-edits -> plan -> default.  The session's gate (which
        its subagents share) decides in the new mode from the next call on; a new or resumed
        session keeps it."""
        from agent.loop.gate import flag_rules
        from agent.loop.permission_flags import MODES

        current = self.permission_mode()
        mode = MODES[(MODES.index(current) + 1) % len(MODES)] if current in MODES else MODES[0]
        self.config.flag_values["permission_mode"] = mode
        gate = getattr(self.session, "gate", None)
        if gate is not None:
            gate.flags = flag_rules(self.config)
        self.update_status()

    def set_model(self, model: str) -> None:
        if self.session is not None:
            self.session.model = model
        if self.runtime is not None:
            self.runtime.model = model
        self.update_status()

    async def setup_provider(self, problem: str = "") -> bool:
        """The provider setup a plugin offers (``agent_setup_provider``); True when a
        provider is in use now."""
        from agent.ui.startup import setup_provider

        return await setup_provider(self, problem)

    # ---- approvals -------------------------------------------------------------------------

    async def approve(self, request: Any) -> Any:
        """The runtime's approver: show the dialog, wait for y / a / n."""
        from agent.ui.widgets.approval import ApprovalDialog

        async with self._approval_lock:
            dialog = ApprovalDialog(request, workspace=self.workspace, render=self.render_block,
                                    max_rows=self.max_panel_rows, clock=self.clock)
            self.bell_if_wanted()
            dialog.opened_at = self.clock()
            if self.editor.text:  # the prompt holds text: say how to answer the dialog
                self.keys.diverted(dialog)
            self.live.hide_tools = self.live.folded = True
            self.live.refresh()
            try:
                answer = await self.run_modal(dialog)
            finally:
                self.live.hide_tools = self.live.folded = False
                self.live.refresh()
            if dialog.diffs is not None and answer != "no":
                self.view.rejected(request.call.id, dialog.diffs, dialog.rejected)
            return answer

    def bell_if_wanted(self) -> None:
        """Ring the terminal bell when the user asked for it (``bell_on_approval``)."""
        if not self.config.get("bell_on_approval") or self.screen is None:
            return
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


def run(boot: Any, prompt: str | None = None) -> int:
    """Start the full-screen UI in this terminal; returns the exit code."""
    from agent.ui.screen import run_app

    return run_app(boot, prompt)
