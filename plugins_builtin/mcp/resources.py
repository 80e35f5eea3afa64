"""A server's resources as two tools: ``mcp__<server>__list_resources`` and
``mcp__<server>__read_resource``.

Added to the tool list of every server that declares the ``resources`` capability and lists at
least one resource when it connects (unless the server has tools of those names itself), so
the model can list what a server offers and read one item, including the resource links
tools return. They read from the server only, so they carry the ``read_only`` hint: asked
about like other MCP tools unless ``mcp_read_only = "allow"``.
"""

from __future__ import annotations

import base64
from typing import Any

LIST_RESOURCES = "list_resources"
READ_RESOURCE = "read_resource"
#: Most resources listed (a server with thousands pages on; the list says it was cut).
MAX_LISTED = 200


def resource_tools(server: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The two resource tools' definitions, skipping a name the server already uses."""
    taken = {t.get("name") for t in tools}
    made = [
        {"name": LIST_RESOURCES, "agent_kind": LIST_RESOURCES, "hints": {"read_only": True},
         "description": f"List the resources the MCP server {server} offers (documents, "
                        "files, records): one line each with its uri, name and type.",
         "input_schema": {"type": "object", "properties": {}}},
        {"name": READ_RESOURCE, "agent_kind": READ_RESOURCE, "hints": {"read_only": True},
         "description": f"Read one resource of the MCP server {server} by its uri, from "
                        f"{LIST_RESOURCES} or from a resource link a tool returned.",
         "input_schema": {"type": "object", "properties": {
             "uri": {"type": "string", "description": "the resource's uri"}},
             "required": ["uri"]}},
    ]
    return [t for t in made if t["name"] not in taken]


async def resource_entries(session: Any) -> tuple[list[dict[str, str]], bool]:
    """The server's resources as ``{uri, name, mime, description}``, following pagination up
    to :data:`MAX_LISTED`, and whether there were more."""
    from mcp_types import PaginatedRequestParams

    entries: list[dict[str, str]] = []
    cursor = None
    for _ in range(20):
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_resources(params=params)
        for res in page.resources:
            entries.append({"uri": str(res.uri), "name": str(res.name or ""),
                            "mime": str(getattr(res, "mime_type", None) or ""),
                            "description": str(getattr(res, "description", None) or "")})
        cursor = page.next_cursor
        if not cursor or len(entries) >= MAX_LISTED:
            break
    return entries[:MAX_LISTED], bool(len(entries) > MAX_LISTED or cursor)


async def resource_listing(session: Any) -> str:
    """``uri  name  (mime)`` per resource, following pagination up to :data:`MAX_LISTED`."""
    entries, more = await resource_entries(session)
    lines = []
    for res in entries:
        mime = f"  ({res['mime']})" if res["mime"] else ""
        about = f" - {res['description']}" if res["description"] else ""
        lines.append(f"{res['uri']}  {res['name']}{mime}{about}")
    if more:
        lines.append(f"... [more resources: only the first {MAX_LISTED} are listed]")
    return "\n".join(lines) or "(the server lists no resources)"


def resource_text(result: Any) -> str:
    """The contents of a ``ReadResourceResult`` as text (see :func:`resource_content`)."""
    return resource_content(result)[0]


def resource_content(result: Any, source: str = "") -> tuple[str, list[Any]]:
    """The contents of a ``ReadResourceResult``: text as is, images as image parts (for the
    model's own image blocks) with a marker line, other binary content summarised."""
    from agent.contract.messages import IMAGE_TYPES, ImagePart

    parts = []
    images: list[ImagePart] = []
    for item in getattr(result, "contents", None) or []:
        uri = getattr(item, "uri", "")
        text = getattr(item, "text", None)
        if text is not None:
            parts.append(f"[resource {uri}]\n{text}")
            continue
        blob = getattr(item, "blob", "") or ""
        try:
            size = len(base64.b64decode(blob, validate=False))
        except (ValueError, TypeError):
            size = len(blob)
        mime = getattr(item, "mime_type", "") or "unknown type"
        kind = mime.split(";")[0].strip().lower().replace("image/jpg", "image/jpeg")
        if kind in IMAGE_TYPES:
            images.append(ImagePart(kind, blob, source or str(uri)))
            parts.append(f"[resource {uri}: image {len(images)}, {kind}, {size:,} bytes]")
            continue
        parts.append(f"[resource {uri}: {mime}, {size:,} bytes of binary content]")
    return "\n".join(parts) or "(the resource is empty)", images
