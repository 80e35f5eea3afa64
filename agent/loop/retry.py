"""HTTP plumbing shared by the provider plugins: the SDKs' HTTP client, server-directed
retry delays, and one rule for malformed server-sent events.

The provider plugins give the SDKs ``max_retries=0`` and retry in :mod:`agent.loop.streaming`,
which reads the server's delay with :func:`retry_after_seconds` (``retry-after-ms`` /
``retry-after``, seconds or an HTTP date) and its verdict with :func:`should_retry_header`
(``x-should-retry``).  :func:`async_http_client` builds the ``httpx2.AsyncClient`` handed to
the SDK (``http_client=...``); its transport checks every event stream with
:class:`SSEChecker`, so a malformed event fails the step the same way in all three wire
formats.  This lives in the core so plugins can share it without importing each other.
Import it lazily (it imports httpx2), i.e. from inside a provider's methods.
"""

from __future__ import annotations

import email.utils
import json
import math
import socket
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2

#: Headers carrying a server-directed delay, with the divisor that turns them into seconds.
RETRY_AFTER_HEADERS = (("retry-after-ms", 1000.0), ("retry-after", 1.0))


def _delay_seconds(value: str, divisor: float) -> float | None:
    """Seconds encoded by a retry header value (a number, or an HTTP date for retry-after)."""
    try:
        return float(value) / divisor
    except ValueError:
        pass
    if divisor != 1.0:
        return None
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    try:
        return float(email.utils.mktime_tz(parsed) - time.time())
    except (OverflowError, ValueError, OSError):
        return None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The delay the server asked for in ``retry-after-ms`` / ``retry-after`` (seconds, or an
    HTTP date), or None when it named none (or nothing parseable and positive)."""
    for name, divisor in RETRY_AFTER_HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        seconds = _delay_seconds(value, divisor)
        if seconds is not None and seconds >= 0 and not math.isnan(seconds):
            return seconds
    return None


def should_retry_header(headers: Mapping[str, str]) -> bool | None:
    """The server's own verdict in ``x-should-retry`` (``true``/``false``), else None."""
    value = (headers.get("x-should-retry") or "").strip().lower()
    return {"true": True, "false": False}.get(value)


class MalformedStream(Exception):
    """An SSE event the wire format does not allow: data that is not JSON, an unknown field,
    or (Anthropic) an event without an ``event:`` line.  ``line`` is the offending text."""

    def __init__(self, why: str, line: str) -> None:
        super().__init__(f"{why}: {line}")
        self.why = why
        self.line = line


#: SSE field names (https://html.spec.whatwg.org/multipage/server-sent-events.html).
SSE_FIELDS = ("event", "data", "id", "retry")


class SSEChecker:
    """Validates an SSE byte stream as it passes, one rule for every wire format: an event's
    data is JSON (or OpenAI's ``[DONE]``), every line is a comment or a known field, and with
    ``named`` every event with data has an ``event:`` line.

    Why fatal, not skipped: a line the SDK cannot read may have carried a piece of the answer
    or of a tool call's arguments; skipping it silently would run a tool call the model never
    made.  The openai SDK already fails on bad JSON; the anthropic SDK silently drops events
    without a name, which this makes fail the same way.
    """

    def __init__(self, named: bool) -> None:
        self.named = named
        self.pending = b""
        self.event: str | None = None
        self.data: list[str] = []
        self.first = ""

    def feed(self, chunk: bytes) -> int:
        """Check the complete lines ``chunk`` finishes; returns how many bytes of ``chunk``
        come before the first bad event's start (all of it when everything is fine).
        Raises nothing itself: the caller gets the error from :meth:`error`."""
        self.error: MalformedStream | None = None
        data = self.pending + chunk
        offset = -len(self.pending)  # position in ``chunk`` of data[0]
        start_of_event = 0
        pos = 0
        while True:
            end = _line_end(data, pos)
            if end is None:
                break
            line_end, next_pos = end
            line = data[pos:line_end].decode("utf-8", "replace")
            if not line:
                problem = self._dispatch()
                if problem is not None:
                    self.error = problem
                    return max(0, start_of_event + offset)
                start_of_event = next_pos
            else:
                problem = self._line(line)
                if problem is not None:
                    self.error = problem
                    return max(0, start_of_event + offset)
            pos = next_pos
        self.pending = data[pos:]
        return len(chunk)

    def _line(self, line: str) -> MalformedStream | None:
        if line.startswith(":"):
            return None  # a comment: keep-alive
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name not in SSE_FIELDS:
            return MalformedStream("a line that is not an SSE field", _clip(line))
        if name == "event":
            self.event = value
        elif name == "data":
            if not self.data:
                self.first = line
            self.data.append(value)
        return None

    def _dispatch(self) -> MalformedStream | None:
        event, data, first = self.event, self.data, self.first
        self.event, self.data, self.first = None, [], ""
        if not data:
            return None
        payload = "\n".join(data)
        if payload.strip() == "[DONE]":
            return None
        try:
            json.loads(payload)
        except ValueError:
            return MalformedStream("an event whose data is not JSON", _clip(first))
        if self.named and event is None:
            return MalformedStream("an event without an event: line", _clip(first))
        return None


