"""Supervised tasks: a task that fails becomes a visible notice and a log line, never a
traceback on the screen."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("agent.ui")


class Supervisor:
    """Starts tasks, reports their failures through ``on_error``, and cancels them on close."""

    def __init__(self, on_error: Callable[[str], None]) -> None:
        self.on_error = on_error
        self.tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.report(task.get_name(), exc)

    def report(self, what: str, exc: BaseException) -> None:
        log.error("%s failed", what, exc_info=exc)
        try:
            self.on_error(f"{what} failed: {type(exc).__name__}: {exc} (details in agent.log)")
        except Exception:  # the reporter itself must never raise into the loop
            log.exception("could not show an error")

    def loop_exception_handler(self, loop: asyncio.AbstractEventLoop,
                               context: dict[str, Any]) -> None:
        """asyncio's handler: log to the file instead of printing on the screen."""
        exc = context.get("exception")
        if exc is None:
            log.warning("asyncio: %s", context.get("message"))
            return
        self.report(str(context.get("message") or "a callback"), exc)

    async def close(self) -> None:
        tasks = [t for t in self.tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
