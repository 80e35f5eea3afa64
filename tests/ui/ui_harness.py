"""Driving the real app widget tree in-process: keys in, screen rows out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from agent.boot.runtime import Boot
from agent.testing import make_boot
from agent.ui.app import App

SIZE = (100, 30)
UI_PLUGINS = ["openai", "commands", "budget", "markdown", "diff", "sessions", "setup"]


def make_app(tmp_path: Path, base_url: str | None, *, builtins: Iterable[str] = (),
             extra: Iterable[tuple[str, object]] = (), file_data: dict[str, Any] | None = None,
             flags: dict[str, Any] | None = None, api_key: str | None = "x",
             size: tuple[int, int] = SIZE, without: Iterable[str] = ()) -> App:
    """An App over a real plugin host; provider openai at ``base_url`` (None: unconfigured).
    ``without`` leaves some of the usual UI plugins out."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    all_flags: dict[str, Any] = {"max_retries": 0}
    if base_url is not None:
        all_flags.update(provider="openai", base_url=base_url, model="m")
    all_flags.update(flags or {})
    plugins = [p for p in [*UI_PLUGINS, *builtins] if p not in set(without)]
    config, hooks = make_boot(ws, home, builtins=plugins, extra=extra,
                              file_data=file_data, flags=all_flags)
    if api_key is not None and base_url is not None:
        config.env_values["api_key"] = api_key
    app = App(Boot(config, config.plugins, hooks, None))
    app.size = size
    return app


def screen(app: App) -> str:
    return "\n".join(app.render(app.size))


async def press(app: App, *keys: str) -> None:
    for key in keys:
        app.root.keypress(app.size, key)
        await asyncio.sleep(0)


async def type_text(app: App, text: str, enter: bool = False) -> None:
    for ch in text:
        app.root.keypress(app.size, "enter" if ch == "\n" else ch)
    if enter:
        app.root.keypress(app.size, "enter")
    await asyncio.sleep(0)


#: The bound of a wait (seconds): far above the usual time even for the first turn of a test
#: process, which imports the provider SDK (5 s at load 11 on 2 cores); a wait that succeeds
#: returns as soon as it does.
WAIT = 30.0


async def wait_for(app: App, what: str | Callable[[], bool], timeout: float = WAIT) -> str:
    """Wait until ``what`` is on screen (or the predicate holds); returns the screen."""
    deadline = time.monotonic() + timeout
    while True:
        rows = screen(app)
        ok = what() if callable(what) else what in rows
        if ok:
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what!r}; screen:\n{rows}")
        await asyncio.sleep(0.02)


async def idle(app: App, timeout: float = WAIT) -> str:
    return await wait_for(app, lambda: not app.busy and not app.queue, timeout)
