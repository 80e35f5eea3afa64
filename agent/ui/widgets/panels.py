"""Panels above the prompt: info panels, pickers, text prompts and the ask panel.

A panel that takes keys (a *modal*) has ``context`` (the keymap context it answers to),
``action(name, size) -> bool`` for bound commands, ``type_key(size, key) -> bool`` for typing,
and ``future``, resolved with the user's choice (None when cancelled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import urwid

from agent.ui.widgets.lists import Item, SelectList


class FitBox(urwid.Widget):
    """A flow widget showing a flow widget up to ``max_rows()`` rows, scrollable.

    It counts the body's rows that have been on screen at the current width
    (:attr:`unseen`, :meth:`window`), so a dialog can refuse an answer about lines nobody
    was shown."""

    _sizing = frozenset([urwid.Sizing.FLOW])

    def __init__(self, body: urwid.Widget, max_rows: Callable[[], int]) -> None:
        super().__init__()
        self.body = body
        self.max_rows = max_rows
        self.listbox = urwid.ListBox(urwid.SimpleFocusListWalker([body]))
        self._last: tuple[int, int] = (0, 0)
        self.total = 0  # the body's rows at the last drawn width
        self._seen: set[int] = set()
        self._seen_width = 0

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return max(1, min(self.body.rows(size, False), self.max_rows()))

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        height = self.rows(size)
        self._last = (size[0], height)
        canvas = self.listbox.render(self._last, focus=False)
        top, _height, total = self.window(size[0])
        self._seen = self._seen_at(size[0], total)
        self._seen.update(range(top, min(total, top + height)))
        self._seen_width, self.total = size[0], total
        return canvas

    def window(self, width: int) -> tuple[int, int, int]:
        """(first row shown, rows shown, the body's rows) at ``width``, as it would be
        drawn now."""
        height = self.rows((width,))
        total = self.body.rows((width,), False)
        _offset, inset = self.listbox.get_focus_offset_inset((width, height))
        return max(0, inset), height, total

    def _seen_at(self, width: int, total: int) -> set[int]:
        # Re-wrapped rows are other rows: at another width what was seen counts again.
        return self._seen if (width, total) == (self._seen_width, self.total) else set()

    def unseen_at(self, width: int) -> int:
        """Rows of the body that will not have been on screen once it is drawn at
        ``width`` as it stands."""
        top, height, total = self.window(width)
        seen = self._seen_at(width, total) | set(range(top, min(total, top + height)))
        return total - len(seen)

    @property
    def unseen(self) -> int:
        """Rows of the body never drawn on screen at the last drawn width (all of them
        before the first draw)."""
        return self.total - len(self._seen) if self._seen_width else max(1, self.total)

    @property
    def scrollable(self) -> bool:
        return self._last != (0, 0) and self.body.rows((self._last[0],)) > self._last[1]

    def scroll(self, key: str) -> None:
        if self._last != (0, 0):
            self.listbox.keypress(self._last, key)
            self._invalidate()


DOUBLE = {"tlcorner": "╔", "tline": "═", "lline": "║", "trcorner": "╗", "blcorner": "╚",
          "rline": "║", "bline": "═", "brcorner": "╝"}


def boxed(body: urwid.Widget, title: str, style: str = "panel", footer: str = "") -> urwid.Widget:
    """A bordered panel; the ask panel gets a double border (it waits for an answer)."""
    parts: list[urwid.Widget] = [body]
    if footer:
        parts.append(urwid.Text(("menu-hint", footer)))
    lines = DOUBLE if style == "ask" else {}
    title_attr = style + "-title" if style in ("panel", "approval") else None
    box = urwid.LineBox(urwid.Pile(parts), title=title, title_align="left",
                        title_attr=title_attr, **lines)
    return urwid.AttrMap(box, style)


class InfoPanel(urwid.WidgetWrap):
    """A bordered panel with a title, a hint and a body (rendered like the transcript)."""

    context = None

    def __init__(self, title: str, body: urwid.Widget, hint: str = "",
                 max_rows: Callable[[], int] = lambda: 20) -> None:
        self.title = title
        self.fit = FitBox(body, max_rows)
        parts: list[urwid.Widget] = []
        if hint:
            parts.append(urwid.Text(("menu-hint", hint)))
        parts.append(self.fit)
        self.footer = urwid.Text(("menu-hint", "esc to dismiss"))
        box = urwid.LineBox(urwid.Pile([*parts, self.footer]), title=title, title_align="left",
                            title_attr="panel-title")
        super().__init__(urwid.AttrMap(box, "panel"))

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        inner = (max(1, size[0] - 2),)
        more = self.fit.body.rows(inner) > self.fit.max_rows()
        hint = "esc to dismiss" + ("  pgup/pgdn to scroll" if more else "")
        if self.footer.text != hint:
            self.footer.set_text(("menu-hint", hint))
        return super().render(size, focus)

    def selectable(self) -> bool:
        return False


class Modal(urwid.WidgetWrap):
    """Base for panels that take keys; :meth:`wait` returns what :meth:`resolve` was given."""

    context = "picker"

    def __init__(self, widget: urwid.Widget) -> None:
        super().__init__(widget)
        self.done = False
        self.result: Any = None
        self.on_done: Callable[[Modal], None] | None = None
        self._future: asyncio.Future[Any] | None = None

    def resolve(self, value: Any) -> None:
        if self.done:
            return
        self.done, self.result = True, value
        if self._future is not None and not self._future.done():
            self._future.set_result(value)
        if self.on_done is not None:
            self.on_done(self)

    async def wait(self) -> Any:
        if self.done:
            return self.result
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return await self._future

    def action(self, name: str, size: tuple[int]) -> bool:
        return False

    def type_key(self, size: tuple[int], key: str) -> bool:
        return False

    def selectable(self) -> bool:
        return False


def line_edit_key(edit: urwid.Edit, key: str) -> bool:
    """The line-editing keys every shell field has, which urwid's ``Edit`` lacks: ctrl-u
    deletes to the start, ctrl-k to the end, ctrl-w the word before the cursor, ctrl-a and
    ctrl-e move to the start and the end.  True when ``key`` was one of them."""
    text, pos = edit.edit_text, edit.edit_pos
    if key == "ctrl u":
        edit.set_edit_text(text[pos:])
        edit.set_edit_pos(0)
    elif key == "ctrl k":
        edit.set_edit_text(text[:pos])
    elif key == "ctrl w":
        start = len(text[:pos].rstrip())
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        edit.set_edit_text(text[:start] + text[pos:])
        edit.set_edit_pos(start)
    elif key == "ctrl a":
        edit.set_edit_pos(0)
    elif key == "ctrl e":
        edit.set_edit_pos(len(text))
    else:
        return False
    return True


class TextPrompt(Modal):
    """One line of text (masked for keys); enter accepts, esc cancels.  ``validate(text)``
    returns what is wrong with the text (None: nothing): it is checked as the user types,
    shown under the field, and enter is refused while there is a problem."""

    def __init__(self, title: str, hint: str = "", *, mask: bool = False, default: str = "",
                 style: str = "panel",
                 validate: Callable[[str], str | None] | None = None) -> None:
        self.edit = urwid.Edit(("caption", "> "), default, mask="*" if mask else None)
        self.validate = validate
        self.problem = urwid.Text("")
        parts: list[urwid.Widget] = []
        if hint:
            parts.append(urwid.Text(("menu-hint", hint)))
        parts.append(self.edit)
        if validate is not None:
            parts.append(self.problem)
        super().__init__(boxed(urwid.Pile(parts), title, style, "enter to accept, esc to cancel"))
        self._check(quiet=True)

    def _check(self, quiet: bool = False) -> str | None:
        if self.validate is None:
            return None
        problem = self.validate(self.edit.edit_text)
        if problem:
            self.problem.set_text("" if quiet else ("error", "x " + problem))
        else:
            self.problem.set_text(("dim", "ok") if self.edit.edit_text else "")
        return problem

    def action(self, name: str, size: tuple[int]) -> bool:
        if name == "pick-accept":
            if self._check() is None:
                self.resolve(self.edit.edit_text)
            return True
        if name == "pick-cancel":
            self.resolve(None)
            return True
        return False

    def type_key(self, size: tuple[int], key: str) -> bool:
        handled = line_edit_key(self.edit, key) or \
            self.edit.keypress((max(1, size[0] - 4),), key) is None
        self._check()
        return handled

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        return super().render(size, focus=True)  # the cursor belongs to the edit


class Picker(Modal):
    """A list to choose from; with ``multiple`` a checkbox list plus a submit entry; with
    ``free_text`` an extra entry that switches to typing an answer."""

    def __init__(self, title: str, items: list[Item], *, hint: str = "",
                 index: int = 0, max_rows: int = 10, multiple: bool = False,
                 free_text: str | None = None, style: str = "panel",
                 footer: str = "enter to select, esc to cancel", body: urwid.Widget | None = None,
                 filterable: bool = False) -> None:
        self.multiple = multiple
        self.free_text = free_text
        #: typing narrows the list to the entries whose text has every typed word
        self.filterable = filterable
        self.query = ""
        self._filter_line = urwid.Text("")
        items = list(items)
        if multiple:
            for item in items:
                item.checked = bool(item.checked)
        if free_text:
            items.append(Item(free_text, _FREE))
        if multiple:
            items.append(Item("-- submit --", _SUBMIT))
        self.list = SelectList(items, max_rows=max_rows, index=index, empty="nothing matches")
        self.all_items = list(items)
        self.edit: urwid.Edit | None = None
        if filterable:
            footer = "type to filter, " + footer
        self._pile = urwid.Pile(([body] if body is not None else [])
                                + ([urwid.Text(("menu-hint", hint))] if hint else [])
                                + ([self._filter_line] if filterable else [])
                                + [self.list])
        self._show_query()
        super().__init__(boxed(self._pile, title, style, footer))
        self._update_submit()

    def _update_submit(self) -> None:
        if not self.multiple:
            return
        n = sum(1 for i in self.list.items if i.checked)
        for item in self.list.items:
            if item.value is _SUBMIT:
                item.label = f"-- submit {n} --"
        self.list._refresh()

    def action(self, name: str, size: tuple[int]) -> bool:
        if self.edit is not None:  # typing a free-text answer
            if name == "pick-accept":
                self.resolve(self.edit.edit_text)
                return True
            if name == "pick-cancel":
                self._pile.contents.pop()
                self.edit = None
                return True
            return False
        if name in ("pick-up", "pick-down"):
            self.list.move(-1 if name == "pick-up" else 1)
            return True
        if name == "pick-cancel":
            self.resolve(None)
            return True
        item = self.list.current
        if name == "pick-toggle":
            if not self.multiple or item is None or item.checked is None:
                return False
            self.list.toggle()
            self._update_submit()
            return True
        if name == "pick-accept" and item is not None:
            if item.value is _FREE:
                self.edit = urwid.Edit(("caption", "> "))
                self._pile.contents.append((self.edit, ("pack", None)))
                self._pile.focus_position = len(self._pile.contents) - 1
            elif item.value is _SUBMIT:
                self.resolve([i.value for i in self.list.items if i.checked])
            elif self.multiple:
                self.list.toggle()
                self._update_submit()
            else:
                self.resolve(item.value)
            return True
        return False

    def type_key(self, size: tuple[int], key: str) -> bool:
        if self.edit is None:
            return self._filter_key(key)
        return line_edit_key(self.edit, key) or \
            self.edit.keypress((max(1, size[0] - 4),), key) is None

    def _filter_key(self, key: str) -> bool:
        if not self.filterable:
            return False
        if key == "backspace":
            query = self.query[:-1]
        elif key in ("ctrl u", "ctrl w"):
            query = ""
        elif len(key) == 1 and key.isprintable():
            query = self.query + key
        else:
            return False
        self.query = query
        words = query.lower().split()
        shown = [i for i in self.all_items
                 if i.value in (_FREE, _SUBMIT) or all(w in _text_of(i) for w in words)]
        self.list.set_items(shown)
        self._show_query()
        return True

    def _show_query(self) -> None:
        if self.filterable:
            shown = len([i for i in self.list.items if i.value not in (_FREE, _SUBMIT)])
            total = len([i for i in self.all_items if i.value not in (_FREE, _SUBMIT)])
            self._filter_line.set_text([("caption", "filter> "), self.query,
                                        ("menu-hint", f"   {shown} of {total}")])

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        return super().render(size, focus=self.edit is not None)


def _text_of(item: Item) -> str:
    from agent.ui.widgets.lists import _flatten

    return f"{_flatten(item.label)} {item.hint} {item.detail}".lower()


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_FREE = _Marker("free-text")
_SUBMIT = _Marker("submit")
