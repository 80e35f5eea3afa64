"""Key bindings as data: every key is bound to a named command.

A :class:`Keymap` maps ``(context, key)`` to a command name.  Commands are the UI actions in
:data:`ACTIONS` or slash command names (``tools`` runs ``/tools``).  Defaults come from
:mod:`agent.ui.defaultkeys`, then plugins (``agent_register_keys``), then the user's
``[keys]`` table in ``config.toml``, which wins::

    [keys]
    "ctrl t" = "toggle-reasoning"   # a global binding
    "f2" = "tools"                  # runs /tools
    "ctrl l" = ""                   # unbind
    [keys.prompt]
    "ctrl b" = "cursor-left"

``python -m agent.ui.keymap`` prints ``docs/keybindings.md``; a test keeps it in sync.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.ui.defaultkeys import DEFAULT_KEYS

CONTEXTS: dict[str, str] = {
    "global": "anywhere, unless a dialog claims the key",
    "prompt": "the input line",
    "menu": "while the `/` command menu or the `@` file picker is open (before `prompt`)",
    "approval": "the approval dialog",
    "picker": "pickers, text prompts, the ask panel and the provider setup",
}

#: Every UI action a key can be bound to, with the line shown in the docs and ``/help``.
ACTIONS: dict[str, str] = {
    "cancel": "abort the running turn and clear the queue; otherwise close the open panel",
    "interrupt": "clear the prompt; else kill the running command(s), keeping the turn; "
                 "else cancel the turn; on an idle empty prompt, press twice to quit",
    "cycle-mode": "cycle the permission mode: default, accept-edits, plan",
    "toggle-reasoning": "expand or collapse the model's reasoning while it thinks",
    "toggle-folds": "expand or fold the transcript's folded blocks (past reasoning, applied "
                    "diffs); with a folded paste in the prompt, put its text there",
    "scroll-up": "scroll the transcript up a page",
    "scroll-down": "scroll the transcript down a page",
    "scroll-line-up": "scroll the transcript up a line",
    "scroll-line-down": "scroll the transcript down a line",
    "scroll-top": "jump to the start of the transcript",
    "scroll-bottom": "jump to the end of the transcript and follow new output",
    "redraw": "repaint the whole screen",
    "suspend": "suspend agent (resume with fg)",
    "quit": "quit agent",
    "submit": "send the prompt (queued while a turn runs)",
    "newline": "insert a line break (a trailing \\ before enter does the same)",
    "complete": "complete the `/` command or `@` path",
    "history-prev": "previous prompt from this directory's history (or line up)",
    "history-next": "next prompt from history; past the newest restores the draft",
    "cursor-left": "move left",
    "cursor-right": "move right",
    "word-left": "move to the previous word",
    "word-right": "move past the next word",
    "line-start": "move to the start of the line",
    "line-end": "move to the end of the line",
    "kill-to-end": "delete to the end of the line",
    "kill-to-start": "delete to the start of the line",
    "delete-word-back": "delete the previous word",
    "delete-char": "delete the character under the cursor",
    "delete-back": "delete the character before the cursor",
    "undo": "undo the last edit of the prompt",
    "menu-up": "previous entry (wraps)",
    "menu-down": "next entry (wraps)",
    "menu-complete": "complete the highlighted entry into the prompt",
    "menu-accept": "run the highlighted command / insert the highlighted path",
    "menu-dismiss": "close the menu",
    "approve": "allow this call once",
    "approve-always": "allow this call and similar ones for the rest of the session",
    "deny": "deny this call (the model is told)",
    "dialog-focus": "give the approval dialog the keys while the prompt holds text (until "
                    "then they go to the prompt)",
    "hunk-next": "select the next hunk of the diff",
    "hunk-prev": "select the previous hunk of the diff",
    "hunk-toggle": "reject (or re-accept) the selected hunk; the rest is applied",
    "dialog-scroll-up": "scroll the diff up",
    "dialog-scroll-down": "scroll the diff down",
    "pick-up": "previous entry (wraps)",
    "pick-down": "next entry (wraps)",
    "pick-accept": "choose the highlighted entry (or submit the typed text)",
    "pick-toggle": "tick or untick the entry (multi-select)",
    "pick-cancel": "cancel",
}


#: Friendlier names accepted for keys urwid names otherwise.
KEY_ALIASES = {"space": " ", "return": "enter", "escape": "esc", "del": "delete"}


def normalize(key: str) -> str:
    """urwid's name for a key (``space`` is ``" "`` to urwid)."""
    return KEY_ALIASES.get(key.strip().lower(), key) if key.strip() else key


def shown(key: str) -> str:
    """A key as written in docs and help."""
    return "space" if key == " " else key


