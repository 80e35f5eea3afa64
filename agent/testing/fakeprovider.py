"""A local fake model server that the real openai and anthropic SDKs accept.

It speaks three wire formats over HTTP/1.1 chunked server-sent events:

- OpenAI chat completions  ``POST /v1/chat/completions``
- OpenAI responses         ``POST /v1/responses``
- Anthropic messages       ``POST /v1/messages``

plus ``GET /v1/models`` (one body both SDKs parse).  Tests script replies in a
provider-neutral way; the server renders each one in whatever format the request's path asks
for, and records every request it received::

    with FakeProvider.start() as srv:
        srv.script(
            Reply(reasoning="Plan", text="Reading", tool_calls=[("read_file", {"path": "a"})]),
            Reply.text("done"),
            Reply.error(401, message="Incorrect API key provided"),
        )
        client = openai.OpenAI(base_url=srv.openai_url, api_key="x", max_retries=0)
        ...
        assert srv.requests[0].body["messages"][0]["role"] == "system"

Faults: :meth:`Reply.error` (a real error body per format), :meth:`Reply.stall` (accept and
send nothing, before or after the headers or mid-stream), :meth:`Reply.keepalive` (keep-alive
comments or pings forever, with no content), :meth:`Reply.drop_after` (stream some events,
then cut the connection), :meth:`Reply.reset` (read the request, then reset the connection),
:meth:`Reply.malformed` (broken SSE), :meth:`Reply.stream_error` (an error event mid-stream).
An empty script answers 500 saying so, so a test that under-scripts fails loudly.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = 1_700_000_000

# ---- replies ---------------------------------------------------------------------------------


def _split(text: str, pieces: int) -> list[str]:
    """Split ``text`` into up to ``pieces`` non-empty fragments (at least one, maybe empty)."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


