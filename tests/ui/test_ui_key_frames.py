"""A key typed while an answer streams is painted at once, by a frame that leaves the new
text to the coalesced frame already scheduled for it (which then shows it).  The real
terminal loop (``agent.ui.screen._Loop``) paints into a pyte screen."""

from __future__ import annotations

import asyncio
import io
import time

import pyte
import urwid
from ui_harness import make_app

from agent.contract import events as ev
from agent.ui import palette
from agent.ui.screen import _Loop


class Painted:
    """The app on a urwid raw screen whose output a pyte terminal reads."""

    def __init__(self, app) -> None:
        self.out = io.StringIO()
        screen = urwid.display.raw.Screen(input=io.StringIO(), output=self.out)
        screen.register_palette(palette.palette(256))
        screen.set_terminal_properties(colors=256)
        screen._started = True  # no tty to set up: the frames are what is tested
        self.loop = _Loop(app, app.root, screen=screen, event_loop=urwid.AsyncioEventLoop(
            loop=asyncio.get_running_loop()))
        self.loop.screen_size = app.size
        app.loop = self.loop
        self.term = pyte.Screen(*app.size)
        self.stream = pyte.Stream(self.term)

    def rows(self) -> str:
        self.stream.feed(self.out.getvalue())
        self.out.seek(0)
        self.out.truncate()
        return "\n".join(line.rstrip() for line in self.term.display)


async def scheduled_frame_painted(app, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while app.redraw.pending:
        assert time.monotonic() < deadline, "the coalesced frame never came"
        await asyncio.sleep(0.005)


async def test_a_key_shows_at_once_while_the_streamed_text_waits_for_its_frame(tmp_path):
    app = make_app(tmp_path, "http://127.0.0.1:9/v1")
    app.start()
    painted = Painted(app)
    painted.loop.draw_screen()
    app.view.on_event(ev.TextEvent("Alpha paragraph of the answer.\n\n"))
    assert app.redraw.pending
    await scheduled_frame_painted(app)
    assert "Alpha paragraph of the answer." in painted.rows()

    app.view.on_event(ev.TextEvent("Beta paragraph arrives."))
    assert app.redraw.pending
    app.root.keypress(app.size, "q")
    painted.loop.draw_screen()  # what urwid does after every batch of input
    rows = painted.rows()
    assert "> q" in rows
    assert "Beta paragraph" not in rows  # left to the scheduled frame

    await scheduled_frame_painted(app)
    rows = painted.rows()
    assert "Beta paragraph arrives." in rows and "> q" in rows


async def test_a_key_frame_flushes_when_no_frame_is_scheduled(tmp_path):
    # Text that is pending without a scheduled frame (nothing asked for one) is not left
    # behind: the key's frame flushes it.
    app = make_app(tmp_path, "http://127.0.0.1:9/v1")
    app.start()
    painted = Painted(app)
    app.view.on_event(ev.TextEvent("Gamma paragraph."))
    app.redraw.cancel()
    app.root.keypress(app.size, "z")
    painted.loop.draw_screen()
    rows = painted.rows()
    assert "Gamma paragraph." in rows and "> z" in rows
