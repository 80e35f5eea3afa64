"""Events: the one stream between the agent loop and every front end.

``Session.run()`` yields these; the full-screen UI, the headless printers and the tests all
consume the same stream.  ``to_json()`` is the headless ``--json`` form, documented by
``docs/events.schema.json`` (every object carries ``schema_version``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agent.contract.messages import clean_text

#: Version of the ``--json`` event shapes (2: the final ``result`` event; the done event's
#: reasoning and cache-write token counts).
SCHEMA_VERSION = 2


@dataclass
class Event:
    """Base class.  ``type`` is the JSON name of the event."""

    type: ClassVar[str] = "event"

    def payload(self) -> dict[str, Any]:
        return {}

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "schema_version": SCHEMA_VERSION, **self.payload()}

    def to_line(self) -> str:
        """The JSON form as one line of UTF-8-encodable text (the headless ``--json`` line,
        without its newline).  Lone surrogates become U+FFFD, so a stray ``\\ud800`` from a
        model or a non-UTF-8 file name can never make the writer fail."""
        return clean_text(json.dumps(self.to_json(), ensure_ascii=False, default=str))


@dataclass
class TextEvent(Event):
    """A chunk of the assistant's answer."""

    text: str
    type: ClassVar[str] = "text"

    def payload(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass
class ReasoningEvent(Event):
    """A chunk of the model's reasoning (summaries or thinking)."""

    text: str
    type: ClassVar[str] = "reasoning"

    def payload(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass
class ToolStartEvent(Event):
    """The model began a tool call; its arguments are still streaming."""

    id: str
    name: str
    type: ClassVar[str] = "tool-start"

    def payload(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name}


@dataclass
class ToolCallEvent(Event):
    """A complete tool call, before the gate decides on it."""

    id: str
    name: str
    input: dict[str, Any]
    origin: str = "model"
    type: ClassVar[str] = "tool-call"

    def payload(self) -> dict[str, Any]:
        out = {"id": self.id, "name": self.name, "input": self.input}
        if self.origin != "model":
            out["origin"] = self.origin
        return out


@dataclass
class ToolOutputEvent(Event):
    """Live output of a running tool (bash)."""

    id: str
    chunk: str
    type: ClassVar[str] = "tool-output"

    def payload(self) -> dict[str, Any]:
        return {"id": self.id, "chunk": self.chunk}


@dataclass
class ToolResultEvent(Event):
    """A tool call finished; ``output`` is what the model receives."""

    id: str
    name: str
    output: str
    summary: str | None = None
    display: dict[str, Any] | None = None
    type: ClassVar[str] = "tool-result"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "output": self.output}
        if self.summary:
            out["summary"] = self.summary
        return out


@dataclass
class ToolErrorEvent(Event):
    """A tool call failed (bad arguments, unknown tool, the tool raised)."""

    id: str
    name: str
    error: str
    type: ClassVar[str] = "tool-error"

    def payload(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "error": self.error}


@dataclass
class ToolDeniedEvent(Event):
    """A tool call was refused and never ran.  ``by`` is ``guard``, ``rule``, ``user``,
    ``headless`` or ``yolo``; ``reason`` is the text the model was given; ``allow`` (when
    known) the config line, flag or command that would let the person allow it."""

    id: str
    name: str
    reason: str
    by: str = "rule"
    allow: str = ""
    type: ClassVar[str] = "tool-denied"

    def payload(self) -> dict[str, Any]:
        out = {"id": self.id, "name": self.name, "reason": self.reason, "by": self.by}
        if self.allow:
            out["allow"] = self.allow
        return out


@dataclass
class CompactedEvent(Event):
    """The history sent on the wire was compacted from ``before`` to ``after`` messages."""

    before: int
    after: int
    type: ClassVar[str] = "compacted"

    def payload(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after}


@dataclass
class NoticeEvent(Event):
    """Something the user should know (endpoint switch, step cap, warnings)."""

    text: str
    type: ClassVar[str] = "notice"

    def payload(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass
class ErrorEvent(Event):
    """The turn failed.  ``error`` is always a plain message string; ``kind`` classifies it
    (``provider``, ``budget``, ``internal``)."""

    error: str
    kind: str = "provider"
    status: int | None = None
    type: ClassVar[str] = "error"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.error, "kind": self.kind}
        if self.status is not None:
            out["status"] = self.status
        return out


@dataclass
class SaveFailedEvent(Event):
    """The session could not be saved: ``unsaved`` of its messages are not in the state
    database (``error`` says why).  Sent once per turn in which saving fails; a headless run
    then exits 5 (:data:`agent.boot.headless.EXIT_UNSAVED`) unless a later write caught up."""

    error: str
    unsaved: int
    session: str
    type: ClassVar[str] = "save-failed"

    def payload(self) -> dict[str, Any]:
        return {"error": self.error, "unsaved": self.unsaved, "session": self.session}


@dataclass
class SessionForkedEvent(Event):
    """Two processes continued one session at once (two ``agent -c``).  With ``moved``,
    another live process held ``forked_from`` when this run loaded it: this run's messages go
    on under the new id ``session`` (what it read copied, less the other run's turn in
    progress) and ``forked_from`` keeps the other run's conversation untouched.
    Without, this run kept ``forked_from`` and the other run moved to ``session``."""

    forked_from: str
    session: str
    moved: bool = True
    type: ClassVar[str] = "session-forked"

    def payload(self) -> dict[str, Any]:
        return {"forkedFrom": self.forked_from, "session": self.session, "moved": self.moved}


@dataclass
class DoneEvent(Event):
    """The turn ended.  ``reason``: ``end`` (the model finished), ``max_steps``, ``error``,
    ``interrupted``, ``budget``.  Token fields are absent when the turn was aborted."""

    reason: str = "end"
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    steps: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    reasoning_tokens: int | None = None
    cache_write_tokens: int | None = None
    type: ClassVar[str] = "done"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "steps": self.steps}
        if self.input_tokens is not None:
            out["inputTokens"] = self.input_tokens
            out["outputTokens"] = self.output_tokens or 0
            out["cachedTokens"] = self.cached_tokens or 0
            out["reasoningTokens"] = self.reasoning_tokens or 0
            out["cacheWriteTokens"] = self.cache_write_tokens or 0
        if self.cost_usd is not None:
            out["costUsd"] = round(self.cost_usd, 6)
        out.update(self.extra)
        return out


