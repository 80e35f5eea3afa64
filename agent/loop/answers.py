"""Answers that are not a stream, and answers that hold nothing: never a silent end.

A streamed request can come back as something else: a gateway that answers with the whole
JSON message, a 200 whose body is an error object (``insufficient_quota``), an HTML page from
a proxy.  :func:`read_plain` reads such a body and either hands back the JSON answer (the
provider plugin's assembler turns it into the same events a stream would have made) or raises
a :class:`ProviderError` that carries the server's own words, or names what arrived.

:func:`check_answer` refuses a finished step with no text and no tool call (a reasoning-only
answer, an empty output list): the turn would otherwise end with nothing said and exit 0.
The same rule holds on every wire format, since all three finish through
:func:`agent.loop.streaming.attempt_sse`.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from agent.contract.messages import ReasoningPart, TextPart, ToolCallPart
from agent.contract.providers import ProviderError, StepFinished

#: The most of a non-stream body that is read (a whole answer is far smaller).
PLAIN_LIMIT = 16 * 1024 * 1024

#: The error types a retry may cure when a server reports them in a 200 body.
_PASSING = ("overloaded_error", "api_error", "server_error", "rate_limit_error")

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def content_type(response: Any) -> str:
    """The media type of ``response`` (lower case, without parameters); "" when unnamed."""
    value = str(response.headers.get("content-type") or "")
    return value.split(";", 1)[0].strip().lower()


def is_event_stream(response: Any) -> bool:
    """Whether ``response`` says it is an event stream (or says nothing: read it as one)."""
    kind = content_type(response)
    return kind in ("", "text/event-stream")


def _error_of(value: Any) -> tuple[str, str | None] | None:
    """(message, type or code) when ``value`` is an error object of any of the formats:
    ``{"error": {...}}`` (OpenAI), ``{"type": "error", "error": {...}}`` (Anthropic),
    ``{"error": "text"}``."""
    if not isinstance(value, dict) or "error" not in value:
        return None
    if value.get("choices") or value.get("output") or value.get("content"):
        return None  # an answer that names an error field, not an error
    inner = value["error"]
    if isinstance(inner, str) and inner.strip():
        return inner.strip(), None
    if not isinstance(inner, dict):
        return None
    message = inner.get("message")
    kind = inner.get("code") or inner.get("type")
    text = message if isinstance(message, str) and message.strip() else json.dumps(inner)[:300]
    return text.strip(), (str(kind) if kind else None)


def _describe(body: bytes, kind: str) -> str:
    """A short account of a body that is neither an answer nor an error object."""
    if not body.strip():
        return "an empty body"
    title = _TITLE.search(body[:65536])
    if title:
        text = html.unescape(title.group(1).decode("utf-8", "replace")).strip()
        return f"an HTML page titled {' '.join(text.split())[:120]!r}"
    text = body[:2000].decode("utf-8", "replace")
    if "html" in kind or text.lstrip().startswith("<"):
        text = _TAGS.sub(" ", text)
    text = " ".join(text.split())
    return repr(text[:160] + ("..." if len(text) > 160 else ""))


async def read_plain(clock: Any, response: Any, host: str) -> Any:
    """The JSON answer in the non-stream body of ``response``, read within ``clock``'s
    deadlines; raises :class:`ProviderError` with the server's message for an error object,
    and naming the content type and what the body held for anything else."""
    kind = content_type(response) or "no content type"
    body = b""
    async for chunk in _bounded_chunks(clock, response):
        body += chunk
        if len(body) > PLAIN_LIMIT:
            raise ProviderError(f"{host} answered with {kind} instead of an event stream, "
                                f"more than {PLAIN_LIMIT // (1024 * 1024)} MB of it",
                                kind="protocol", output_started=False)
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ProviderError(f"{host} answered with {kind} instead of an event stream: "
                            f"{_describe(body, kind)}", kind="protocol") from None
    error = _error_of(value)
    if error is not None:
        message, code = error
        suffix = f" ({code})" if code and code not in message else ""
        raise ProviderError(f"{host} answered with an error: {message}{suffix}",
                            kind="request", retryable=code in _PASSING)
    if not isinstance(value, dict):
        raise ProviderError(f"{host} answered with {kind} instead of an event stream: "
                            f"{_describe(body, kind)}", kind="protocol")
    return value


async def _bounded_chunks(clock: Any, response: Any) -> Any:
    chunks = response.aiter_bytes()
    try:
        while True:
            try:
                chunk = await clock.bounded(chunks.__anext__())
            except StopAsyncIteration:
                return
            yield chunk
    finally:
        await chunks.aclose()


def check_answer(finished: StepFinished, host: str) -> None:
    """Refuse a step with no text and no tool call: the user is told "the model returned
    nothing" (and why, when the stop reason says), never a silent end."""
    parts = finished.message.parts
    if any(isinstance(p, ToolCallPart) for p in parts):
        return
    if any(isinstance(p, TextPart) and p.text.strip() for p in parts):
        return
    why = ""
    reasoned = any(isinstance(p, ReasoningPart) for p in parts)
    if finished.stop_reason == "max_tokens":
        why = " (it reached the output token limit" + (" while reasoning)" if reasoned else ")")
    elif finished.stop_reason == "refusal":
        why = " (it refused)"
    elif reasoned:
        why = " (only reasoning, no answer)"
    raise ProviderError(f"{host}: the model returned nothing{why}", kind="empty",
                        output_started=True)