class Reply:
    """One scripted reply, provider-neutral.

    ``Reply(reasoning=..., text=..., tool_calls=[(name, args), (name, args, id), ...],
    usage={...})`` streams, in order, reasoning, text, then each tool call.  ``args`` is a dict
    (sent as JSON) or a string (sent verbatim, e.g. to test malformed JSON).  ``usage`` keys
    follow :class:`agent.contract.providers.Usage`: ``input_tokens`` (all prompt tokens, cached ones
    included), ``output_tokens``, ``cached_tokens``, ``reasoning_tokens``,
    ``cache_write_tokens``.  ``stop_reason`` is ``end``/``tool_use``/``max_tokens`` (default:
    ``tool_use`` when there are tool calls).  ``signature`` (Anthropic thinking),
    ``encrypted`` (OpenAI reasoning item) and ``redacted`` (an Anthropic redacted_thinking
    block's data) ride along with the reasoning.  ``pieces`` is how many fragments each text
    and argument string is split into; ``delay`` is a pause before each event.
    """

    def __init__(
        self,
        text: str = "",
        *,
        reasoning: str = "",
        tool_calls: list[tuple[Any, ...]] | None = None,
        usage: dict[str, int] | None = None,
        stop_reason: str | None = None,
        signature: str = "sig-1",
        encrypted: str = "enc-1",
        reasoning_id: str = "rs_1",
        redacted: str | None = None,
        pieces: int = 3,
        delay: float = 0.0,
    ) -> None:
        #: the answer's text (named apart from the :meth:`text` constructor)
        self.answer = text
        self.reasoning = reasoning
        self.tool_calls = [self._norm_call(i, c) for i, c in enumerate(tool_calls or [])]
        self.usage = {"input_tokens": 10, "output_tokens": 5, **(usage or {})}
        self.stop_reason = stop_reason or ("tool_use" if self.tool_calls else "end")
        self.signature = signature
        self.encrypted = encrypted
        self.reasoning_id = reasoning_id
        self.redacted = redacted
        self.pieces = pieces
        self.delay = delay
        # faults
        self.status = 200
        self.body: Any = None
        self.error_message: str | None = None
        self.error_type: str | None = None
        self.headers: dict[str, str] = {}
        self.stall_seconds: float | None = None
        self.stall_after_events: int | None = None
        self.hold_until: threading.Event | None = None
        self.hold_after_events = 0
        self.drop_after_events: int | None = None
        self.raw_sse: str | None = None
        self.stream_error_after: int | None = None
        self.keepalive_after: int | None = None
        self.keepalive_every = 0.05
        self.keepalive_kind = "comment"
        #: keep-alives sent so far (a test waits for them instead of for time to pass)
        self.keepalives_sent = 0
        self.reset_after: int | None = None
        #: close the connection after this complete reply, without a ``Connection: close``
        #: header (a server ending an idle keep-alive connection); ``closed`` is set then
        self.close_after = False
        self.closed = threading.Event()
        self.inject_after: int | None = None
        self.inject_raw = ""
        #: answer a streaming request with the whole JSON message (a gateway that ignores
        #: ``stream``), or with ``raw_body`` under ``raw_type`` (an HTML page, a JSON error)
        self.as_json = False
        self.raw_body: bytes | None = None
        self.raw_type = "application/json"

    @staticmethod
    def _norm_call(index: int, call: tuple[Any, ...]) -> tuple[str, Any, str | None]:
        name, args, *rest = call
        return name, args, (rest[0] if rest else None)

    def __repr__(self) -> str:
        kind = "error" if self.status != 200 else "stream"
        return f"Reply<{kind} text={self.answer!r} tools={[c[0] for c in self.tool_calls]}>"

    # -- constructors (class-level names; an instance's ``text`` is its text) --

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> Reply:
        """A plain text answer."""
        return cls(text, **kwargs)

    @classmethod
    def tool_call(
        cls, name: str, arguments: dict[str, Any] | str, id: str | None = None, **kwargs: Any
    ) -> Reply:
        """A step that asks for one tool call (``id`` defaults per format: call_1/toolu_1)."""
        return cls(tool_calls=[(name, arguments, id)], **kwargs)

    @classmethod
    def error(
        cls,
        status: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        message: str | None = None,
        type: str | None = None,
    ) -> Reply:
        """An HTTP error.  ``body`` is sent verbatim as JSON when given; otherwise a real-shaped
        body is built per format from ``message``/``type``: openai
        ``{"error": {"message", "type", "param", "code"}}``, anthropic
        ``{"type": "error", "error": {"type", "message"}}``."""
        reply = cls()
        reply.status = status
        reply.body = body
        reply.headers = dict(headers or {})
        reply.error_message = message
        reply.error_type = type
        return reply

    @classmethod
    def plain(cls, reply: Reply | None = None) -> Reply:
        """``reply`` (default: a text) as the whole JSON message of its format, sent as
        ``application/json`` although the request asked for a stream: what some gateways
        do."""
        reply = reply or cls("a whole answer")
        reply.as_json = True
        return reply

    @classmethod
    def http_body(cls, body: str | bytes | Any, content_type: str = "application/json") -> Reply:
        """Answer 200 with exactly ``body`` (text, bytes, or a value sent as JSON) under
        ``content_type``: a 200 whose body is an error object, an HTML page from a proxy."""
        reply = cls()
        if isinstance(body, str):
            body = body.encode()
        elif not isinstance(body, bytes):
            body = json.dumps(body).encode()
        reply.raw_body = body
        reply.raw_type = content_type
        return reply

    @classmethod
    def stall(cls, seconds: float, after: int | None = None, reply: Reply | None = None) -> Reply:
        """Read the request, then send nothing for ``seconds`` and close the connection.
        With ``after``, first stream that many events of ``reply`` (default: a text), then
        go silent mid-stream."""
        reply = reply or cls("output that stops", pieces=6)
        reply.stall_seconds = seconds
        reply.stall_after_events = after
        return reply

    @classmethod
    def held(cls, until: threading.Event, after: int = 1, reply: Reply | None = None) -> Reply:
        """Stream the first ``after`` events of ``reply`` (default: a text), then nothing
        until ``until`` is set, then the rest: a model still answering for as long as the
        test needs to look at the screen mid-turn, without a clock.  The test sets ``until``
        once it has seen what it waits for (a stop of the server ends the wait too)."""
        reply = reply or cls("an answer that waits", pieces=6)
        reply.hold_until = until
        reply.hold_after_events = after
        return reply

    @classmethod
    def keepalive(cls, after: int = 0, reply: Reply | None = None, *, every: float = 0.05,
                  kind: str = "comment") -> Reply:
        """Answer 200, stream the first ``after`` events of ``reply`` (default: a text), then
        send only keep-alives every ``every`` seconds until the client leaves or the server
        stops: ``kind`` ``comment`` is an SSE comment line (``: keep-alive``), ``ping`` an
        event that carries nothing in the request's format (anthropic ``ping``, responses
        ``response.in_progress``, a chat chunk with an empty delta).  ``keepalives_sent``
        counts them as they go out."""
        reply = reply or cls("output that never ends", pieces=6)
        reply.keepalive_after = after
        reply.keepalive_every = every
        reply.keepalive_kind = kind
        return reply

    @classmethod
    def reset(cls, after: int | None = None, reply: Reply | None = None) -> Reply:
        """Read the request, then reset the TCP connection (RST): at once (``after`` None:
        no status line at all), or after streaming ``after`` events of ``reply``."""
        reply = reply or cls("output that is cut", pieces=6)
        reply.reset_after = -1 if after is None else after
        return reply

    @classmethod
    def drop_after(cls, n_events: int, reply: Reply | None = None) -> Reply:
        """Stream the first ``n_events`` SSE events of ``reply`` (default: a long text), then
        close the socket without finishing the chunked body."""
        reply = reply or cls("partial output that never finishes", pieces=6)
        reply.drop_after_events = n_events
        return reply

    @classmethod
    def malformed(cls, raw: str = "data: {this is not json\n\n", after: int | None = None,
                  reply: Reply | None = None) -> Reply:
        """Answer 200 ``text/event-stream`` with ``raw`` as the whole body; with ``after``,
        stream ``reply`` (default: a text) and slip ``raw`` in after that many events."""
        if after is None:
            reply = cls()
            reply.raw_sse = raw
            return reply
        reply = reply or cls("words around a bad line", pieces=4)
        reply.inject_after = after
        reply.inject_raw = raw
        return reply

    @classmethod
    def stream_error(
        cls,
        message: str = "Overloaded",
        type: str = "overloaded_error",
        after: int = 1,
        reply: Reply | None = None,
    ) -> Reply:
        """Stream ``after`` events of ``reply`` (default: a text), then an in-stream error event
        in the request's format, then end the stream cleanly."""
        reply = reply or cls("some output", pieces=4)
        reply.stream_error_after = after
        reply.error_message = message
        reply.error_type = type
        return reply


