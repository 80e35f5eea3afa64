"""The default key bindings, as data: (context, key, command).

Contexts are searched from the most specific open one outwards: an open approval dialog or
picker sees only its own bindings; with the ``/`` menu or the ``@`` file picker open, ``menu``
comes first, then ``prompt``, then ``global``.  A command is a UI action (see
:data:`agent.ui.keymap.ACTIONS`) or a slash command name.  ``docs/keybindings.md`` is
generated from this table (``python -m agent.ui.keymap``).
"""

from __future__ import annotations

DEFAULT_KEYS: tuple[tuple[str, str, str], ...] = (
    # global: work whatever has the focus (unless a modal claims the key)
    ("global", "esc", "cancel"),
    ("global", "ctrl c", "interrupt"),
    ("global", "ctrl r", "toggle-reasoning"),
    ("global", "ctrl o", "toggle-folds"),
    ("global", "page up", "scroll-up"),
    ("global", "page down", "scroll-down"),
    ("global", "meta up", "scroll-line-up"),
    ("global", "meta down", "scroll-line-down"),
    ("global", "ctrl home", "scroll-top"),
    ("global", "ctrl end", "scroll-bottom"),
    ("global", "meta <", "scroll-top"),
    ("global", "meta >", "scroll-bottom"),
    # the mouse wheel in alternate scroll mode (a burst of arrows in one read, see screen.py)
    ("global", "wheel up", "scroll-line-up"),
    ("global", "wheel down", "scroll-line-down"),
    ("global", "ctrl l", "redraw"),
    ("global", "ctrl z", "suspend"),
    # prompt: the input line
    ("prompt", "enter", "submit"),
    ("prompt", "shift tab", "cycle-mode"),
    ("prompt", "meta enter", "newline"),
    ("prompt", "tab", "complete"),
    ("prompt", "up", "history-prev"),
    ("prompt", "down", "history-next"),
    ("prompt", "left", "cursor-left"),
    ("prompt", "right", "cursor-right"),
    ("prompt", "ctrl left", "word-left"),
    ("prompt", "meta left", "word-left"),
    ("prompt", "meta b", "word-left"),
    ("prompt", "ctrl right", "word-right"),
    ("prompt", "meta right", "word-right"),
    ("prompt", "meta f", "word-right"),
    ("prompt", "home", "line-start"),
    ("prompt", "ctrl a", "line-start"),
    ("prompt", "end", "line-end"),
    ("prompt", "ctrl e", "line-end"),
    ("prompt", "ctrl k", "kill-to-end"),
    ("prompt", "ctrl u", "kill-to-start"),
    ("prompt", "ctrl w", "delete-word-back"),
    ("prompt", "meta backspace", "delete-word-back"),
    ("prompt", "ctrl d", "delete-char"),
    ("prompt", "delete", "delete-char"),
    ("prompt", "backspace", "delete-back"),
    ("prompt", "ctrl _", "undo"),
    # menu: the / command menu and the @ file picker, while open
    ("menu", "up", "menu-up"),
    ("menu", "down", "menu-down"),
    ("menu", "tab", "menu-complete"),
    ("menu", "enter", "menu-accept"),
    ("menu", "esc", "menu-dismiss"),
    # approval: the approval dialog
    ("approval", "ctrl t", "dialog-focus"),
    ("approval", "y", "approve"),
    ("approval", "enter", "approve"),
    ("approval", "a", "approve-always"),
    ("approval", "n", "deny"),
    ("approval", "esc", "deny"),
    ("approval", "down", "hunk-next"),
    ("approval", "j", "hunk-next"),
    ("approval", "up", "hunk-prev"),
    ("approval", "k", "hunk-prev"),
    ("approval", "space", "hunk-toggle"),
    ("approval", "page up", "dialog-scroll-up"),
    ("approval", "page down", "dialog-scroll-down"),
    # picker: list pickers, text prompts, the ask panel and onboarding
    ("picker", "up", "pick-up"),
    ("picker", "down", "pick-down"),
    ("picker", "enter", "pick-accept"),
    ("picker", "space", "pick-toggle"),
    ("picker", "esc", "pick-cancel"),
)
