"""Server-sent events split from a byte stream as it arrives, into plain JSON values.

The provider plugins read their model streams with this instead of the SDKs' own decoders:
the SDKs build a ``ServerSentEvent`` and then a typed model object (pydantic) for every event,
which was most of the CPU a streamed token cost.  Here an event is a ``(name, value)`` tuple:
``name`` is its ``event:`` line (or None) and ``value`` the parsed JSON of its data (or
:data:`DONE` for OpenAI's ``data: [DONE]``).

One rule for every wire format, and why it is fatal rather than skipped: a line that cannot be
read may have carried a piece of the answer or of a tool call's arguments, and skipping it
silently would run a tool call the model never made.  So an event whose data is not JSON, a
line that is neither a comment nor an SSE field, and (``named``, the Anthropic format) an event
without an ``event:`` line end the stream with :class:`MalformedStream` -- after every good
event before it, which :meth:`SSESplitter.feed` still returns.

Lines end in LF, CRLF or CR (https://html.spec.whatwg.org/multipage/server-sent-events.html);
a chunk may end anywhere, even between the CR and LF of one line ending.
"""

from __future__ import annotations

import json
from typing import Any

#: The data of OpenAI's end-of-stream event (``data: [DONE]``).
DONE: Any = "[DONE]"

#: SSE field names; any other name on a line is malformed.
SSE_FIELDS = (b"event", b"data", b"id", b"retry")

_loads = json.loads


class MalformedStream(Exception):
    """An SSE event the wire format does not allow: data that is not JSON, an unknown field,
    (Anthropic) an event without an ``event:`` line, or an event of the wrong shape for its
    format.  ``line`` is the offending text, clipped."""

    def __init__(self, why: str, line: str) -> None:
        super().__init__(f"{why}: {line}")
        self.why = why
        self.line = line


def clip(text: str | bytes, limit: int = 80) -> str:
    """``text`` (bytes decoded leniently) cut to ``limit`` characters for an error message."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "..."


class SSESplitter:
    """Incremental SSE parser: :meth:`feed` takes the bytes of one read and returns the events
    they complete, in order.  When an event is malformed, :meth:`feed` returns the good events
    before it and sets :attr:`error`; the caller handles those, then raises the error (nothing
    after it is read).  With ``named``, every event that has data needs an ``event:`` line."""

    __slots__ = ("named", "error", "_partial", "_skip_lf", "_event", "_data")

    def __init__(self, named: bool = False) -> None:
        self.named = named
        #: the first malformed event met, once :meth:`feed` has met one
        self.error: MalformedStream | None = None
        self._partial: list[bytes] = []  # the start of a line not yet ended
        self._skip_lf = False  # the last read ended in CR: an LF first in this one is its pair
        self._event: bytes | None = None
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[tuple[str | None, Any]]:
        """The events ``chunk`` completes (``(name, value)``), in order."""
        if self.error is not None:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            # A CR ends a line at once (so the event goes out now); if it was half of a
            # CRLF split between reads, the LF that begins the next read is dropped.
            self._skip_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            if chunk:
                self._partial.append(chunk)
            return []
        lines = chunk.split(b"\n")
        rest = lines.pop()  # after the last line end: the start of the next line
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial = []
        if rest:
            self._partial.append(rest)
        return self._lines(lines)

    def _lines(self, lines: list[bytes]) -> list[tuple[str | None, Any]]:
        out: list[tuple[str | None, Any]] = []
        for line in lines:
            if not line:
                if self._data:
                    event = self._dispatch()
                    if event is None:
                        return out
                    out.append(event)
                else:
                    self._event = None
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b":"):
                continue  # a comment: a keep-alive
            else:
                name, sep, value = line.partition(b":")
                if name not in SSE_FIELDS:
                    self.error = MalformedStream("a line that is not an SSE field", clip(line))
                    return out
                if name == b"data":  # "data" alone: an empty data line
                    self._data.append(b"")
                elif name == b"event":
                    self._event = value[1:] if value.startswith(b" ") else value
                # id and retry mean nothing to a model stream
        return out

    def _dispatch(self) -> tuple[str | None, Any] | None:
        data, event = self._data, self._event
        self._data, self._event = [], None
        payload = data[0] if len(data) == 1 else b"\n".join(data)
        name = None if event is None else event.decode("utf-8", "replace")
        if payload.startswith(b"[DONE]"):
            return name, DONE
        try:
            # Decoded first: json.loads of bytes would also sniff their encoding.
            value = _loads(payload.decode())
        except ValueError:  # UnicodeDecodeError included
            self.error = MalformedStream("an event whose data is not JSON",
                                         clip(b"data: " + data[0]))
            return None
        if self.named and name is None:
            self.error = MalformedStream("an event without an event: line",
                                         clip(b"data: " + data[0]))
            return None
        return name, value
