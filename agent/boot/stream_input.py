"""``agent -p --input-format stream-json``: several turns of one session from a program.

Standard input carries one JSON object per line.  A user message starts a turn::

    {"type": "user", "message": {"role": "user", "content": "list the TODOs"}}
    {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "..."}]}}

(the shape Claude Code's ``--input-format stream-json`` reads; ``content`` is a string or a
list of ``text`` blocks).  Messages that arrive while a turn runs wait for it, in order.  A
control line cancels the running turn, which ends as ``interrupted``; the session goes on
with the next message::

    {"type": "interrupt"}
    {"type": "control_request", "request_id": "r1", "request": {"subtype": "interrupt"}}

(the second is answered by a ``control_response`` event naming ``request_id``).  The end of
standard input ends the session cleanly once the running turn and the queued ones are done.
A line that is not one of these is reported as an ``error`` event (kind ``input``) and
skipped.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from typing import IO, Any

from agent.contract import events as ev

#: Longest input line read (a message with a large file pasted in it fits).
MAX_LINE = 16 * 1024 * 1024


class InputError(ValueError):
    """A line that is not a message or control request; the message says why."""


def parse_line(line: str) -> tuple[str, Any]:
    """``("user", text)``, ``("interrupt", request_id or None)`` or ``("skip", None)`` for
    a blank line.  Raises :class:`InputError`."""
    if not line.strip():
        return "skip", None
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object with a \"type\"")
    kind = data.get("type")
    if kind == "user":
        return "user", _user_text(data)
    if kind == "interrupt":
        return "interrupt", None
    if kind == "control_request":
        request = data.get("request")
        subtype = request.get("subtype") if isinstance(request, dict) else None
        if subtype != "interrupt":
            raise InputError(f"control request {subtype!r} is not supported (only interrupt)")
        return "interrupt", str(data.get("request_id") or "")
    raise InputError(f"type {kind!r} is not an input message (expected \"user\", "
                     "\"interrupt\" or \"control_request\")")


def _user_text(data: dict[str, Any]) -> str:
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else data.get("content")
    if isinstance(message, dict) and message.get("role", "user") != "user":
        raise InputError(f"message role {message.get('role')!r}: only user messages are read")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text" \
                    and isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                what = block.get("type") if isinstance(block, dict) else type(block).__name__
                raise InputError(f"content block {what!r} is not supported (text blocks only)")
        text = "\n\n".join(parts)
    else:
        raise InputError("a user message needs message.content: a string or a list of text "
                         "blocks")
    if not text.strip():
        raise InputError("the user message is empty")
    return text


class MessageStream:
    """Reads input lines on a thread (a pipe read never blocks the event loop) and drives
    the turns of a :class:`agent.boot.headless.Turns`."""

    def __init__(self, stream: IO[bytes] | IO[str]) -> None:
        self.stream = stream

    def _start_reader(self, queue: asyncio.Queue[str | None]) -> None:
        loop = asyncio.get_running_loop()

        def read() -> None:
            try:
                while True:
                    raw = self.stream.readline(MAX_LINE)
                    if not raw:
                        break
                    line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
                    loop.call_soon_threadsafe(queue.put_nowait, line)
            except (OSError, ValueError):
                pass
            finally:
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, None)
                except RuntimeError:  # the loop is gone: the run already ended
                    pass

        threading.Thread(target=read, name="agent-stdin", daemon=True).start()

    async def drive(self, turns: Any, first: str = "") -> int:
        """Run every message as a turn, in order, until the input ends; an ``interrupt``
        cancels the running turn.  Returns the exit code of the last turn (0 with none)."""
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._start_reader(queue)
        waiting: deque[str] = deque([first] if first.strip() else [])
        code = 0
        turn: asyncio.Task[int] | None = None
        getter: asyncio.Task[str | None] | None = None
        ended = False
        try:
            while True:
                if turn is None and waiting:
                    turn = asyncio.ensure_future(turns.run(waiting.popleft()))
                if turn is None and ended:
                    return code
                if getter is None and not ended:
                    getter = asyncio.ensure_future(queue.get())
                await asyncio.wait([t for t in (turn, getter) if t is not None],
                                   return_when=asyncio.FIRST_COMPLETED)
                if getter is not None and getter.done():
                    line, getter = getter.result(), None
                    if line is None:
                        ended = True
                    else:
                        self._take(line, turn, waiting, turns.printer)
                if turn is not None and turn.done():
                    try:
                        code = turn.result()
                    except asyncio.CancelledError:
                        code = turns.last_code
                    turn = None
        finally:
            for task in (turn, getter):
                if task is not None and not task.done():
                    task.cancel()
            if turn is not None:
                try:
                    await turn
                except (asyncio.CancelledError, Exception):
                    pass

    @staticmethod
    def _take(line: str, turn: asyncio.Task[int] | None, waiting: deque[str],
              printer: Any) -> None:
        try:
            kind, value = parse_line(line)
        except InputError as exc:
            printer(ev.ErrorEvent(f"input line skipped: {exc}", "input"))
            return
        if kind == "user":
            waiting.append(value)
        elif kind == "interrupt":
            if turn is not None and not turn.done():
                turn.cancel()
            if value is not None:
                printer(ControlResponseEvent(value))


class ControlResponseEvent(ev.Event):
    """The answer to a ``control_request`` line, as Claude Code writes it."""

    type = "control_response"

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id

    def payload(self) -> dict[str, Any]:
        return {"response": {"subtype": "success", "request_id": self.request_id}}
