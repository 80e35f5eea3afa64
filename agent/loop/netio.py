"""The network under the SDKs' HTTP client: sockets on asyncio's own protocol machinery.

httpcore2 (under httpx2, under both SDKs) reads through anyio by default, which on asyncio
wraps every socket read in a cancel scope with its own timer, resumes and pauses the
transport's reading (two epoll changes) and waits on an event: on a paced model stream, one
read per token, that cost 2-3 times what the bytes cost to parse.  :class:`AsyncioBackend`
is a drop-in ``httpcore2`` network backend with the same errors and timeouts, built on an
``asyncio.Protocol`` that keeps reading and buffers what arrives; a read takes what is
buffered or waits on one future, and the read timeout is one lazily moved timer per
connection rather than one per read.  TLS is asyncio's (``loop.start_tls``).

Installed by :func:`agent.loop.retry.async_http_client` for direct connections; proxied ones
keep httpcore2's default backend.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
from httpcore2 import AsyncNetworkBackend, AsyncNetworkStream

#: Buffered bytes beyond which reading pauses until the reader catches up.
HIGH_WATER = 1 << 20


class _Protocol(asyncio.Protocol):
    """Buffers what a connection receives and wakes the one waiting reader."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: Any = None
        self.chunks: list[bytes] = []
        self.buffered = 0
        self.eof = False
        self.lost: BaseException | None = None
        self.reader: asyncio.Future[None] | None = None
        self.read_paused = False
        self.write_paused = False
        self.drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > HIGH_WATER and not self.read_paused:
            self.read_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: BaseException | None) -> None:
        self.eof = True
        self.lost = exc
        self._wake()
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        reader = self.reader
        if reader is not None:
            self.reader = None
            if not reader.done():
                reader.set_result(None)

    def take(self, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of what is buffered (at least one byte is)."""
        chunks = self.chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if len(data) > max_bytes:
            self.chunks = [data[max_bytes:]]
            data = data[:max_bytes]
        else:
            self.chunks = []
        self.buffered -= len(data)
        if self.read_paused and self.buffered <= HIGH_WATER // 4:
            self.read_paused = False
            self.transport.resume_reading()
        return data


class AsyncioStream(AsyncNetworkStream):
    """One connection, as httpcore2 reads and writes it."""

    def __init__(self, protocol: _Protocol) -> None:
        self._protocol = protocol
        self._loop = protocol.loop
        # The read timeout: one timer per connection, moved on lazily (see _check).
        self._timer: asyncio.TimerHandle | None = None
        self._read_deadline = 0.0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        while not protocol.chunks:
            if protocol.eof:
                if protocol.lost is not None:
                    raise httpcore2.ReadError("") from protocol.lost
                return b""
            waiter = protocol.reader = self._loop.create_future()
            if timeout is not None:
                self._read_deadline = self._loop.time() + timeout
                if self._timer is None:
                    self._timer = self._loop.call_at(self._read_deadline, self._check)
            try:
                await waiter
            finally:
                if protocol.reader is waiter:
                    protocol.reader = None
                self._read_deadline = 0.0
        return protocol.take(max_bytes)

    def _check(self) -> None:
        """The timer fired: time out the waiting read if its deadline passed, else sleep
        until the deadline the read in progress has (reads that finished moved it on)."""
        self._timer = None
        deadline = self._read_deadline
        if not deadline:
            return  # no read is waiting; the next one arms the timer again
        if self._loop.time() < deadline:
            self._timer = self._loop.call_at(deadline, self._check)
            return
        reader = self._protocol.reader
        if reader is not None and not reader.done():
            self._protocol.reader = None
            reader.set_exception(httpcore2.ReadTimeout("timed out"))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if protocol.eof or protocol.transport.is_closing():
            raise httpcore2.WriteError("the connection is closed") from protocol.lost
        protocol.transport.write(buffer)
        if not protocol.write_paused:
            return
        drained = protocol.drained = self._loop.create_future()
        try:
            async with asyncio.timeout(timeout):
                await drained
        except TimeoutError:
            raise httpcore2.WriteTimeout("timed out") from None
        if protocol.lost is not None:
            raise httpcore2.WriteError("") from protocol.lost

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        transport = self._protocol.transport
        if transport is not None and not transport.is_closing():
            transport.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> AsyncNetworkStream:
        old = self._protocol
        protocol = _Protocol(self._loop)
        try:
            async with asyncio.timeout(timeout):
                transport = await self._loop.start_tls(
                    old.transport, protocol, ssl_context, server_hostname=server_hostname,
                    ssl_handshake_timeout=timeout)
        except TimeoutError:
            await self.aclose()
            raise httpcore2.ConnectTimeout("timed out") from None
        except (OSError, ssl.SSLError) as exc:
            await self.aclose()
            raise httpcore2.ConnectError(str(exc)) from exc
        protocol.transport = transport
        return AsyncioStream(protocol)

    def get_extra_info(self, info: str) -> Any:
        transport = self._protocol.transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":
            # A pooled connection the server closed: EOF (or bytes nobody asked for) seen,
            # or waiting in the socket for the loop to read it.
            if self._protocol.eof or self._protocol.chunks:
                return True
            sock = transport.get_extra_info("socket")
            return sock is not None and _socket_readable(sock)
        return None


def _socket_readable(sock: Any) -> bool:
    """Whether reading ``sock`` would return at once (data or the EOF of a closed peer),
    polled without reading: what httpcore2 asks before reusing a pooled connection.  Ours,
    not httpcore2's private helper, so an httpcore2 release cannot take it away."""
    import select

    try:
        fd = sock.fileno()
        if fd < 0:
            return True
        if not hasattr(select, "poll"):  # pragma: no cover - Windows
            return bool(select.select([fd], [], [], 0)[0])
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True  # a socket that cannot be polled is not one to reuse


def _connect_detail(exc: OSError) -> str:
    text = str(exc)
    if isinstance(exc, ConnectionRefusedError) or "Connect call failed" in text:
        return "connection refused"
    return text


class AsyncioBackend(AsyncNetworkBackend):
    """An ``httpcore2`` network backend on asyncio protocols (see the module docstring)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        protocol = _Protocol(loop)
        try:
            async with asyncio.timeout(timeout):
                transport, _ = await loop.create_connection(
                    lambda: protocol, host, port,
                    local_addr=(local_address, 0) if local_address else None,
                    happy_eyeballs_delay=0.25)  # as anyio connects
        except TimeoutError:
            raise httpcore2.ConnectTimeout("timed out") from None
        except OSError as exc:
            raise httpcore2.ConnectError(_connect_detail(exc)) from exc
        sock = transport.get_extra_info("socket")
        if sock is not None:
            # asyncio sets TCP_NODELAY itself; the caller's options (keepalive) on top.
            for option in socket_options or ():
                sock.setsockopt(*option)
        return AsyncioStream(protocol)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None
                                  ) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        protocol = _Protocol(loop)
        try:
            async with asyncio.timeout(timeout):
                await loop.create_unix_connection(lambda: protocol, path)
        except TimeoutError:
            raise httpcore2.ConnectTimeout("timed out") from None
        except OSError as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        return AsyncioStream(protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def install(transport: Any) -> bool:
    """Put :class:`AsyncioBackend` under an ``httpx2.AsyncHTTPTransport`` made for direct
    connections (its pool opens connections with it from the first request on).  Returns
    False, changing nothing, when the transport is not shaped as expected (another httpx2
    version): the default backend then stays, slower but correct."""
    pool = getattr(transport, "_pool", None)
    if type(pool) is not httpcore2.AsyncConnectionPool or not hasattr(pool,
                                                                       "_network_backend"):
        return False
    pool._network_backend = AsyncioBackend()
    return True