# ---- rendering -------------------------------------------------------------------------------


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class _Render:
    """Turns a :class:`Reply` into SSE events (or a JSON body) for one wire format."""

    def __init__(self, reply: Reply, body: dict[str, Any]) -> None:
        self.r = reply
        self.model = body.get("model") or "fake-model"

    # -- openai chat completions --

    def chat_events(self) -> list[bytes]:
        r = self.r

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _sse({
                "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": CREATED,
                "model": self.model,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            })

        out = [chunk({"role": "assistant", "content": ""})]
        # Not OpenAI itself: the DeepSeek/vLLM convention for streamed reasoning on chat.
        for piece in _split(r.reasoning, r.pieces) if r.reasoning else []:
            out.append(chunk({"reasoning_content": piece}))
        for piece in _split(r.answer, r.pieces) if r.answer else []:
            out.append(chunk({"content": piece}))
        for i, (name, args, cid) in enumerate(r.tool_calls):
            first = {"index": i, "id": cid or f"call_{i + 1}", "type": "function",
                     "function": {"name": name, "arguments": ""}}
            out.append(chunk({"tool_calls": [first]}))
            for piece in _split(_args_text(args), r.pieces):
                out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
        finish = {"end": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
        out.append(chunk({}, finish.get(r.stop_reason, r.stop_reason)))
        out.append(_sse({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": CREATED,
            "model": self.model, "choices": [], "usage": self.chat_usage(),
        }))
        out.append(_sse("[DONE]"))
        return out

    def chat_usage(self) -> dict[str, Any]:
        u = self.r.usage
        return {
            "prompt_tokens": u["input_tokens"], "completion_tokens": u["output_tokens"],
            "total_tokens": u["input_tokens"] + u["output_tokens"],
            "prompt_tokens_details": {"cached_tokens": u.get("cached_tokens", 0)},
            "completion_tokens_details": {"reasoning_tokens": u.get("reasoning_tokens", 0)},
        }

    def chat_json(self) -> dict[str, Any]:
        r = self.r
        message: dict[str, Any] = {"role": "assistant", "content": r.answer or None}
        if r.tool_calls:
            message["tool_calls"] = [
                {"id": cid or f"call_{i + 1}", "type": "function",
                 "function": {"name": name, "arguments": _args_text(args)}}
                for i, (name, args, cid) in enumerate(r.tool_calls)
            ]
        finish = {"end": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
        return {
            "id": "chatcmpl-1", "object": "chat.completion", "created": CREATED,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish.get(r.stop_reason, r.stop_reason)}],
            "usage": self.chat_usage(),
        }

    # -- openai responses --

    def responses_items(self) -> list[dict[str, Any]]:
        r = self.r
        items: list[dict[str, Any]] = []
        if r.reasoning:
            summary = [{"type": "summary_text", "text": r.reasoning}] if r.reasoning else []
            items.append({"id": r.reasoning_id, "type": "reasoning", "summary": summary,
                          "encrypted_content": r.encrypted, "status": "completed"})
        if r.answer:
            items.append({"id": "msg_1", "type": "message", "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": r.answer,
                                       "annotations": []}]})
        for i, (name, args, cid) in enumerate(r.tool_calls):
            items.append({"id": f"fc_{i + 1}", "type": "function_call",
                          "call_id": cid or f"call_{i + 1}", "name": name,
                          "arguments": _args_text(args), "status": "completed"})
        return items

    def responses_usage(self) -> dict[str, Any]:
        u = self.r.usage
        return {
            "input_tokens": u["input_tokens"],
            "input_tokens_details": {"cached_tokens": u.get("cached_tokens", 0)},
            "output_tokens": u["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": u.get("reasoning_tokens", 0)},
            "total_tokens": u["input_tokens"] + u["output_tokens"],
        }

    def response_obj(self, status: str, output: list[dict[str, Any]], usage: Any) -> dict[str, Any]:
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": "resp_1", "object": "response", "created_at": CREATED, "model": self.model,
            "status": status, "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": incomplete,
            "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
            "text": {"format": {"type": "text"}}, "usage": usage,
        }

    def responses_events(self) -> list[bytes]:
        r = self.r
        seq = 0
        out: list[bytes] = []

        def ev(kind: str, **data: Any) -> None:
            nonlocal seq
            out.append(_sse({"type": kind, "sequence_number": seq, **data}, event=kind))
            seq += 1

        ev("response.created", response=self.response_obj("in_progress", [], None))
        ev("response.in_progress", response=self.response_obj("in_progress", [], None))
        items = self.responses_items()
        for idx, item in enumerate(items):
            kind, iid = item["type"], item["id"]
            if kind == "reasoning":
                ev("response.output_item.added", output_index=idx,
                   item={"id": iid, "type": "reasoning", "summary": [], "status": "in_progress"})
                if r.reasoning:
                    ev("response.reasoning_summary_part.added", item_id=iid, output_index=idx,
                       summary_index=0, part={"type": "summary_text", "text": ""})
                    for piece in _split(r.reasoning, r.pieces):
                        ev("response.reasoning_summary_text.delta", item_id=iid, output_index=idx,
                           summary_index=0, delta=piece)
                    ev("response.reasoning_summary_text.done", item_id=iid, output_index=idx,
                       summary_index=0, text=r.reasoning)
                    ev("response.reasoning_summary_part.done", item_id=iid, output_index=idx,
                       summary_index=0, part={"type": "summary_text", "text": r.reasoning})
            elif kind == "message":
                ev("response.output_item.added", output_index=idx,
                   item={**item, "status": "in_progress", "content": []})
                ev("response.content_part.added", item_id=iid, output_index=idx, content_index=0,
                   part={"type": "output_text", "text": "", "annotations": []})
                for piece in _split(r.answer, r.pieces):
                    ev("response.output_text.delta", item_id=iid, output_index=idx,
                       content_index=0, delta=piece, logprobs=[])
                ev("response.output_text.done", item_id=iid, output_index=idx, content_index=0,
                   text=r.answer, logprobs=[])
                ev("response.content_part.done", item_id=iid, output_index=idx, content_index=0,
                   part={"type": "output_text", "text": r.answer, "annotations": []})
            else:
                ev("response.output_item.added", output_index=idx,
                   item={**item, "arguments": "", "status": "in_progress"})
                for piece in _split(item["arguments"], r.pieces):
                    ev("response.function_call_arguments.delta", item_id=iid, output_index=idx,
                       delta=piece)
                ev("response.function_call_arguments.done", item_id=iid, output_index=idx,
                   arguments=item["arguments"])
            ev("response.output_item.done", output_index=idx, item=item)
        if r.stop_reason == "max_tokens":
            ev("response.incomplete",
               response=self.response_obj("incomplete", items, self.responses_usage()))
        else:
            ev("response.completed",
               response=self.response_obj("completed", items, self.responses_usage()))
        return out

    def responses_json(self) -> dict[str, Any]:
        status = "incomplete" if self.r.stop_reason == "max_tokens" else "completed"
        return self.response_obj(status, self.responses_items(), self.responses_usage())

    # -- anthropic messages --

    def anthropic_usage(self) -> dict[str, int]:
        u = self.r.usage
        cached, written = u.get("cached_tokens", 0), u.get("cache_write_tokens", 0)
        return {
            "input_tokens": max(0, u["input_tokens"] - cached - written),
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": written,
            "output_tokens": u["output_tokens"],
        }

    def anthropic_blocks(self) -> list[dict[str, Any]]:
        r = self.r
        blocks: list[dict[str, Any]] = []
        if r.reasoning:
            blocks.append({"type": "thinking", "thinking": r.reasoning, "signature": r.signature})
        if r.redacted:
            blocks.append({"type": "redacted_thinking", "data": r.redacted})
        if r.answer:
            blocks.append({"type": "text", "text": r.answer})
        for i, (name, args, cid) in enumerate(r.tool_calls):
            blocks.append({"type": "tool_use", "id": cid or f"toolu_{i + 1}", "name": name,
                           "input": args})
        return blocks

    def anthropic_stop(self) -> str:
        return {"end": "end_turn"}.get(self.r.stop_reason, self.r.stop_reason)

    def anthropic_events(self) -> list[bytes]:
        r = self.r
        out: list[bytes] = []

        def ev(kind: str, **data: Any) -> None:
            out.append(_sse({"type": kind, **data}, event=kind))

        usage = self.anthropic_usage()
        ev("message_start", message={
            "id": "msg_01", "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        })
        for idx, block in enumerate(self.anthropic_blocks()):
            kind = block["type"]
            if kind == "thinking":
                ev("content_block_start", index=idx,
                   content_block={"type": "thinking", "thinking": "", "signature": ""})
                out.append(_sse({"type": "ping"}, event="ping"))
                for piece in _split(r.reasoning, r.pieces):
                    ev("content_block_delta", index=idx,
                       delta={"type": "thinking_delta", "thinking": piece})
                ev("content_block_delta", index=idx,
                   delta={"type": "signature_delta", "signature": r.signature})
            elif kind == "redacted_thinking":
                ev("content_block_start", index=idx, content_block=block)
            elif kind == "text":
                ev("content_block_start", index=idx, content_block={"type": "text", "text": ""})
                for piece in _split(r.answer, r.pieces):
                    ev("content_block_delta", index=idx,
                       delta={"type": "text_delta", "text": piece})
            else:
                ev("content_block_start", index=idx, content_block={**block, "input": {}})
                ev("content_block_delta", index=idx,
                   delta={"type": "input_json_delta", "partial_json": ""})
                for piece in _split(_args_text(block["input"]), r.pieces):
                    ev("content_block_delta", index=idx,
                       delta={"type": "input_json_delta", "partial_json": piece})
            ev("content_block_stop", index=idx)
        ev("message_delta", delta={"stop_reason": self.anthropic_stop(), "stop_sequence": None},
           usage={"output_tokens": usage["output_tokens"]})
        ev("message_stop")
        return out

    def anthropic_json(self) -> dict[str, Any]:
        return {
            "id": "msg_01", "type": "message", "role": "assistant", "model": self.model,
            "content": self.anthropic_blocks(), "stop_reason": self.anthropic_stop(),
            "stop_sequence": None, "usage": self.anthropic_usage(),
        }


FORMATS = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "anthropic",
}


_DEFAULT_MESSAGES = {
    400: "Invalid request", 401: "Invalid API key", 403: "Permission denied",
    404: "Not found", 429: "Rate limit exceeded", 500: "Internal server error",
    503: "Service unavailable", 529: "Overloaded",
}


def error_body(fmt: str, status: int, message: str | None, type: str | None) -> dict[str, Any]:
    """A real-shaped error body for ``fmt`` (``chat``/``responses``/``anthropic``)."""
    message = message or _DEFAULT_MESSAGES.get(status, f"error {status}")
    if fmt == "anthropic":
        kind = type or {
            400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message},
                "request_id": "req_fake"}
    kind = type or ("invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind, "param": None,
                      "code": None}}


