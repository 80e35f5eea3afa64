"""HTTP plumbing shared by the provider plugins: a cap on server-directed retry delays.

Both SDKs (openai, anthropic) retry 408/409/429/5xx themselves and obey the server's
``retry-after-ms`` / ``retry-after`` headers.  Their policies differ and neither suits an
interactive tool: anthropic sleeps for *any* positive value (a ``retry-after: 3600`` would
freeze a turn for an hour), openai refuses to retry at all above 120 s.  We keep the SDKs'
retry loops and bound what they see instead: :class:`RetryAfterCapTransport` rewrites those
headers on every response to at most ``cap`` seconds before the SDK reads them.

Provider plugins build their client with :func:`async_http_client` and hand it to the SDK
(``http_client=...``).  This lives in the core so plugins can share it without importing
each other.  Import it lazily (it imports httpx2), i.e. from inside a provider's methods.
"""

from __future__ import annotations

import email.utils
import math
import socket
import time
from collections.abc import MutableMapping
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


def clamp_retry_after(headers: MutableMapping[str, str], cap: float) -> bool:
    """Rewrite ``retry-after-ms`` / ``retry-after`` in ``headers`` to at most ``cap`` seconds.

    Values that are not positive, not finite or not parseable are left alone (the SDKs
    ignore them).  Returns True when a header was changed.
    """
    changed = False
    for name, divisor in RETRY_AFTER_HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        seconds = _delay_seconds(value, divisor)
        if seconds is None or seconds <= 0:
            continue
        if math.isinf(seconds) or seconds > cap:
            # Write back in the header's own unit; an HTTP date becomes plain seconds.
            scaled = cap * divisor
            headers[name] = f"{scaled:g}"
            changed = True
    return changed


class RetryAfterCapTransport(httpx2.AsyncBaseTransport):
    """An async transport that delegates to ``inner`` and clamps retry headers to ``cap``."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, cap: float) -> None:
        self.inner = inner
        self.cap = max(0.0, float(cap))

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        clamp_retry_after(response.headers, self.cap)
        return response

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


def async_http_client(
    retry_after_cap: float, *, timeout: float | None = None, **kwargs: Any
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for an SDK, with retry delays capped at ``retry_after_cap``.

    Mirrors the SDK defaults that matter (connection limits, redirects, keepalive, proxies
    from the environment).  ``timeout`` is a total read timeout in seconds; the SDK passes
    its own per-request timeout anyway.  Extra ``kwargs`` go to ``httpx2.AsyncClient``.
    """
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)

    def transport(proxy: str | None = None) -> RetryAfterCapTransport:
        inner = httpx2.AsyncHTTPTransport(
            limits=limits, proxy=proxy, socket_options=_keepalive_socket_options()
        )
        return RetryAfterCapTransport(inner, retry_after_cap)

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