@dataclass(frozen=True)
class Binding:
    context: str
    key: str
    command: str


class Keymap:
    """``(context, key) -> command``; later bindings replace earlier ones."""

    def __init__(self, defaults: Iterable[tuple[str, str, str]] = DEFAULT_KEYS) -> None:
        self._map: dict[tuple[str, str], str] = {}
        self.problems: list[str] = []
        for context, key, command in defaults:
            self.bind(key, command, context=context)

    def bind(self, key: str, command: str, help: str = "", *, context: str = "global") -> None:
        """Bind ``key`` to ``command`` (``help`` is accepted for plugin convenience)."""
        if context not in CONTEXTS:
            self.problems.append(f'keys: unknown context "{context}" for {key!r}')
            return
        key = normalize(key)
        if not command:
            self._map.pop((context, key), None)
            return
        self._map[(context, key)] = command

    def unbind(self, key: str, *, context: str = "global") -> None:
        self._map.pop((context, normalize(key)), None)

    def get(self, key: str, contexts: Iterable[str]) -> tuple[str, str] | None:
        """The first ``(context, command)`` bound to ``key`` in ``contexts`` order."""
        for context in contexts:
            command = self._map.get((context, key))
            if command:
                return context, command
        return None

    def keys_for(self, command: str, context: str | None = None) -> list[str]:
        return [k for (c, k), cmd in self._map.items()
                if cmd == command and (context is None or c == context)]

    def bindings(self) -> list[Binding]:
        order = list(CONTEXTS)
        return sorted((Binding(c, k, cmd) for (c, k), cmd in self._map.items()),
                      key=lambda b: (order.index(b.context), b.command, b.key))

    def apply_overrides(self, table: Mapping[str, Any], known: Iterable[str] = ()) -> None:
        """Apply the user's ``[keys]`` table; problems are collected, never raised."""
        valid = set(ACTIONS) | {k.lstrip("/") for k in known}
        for key, value in table.items():
            if isinstance(value, Mapping):
                if key not in CONTEXTS:
                    self.problems.append(f'keys: unknown context "{key}"')
                    continue
                for sub_key, command in value.items():
                    self._override(str(sub_key), command, key, valid)
            else:
                self._override(str(key), value, "global", valid)

    def _override(self, key: str, command: Any, context: str, valid: set[str]) -> None:
        if not isinstance(command, str):
            self.problems.append(f"keys: {key!r} must name a command, got {command!r}")
            return
        command = command.strip().lstrip("/")
        if command and command not in valid:
            self.problems.append(f'keys: {key!r} is bound to unknown command "{command}"')
            return
        self.bind(key, command, context=context)


def markdown(keymap: Keymap | None = None) -> str:
    """``docs/keybindings.md``: every binding by context, with what its command does."""
    keymap = keymap or Keymap()
    lines = [
        "# Key bindings",
        "",
        "Generated from `agent/ui/defaultkeys.py` by `python -m agent.ui.keymap`; "
        "a test checks that",
        "this file matches. Every key is bound to a named command; change bindings in "
        "`config.toml`:",
        "",
        "```toml",
        "[keys]",
        '"ctrl t" = "toggle-reasoning"   # a global binding',
        '"f2" = "tools"                  # a slash command: runs /tools',
        '"ctrl l" = ""                   # unbind',
        "[keys.prompt]",
        '"ctrl b" = "cursor-left"',
        "```",
        "",
        "Plugins add defaults through the `agent_register_keys(keymap)` hook; the user's table "
        "wins.",
        "A pasted text (bracketed paste) is inserted as it is: its line breaks never submit. "
        "A paste of 2,000 characters or 25 lines and more is shown folded, "
        "`[pasted 1,000,030 chars]`, and sent whole; `toggle-folds` (ctrl o) puts its text "
        "in the prompt.",
        "",
    ]
    by_context: dict[str, list[Binding]] = {}
    for binding in keymap.bindings():
        by_context.setdefault(binding.context, []).append(binding)
    for context, description in CONTEXTS.items():
        entries = by_context.get(context, [])
        if not entries:
            continue
        lines += [f"## {context}", "", f"{description[0].upper()}{description[1:]}.", "",
                  "| keys | command | what it does |", "|---|---|---|"]
        grouped: dict[str, list[str]] = {}
        for b in entries:
            grouped.setdefault(b.command, []).append(b.key)
        for command, keys in grouped.items():
            names = ", ".join(f"`{shown(k)}`" for k in keys)
            what = ACTIONS.get(command, f"runs `/{command}`").replace("|", "\\|")
            lines.append(f"| {names} | `{command}` | {what} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(markdown())
