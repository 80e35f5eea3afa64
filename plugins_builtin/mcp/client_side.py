"""What agent answers when a server asks the client something: roots, elicitation, sampling.

These callbacks run on the MCP thread's loop. A question for the user hops to the loop of the
front end that made the tool call (the UI's ask panel) and its answer hops back; with nobody to
ask (headless, or no call in progress) an elicitation is declined, so a server never waits on a
question no one can see. A request for a model call (sampling) runs on the calling session's
loop too, with its approval and its provider (see :mod:`.sampling`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("agent.mcp")

#: ``asker(question, options, multiple)`` as in :data:`agent.loop.session.Asker`.
Asker = Callable[[str, list[dict[str, str]], bool], Awaitable[Any]]


class FrontEnd:
    """Who can answer a server's question right now: set by each tool call from the
    session's loop, read on the MCP loop."""

    def __init__(self) -> None:
        self.asker: Asker | None = None
        self.session: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def set(self, asker: Asker | None, session: Any = None) -> None:
        self.asker, self.session = asker, session
        self.loop = (asyncio.get_running_loop()
                     if asker is not None or session is not None else None)

    async def on_front(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``make()`` on the front end's loop (where the session lives) and await it."""
        loop = self.loop
        if loop is None or loop.is_closed():
            raise RuntimeError("no session is running a call")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), loop))

    async def ask(self, question: str, options: list[dict[str, str]]) -> Any:
        """The user's answer (None when dismissed or when nobody can answer)."""
        asker, loop = self.asker, self.loop
        if asker is None or loop is None or loop.is_closed():
            return None
        future = asyncio.run_coroutine_threadsafe(asker(question, options, False), loop)
        return await asyncio.wrap_future(future)


def roots_callback(workspace: Path) -> Callable[..., Awaitable[Any]]:
    """``roots/list``: the workspace, the one directory the agent works in."""

    async def list_roots(context: Any) -> Any:
        from mcp_types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=Path(workspace).resolve().as_uri(),
                                           name="workspace")])

    return list_roots


def elicitation_callback(front: FrontEnd, server: str) -> Callable[..., Awaitable[Any]]:
    """``elicitation/create``: each requested field asked in the ask panel; declined when
    nobody can answer or the user dismisses a question."""

    async def elicit(context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        message = str(getattr(params, "message", "") or "")
        schema = getattr(params, "requested_schema", None)
        properties = (schema or {}).get("properties", {}) if isinstance(schema, dict) else {}
        if getattr(params, "mode", "form") == "url" or front.asker is None:
            log.info("mcp server %s asked a question nobody can answer here; declined", server)
            return ElicitResult(action="decline")
        content: dict[str, Any] = {}
        for name, prop in properties.items():
            prop = prop if isinstance(prop, dict) else {}
            label = prop.get("title") or name
            detail = prop.get("description", "")
            question = f"The MCP server {server} asks: {message}\n{label}" + (
                f" ({detail})" if detail else "")
            kind = prop.get("type")
            options = ([{"label": str(v), "detail": ""} for v in prop["enum"]]
                       if isinstance(prop.get("enum"), list) else
                       [{"label": "yes", "detail": ""}, {"label": "no", "detail": ""}]
                       if kind == "boolean" else [])
            answer = await front.ask(question, options)
            if answer is None:
                return ElicitResult(action="decline")
            content[name] = _typed(str(answer), kind)
        if not properties:  # a plain confirmation
            answer = await front.ask(f"The MCP server {server} asks: {message}",
                                     [{"label": "yes", "detail": ""},
                                      {"label": "no", "detail": ""}])
            if answer != "yes":
                return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=content)

    return elicit


def _typed(text: str, kind: Any) -> Any:
    if kind == "boolean":
        return text.strip().lower() in ("yes", "true", "y", "1")
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            return text
    return text


def sampling_callback(front: FrontEnd, server: str) -> Callable[..., Awaitable[Any]]:
    """``sampling/createMessage``: through the calling session's provider, with approval."""

    async def create_message(context: Any, params: Any) -> Any:
        from mcp_types import ErrorData

        from .sampling import sample

        session = front.session
        if session is None:
            return ErrorData(code=-1, message="sampling is only answered during a tool call")
        return await front.on_front(lambda: sample(session, server, params))

    return create_message


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """One line for a progress notification: ``[progress 3/10] copying``."""
    amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    return f"[progress {amount}]" + (f" {message}" if message else "") + "\n"
