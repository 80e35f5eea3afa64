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


@dataclass
class ToolResultPart:
    call_id: str
    name: str
    output: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


Part = TextPart | ReasoningPart | ToolCallPart | ToolResultPart

_PART_TYPES: dict[str, type[Part]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
}


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
            parts.append(kind(**fields))
        return cls(data["role"], parts, bool(data.get("pinned", False)))
