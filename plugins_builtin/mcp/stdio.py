"""The stdio transport to a local MCP server, reading its answers in linear time.

Why not the SDK's ``stdio_client``: its reader joins the pending text with each new 64 KiB
chunk and splits the whole string again (``(buffer + chunk).split("\\n")``), so one answer of
N bytes costs about N²/64 KiB of copying.  A 20 MB tool result (40 MB on the wire, since
servers send the text twice, as content and as structured content) arrived from the server in
1.2 s but took the client more than the 60 s call timeout to read, and was reported as "did
not answer".  Here pieces are kept in a list and joined once per line, and pipes are read
1 MiB at a time.

Everything else follows the SDK's transport: newline-delimited JSON-RPC, the same message
types on the same in-memory streams, and the spec's shutdown (close stdin, wait, then
SIGTERM and SIGKILL to the server's process group).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

log = logging.getLogger("agent.mcp")

#: Bytes asked of a pipe per read.
READ_SIZE = 1 << 20
#: Grace after stdin closes, then after SIGTERM, before the next step of shutdown.
EXIT_GRACE = 2.0


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        log.warning("mcp: a line from the server is not JSON-RPC: %s", exc)
        return exc


def split_lines(pending: list[bytes], chunk: bytes) -> list[bytes]:
    """The complete lines ``chunk`` ends, given the unterminated ``pending`` pieces before
    it (updated in place to hold what is left).  Linear in the bytes seen."""
    lines: list[bytes] = []
    start = 0
    while True:
        end = chunk.find(b"\n", start)
        if end < 0:
            if start < len(chunk):
                pending.append(chunk[start:])
            return lines
        pending.append(chunk[start:end])
        lines.append(b"".join(pending))
        pending.clear()
        start = end + 1


async def _wait_exit(process: anyio.abc.Process, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


def _signal_group(process: anyio.abc.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)  # its own session: the group is the server's tree


async def _stop(process: anyio.abc.Process) -> None:
    with contextlib.suppress(Exception):
        await process.stdin.aclose()  # type: ignore[union-attr]
    if not await _wait_exit(process, EXIT_GRACE):
        _signal_group(process, signal.SIGTERM)
        if not await _wait_exit(process, EXIT_GRACE):
            _signal_group(process, signal.SIGKILL)
            await _wait_exit(process, EXIT_GRACE)
    with contextlib.suppress(Exception):
        await process.aclose()


@contextlib.asynccontextmanager
async def stdio_client(params: Any, errlog: Any = None,
                       on_start: Callable[[int], None] | None = None
                       ) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``params`` (an ``mcp.StdioServerParameters``: command, args, env, cwd) and
    yield ``(read_stream, write_stream)`` as the SDK's ``stdio_client`` does.  ``env`` is
    used as given (the caller merges the environment it wants); ``on_start`` gets the
    process id once it runs.  Raises ``OSError`` when the server cannot be started."""
    if sys.platform == "win32":  # pragma: no cover - the SDK knows Windows job objects
        from mcp import stdio_client as sdk_client

        async with sdk_client(params, errlog=errlog or sys.stderr) as streams:
            yield streams
        return
    process = await anyio.open_process(
        [params.command, *params.args], env=params.env, cwd=params.cwd,
        stderr=errlog if errlog is not None else subprocess.DEVNULL,  # never the terminal
        start_new_session=True)
    if on_start is not None:
        on_start(process.pid)
    read_writer, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        pending: list[bytes] = []
        try:
            async with read_writer:
                while True:
                    try:
                        chunk = await process.stdout.receive(READ_SIZE)  # type: ignore[union-attr]
                    except (anyio.EndOfStream, anyio.ClosedResourceError,
                            anyio.BrokenResourceError, OSError):
                        return
                    for line in split_lines(pending, chunk):
                        if line.strip():
                            await read_writer.send(_parse(line))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session is gone

    async def writer() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")  # type: ignore[union-attr]
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the server stopped reading: end the session

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                write_stream.close()
                read_stream.close()
                await _stop(process)
                for stream in (read_writer, write_reader):
                    await stream.aclose()
            tasks.cancel_scope.cancel()