def stream_error_event(fmt: str, message: str, type: str) -> bytes:
    """An in-stream error event in ``fmt``."""
    if fmt == "anthropic":
        return _sse({"type": "error", "error": {"type": type, "message": message}}, event="error")
    if fmt == "responses":
        return _sse({"type": "error", "code": type, "message": message, "param": None,
                     "sequence_number": 999}, event="error")
    return _sse({"error": {"message": message, "type": type, "param": None, "code": None}})


# ---- the server ------------------------------------------------------------------------------


@dataclass
class Request:
    """One recorded request.  ``headers`` keys are lower-case; ``body`` is the parsed JSON
    (``None`` when there was no body or it was not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None
    raw: bytes = b""
    time: float = field(default_factory=time.monotonic)
    #: the client's (host, port): one connection per distinct value
    peer: tuple[str, int] | None = None

    @property
    def json(self) -> Any:
        return self.body


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _read(self) -> Request:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        req = Request(self.command, path, headers, body, raw,
                      peer=(str(self.client_address[0]), int(self.client_address[1])))
        self.server.fake._record(req)
        return req

    def do_GET(self) -> None:
        req = self._read()
        fake = self.server.fake
        if req.path.rstrip("/") == "/v1/models":
            if fake.models_reply is not None:
                fmt = "anthropic" if "anthropic-version" in req.headers else "chat"
                self._error(fake.models_reply, fmt)
                return
            data = [{"id": m, "object": "model", "created": CREATED, "owned_by": "fake",
                     "type": "model", "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                    for m in fake.models]
            self._json(200, {"object": "list", "data": data, "has_more": False,
                             "first_id": data[0]["id"] if data else None,
                             "last_id": data[-1]["id"] if data else None})
            return
        self._json(404, {"error": {"message": f"no route GET {req.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        req = self._read()
        fmt = FORMATS.get(req.path)
        if fmt is None:
            msg = f"fake provider: no route POST {req.path}"
            self._json(404, error_body("chat", 404, msg, None))
            return
        self.server.fake._wait_for_hold()
        reply = self.server.fake._next(req)
        if reply is None:
            msg = f"fake provider: the script ran out (no reply scripted for POST {req.path})"
            # x-should-retry: false stops the SDK retrying, so the test fails at once.
            self._json(500, error_body(fmt, 500, msg, None), {"x-should-retry": "false"})
            return
        if reply.reset_after == -1:
            self._reset()
            return
        if reply.stall_seconds is not None and reply.stall_after_events is None:
            self.server.fake._stopping.wait(reply.stall_seconds)
            self.close_connection = True
            return
        if reply.status != 200:
            self._error(reply, fmt)
            return
        body = req.body if isinstance(req.body, dict) else {}
        render = _Render(reply, body)
        if reply.raw_sse is not None:
            self._stream([reply.raw_sse.encode()], reply)
            return
        if reply.raw_body is not None:
            self.send_response(200)
            self.send_header("content-type", reply.raw_type)
            self.send_header("content-length", str(len(reply.raw_body)))
            self.end_headers()
            self.wfile.write(reply.raw_body)
            self.wfile.flush()
            return
        if not body.get("stream") or reply.as_json:
            payload = {"chat": render.chat_json, "responses": render.responses_json,
                       "anthropic": render.anthropic_json}[fmt]()
            self._json(200, payload, reply.headers)
            return
        events = {"chat": render.chat_events, "responses": render.responses_events,
                  "anthropic": render.anthropic_events}[fmt]()
        if reply.inject_after is not None:
            events = [*events[: reply.inject_after], reply.inject_raw.encode(),
                      *events[reply.inject_after:]]
        if reply.stream_error_after is not None:
            events = events[: reply.stream_error_after]
            events.append(stream_error_event(fmt, reply.error_message or "error",
                                             reply.error_type or "server_error"))
        self._stream(events, reply, fmt)

    # -- writers --

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _error(self, reply: Reply, fmt: str) -> None:
        body = reply.body
        if body is None:
            body = error_body(fmt, reply.status, reply.error_message, reply.error_type)
        self._json(reply.status, body, reply.headers)

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the peer gets a TCP reset, not an orderly end."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.connection.close()

    def _keepalives(self, fmt: str, reply: Reply) -> None:
        """Send keep-alives until the client goes away or the server stops."""
        if reply.keepalive_kind == "ping":
            ping = {"anthropic": _sse({"type": "ping"}, event="ping"),
                    "responses": _sse({"type": "response.in_progress", "sequence_number": 1,
                                       "response": _Render(reply, {}).response_obj(
                                           "in_progress", [], None)},
                                      event="response.in_progress"),
                    "chat": _sse({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                                  "created": CREATED, "model": "fake-model",
                                  "choices": [{"index": 0, "delta": {"content": ""},
                                               "logprobs": None, "finish_reason": None}]}),
                    }[fmt]
        else:
            ping = b": keep-alive\n\n"
        while not self.server.fake._stopping.wait(reply.keepalive_every):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(ping), ping))
            self.wfile.flush()
            reply.keepalives_sent += 1

    def _stream(self, events: list[bytes], reply: Reply, fmt: str = "chat") -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        try:
            for n, event in enumerate(events):
                if reply.keepalive_after is not None and n >= reply.keepalive_after:
                    self.wfile.flush()
                    self._keepalives(fmt, reply)
                    self.close_connection = True
                    return
                if reply.reset_after is not None and n >= reply.reset_after:
                    self._reset()
                    return
                if reply.stall_after_events is not None and n >= reply.stall_after_events:
                    self.wfile.flush()
                    self.server.fake._stopping.wait(reply.stall_seconds or 0)
                    self.close_connection = True
                    return
                if reply.drop_after_events is not None and n >= reply.drop_after_events:
                    self.wfile.flush()
                    # Abrupt end: no terminating chunk, socket shut both ways.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.hold_until is not None and n == reply.hold_after_events:
                    self.wfile.flush()
                    while not reply.hold_until.wait(0.05):
                        if self.server.fake._stopping.is_set():
                            self.close_connection = True
                            return
                if reply.delay:
                    time.sleep(reply.delay)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if reply.close_after:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                reply.closed.set()
        except (BrokenPipeError, ConnectionResetError):
            # The client went away (e.g. a cancelled consumer): nothing to finish.
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeProvider

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or cancel reset keep-alive sockets: expected, not news.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


# Nagle + delayed ACK stall keep-alive requests ~40 ms each without this.
_Handler.disable_nagle_algorithm = True


class FakeProvider:
    """The fake server.  Start with :meth:`start` (also a context manager); stop with
    :meth:`stop`.  Attributes: ``base_url`` (``http://127.0.0.1:PORT``), ``openai_url``
    (``base_url + "/v1"``), ``requests`` (every :class:`Request`, in arrival order),
    ``models`` (ids for ``GET /v1/models``), ``models_reply`` (an error :class:`Reply` to
    answer ``GET /v1/models`` with instead), ``responder`` (called with each model
    :class:`Request` before the script is consulted; a :class:`Reply` it returns answers
    instead, None falls through to the script: for replies that depend on the request, or
    for watching the client at the moment each request arrives)."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.models: list[str] = ["fake-model", "fake-model-mini"]
        self.models_reply: Reply | None = None
        self.responder: Callable[[Request], Reply | None] | None = None
        self._script: deque[Reply] = deque()
        self._hold_until = 0
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        #: the pipe stop() writes to, to wake the server thread (see _serve)
        self._wake_r, self._wake_w = -1, -1
        self._scheme = "http"

    @classmethod
    def start(cls, ssl_context: Any = None) -> FakeProvider:
        """Bind 127.0.0.1 on a free port and serve in a background thread; with
        ``ssl_context`` (an ``ssl.SSLContext`` holding the server's certificate) over TLS,
        and the URLs say ``https``."""
        self = cls()
        httpd = _Server(("127.0.0.1", 0), _Handler)
        if ssl_context is not None:
            httpd.socket = ssl_context.wrap_socket(httpd.socket, server_side=True)
        self._scheme = "https" if ssl_context is not None else "http"
        httpd.fake = self
        httpd.timeout = 0  # handle_request() never waits: _serve calls it when one is ready
        self._httpd = httpd
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        """Accept connections until :meth:`stop` writes to the wake-up pipe.  Not
        ``serve_forever``: its shutdown waits for the next poll (25 ms on average at a
        0.05 s interval, paid by every test that stops a fake provider)."""
        httpd = self._httpd
        assert httpd is not None
        with selectors.DefaultSelector() as selector:
            selector.register(httpd, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is httpd and not self._stopping.is_set():
                        httpd.handle_request()  # ready: accepts at once, a thread serves it

    def stop(self) -> None:
        """Shut down; stalled replies wake and close."""
        self._stopping.set()
        if self._httpd is not None:
            os.write(self._wake_w, b"x")
            assert self._thread is not None
            self._thread.join()
            self._httpd.server_close()
            self._httpd = None
            os.close(self._wake_r)
            os.close(self._wake_w)

    def __enter__(self) -> FakeProvider:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"{self._scheme}://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"

    # -- scripting and inspection --

    def script(self, *replies: Reply) -> FakeProvider:
        """Queue replies (FIFO); each POST to a model endpoint consumes one."""
        with self._cond:
            self._script.extend(replies)
        return self

    def clear_script(self) -> int:
        """Drop every reply not used yet; returns how many there were."""
        with self._cond:
            left = len(self._script)
            self._script.clear()
            return left

    @property
    def pending(self) -> int:
        """How many scripted replies are still unused."""
        with self._cond:
            return len(self._script)

    def tool_results(self) -> list[str]:
        """The tool results the last chat-completions request carried (its ``role: tool``
        messages), as text, in order: what the model was told each call returned."""
        out: list[str] = []
        for message in self.requests[-1].body.get("messages", []):
            if message.get("role") == "tool":
                content = message["content"]
                out.append(content if isinstance(content, str) else json.dumps(content))
        return out

    def hold_until(self, n: int) -> FakeProvider:
        """A barrier: answer no model request until ``n`` model requests have arrived (two
        processes are then both known to be past everything they do before asking).  Held
        requests give up after 60 s and are answered as usual."""
        with self._cond:
            self._hold_until = n
            self._cond.notify_all()
        return self

    def _wait_for_hold(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._posts() >= self._hold_until
                                or self._stopping.is_set(), timeout=60)

    def _posts(self) -> int:
        return sum(1 for r in self.requests if r.method == "POST")

    def _next(self, req: Request | None = None) -> Reply | None:
        if self.responder is not None and req is not None:
            reply = self.responder(req)
            if reply is not None:
                return reply
        with self._cond:
            return self._script.popleft() if self._script else None

    def _record(self, req: Request) -> None:
        with self._cond:
            self.requests.append(req)
            self._cond.notify_all()

    def wait_requests(self, n: int, timeout: float = 5.0) -> list[Request]:
        """Block until at least ``n`` requests arrived; return them (raises TimeoutError)."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(f"expected {n} requests, got {len(self.requests)}")
            return list(self.requests)

    @property
    def paths(self) -> list[str]:
        """The path of every request so far, in order."""
        with self._cond:
            return [r.path for r in self.requests]

    @property
    def bodies(self) -> list[Any]:
        """The parsed body of every model request (POST) so far, in order."""
        with self._cond:
            return [r.body for r in self.requests if r.method == "POST"]

    @property
    def last(self) -> Request:
        with self._cond:
            return self.requests[-1]
