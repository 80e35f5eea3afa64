"""Bookmarks: a third-party plugin that does what builtins do, through the public API only.

- a tool, ``bookmark``, that describes its own transcript line and approval question;
- a live panel above the prompt listing this session's bookmarks;
- its own table in the state database, declared with ``agent_store_schema``;
- a ``session.data`` key saved with the session and restored on resume.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agent import NO_EFFECTS, Description, Tool, hookimpl
from agent.contract.panels import Panel
from agent.state.store import Store, StoreSchema

KEY = "bookmarks"

SCHEMA = StoreSchema("bookmarks", (
    "CREATE TABLE bookmarks (id INTEGER PRIMARY KEY, project TEXT NOT NULL, "
    "url TEXT NOT NULL, title TEXT NOT NULL, created_at REAL NOT NULL);",
))


def _save(config: Any, project: str, url: str, title: str) -> None:
    with Store.for_config(config) as store, store.transaction() as conn:
        conn.execute("INSERT INTO bookmarks (project, url, title, created_at) "
                     "VALUES (?, ?, ?, ?)", (project, url, title, time.time()))


async def _bookmark(args: dict[str, Any], ctx: Any) -> str:
    url, title = str(args["url"]), str(args.get("title") or args["url"])
    # SQLite waits for other writers: off the event loop, so the screen keeps answering.
    await asyncio.to_thread(_save, ctx.config, str(ctx.workspace), url, title)
    seen = ctx.session.data.setdefault(KEY, [])
    seen.append(title)
    return f"Bookmarked {title}; this session: {', '.join(seen)}"


def _describe(args: dict[str, Any]) -> Description:
    title = str(args.get("title") or "")
    return Description((f"{title} <{args.get('url', '')}>",), f"Bookmark {title}?")


BOOKMARK = Tool(
    name="bookmark",
    description="Save a web page as a bookmark of this project.",
    run=_bookmark,
    describe=_describe,
    parameters={"type": "object", "properties": {
        "url": {"type": "string"}, "title": {"type": "string"}},
        "required": ["url"], "additionalProperties": False},
    effects=lambda args: NO_EFFECTS,
    subjectless=True,
)


@hookimpl
def agent_store_schema(config: Any) -> StoreSchema:
    return SCHEMA


@hookimpl
def agent_register_tools(register: Any, config: Any) -> None:
    register(BOOKMARK)


@hookimpl
def agent_persisted_keys(config: Any) -> list[str]:
    return [KEY]  # saved with the session, back on resume


@hookimpl
def agent_live_panels(session: Any, state: Any) -> Panel | None:
    seen = session.data.get(KEY) or []
    if not seen:
        return None
    return Panel("bookmarks", [("dim", f"bookmarks this session: {', '.join(seen)}")], order=70)
