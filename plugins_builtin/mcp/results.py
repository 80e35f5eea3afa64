"""Turning an MCP ``CallToolResult`` into what the model reads: text and images.

Text blocks are joined; embedded text resources are included.  Images (and embedded image
resources) go to the model as :class:`agent.contract.messages.ImagePart`, which the provider sends
in its own image blocks; the text keeps a one-line marker where each was.  Audio and other binary
content is summarised (no provider takes it in a tool result).  Structured content is given as JSON
text alongside the blocks, unless the blocks already carry the same value (the MCP spec asks
servers to send it as text too, and sending it twice would double it: see :func:`_carried` for
the shapes servers mirror it in); a base64 payload it repeats is sent once.  Works on the SDK's
objects by attribute, so this module never imports the SDK.
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
        as_json = json.dumps(_without_binary(structured, result), ensure_ascii=False, indent=2)
        parts.append(f"[structured content]\n{as_json}" if parts else as_json)
    if not parts:
        return ("(the tool reported an error without a message)"
                if getattr(result, "is_error", False) else "(no output)"), images
    return "\n".join(parts), images


def _carried(structured: Any, result: Any) -> bool:
    """Whether the content blocks of ``result`` already say ``structured``.

    Servers mirror their content in ``structuredContent`` in several shapes: the same JSON as
    a text block; a plain return value wrapped as ``{"result": value}`` (the SDKs); the text
    under one key, ``{"content": text}`` (the reference filesystem server); or the content
    blocks themselves, ``{"content": [{"type": "image", "data": ...}]}``.  Each is sent once."""
    blocks = list(getattr(result, "content", None) or [])
    texts = [str(getattr(b, "text", "")) for b in blocks if getattr(b, "type", "") == "text"]
    candidates = [structured]
    if isinstance(structured, dict) and len(structured) == 1:
        candidates.append(next(iter(structured.values())))
    for value in candidates:
        if _says(value, texts) or _mirrors(value, blocks):
            return True
    return False


def _says(value: Any, texts: list[str]) -> bool:
    """Whether ``value`` is one of ``texts`` (all of them joined counts), as text or as JSON."""
    if isinstance(value, str) and (value in texts or value == "\n".join(texts)):
        return True
    for text in texts:
        if not isinstance(value, str) and text == json.dumps(value):
            return True
        if text == str(value) and isinstance(value, int | float | bool):
            return True
        try:
            if json.loads(text) == value:
                return True
        except ValueError:
            continue
    return False


def _mirrors(value: Any, blocks: list[Any]) -> bool:
    """Whether ``value`` is a list of content blocks equal to ``blocks`` (type, text, data)."""
    if not isinstance(value, list) or len(value) != len(blocks) or not blocks:
        return False
    for item, block in zip(value, blocks, strict=True):
        if not isinstance(item, dict) or item.get("type") != getattr(block, "type", None):
            return False
        for key in ("text", "data"):
            if key in item and item[key] != getattr(block, key, None):
                return False
    return True


def _without_binary(value: Any, result: Any) -> Any:
    """``value`` with every string that repeats a block's base64 payload (an image's or a
    blob's) replaced by a short marker: the model has that payload once already, and as text
    it would cost thousands of tokens."""
    payloads: dict[str, str] = {}
    for block in getattr(result, "content", None) or []:
        data = getattr(block, "data", None) or getattr(getattr(block, "resource", None),
                                                        "blob", None)
        if isinstance(data, str) and data:
            payloads[data] = f"[the {getattr(block, 'type', 'binary')} block's data, sent once]"

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return payloads.get(node, node)
        if isinstance(node, list):
            return [walk(item) for item in node]
        if isinstance(node, dict):
            return {key: walk(item) for key, item in node.items()}
        return node

    return walk(value) if payloads else value


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
