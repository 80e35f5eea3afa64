"""Inline mode: the UI never takes the alternate screen (``--inline``, ``ui.alt_screen =
false``).

Finished transcript blocks are printed into the terminal's normal flow, above a small live
region (the block still streaming, running tools, the prompt and the status bar) that urwid
redraws in place.  What was printed scrolls on into the terminal's own scrollback, so tmux,
zellij and the terminal's search and copy see the whole conversation while it runs.  The
region is kept at the bottom of what was printed: before a frame, blocks that became final are
written above it (and taken out of the transcript widget), and the region is reserved with
line feeds, which scroll the terminal when the cursor is at its last row.

A terminal cannot re-wrap rows that were printed with hard line ends, so when the width
changes every printed block is drawn again at the new width: the screen and the terminal's
scrollback are cleared and the conversation is printed anew (its last
:data:`~agent.ui.printout.EXIT_ROWS` rows), then the live region.  What the terminal showed
before the session started goes with the cleared scrollback; ``ui.inline_reflow = false``
keeps it, and leaves printed blocks as they were drawn.
"""

from __future__ import annotations

from typing import Any

import urwid

from agent.ui import printout

#: clear the screen, then the scrollback (ED 3: xterm, tmux, kitty, VTE), cursor home
CLEAR_ALL = "\x1b[H\x1b[2J\x1b[3J\x1b[H"


def wants_reflow(config: Any) -> bool:
    """``ui.inline_reflow`` (default true): re-print the conversation when the width changes."""
    table = config.get("ui") or {}
    return not (isinstance(table, dict) and table.get("inline_reflow") is False)


def wants_inline(config: Any) -> bool:
    """``--inline`` or ``ui.alt_screen = false``."""
    if config.get("inline"):
        return True
    table = config.get("ui") or {}
    return isinstance(table, dict) and table.get("alt_screen") is False


class InlineScreen(urwid.display.raw.Screen):
    """A raw screen that always starts on the normal screen buffer."""

    def _start(self, alternate_buffer: bool = True, *args: Any, **kwargs: Any) -> None:
        super()._start(False, *args, **kwargs)


class Inline:
    """Prints final blocks above the live region and sizes the region before each frame."""

    def __init__(self, app: Any, screen: Any, loop: Any) -> None:
        self.app = app
        self.screen = screen
        self.loop = loop
        self.height = 0            # rows of the region as last drawn
        self.cols = 0
        self.escape = printout.escaper(screen)
        self.reflow = wants_reflow(app.config)
        #: the entries printed so far, to draw again when the width changes
        self.printed: list[Any] = []

    def _term_size(self) -> tuple[int, int]:
        cols, rows = urwid.display.raw.Screen.get_cols_rows(self.screen)
        return max(10, cols), max(3, rows)

    def take_final(self) -> list[Any]:
        """The leading transcript entries that will not change, removed from the widget."""
        walker = self.app.transcript.walker
        n = 0
        while n < len(walker) and printout.is_final(walker[n]):
            n += 1
        done = list(walker[:n])
        if n:
            del walker[:n]
        self.app.transcript.unfold_for_print(done)  # printed, they cannot be expanded later
        return done

    def prepare(self) -> None:
        """Call right before urwid draws a frame."""
        cols, rows = self._term_size()
        self.app.term_rows = rows
        resized = cols != self.cols
        rewrap = resized and self.cols > 0 and self.reflow and bool(self.printed)
        self.cols = cols
        final = self.take_final()
        self.printed.extend(final)
        if rewrap:
            lines = printout.tail_lines(self.printed, cols, self.escape)
        else:
            lines = printout.entry_lines(final, cols, self.escape)
        footer = self.app.footer.rows((cols,), True)
        pending = sum(entry.rows((cols,)) for entry in self.app.transcript.walker)
        height = max(1, min(rows, footer + pending))
        if lines or resized or height != self.height:
            self._write(lines, height, clear=rewrap)
        self.loop.screen_size = (cols, height)
        self.app.size = (cols, height)

    def _write(self, lines: list[str], height: int, clear: bool = False) -> None:
        """Print ``lines`` where the region was (``clear``: on an emptied terminal, from its
        top), then reserve ``height`` rows for the region under them."""
        screen = self.screen
        up = int(getattr(screen, "_cy", 0) or 0)
        if clear:
            out = [CLEAR_ALL]
        else:
            out = ["\r" + (f"\x1b[{up}A" if up else "") + "\x1b[J"]
        out.extend(line + "\r\n" for line in lines)
        if height > 1:  # line feeds scroll the terminal when the region would not fit
            out.append("\r\n" * (height - 1) + f"\x1b[{height - 1}A")
        screen.write("".join(out))
        screen.flush()
        # urwid draws relative to where it left the cursor: it is at the region's top now,
        # and nothing of the last frame is on screen any more.
        screen._cy = 0
        screen._rows_used = 0
        screen.clear()
        self.height = height

    def finish(self) -> None:
        """Print every block left (the session is ending) and leave the cursor under them."""
        walker = self.app.transcript.walker
        lines = printout.entry_lines(list(walker), self.cols or self._term_size()[0],
                                     self.escape)
        self.printed.extend(walker)
        del walker[:]
        self._write(lines, 1)
        self.screen.maxrow = None  # urwid would jump to the terminal's last row on stop
