"""Turning an MCP ``CallToolResult`` into the text the model reads.

Text blocks are joined; images, audio and binary resources are summarised (the model cannot
use base64 in a tool message); embedded text resources are included.  Structured content is
sent as JSON only when there are no content blocks: the MCP spec asks servers that return
structured content to send the same data as text too, and sending both would double it.
Works on the SDK's objects by attribute, so this module never imports the SDK.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def result_text(result: Any, reader: str = "") -> str:
    """The model-facing text of a ``CallToolResult``; ``reader`` names the tool that reads
    a resource link (the server's ``read_resource``), when there is one."""
    parts = [_block_text(block, reader) for block in (getattr(result, "content", None) or [])]
    parts = [p for p in parts if p]
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        return json.dumps(structured, ensure_ascii=False, indent=2)
    if not parts:
        return ("(the tool reported an error without a message)"
                if getattr(result, "is_error", False) else "(no output)")
    return "\n".join(parts)


def _block_text(block: Any, reader: str = "") -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", "") or "unknown type"
        return f"[{kind}: {mime}, {_size(getattr(block, 'data', ''))}]"
    if kind == "resource_link":
        name = getattr(block, "name", "") or ""
        link = f"[resource link: {name} <{getattr(block, 'uri', '')}>]".replace(":  <", ": <")
        return f"{link} (read it with {reader})" if reader else link
    if kind == "resource":
        res = getattr(block, "resource", None)
        uri = getattr(res, "uri", "")
        text = getattr(res, "text", None)
        if text is not None:
            return f"[resource {uri}]\n{text}"
        mime = getattr(res, "mime_type", "") or "unknown type"
        return f"[resource {uri}: {mime}, {_size(getattr(res, 'blob', ''))}]"
    return f"[{kind or 'unknown'} content]"


def _size(data: str) -> str:
    """Decoded size of base64 ``data``, human readable."""
    try:
        n = len(base64.b64decode(data or "", validate=False))
    except (ValueError, TypeError):
        n = len(data or "")
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} kB"
