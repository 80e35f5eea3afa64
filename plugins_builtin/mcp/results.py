"""Turning an MCP ``CallToolResult`` into what the model reads: text and images.

Text blocks are joined; embedded text resources are included.  Images (and embedded image
resources) go to the model as :class:`agent.contract.messages.ImagePart`, which the provider sends
in its own image blocks; the text keeps a one-line marker where each was.  Audio and other binary
content is summarised (no provider takes it in a tool result).  Structured content is given as JSON
text alongside the blocks, unless a text block already carries the same value (the MCP spec asks
servers to send it as text too, and sending it twice would double it; the SDKs wrap a plain return
value as ``{"result": value}`` next to its text). Works on the SDK's objects by attribute, so this
module never imports the SDK.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from agent.contract.messages import IMAGE_TYPES, ImagePart, human_size


def result_text(result: Any, reader: str = "") -> str:
    """The model-facing text of a ``CallToolResult`` (see :func:`result_content`)."""
    return result_content(result, reader)[0]


def result_content(result: Any, reader: str = "", source: str = ""
                   ) -> tuple[str, list[ImagePart]]:
    """The text and images of a ``CallToolResult``; ``reader`` names the tool that reads a
    resource link (the server's ``read_resource``), when there is one; ``source`` names the
    tool for the images' placeholders."""
    images: list[ImagePart] = []
    parts = [_block_text(block, reader, images, source)
             for block in (getattr(result, "content", None) or [])]
    parts = [p for p in parts if p]
    structured = getattr(result, "structured_content", None)
    if structured is not None and not _carried(structured, result):
        as_json = json.dumps(structured, ensure_ascii=False, indent=2)
        parts.append(f"[structured content]\n{as_json}" if parts else as_json)
    if not parts:
        return ("(the tool reported an error without a message)"
                if getattr(result, "is_error", False) else "(no output)"), images
    return "\n".join(parts), images


def _carried(structured: Any, result: Any) -> bool:
    """Whether a text block of ``result`` already says ``structured``: the same JSON, or
    the value the SDKs wrap a plain return value in (``{"result": 5}`` for the text ``5``)."""
    wrapped = (structured.get("result", ...) if isinstance(structured, dict)
               and len(structured) == 1 else ...)
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", "") != "text":
            continue
        text = str(getattr(block, "text", ""))
        if wrapped is not ... and text == str(wrapped):
            return True
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if value == structured or (wrapped is not ... and value == wrapped):
            return True
    return False


def image_of(mime: str, data: str, source: str) -> ImagePart | None:
    """An image part for base64 ``data`` of type ``mime``, or None when it is no image."""
    mime = (mime or "").split(";")[0].strip().lower()
    if mime == "image/jpg":
        mime = "image/jpeg"
    if not mime.startswith("image/"):
        return None
    return ImagePart(mime, data or "", source)


def _block_text(block: Any, reader: str, images: list[ImagePart], source: str) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind == "image":
        image = image_of(getattr(block, "mime_type", ""), getattr(block, "data", ""), source)
        if image is not None and image.media_type in IMAGE_TYPES:
            images.append(image)
            return f"[image {len(images)}: {image.media_type}, {human_size(image.size)}]"
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
        image = image_of(mime, getattr(res, "blob", ""), source)
        if image is not None and image.media_type in IMAGE_TYPES:
            images.append(image)
            return (f"[resource {uri}: image {len(images)}, {image.media_type}, "
                    f"{human_size(image.size)}]")
        return f"[resource {uri}: {mime}, {_size(getattr(res, 'blob', ''))}]"
    return f"[{kind or 'unknown'} content]"


def _size(data: str) -> str:
    """Decoded size of base64 ``data``, human readable."""
    try:
        n = len(base64.b64decode(data or "", validate=False))
    except (ValueError, TypeError):
        n = len(data or "")
    return human_size(n)
