"""Joining the app to a real terminal: asyncio owns the loop, urwid is its guest.

The screen frees the tty's signal keys (ctrl-c, ctrl-z, ctrl-s, ctrl-q arrive as keys),
forces bracketed paste, leaves mouse tracking off unless ``mouse = true`` (so the terminal's
own selection and copy work) and asks for alternate scroll mode instead (the wheel arrives
as arrow keys), and uses synchronized output when the terminal has it (urwid detects it).
While the screen is up nothing may write to the terminal behind urwid's back: log records,
warnings and even file descriptor 2 go to ``<state dir>/agent.log``.  After the screen
closes, the farewell with the exact resume commands is printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import urwid

from agent.ui import palette
from agent.ui.app import App

log = logging.getLogger("agent.ui")


class _Loop(urwid.MainLoop):
    """A MainLoop that lets the app flush streaming text right before each frame (and, in
    inline mode, print the blocks that became final above the live region)."""

    def __init__(self, app: App, *args: Any, **kwargs: Any) -> None:
        self._app = app
        self.inline: Any = None
        super().__init__(*args, **kwargs)

    def draw_screen(self) -> None:
        # A frame after input (urwid paints after every key batch) leaves the streamed text
        # to the coalesced frame already scheduled for it: the key shows at once, repainting
        # only what it changed, instead of first parsing and laying out the growing answer
        # (2-4 ms of a 5-6 ms frame while a long list or code block streams).
        if not self._app.redraw.pending:
            self._app.before_draw()
        if self.inline is not None:
            self.inline.prepare()
        super().draw_screen()
        self._app.redraw.drew()


#: alternate scroll mode: on the alternate screen, with mouse tracking off, the terminal turns
#: wheel notches into arrow keys (xterm, VTE, kitty, iTerm2 honour it), so the wheel can
#: scroll while a plain drag still selects text
ALTERNATE_SCROLL_ON, ALTERNATE_SCROLL_OFF = "\x1b[?1007h", "\x1b[?1007l"


def input_filter(keys: list[Any], raw: list[int], app: Any = None) -> list[Any]:
    """Two kinds of bursts, told apart from typing by arriving in one read:

    - two or more of the same arrow (``up up up``) are a wheel notch in alternate scroll
      mode: they become ``wheel up`` / ``wheel down``, which scroll the transcript instead of
      walking the prompt history (not while a list or dialog is open: there the arrows
      move its selection, wheel or not);
    - a multi-line paste from a terminal without bracketed paste (keys with ``enter``
      inside): treated as a paste so it is never submitted."""
    picking = app is not None and (app.modal is not None or app.completion.open)
    if len(keys) >= 2 and keys[0] in ("up", "down") and all(k == keys[0] for k in keys) \
            and not picking:
        return ["wheel " + keys[0]] * len(keys)
    if "begin paste" in keys or len(keys) < 6:
        return keys
    inner_enter = "enter" in keys[:-1]
    printable = sum(1 for k in keys if isinstance(k, str) and len(k) == 1)
    if inner_enter and printable >= 4:
        return ["begin paste", *keys, "end paste"]
    return keys


@contextlib.contextmanager
def _quiet_terminal(state_dir: Any) -> Iterator[None]:
    """Route logging, warnings and fd 2 into the log file while the screen is up."""
    root = logging.getLogger()
    handler: logging.Handler | None = None
    saved_fd: int | None = None
    path = None
    try:
        from agent.contain.private import PrivateFileHandler, private_dir

        private_dir(state_dir)
        path = state_dir / "agent.log"
        handler = PrivateFileHandler(path, encoding="utf-8", delay=True)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except OSError:
        handler = logging.NullHandler()
    root.addHandler(handler)
    logging.captureWarnings(True)
    old_stderr = sys.stderr
    try:
        if path is not None:
            try:
                sys.stderr.flush()
                saved_fd = os.dup(2)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.dup2(fd, 2)
                os.close(fd)
            except OSError:
                saved_fd = None
        yield
    finally:
        if saved_fd is not None:
            try:
                sys.stderr.flush()
            except Exception:
                pass
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
        sys.stderr = old_stderr
        logging.captureWarnings(False)
        root.removeHandler(handler)


WARM_SAMPLE = "# a\n\n- **b** `c`\n\n```python\nx = 1\n```\n"


def _warm(app: App) -> None:
    """After the first frame, import in a thread what the first answer needs: the provider's
    SDK (0.3-0.9 s), the markdown renderer and the Python lexer.  Nothing of it is on the
    path to the first frame, and the first streamed answer does not stall on it."""
    from agent.contract.blocks import Block
    from agent.lib import collector

    collector.resume(freeze=True)  # the first frame is up: start-up is over (held off by the CLI)

    spec = app.runtime.provider_spec if app.runtime is not None else None
    modules = spec.warm_modules if spec is not None else ()

    def warm() -> None:
        import gc

        from agent.loop.streaming import quick_gil_handoff

        # The SDK import allocates hundreds of thousands of objects, and a full collection
        # triggered in the middle of it held the GIL for 40-110 ms (the screen froze
        # meanwhile), only to find that everything lives on.  So no collection while it
        # runs; afterwards it is all moved out of the collector's reach (gc.freeze), which
        # also keeps later full passes short.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with quick_gil_handoff():  # keys typed meanwhile still show at once
                try:
                    app.renderer.render(Block("markdown", WARM_SAMPLE), 80)
                except Exception:
                    log.debug("could not warm the markdown renderer", exc_info=True)
                for module in modules:
                    try:
                        __import__(module)
                    except Exception:
                        log.debug("could not pre-import %s", module, exc_info=True)
        finally:
            gc.freeze()
            if collecting:
                gc.enable()

    threading.Thread(target=warm, name="warmup", daemon=True).start()


async def _main(boot: Any, prompt: str | None) -> tuple[int, str]:
    config = boot.config
    loop = asyncio.get_running_loop()
    depth = palette.color_depth(setting=config.get("colors"))
    app = App(boot, depth=depth)
    loop.set_exception_handler(app.supervisor.loop_exception_handler)
    from agent.ui import inline as inline_mode

    inline = inline_mode.wants_inline(config)
    screen_class = inline_mode.InlineScreen if inline else urwid.display.raw.Screen
    from agent.ui.paste import paste_screen

    screen = paste_screen(screen_class)(bracketed_paste_mode=True, focus_reporting=False)
    screen.set_terminal_properties(colors=depth)
    screen.register_palette(palette.palette(depth))
    main_loop = _Loop(app, app.root, screen=screen, handle_mouse=bool(config.get("mouse")),
                      event_loop=urwid.AsyncioEventLoop(loop=loop),
                      input_filter=lambda keys, raw: input_filter(keys, raw, app))
    if inline:
        main_loop.inline = inline_mode.Inline(app, screen, main_loop)
        app.inline = True
    app.loop, app.screen = main_loop, screen
    import signal

    received: list[int] = []

    def on_signal(signum: int) -> None:
        if not received:
            received.append(signum)
        app.quit()

    for sig in (signal.SIGTERM, signal.SIGHUP):
        # kill or a closed terminal: leave like /exit (session saved, screen restored), with
        # the shell's code for that signal (143, 129), as a headless run does.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, int(sig))
    wheel = not inline and not config.get("mouse")
    with main_loop.start():
        screen.tty_signal_keys(intr="undefined", quit="undefined", start="undefined",
                               stop="undefined", susp="undefined")
        if wheel:
            screen.write(ALTERNATE_SCROLL_ON)
        app.start(prompt)
        loop.call_later(0.05, _warm, app)
        await app.exit.wait()
        await _shutdown(app)
        if main_loop.inline is not None:
            main_loop.inline.finish()  # the rest of the conversation, into the scrollback
        if wheel:
            screen.write(ALTERNATE_SCROLL_OFF)
    text = farewell(app)
    if main_loop.inline is None and config.get("print_transcript"):
        # The alternate screen is gone with its contents: put the conversation, styled as it
        # was shown, into the terminal's own scrollback, where it can be scrolled and copied.
        from agent.ui import printout

        entries = list(app.transcript.walker)
        app.transcript.unfold_for_print(entries)  # a "ctrl o to expand" there would be dead
        lines = printout.tail_lines(entries, app.size[0], printout.escaper(screen))
        if lines:
            text = "\n".join(lines) + "\n\n" + text
    if app.session is not None:
        app.hooks.close_session(app.session)  # its notes were shown as the run went on
    return (128 + received[0] if received else 0), text


async def _shutdown(app: App) -> None:
    app.redraw.cancel()
    if app.turn_task is not None and not app.turn_task.done():
        app.turn_task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(app.turn_task), 3.0)
    await _finish_after_turn(app)
    await app.supervisor.close()


async def _finish_after_turn(app: App) -> None:
    """Let the last turn's after-turn work (the formatter) finish before the screen goes,
    saying so (the session bounds the wait by ``after_turn_timeout``)."""
    session = app.session
    pending = session.after_turn_pending if session is not None else []
    if session is None or not pending:
        return
    app.add("info", "finishing after-turn work before exit: " + ", ".join(pending))
    app.redraw.request()
    try:
        await session.wait_after_turn()
    finally:
        app.redraw.cancel()


def farewell(app: App) -> str:
    session = app.session
    if session is None:
        return "Good bye."
    try:
        return app.hooks.farewell(session)
    except Exception:
        log.exception("farewell")
        return "Good bye."


def run_app(boot: Any, prompt: str | None = None) -> int:
    """Run the UI in this terminal until the user quits; returns the exit code."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("agent: the full-screen UI needs a terminal; use -p PROMPT for a headless run",
              file=sys.stderr)
        return 2
    code, text = 1, ""
    try:
        with _quiet_terminal(boot.config.state_dir):
            code, text = asyncio.run(_main(boot, prompt))
    except OSError as exc:
        if exc.errno not in _TERMINAL_GONE:
            raise
        # The terminal went away (its window closed): nobody is left to read a traceback.
        log.info("the terminal is gone: %s", exc)
        code, text = 129, ""
        _detach_from_terminal()
    finally:
        session_close(boot)
    if text:
        try:
            print(text, flush=True)
        except OSError as exc:
            if exc.errno not in _TERMINAL_GONE:
                raise
            log.info("the terminal is gone before the farewell: %s", exc)
            _detach_from_terminal()
    return code


#: What writing to a terminal that has gone away raises: EIO from a hung-up pty, ENXIO, or a
#: closed descriptor.
_TERMINAL_GONE = (errno.EIO, errno.ENXIO, errno.EBADF, errno.EPIPE)


def _detach_from_terminal() -> None:
    """Point stdout and stderr at /dev/null, so the interpreter's last flush at exit finds
    somewhere to write instead of printing 'Exception ignored' about a dead terminal."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)


def session_close(boot: Any) -> None:
    """Release plugin resources once the screen is gone."""
    try:
        boot.hooks.unconfigure(boot.config)
    except Exception:
        log.exception("unconfigure")
