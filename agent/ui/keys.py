"""From a key to what it does: the keymap lookup by context, bracketed paste, and the UI
actions keys are bound to.

Contexts are tried from the most specific open one outwards (see :mod:`agent.ui.keymap`); a
command that does not apply returns False and the key falls through to typing.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent.ui.paste import Pasted
from agent.ui.widgets.editor import ACTIONS as EDIT_ACTIONS

if TYPE_CHECKING:
    from agent.ui.app import App

MODAL_ACTIONS = frozenset({
    "approve", "approve-always", "deny", "dialog-focus", "hunk-next", "hunk-prev", "hunk-toggle",
    "dialog-scroll-up", "dialog-scroll-down", "pick-up", "pick-down", "pick-accept",
    "pick-toggle", "pick-cancel"})

SCROLLS = ("scroll-up", "scroll-down", "scroll-line-up", "scroll-line-down", "scroll-top",
           "scroll-bottom")

#: a second ctrl-c within this many seconds on an idle, empty prompt quits
CTRL_C_AGAIN = 2.0
#: what the first ctrl-c on an idle, empty prompt says
QUIT_HINT = "press ctrl-c again to quit (or /exit)"


class KeyRouter:
    """Routes the keys of one :class:`~agent.ui.app.App`."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._pasting: list[str] | None = None
        self._last_ctrl_c = 0.0
        self.last_key_at = 0.0  # when the previous key arrived (monotonic seconds)
        self.actions: dict[str, Callable[[], Any]] = {
            "submit": self.submit, "complete": self.complete, "cancel": self.cancel,
            "interrupt": self.interrupt, "toggle-reasoning": self.toggle_reasoning,
            "redraw": self.redraw, "suspend": self.suspend, "quit": app.quit,
            "toggle-folds": app.toggle_folds, "cycle-mode": app.cycle_mode,
            **{name: (lambda n=name: self.scroll(n)) for name in SCROLLS},
        }

    def contexts(self) -> list[str]:
        app = self.app
        if app.modal is not None:
            return [app.modal.context, "global"]
        if app.completion.open:
            return ["menu", "prompt", "global"]
        return ["prompt", "global"]

    def handle(self, size: tuple[int, int], key: str) -> None:
        try:
            self._handle(size, key)
        except Exception as exc:  # a key must never take the app down
            self.app.supervisor.report(f"the {key!r} key", exc)

    def _handle(self, size: tuple[int, int], key: str) -> None:
        app = self.app
        now = app.clock()
        previous, self.last_key_at = self.last_key_at, now
        if not isinstance(key, str):
            return
        if self._pasting is None and self._unarmed(previous, now, key):
            self._to_prompt(size, key)
            self.diverted()
            return
        if self._paste(key):
            return
        cols = (size[0],)
        hit = app.keymap.get(key, self.contexts())
        if hit is not None and self.run(hit[1], size):
            return
        if app.modal is not None:
            app.modal.type_key(cols, key)
        else:
            app.editor.type_key(cols, key)

    def _unarmed(self, previous: float, now: float, key: str) -> bool:
        """True while an approval dialog must not take keys, so keys typed as part of a
        prompt never answer it, however long the pauses between them.  While the prompt
        holds text, only the switch key (``dialog-focus``, a key no prompt contains) gives
        the dialog the keys; with an empty prompt, the dialog takes them once it has been
        visible for ``app.approval_guard`` seconds with no key typed in that time."""
        app = self.app
        modal = app.modal
        if modal is None or modal.context != "approval" or getattr(modal, "armed", True):
            return False
        switch = app.keymap.get(key, ["approval"])
        take_keys = getattr(modal, "take_keys", None)
        if switch is not None and switch[1] == "dialog-focus" and take_keys is not None:
            take_keys()
            return False  # the switch key itself then does nothing more
        busy = bool(app.editor.text)
        quiet_since = max(getattr(modal, "opened_at", 0.0), previous)
        if not busy and now - quiet_since >= app.approval_guard:
            modal.armed = True
            return False
        return True

    def diverted(self, modal: Any = None) -> None:
        """Tell the approval dialog (``modal``, else the open one) that keys go to the
        prompt, and how it can be answered now."""
        app = self.app
        modal = modal if modal is not None else app.modal
        typed_ahead = getattr(modal, "typed_ahead", None)
        if typed_ahead is None:
            return
        switch = app.keymap.keys_for("dialog-focus", "approval")
        if switch and hasattr(modal, "switch_key"):
            modal.switch_key = switch[0]
        typed_ahead(bool(app.editor.text))

    def _to_prompt(self, size: tuple[int, int], key: str) -> None:
        """A key typed ahead of an approval: it goes where it was meant, the prompt (enter
        queues what was typed, a paste is inserted)."""
        app = self.app
        if self._paste(key):
            return
        cols = (size[0],)
        hit = app.keymap.get(key, ["prompt", "global"])
        command = hit[1] if hit is not None else None
        if command in EDIT_ACTIONS:
            app.editor.do(command, cols)
        elif command == "submit":
            self.submit()  # queued: a turn is running
        elif command is None:
            app.editor.type_key(cols, key)
        app.completion.update()

    def _paste(self, key: str) -> bool:
        """Bracketed paste: collect everything between the markers, insert it in one go."""
        app = self.app
        if key == "begin paste":
            if self._pasting is None:  # a second marker inside a paste starts nothing new
                self._pasting = []
            return True
        if self._pasting is None:
            return False
        if key == "end paste":
            text, self._pasting = "".join(self._pasting), None
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            if app.modal is not None and app.modal.context == "approval":
                app.editor.insert_paste(text)  # a paste never answers a dialog
            elif app.modal is not None:  # a one-line field: line breaks become spaces
                for ch in text.replace("\n", " "):
                    app.modal.type_key((app.size[0],), ch)
            elif text:
                app.editor.insert_paste(text)
                app.completion.update()
            return True
        if isinstance(key, Pasted):  # the whole paste, read as one key (agent.ui.paste)
            self._pasting.append(key)
            return True
        if key == "enter":
            self._pasting.append("\n")
        elif key == "tab":
            self._pasting.append("\t")
        elif len(key) == 1 or app.editor.valid_char(key):
            self._pasting.append(key)
        return True

    def run(self, command: str, size: tuple[int, int]) -> bool:
        """Run a bound command; False if it does not apply (the key falls through)."""
        app = self.app
        cols = (size[0],)
        if app.modal is not None and command in MODAL_ACTIONS:
            return app.modal.action(command, cols)
        if command in EDIT_ACTIONS:
            return app.editor.do(command, cols)
        if command.startswith("menu-"):
            return app.completion.action(command)
        handler = self.actions.get(command)
        if handler is not None:
            result = handler()
            return True if result is None else bool(result)
        if app.commands.get(command) is not None:
            app.submit("/" + command)
            return True
        return False

    # ---- actions ----

    def submit(self) -> None:
        editor = self.app.editor
        text = editor.text
        if text.endswith("\\") and not text.endswith("\\\\"):
            editor.set(text[:-1] + "\n")  # a trailing backslash continues the prompt
            return
        if not text.strip():
            return
        self.app.folded_pastes.extend(editor.folds.items)  # shown folded in the transcript
        text = editor.take()  # a folded paste goes whole
        editor.history.index = len(editor.history.items)
        self.app.submit(text)

    def complete(self) -> bool:
        completion = self.app.completion
        return completion.open and completion.action("menu-complete")

    def cancel(self) -> None:
        app = self.app
        if app.busy:
            app.abort_turn()
        elif app.dismiss_info():
            pass
        elif app.completion.open:
            app.completion.close(dismissed=True)

    def interrupt(self) -> None:
        """ctrl-c: clear what is typed; else stop the running command(s), the turn going on;
        else cancel the turn; else, on an idle empty prompt, quit when pressed twice."""
        app = self.app
        now = app.clock()
        last, self._last_ctrl_c = self._last_ctrl_c, 0.0
        if app.modal is None and app.editor.text:
            app.editor.set("")
            app.completion.close()
            return
        session = app.session
        running = session.running_calls() if session is not None else []
        if running:
            ids = session.interrupt_tools()
            names = app.view.running_commands(ids)
            app.add("notice", "interrupted: " + ", ".join(n for n in names if n))
            return
        if app.busy:
            app.abort_turn()
            return
        if last and now - last <= CTRL_C_AGAIN:
            app.quit()
            return
        self._last_ctrl_c = now
        app.add("info", QUIT_HINT)

    def toggle_reasoning(self) -> None:
        live = self.app.live
        live.reasoning_open = not live.reasoning_open
        live.refresh()

    def scroll(self, which: str) -> None:
        app = self.app
        panel = app.info_panel
        if panel is not None and app.modal is None and panel.fit.scrollable and which in (
                "scroll-up", "scroll-down"):
            panel.fit.scroll("page up" if which == "scroll-up" else "page down")
            return
        app.transcript.scroll(which)

    def redraw(self) -> None:
        if self.app.screen is not None:
            self.app.screen.clear()

    def suspend(self) -> None:
        # urwid's SIGTSTP handler restores the terminal, stops, and repaints on resume.
        if self.app.screen is not None and hasattr(signal, "SIGTSTP"):
            os.kill(os.getpid(), signal.SIGTSTP)