def _line_end(data: bytes, pos: int) -> tuple[int, int] | None:
    """(end of the line starting at ``pos``, start of the next) or None if incomplete.  SSE
    lines end in CRLF, LF or CR; a CR at the very end may be half of a CRLF."""
    lf = data.find(b"\n", pos)
    cr = data.find(b"\r", pos, lf if lf >= 0 else len(data))
    if cr >= 0:  # a CR comes first
        if cr + 1 == len(data):
            return None
        return cr, cr + (2 if data[cr + 1] == 10 else 1)
    if lf >= 0:
        return lf, lf + 1
    return None


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class _CheckedStream(httpx2.AsyncByteStream):
    """A response body passed through an :class:`SSEChecker`; good bytes before a bad
    event still reach the SDK, then :class:`MalformedStream` is raised."""

    def __init__(self, inner: Any, checker: SSEChecker) -> None:
        self.inner = inner
        self.checker = checker

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            good = self.checker.feed(chunk)
            if self.checker.error is not None:
                if good:
                    yield chunk[:good]
                raise self.checker.error
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class SSECheckTransport(httpx2.AsyncBaseTransport):
    """An async transport that delegates to ``inner`` and checks every
    ``text/event-stream`` body with an :class:`SSEChecker`."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, named: bool) -> None:
        self.inner = inner
        self.named = named

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        kind = response.headers.get("content-type", "")
        if "text/event-stream" not in kind.lower():
            return response
        return httpx2.Response(
            response.status_code, headers=response.headers, request=request,
            stream=_CheckedStream(response.stream, SSEChecker(self.named)),
            extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _keepalive_socket_options() -> list[tuple[int, int, int]]:
    """TCP keepalive, as the SDKs' own default clients set it: long streams through NATs
    and proxies otherwise die silently while the model thinks."""
    options: list[tuple[int, int, int]] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5), ("TCP_KEEPIDLE", 60)):
        opt = getattr(socket, name, None)
        if opt is not None:
            options.append((socket.IPPROTO_TCP, opt, value))
    return options


def _environment_proxies() -> dict[str, str | None]:
    """Proxy mounts from the environment (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY).

    httpx2 ignores the environment once a transport is given, so we rebuild the mounts it
    would have made.  Its helper is private; without it we simply connect directly.
    """
    try:
        from httpx2._utils import get_environment_proxies
    except ImportError:  # pragma: no cover - depends on the httpx2 version
        return {}
    try:
        return dict(get_environment_proxies())
    except Exception:  # pragma: no cover - a broken proxy setting must not stop requests
        return {}


def _import_async_backend() -> None:
    """Import anyio's asyncio backend, which the transport otherwise imports inside its
    first request (50-100 ms on the event loop); the providers build their clients on a
    worker thread, so this import happens there."""
    import importlib

    try:
        importlib.import_module("anyio._backends._asyncio")
    except ImportError:  # pragma: no cover - depends on the anyio version
        pass


def async_http_client(*, timeout: float | None = None, named_events: bool = False,
                      **kwargs: Any) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for an SDK whose event streams are checked by
    :class:`SSEChecker` (``named_events``: every event needs an ``event:`` line, as in the
    Anthropic format).

    Mirrors the SDK defaults that matter (connection limits, redirects, keepalive, proxies
    from the environment).  ``timeout`` is the per-operation socket timeout in seconds (the
    SDK passes its own per request anyway).  Extra ``kwargs`` go to ``httpx2.AsyncClient``.
    """
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
    _import_async_backend()

    def transport(proxy: str | None = None) -> SSECheckTransport:
        inner = httpx2.AsyncHTTPTransport(
            limits=limits, proxy=proxy, socket_options=_keepalive_socket_options()
        )
        return SSECheckTransport(inner, named_events)

    mounts: dict[str, httpx2.AsyncBaseTransport | None] = {
        pattern: None if url is None else transport(url)
        for pattern, url in _environment_proxies().items()
    }
    return httpx2.AsyncClient(
        transport=transport(),
        mounts=mounts or None,
        timeout=httpx2.Timeout(timeout if timeout is not None else 600.0, connect=5.0),
        follow_redirects=True,
        **kwargs,
    )
