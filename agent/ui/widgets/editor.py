"""The prompt editor: multi-line input with history, readline-style keys and bracketed paste.

It is an ``urwid.Edit`` whose key handling is driven by named actions (the keymap decides
which key means what); urwid places the terminal's cursor, which keeps wide characters and
input methods right.  A bracketed paste is collected and inserted in one piece: its line
breaks never submit.
"""

from __future__ import annotations

from collections.abc import Callable

import urwid
from urwid.command_map import Command

from agent.ui.paste import Folds, Pasted, should_fold

# Action name -> the urwid editing command that implements it.
_EDIT_COMMANDS: dict[str, Command] = {
    "cursor-left": Command.LEFT,
    "cursor-right": Command.RIGHT,
    "cursor-up": Command.UP,
    "cursor-down": Command.DOWN,
    "word-left": Command.WORD_LEFT,
    "word-right": Command.WORD_RIGHT,
    "line-start": Command.LINE_START,
    "line-end": Command.LINE_END,
    "kill-to-end": Command.DELETE_TO_LINE_END,
    "kill-to-start": Command.DELETE_TO_LINE_START,
    "delete-word-back": Command.DELETE_WORD_LEFT,
    "delete-char": Command.DELETE_RIGHT,
    "undo": Command.UNDO,
}

ACTIONS = frozenset(_EDIT_COMMANDS) | {"delete-back", "newline", "history-prev", "history-next"}


def _command_map() -> urwid.CommandMap:
    cmap = urwid.CommandMap()
    for key in list(cmap):
        del cmap[key]
    for action, command in _EDIT_COMMANDS.items():
        cmap["<" + action + ">"] = command
    return cmap


class History:
    """Prompts of this directory, oldest first, with a cursor for up/down recall."""

    def __init__(self, items: list[str] | None = None,
                 save: Callable[[str], None] | None = None) -> None:
        self.items = list(items or [])
        self.index = len(self.items)
        self.draft = ""
        self._save = save

    def add(self, text: str) -> None:
        if text.strip() and (not self.items or self.items[-1] != text):
            self.items.append(text)
            if self._save is not None:
                self._save(text)
        self.index = len(self.items)
        self.draft = ""


class PromptEditor(urwid.Edit):
    """The input line.  ``on_change`` runs after every edit (menus follow the text)."""

    def __init__(self, caption: str = "> ", placeholder: str = "",
                 history: History | None = None) -> None:
        super().__init__(("caption", caption), "", multiline=True, wrap="any",
                         placeholder=("placeholder", placeholder), placeholder_grow=False,
                         undo_limit=200)
        self._command_map = _command_map()
        self.history = history or History()
        self.pasting = False
        self._paste: list[str] = []
        self.folds = Folds()
        self.on_change: Callable[[], None] | None = None

    # ---- text ----

    @property
    def text(self) -> str:
        return self.edit_text

    def set(self, text: str, cursor: int | None = None) -> None:
        self.set_edit_text(text)
        self.set_edit_pos(len(text) if cursor is None else cursor)
        self._changed()

    def set_placeholder(self, text: str) -> None:
        if self.placeholder != ("placeholder", text):
            self.placeholder = ("placeholder", text)

    def take(self) -> str:
        """Return the text, folded pastes put back whole, and clear the editor (submit)."""
        text = self.folds.expand(self.edit_text)
        self.folds.clear()
        self.set("")
        return text

    def insert_paste(self, text: str) -> None:
        """Insert a pasted text; a large one is folded: its label goes in, the text is kept
        beside it until the prompt is submitted (laying out a megabyte in the prompt took
        seconds per key)."""
        if should_fold(text):
            self.insert_text(self.folds.add(text))
        else:
            self.insert_text(text)

    def unfold(self) -> bool:
        """Put every folded paste's text in the prompt in place of its label; False when
        there is none."""
        if not any(label in self.edit_text for label, _ in self.folds.items):
            return False
        pos = self.edit_pos
        before = self.folds.expand(self.edit_text[:pos])
        text = self.folds.expand(self.edit_text)
        self.folds.clear()
        self.set(text, len(before))
        return True

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # ---- paste ----

    def paste_key(self, key: str) -> bool:
        """Handle ``begin paste``/``end paste`` and the keys between; True if consumed."""
        if key == "begin paste":
            self.pasting, self._paste = True, []
            return True
        if key == "end paste":
            self.pasting = False
            text, self._paste = "".join(self._paste), []
            if text:
                self.insert_paste(text.replace("\r\n", "\n").replace("\r", "\n"))
                self._changed()
            return True
        if not self.pasting:
            return False
        if isinstance(key, Pasted):
            self._paste.append(key)
        elif key == "enter":
            self._paste.append("\n")
        elif key == "tab":
            self._paste.append("\t")
        elif len(key) == 1 or (isinstance(key, str) and self.valid_char(key)):
            self._paste.append(key)
        # other named keys inside a paste (arrows, function keys) are dropped
        return True

    # ---- actions ----

    def do(self, action: str, size: tuple[int]) -> bool:
        """Run an editing action; False when it does not apply (e.g. left at the start)."""
        if action == "newline":
            self.insert_text("\n")
        elif action == "delete-back":
            if super().keypress(size, "backspace") is not None:
                return False
        elif action == "history-prev":
            if super().keypress(size, "<cursor-up>") is None:
                return True
            return self._recall(-1)
        elif action == "history-next":
            if super().keypress(size, "<cursor-down>") is None:
                return True
            return self._recall(+1)
        elif action in _EDIT_COMMANDS:
            if super().keypress(size, "<" + action + ">") is not None:
                return False
        else:
            return False
        self._changed()
        return True

    def type_key(self, size: tuple[int], key: str) -> bool:
        """Insert a printable key; False for anything else."""
        if not self.valid_char(key):
            return False
        super().keypress(size, key)
        self._changed()
        return True

    def _recall(self, step: int) -> bool:
        h = self.history
        if step < 0:
            if h.index == 0 or not h.items:
                return False
            if h.index == len(h.items):
                h.draft = self.edit_text
            h.index -= 1
            self.set(h.items[h.index])
            return True
        if h.index >= len(h.items):
            return False
        h.index += 1
        self.set(h.items[h.index] if h.index < len(h.items) else h.draft)
        return True

    def keypress(self, size: tuple[int], key: str) -> str | None:  # type: ignore[override]
        # Keys reach the editor through the app's keymap; direct callers (tests) get typing.
        if self.paste_key(key) or self.type_key(size, key):
            return None
        return key
