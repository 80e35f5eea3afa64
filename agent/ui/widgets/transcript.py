"""The transcript: a scrolling list of rendered blocks that follows new output.

Each block is rendered once into a widget and kept; only a block that changes (the streaming
answer, a tool line getting its outcome) is rendered again, on :meth:`Transcript.update`.
The list box draws only the visible rows, so a transcript of 10,000 lines costs the same per
frame as a short one.  While following, the bottom of the last block is kept in view; a
scroll up stops following until the user comes back to the end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import urwid

from agent.contract.blocks import Block

log = logging.getLogger("agent.ui")


class Spaced(urwid.Widget):
    """A blank row above ``body``: a cheaper ``Pile([Divider(), body])``, built again on every
    frame for the streaming block (urwid's containers check each child against a runtime
    Protocol when built, which costs more than drawing the row)."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    ignore_focus = True

    def __init__(self, body: urwid.Widget) -> None:
        super().__init__()
        self.body = body

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return int(self.body.rows(size)) + 1

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        canvas = urwid.CompositeCanvas(self.body.render(size))
        canvas.pad_trim_top_bottom(1, 0)
        return canvas


#: the key that expands folded blocks, named on their line (the app sets it from the keymap)
FOLD_KEY = ["ctrl o"]


def folded(block: Block) -> urwid.Widget:
    """One line for a folded block: what it is and the key that expands it."""
    label = {"reasoning": "thinking", "diff": "diff"}.get(block.kind, block.kind)
    style = "reasoning" if block.kind == "reasoning" else "diff-head"
    return urwid.Text([(style, f"> {label}  "), ("dim", str(block.data.get("summary") or "")),
                       ("dim", f"  {FOLD_KEY[0]} to expand")], wrap="ellipsis")


class Entry(urwid.WidgetWrap):
    """One block and its current widget.  A widget that fails to draw (a plugin renderer's)
    is replaced by the plain rendering of its block, so one bad block never breaks a frame."""

    def __init__(self, block: Block, widget: urwid.Widget) -> None:
        super().__init__(widget)
        self.block = block

    def replace(self, widget: urwid.Widget) -> None:
        self._w = widget

    def selectable(self) -> bool:
        return False

    def _fallback(self, exc: Exception) -> None:
        from agent.ui.widgets.blocks import plain

        log.warning("a %s block failed to draw; shown plainly", self.block.kind, exc_info=exc)
        self._w = plain(self.block)

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        try:
            return self._w.rows(size, focus)
        except Exception as exc:
            self._fallback(exc)
            return self._w.rows(size, focus)

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        try:
            return self._w.render(size, focus)
        except Exception as exc:
            self._fallback(exc)
            return self._w.render(size, focus)