@dataclass
class InitEvent(Event):
    """The first line of a headless ``stream-json`` run, before any turn: the session it runs
    in and what it runs with (Claude Code's ``system``/``init`` message, same names)."""

    session_id: str
    cwd: str = ""
    model: str = ""
    tools: list[str] = field(default_factory=list)
    permission_mode: str = "default"
    type: ClassVar[str] = "system"

    def payload(self) -> dict[str, Any]:
        return {"subtype": "init", "session_id": self.session_id, "cwd": self.cwd,
                "model": self.model, "tools": list(self.tools),
                "permission_mode": self.permission_mode}


@dataclass
class ResultEvent(Event):
    """The final record of a headless turn (``agent -p``), after ``done``: what a script
    needs without reading the rest of the stream.  Built by the headless front end
    (:mod:`agent.boot.headless_result`); ``fields`` holds every field but ``type`` and
    ``schema_version``, named as in docs/headless.md."""

    fields: dict[str, Any] = field(default_factory=dict)
    type: ClassVar[str] = "result"

    def payload(self) -> dict[str, Any]:
        return dict(self.fields)


@dataclass
class TurnStartEvent(Event):
    """A turn began (passed to ``agent_event`` hooks; not part of the headless stream)."""

    prompt: str
    type: ClassVar[str] = "turn-start"

    def payload(self) -> dict[str, Any]:
        return {"prompt": self.prompt}


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        TextEvent, ReasoningEvent, ToolStartEvent, ToolCallEvent, ToolOutputEvent,
        ToolResultEvent, ToolErrorEvent, ToolDeniedEvent, CompactedEvent, NoticeEvent,
        ErrorEvent, SaveFailedEvent, SessionForkedEvent, DoneEvent, ResultEvent, InitEvent,
    )
}
