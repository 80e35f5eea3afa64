"""A list with a highlighted entry: the ``/`` menu, the ``@`` picker and every picker.

Only ``max_rows`` entries are drawn, in a window that follows the highlight; up and down wrap.
Entries are ``Item(label, value, hint, detail)``: the label is markup, the hint is dim text
after it, the detail is shown under the list while the entry is highlighted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import urwid


@dataclass
class Item:
    label: Any
    value: Any = None
    hint: str = ""
    detail: str = ""
    checked: bool | None = None  # None: not a checkbox entry
    data: dict[str, Any] = field(default_factory=dict)


class SelectList(urwid.WidgetWrap):
    """``items`` with ``index`` highlighted; ``move(step)`` wraps around."""

    def __init__(self, items: list[Item] | None = None, *, max_rows: int = 8,
                 index: int = 0, label_width: int = 0, empty: str = "") -> None:
        self.items: list[Item] = list(items or [])
        self.max_rows = max_rows
        self.index = max(0, min(index, len(self.items) - 1)) if self.items else 0
        self.label_width = label_width
        self.empty = empty
        self._text = urwid.Text("")
        super().__init__(self._text)
        self._refresh()

    def set_items(self, items: list[Item], index: int = 0) -> None:
        self.items = list(items)
        self.index = max(0, min(index, len(self.items) - 1)) if self.items else 0
        self._refresh()

    @property
    def current(self) -> Item | None:
        return self.items[self.index] if self.items else None

    def move(self, step: int) -> None:
        if self.items:
            self.index = (self.index + step) % len(self.items)
            self._refresh()

    def toggle(self) -> bool:
        item = self.current
        if item is None or item.checked is None:
            return False
        item.checked = not item.checked
        self._refresh()
        return True

    def _window(self) -> range:
        n = len(self.items)
        if n <= self.max_rows:
            return range(n)
        start = min(max(0, self.index - self.max_rows // 2), n - self.max_rows)
        return range(start, start + self.max_rows)

    def _refresh(self) -> None:
        if not self.items:
            self._text.set_text(("menu-hint", self.empty) if self.empty else "")
            return
        markup: list[Any] = []
        window = self._window()
        if window.start > 0:
            markup.append(("menu-hint", f"  ... {window.start} more above\n"))
        for i in window:
            item = self.items[i]
            focused = i == self.index
            box = "" if item.checked is None else ("[x] " if item.checked else "[ ] ")
            label = item.label if isinstance(item.label, str) else _flatten(item.label)
            if self.label_width:
                label = label.ljust(self.label_width)
            line = f"{'>' if focused else ' '} {box}{label}"
            markup.append(("menu-focus" if focused else "menu", line))
            if item.hint:
                markup.append(("menu-hint", "  " + item.hint))
            markup.append("\n")
        hidden = len(self.items) - window.stop
        if hidden > 0:
            markup.append(("menu-hint", f"  ... {hidden} more below\n"))
        detail = self.current.detail if self.current else ""
        if detail:
            markup.append(("menu-hint", "    " + detail + "\n"))
        if markup and markup[-1] == "\n":
            markup.pop()
        elif markup and isinstance(markup[-1], tuple) and markup[-1][1].endswith("\n"):
            markup[-1] = (markup[-1][0], markup[-1][1][:-1])
        self._text.set_text(markup)

    def selectable(self) -> bool:
        return False


def _flatten(markup: Any) -> str:
    if isinstance(markup, str):
        return markup
    if isinstance(markup, tuple):
        return _flatten(markup[1])
    if isinstance(markup, list):
        return "".join(_flatten(m) for m in markup)
    return str(markup)