class Transcript(urwid.WidgetWrap):
    """``add`` a block, ``update`` it when it changed, scroll with :meth:`scroll`."""

    def __init__(self, render: Callable[[Block, int], urwid.Widget]) -> None:
        self._render = render
        self.walker = urwid.SimpleFocusListWalker([])
        self.listbox = urwid.ListBox(self.walker)
        self.follow = True
        #: output arrived below the view while scrolled up (the marker row shows)
        self.unseen = False
        #: the key named in the marker (the app sets it from the keymap)
        self.jump_key = "ctrl end"
        self.size: tuple[int, int] = (80, 24)
        self.spacing = True
        #: the blocks of earlier messages not shown yet (a resumed session shows its last
        #: page first), asked for when a scroll up reaches the top; they go in under the
        #: header
        self.earlier: Callable[[], list[Block]] | None = None
        super().__init__(self.listbox)

    @property
    def width(self) -> int:
        return self.size[0]

    def _wrap(self, block: Block) -> urwid.Widget:
        if block.data.get("foldable") and not block.data.get("expanded"):
            widget: urwid.Widget = folded(block)
        else:
            widget = self._render(block, self.width)
            marks = block.data.get("marks") if block.data.get("foldable") else None
            if marks:
                widget = urwid.Pile([urwid.Text(("diff-rejected-mark", "\n".join(marks))),
                                     widget])
        if self.spacing and block.kind not in ("turn",) and not block.data.get("join"):
            # One blank row above each block keeps the transcript readable (a chunk that
            # continues the block above joins it); Padding-free so copied text has no extra
            # indentation.
            return Spaced(widget)
        return widget

    def add(self, block: Block) -> Entry:
        entry = Entry(block, self._wrap(block))
        self.walker.append(entry)
        self._arrived()
        return entry

    def update(self, entry: Entry) -> None:
        entry.replace(self._wrap(entry.block))
        self._arrived()

    def unfold_for_print(self, entries: list[Entry]) -> None:
        """Expand the folded ones of ``entries`` (a diff, a step's reasoning): they are about
        to be printed into the terminal's scrollback, where no key can expand them later."""
        for entry in entries:
            if entry.block.data.get("foldable") and not entry.block.data.get("expanded"):
                entry.block.data["expanded"] = True
                entry.replace(self._wrap(entry.block))

    def _arrived(self) -> None:
        if not self.follow and not self.unseen:
            self.unseen = True
            self._invalidate()

    def insert(self, index: int, block: Block) -> Entry:
        """Put ``block`` at ``index`` (clamped), e.g. a step's reasoning above its answer."""
        entry = Entry(block, self._wrap(block))
        self.walker.insert(max(0, min(index, len(self.walker))), entry)
        self._arrived()
        return entry

    def set_folds(self, expanded: bool) -> int:
        """Expand or fold every foldable block; returns how many there are."""
        n = 0
        for entry in self.walker:
            if entry.block.data.get("foldable"):
                n += 1
                if bool(entry.block.data.get("expanded")) != expanded:
                    entry.block.data["expanded"] = expanded
                    entry.replace(self._wrap(entry.block))
        self._invalidate()
        return n

    def remove(self, entry: Entry) -> None:
        try:
            self.walker.remove(entry)
        except ValueError:
            pass

    def clear(self) -> None:
        del self.walker[:]
        self.earlier = None
        self.follow_end()

    def follow_end(self) -> None:
        """Back to the end, following new output (a prompt or command brings its output into
        view even when the user had scrolled up)."""
        self.follow, self.unseen = True, False
        self._invalidate()

    def __len__(self) -> int:
        return len(self.walker)

    # ---- scrolling ----

    def scroll(self, action: str) -> None:
        # Every change invalidates: urwid keeps the last canvas of an unchanged widget, and a
        # flag flipped without it would not show until something else redrew the transcript.
        self._invalidate()
        size = self._list_size(self.size)
        if not len(self.walker) or action == "scroll-bottom":
            self.follow_end()
            return
        if self.follow:
            self._pin_bottom(size)
            self.follow = False
        upward = action in ("scroll-top", "scroll-up", "scroll-line-up")
        if upward and self.earlier is not None and "top" in self.listbox.ends_visible(size):
            # At the top of what is shown: the earlier page goes in above, and this scroll
            # moves into it (the rows in view stay where they are until then).
            self._load_earlier(size)
        if action == "scroll-top":
            self.listbox.change_focus(size, 0, offset_inset=0)
        else:
            key = {"scroll-up": "page up", "scroll-down": "page down",
                   "scroll-line-up": "up", "scroll-line-down": "down"}[action]
            self.listbox.keypress(size, key)
        if "bottom" in self.listbox.ends_visible(size):
            self.follow_end()

    def _load_earlier(self, size: tuple[int, int]) -> None:
        """Insert the earlier page under the header, keeping the rows now in view where
        they are (the scroll that asked for it then moves into it)."""
        assert self.earlier is not None
        at = 1 if len(self.walker) and self.walker[0].block.kind == "header" else 0
        middle, top, bottom = self.listbox.calculate_visible(size)
        if middle is None:
            return
        # every visible widget with the row it starts at, top down
        visible = []
        row = middle[0]
        for _, pos, rows in top[1]:  # upward from the focus
            row -= rows
            visible.insert(0, (pos, row))
        visible.append((middle[2], middle[0]))
        row = middle[0] + middle[3]
        for _, pos, rows in bottom[1]:
            visible.append((pos, row))
            row += rows
        # The first widget at or below where the page goes in keeps its place, taking that
        # of the header above it if the header showed: the page then lies just above it.
        anchor = next(((pos, min(row, visible[0][1])) for pos, row in visible if pos >= at),
                      None)
        blocks = self.earlier()
        if not blocks:
            self.earlier = None
            return
        self.walker[at:at] = [Entry(block, self._wrap(block)) for block in blocks]
        if anchor is not None:
            self.listbox.change_focus(size, anchor[0] + len(blocks), offset_inset=anchor[1])

    def _list_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """The list box's size: one row less while the "new output below" marker shows."""
        marker = self.unseen and not self.follow and size[1] > 3
        return (size[0], size[1] - 1) if marker else size

    def _pin_bottom(self, size: tuple[int, int]) -> None:
        last = len(self.walker) - 1
        if last < 0:
            return
        rows = self.walker[last].rows((size[0],))
        # No coming_from: urwid would then try every row of the widget for a cursor.
        self.listbox.change_focus(size, last, offset_inset=size[1] - rows)

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        self.size = size
        if self.follow:
            self._pin_bottom(size)
        inner = self._list_size(size)
        canvas = self.listbox.render(inner, focus=False)
        if inner == size:
            return canvas
        marker = urwid.Text(("notice", f"  v new output below - {self.jump_key} to jump "
                                       "to it"), wrap="ellipsis")
        return urwid.CanvasCombine([(canvas, None, False),
                                    (marker.render((size[0],)), None, False)])

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        return key

    def selectable(self) -> bool:
        return False

    def plain_text(self) -> str:
        """The transcript as text (rows rendered at the current width)."""
        out: list[str] = []
        for entry in self.walker:
            canvas = entry.render((self.width,))
            out.extend(row.decode("utf-8", "replace").rstrip() for row in canvas.text)
        return "\n".join(out)
