"""The provider-neutral conversation: messages made of typed parts.

Providers translate these to and from their wire formats; the store saves them as JSON.
Reasoning parts keep what a provider needs to accept them back on the next request
(Anthropic thinking signatures, OpenAI encrypted reasoning content and item ids).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]


def clean_text(text: str) -> str:
    """``text`` made encodable as UTF-8: lone surrogates become U+FFFD (a valid pair is
    joined into its character).

    Python strings can hold surrogates that no UTF-8 writer accepts: a model's ``\\ud800``
    JSON escape, an argv or stdin byte decoded with ``surrogateescape``, a file name that is
    not UTF-8.  One such character in the history would break every later request, the
    store and the headless output, so text is cleaned where it enters the history.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean_value(value: Any) -> Any:
    """:func:`clean_text` applied to every string (keys included) in a JSON-like value."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


@dataclass
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass
class ReasoningPart:
    """Model reasoning.  ``signature`` (Anthropic) or ``encrypted`` (OpenAI responses) lets the
    provider verify it when it is sent back; ``redacted`` holds Anthropic redacted thinking."""

    text: str = ""
    signature: str | None = None
    encrypted: str | None = None
    item_id: str | None = None
    redacted: str | None = None
    provider: str | None = None
    type: Literal["reasoning"] = "reasoning"


#: Key under which a tool call's unparseable argument text travels to the loop, which reports
#: it to the model as a tool error instead of failing the step.
INVALID_JSON = "__invalid_json__"


def decode_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments from the model's streamed JSON text.  Empty means no arguments;
    anything that is not a JSON object comes back as ``{INVALID_JSON: raw}``."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_JSON: raw}
    return value if isinstance(value, dict) else {INVALID_JSON: raw}


@dataclass
class ToolCallPart:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""
    item_id: str | None = None
    type: Literal["tool_call"] = "tool_call"


#: Image types every provider takes (Anthropic accepts exactly these four, OpenAI these too).
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: Largest image sent to a model, decoded (Anthropic refuses images over 5 MB).
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: Most image bytes one tool result or prompt carries, decoded; further images are dropped
#: with a note (every later request of the session sends them again).
MAX_IMAGES_BYTES = 10 * 1024 * 1024
#: Most images one tool result or prompt carries.
MAX_IMAGES = 8
#: What an image costs in input tokens, for estimates: both providers bill a large image at
#: roughly 1,100 to 1,600 tokens, whatever the size of its base64.
IMAGE_TOKENS = 1_600


@dataclass
class ImagePart:
    """An image for the model, provider-neutral: ``data`` is base64, ``media_type`` one of
    :data:`IMAGE_TYPES`; ``source`` says where it came from (``mcp__shots__snap``,
    ``feat:memo://logo``) for the placeholder a provider without images sends instead.

    In a user message it is a part of its own; in a tool result it travels in
    :attr:`ToolResultPart.images`.  Build them with :func:`bounded_images`.
    """

    media_type: str
    data: str
    source: str = ""
    type: Literal["image"] = "image"

    @property
    def size(self) -> int:
        """Decoded size in bytes (from the base64 length, without decoding)."""
        data = self.data.rstrip("=")
        return len(data) * 3 // 4

    def placeholder(self, why: str = "this model does not take images") -> str:
        """The text sent instead of the image where it cannot be sent."""
        source = f" from {self.source}" if self.source else ""
        return f"[image{source} ({self.media_type}, {human_size(self.size)}) not shown: {why}]"


def human_size(n: int) -> str:
    """``n`` bytes, for a person: ``812 bytes``, ``3.1 kB``, ``5.2 MB``."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / (1024 * 1024):.1f} MB"


def bounded_images(images: list[ImagePart]) -> tuple[list[ImagePart], list[str]]:
    """The images that may be sent, and a note for each one dropped: a type no provider
    takes, over :data:`MAX_IMAGE_BYTES`, past :data:`MAX_IMAGES` or :data:`MAX_IMAGES_BYTES`
    in all, or data that is not base64."""
    kept: list[ImagePart] = []
    notes: list[str] = []
    total = 0
    for image in images:
        why = ""
        if image.media_type not in IMAGE_TYPES:
            why = "models take only PNG, JPEG, GIF and WebP images"
        elif not _is_base64(image.data):
            why = "its data is not valid base64"
        elif image.size > MAX_IMAGE_BYTES:
            why = f"larger than the {human_size(MAX_IMAGE_BYTES)} an image may be"
        elif len(kept) >= MAX_IMAGES:
            why = f"only {MAX_IMAGES} images are sent at a time"
        elif total + image.size > MAX_IMAGES_BYTES:
            why = f"the images together would pass {human_size(MAX_IMAGES_BYTES)}"
        if why:
            notes.append(image.placeholder(f"dropped, {why}"))
            continue
        kept.append(image)
        total += image.size
    return kept, notes


def _is_base64(data: str) -> bool:
    import base64
    import binascii

    if not data or len(data) % 4:
        return False
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


@dataclass
class ToolResultPart:
    call_id: str
    name: str
    output: str
    is_error: bool = False
    #: Images the tool returned, sent in the provider's own content blocks next to ``output``.
    images: list[ImagePart] = field(default_factory=list)
    type: Literal["tool_result"] = "tool_result"


Part = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | ImagePart

_PART_TYPES: dict[str, type[Part]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "image": ImagePart,
}


def without_images(messages: list[Message], why: str = "this model does not take images"
                   ) -> tuple[list[Message], int]:
    """``messages`` with every image replaced by its text placeholder (for a provider that
    cannot take images), and how many were replaced.  The history itself is not changed."""
    out: list[Message] = []
    count = 0
    for msg in messages:
        if not any(isinstance(p, ImagePart) or (isinstance(p, ToolResultPart) and p.images)
                   for p in msg.parts):
            out.append(msg)
            continue
        parts: list[Part] = []
        for part in msg.parts:
            if isinstance(part, ImagePart):
                parts.append(TextPart(part.placeholder(why)))
                count += 1
            elif isinstance(part, ToolResultPart) and part.images:
                notes = "\n".join(image.placeholder(why) for image in part.images)
                count += len(part.images)
                parts.append(ToolResultPart(part.call_id, part.name,
                                            f"{part.output}\n{notes}", part.is_error))
            else:
                parts.append(part)
        out.append(Message(msg.role, parts, msg.pinned))
    return out, count


def has_images(messages: list[Message]) -> bool:
    """Whether any message carries an image."""
    return any(isinstance(p, ImagePart) or (isinstance(p, ToolResultPart) and p.images)
               for m in messages for p in m.parts)


@dataclass
class Message:
    """One message.  ``role`` is ``user``, ``assistant`` or ``tool`` (tool results)."""

    role: Role
    parts: list[Part] = field(default_factory=list)
    pinned: bool = False  # never pruned by compaction

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", [TextPart(text)])

    def clean(self) -> Message:
        """Make every text of the message encodable (see :func:`clean_text`), in place."""
        for part in self.parts:
            if isinstance(part, (TextPart, ReasoningPart)):
                part.text = clean_text(part.text)
            elif isinstance(part, ToolCallPart):
                part.arguments = clean_value(part.arguments)
                part.raw_arguments = clean_text(part.raw_arguments)
            elif isinstance(part, ToolResultPart):
                part.output = clean_text(part.output)
        return self

    @property
    def images(self) -> list[ImagePart]:
        """The message's own image parts (a tool result's images are on the result)."""
        return [p for p in self.parts if isinstance(p, ImagePart)]

    @property
    def text(self) -> str:
        """The concatenated visible text of the message."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "parts": [asdict(p) for p in self.parts]}
        if self.pinned:
            out["pinned"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        parts: list[Part] = []
        for raw in data.get("parts", []):
            kind = _PART_TYPES.get(raw.get("type", ""))
            if kind is None:
                continue  # a part type from a newer version: keep the rest of the message
            fields = {k: v for k, v in raw.items() if k in kind.__dataclass_fields__}
            if kind is ToolResultPart:
                fields["images"] = [ImagePart(**{k: v for k, v in i.items()
                                                 if k in ImagePart.__dataclass_fields__})
                                    for i in fields.get("images") or ()]
            parts.append(kind(**fields))
        return cls(data["role"], parts, bool(data.get("pinned", False)))
