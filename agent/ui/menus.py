"""The ``/`` command menu and the ``@`` file picker, following the text being typed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import urwid

from agent.ui.widgets.lists import Item, SelectList

if TYPE_CHECKING:
    from agent.ui.app import App


class Completion:
    """Opens, narrows and closes the menus as the prompt changes."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.kind: str | None = None  # "command" | "file" | None
        self.list = SelectList(max_rows=8)
        self.hint = urwid.Text("")
        self.widget = urwid.Pile([self.list, self.hint])
        self.token: tuple[int, str] | None = None  # (start, query) of an @ token
        self._dismissed_text: str | None = None
        self._files: Any = None

    @property
    def open(self) -> bool:
        return self.kind is not None

    def close(self, dismissed: bool = False) -> None:
        if dismissed:
            self._dismissed_text = self.app.editor.text
        if self.kind is not None:
            self.kind = None
            self.app.refresh_slot()

    def update(self) -> None:
        """Recompute the menu for the editor's text and cursor."""
        app = self.app
        text, pos = app.editor.text, app.editor.edit_pos
        if app.modal is not None or app.busy or text == self._dismissed_text:
            self.close()
            return
        self._dismissed_text = None
        if text.startswith("/") and not any(c.isspace() for c in text):
            self._commands(text[1:])
            return
        from agent.ui.files import at_token

        token = at_token(text, pos)
        if token is not None:
            self._file_picker(token)
            return
        self.close()

    # ---- the / menu ----

    def _commands(self, prefix: str) -> None:
        if self.kind != "command":  # the menu opens: commands added since are listed too
            self.app.refresh_commands()
        commands = self.app.commands.matching(prefix)
        if not commands:
            self.close()
            return
        items = []
        for cmd in commands:
            label = f"/{cmd.name}" + (f" {cmd.args}" if cmd.args else "")
            items.append(Item(label.ljust(22), cmd, cmd.summary))
        was_open = self.kind == "command"
        old = self.list.current.value.name if was_open and self.list.current else None
        index = next((i for i, it in enumerate(items) if it.value.name == old), 0)
        self.list.set_items(items, index if was_open else 0)
        self.hint.set_text(("menu-hint", "tab completes, enter runs, esc dismisses"))
        self._show("command")

    # ---- the @ picker ----

    def _file_picker(self, token: tuple[int, str]) -> None:
        from agent.ui.files import FileIndex, rank

        self.token = token
        if self._files is None:
            self._files = FileIndex(self.app.workspace)
        index = self._files
        index.refresh(on_ready=self._index_ready)
        query = token[1]
        if not index.ready:
            self.list.set_items([])
            self.list.empty = "indexing files..."
            self.list._refresh()
        else:
            files = [Item(p, p) for p in rank(index.paths, query)]
            mentioned = self._mention_items(query)
            # "server:..." is a mention being typed: its matches first.
            items = mentioned + files if ":" in query else files + mentioned
            self.list.empty = f"no file matches {query}"
            self.list.set_items(items)
        self.hint.set_text(("menu-hint", "tab or enter inserts the path, esc dismisses"))
        self._show("file")

    def _mention_items(self, query: str) -> list[Item]:
        """What the plugins' mention sources (MCP resources as ``server:uri``) offer for
        ``query``, ranked like paths; the inserted value keeps its ``@``."""
        from agent.ui.files import rank

        labels: dict[str, str] = {}
        for source in getattr(self.app, "mentions", None) or ():
            try:
                for entry in source.entries():
                    labels.setdefault(entry.token, entry.label)
            except Exception as exc:  # noqa: BLE001 - a broken source loses its entries only
                self.app.supervisor.report(f"the {source.name} mentions", exc)
        return [Item(f"@{token}", f"@{token}", labels[token])
                for token in rank(list(labels), query)]

    def _index_ready(self) -> None:
        if self.kind == "file":
            self.update()
            self.app.redraw.request()

    def _show(self, kind: str) -> None:
        changed = self.kind != kind
        self.kind = kind
        if changed:
            self.app.refresh_slot()

    # ---- actions ----

    def action(self, name: str) -> bool:
        if not self.open:
            return False
        if name in ("menu-up", "menu-down"):
            self.list.move(-1 if name == "menu-up" else 1)
            return True
        if name == "menu-dismiss":
            self.close(dismissed=True)
            return True
        item = self.list.current
        if name in ("menu-complete", "menu-accept"):
            if item is None:
                if self.kind == "file":  # nothing to insert; let enter submit
                    return name == "menu-complete"
                return False
            if self.kind == "command":
                cmd = item.value
                if name == "menu-complete":
                    self.app.editor.set(f"/{cmd.name}" + (" " if cmd.takes_args else ""))
                    return True
                self.app.editor.set("")
                self.close()
                self.app.submit(f"/{cmd.name}")
                return True
            self._insert_path(item.value)
            return True
        return False

    def _insert_path(self, path: str) -> None:
        assert self.token is not None
        editor = self.app.editor
        start = self.token[0]
        text, pos = editor.text, editor.edit_pos
        new = text[:start] + path + " " + text[pos:]
        editor.set(new, start + len(path) + 1)
        self.close()
