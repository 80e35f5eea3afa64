"""HTTP plumbing shared by the provider plugins: the SDKs' HTTP client and server-directed
retry delays.

The provider plugins give the SDKs ``max_retries=0`` and retry in :mod:`agent.loop.streaming`,
which reads the server's delay with :func:`retry_after_seconds` (``retry-after-ms`` /
``retry-after``, seconds or an HTTP date) and its verdict with :func:`should_retry_header`
(``x-should-retry``).  :func:`async_http_client` builds the ``httpx2.AsyncClient`` handed
to the SDK (``http_client=...``).  The providers read event streams themselves
(:func:`agent.loop.streaming.read_sse`, which also applies the one rule for malformed events:
:class:`agent.lib.sse.MalformedStream`, re-exported here).  This lives in the core so plugins
can share it without importing each other.  Import it lazily (it imports httpx2), i.e. from
inside a provider's methods.
"""

from __future__ import annotations

import email.utils
import math
import os
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any

import httpx2

from agent.lib.sse import MalformedStream

__all__ = ["MalformedStream", "async_http_client", "retry_after_seconds",
           "should_retry_header", "verify_context"]

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


#: The verification contexts :func:`verify_context` built, by what they were built from (the
#: variables and the files' stats), the most recently used last: a process whose
#: ``SSL_CERT_FILE`` changes and changes back (an embedder's clients for two servers; the
#: test suite, where a few tests name their own CA) builds each context once.
_VERIFY: dict[tuple[Any, ...], ssl.SSLContext] = {}
#: How many contexts are kept (each holds its CA bundle: about 1 MB for the system's).
_VERIFY_KEPT = 4
_VERIFY_LOCK = threading.Lock()


def _stamp(path: str | None) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path) if path else None
    except OSError:
        return None
    if info is None:
        return None
    return info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_size


def verify_context() -> ssl.SSLContext:
    """The context ``verify=True`` would give each transport (httpcore2's default: the
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` named by the environment, else OpenSSL's compiled-in
    bundle), built once and shared while those variables and the stats of the files they
    name are unchanged.  Loading a CA bundle costs about 35 ms of CPU, and every client (each
    session, subagent and fallback endpoint; each test) built its own.  A context is safe to
    share: connections only read it, and every transport built here sets the same ALPN.
    For a plugin's own ``httpx2`` client that trusts the environment (``trust_env``, the
    default): ``httpx2.AsyncClient(verify=verify_context(), ...)``."""
    import httpcore2

    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    defaults = ssl.get_default_verify_paths()
    key = (cafile, capath, _stamp(cafile), _stamp(capath), _stamp(defaults.openssl_cafile),
           _stamp(defaults.openssl_capath))
    with _VERIFY_LOCK:
        context = _VERIFY.pop(key, None)
        if context is None:
            context = httpcore2.default_ssl_context()
            while len(_VERIFY) >= _VERIFY_KEPT:
                del _VERIFY[next(iter(_VERIFY))]  # the least recently used
        _VERIFY[key] = context
        return context


def async_http_client(*, timeout: float | None = None, **kwargs: Any) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for an SDK.

    Mirrors the SDK defaults that matter (connection limits, redirects, keepalive, proxies
    from the environment).  ``timeout`` is the per-operation socket timeout in seconds (the
    SDK passes its own per request anyway).  Extra ``kwargs`` go to ``httpx2.AsyncClient``.
    """
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
    _import_async_backend()
    verify = verify_context()

    def transport(proxy: str | None = None) -> httpx2.AsyncHTTPTransport:
        made = httpx2.AsyncHTTPTransport(
            verify=verify, limits=limits, proxy=proxy,
            socket_options=_keepalive_socket_options()
        )
        if proxy is None:
            # Direct connections read on asyncio's own protocols: a third of the CPU a
            # streamed token cost went to anyio's per-read cancel scopes and timers.
            from agent.loop import netio

            netio.install(made)
        return made

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
