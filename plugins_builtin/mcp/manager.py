"""The MCP thread: one event loop of its own that owns every server connection.

Why a thread and not the main loop: hooks that register tools run before any loop exists in
headless mode (and ``asyncio.run`` there closes its loop before ``agent_unconfigure``), while
the UI runs its own loop; importing the SDK costs ~0.9 s, which here never blocks the first
prompt or the first frame.  The session's tool calls hop over with
``run_coroutine_threadsafe`` and wait on the main loop; cancelling one (esc, ctrl-c)
cancels the call on this loop too.  Connections start when :meth:`Manager.start` is called
and are all closed (stdio servers exit) by :meth:`Manager.close`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plugins_builtin.mcp import cache
from plugins_builtin.mcp.cache import ToolDef
from plugins_builtin.mcp.client_side import FrontEnd
from plugins_builtin.mcp.connection import CallFailed, Connection
from plugins_builtin.mcp.servers import ServerConfig

log = logging.getLogger("agent.mcp")

#: Longest wait for every server to close at exit (a stdio server has 2 s + 2 s before SIGKILL
#: in the SDK; servers that exit on stdin EOF take ~0.1 s).
CLOSE_TIMEOUT = 6.0

#: Longest wait for the SDK import before the servers' own startup waits begin (an import
#: cannot be interrupted; on a loaded machine it takes seconds, normally about one).
SDK_IMPORT_TIMEOUT = 60.0


class Manager:
    """Connections to the configured servers (those without a config ``problem``)."""

    def __init__(self, servers: dict[str, ServerConfig], *, workspace: Path,
                 state_dir: Path, on_failed: Callable[[str, str], None] | None = None,
                 sandbox: Any = None, interactive: bool = True) -> None:
        self.servers = {n: s for n, s in servers.items() if not s.problem}
        #: whether a sign-in may open a browser (never headless), and who shows its URL
        self.interactive = interactive
        self.announce: Callable[[str], None] | None = None
        self.workspace = workspace
        self.sandbox = sandbox  # agent.contain.sandbox.Sandbox: scrubbed env, sandboxed servers
        self.state_dir = Path(state_dir)
        #: called (on the MCP thread) with (server, error) when a server fails to start
        self.on_failed = on_failed
        self.conns: dict[str, Connection] = {}
        #: who can answer a server's question during a call (set per call)
        self.front = FrontEnd()
        #: each server's last known tools: from the cache until it connects, then live
        self.tools: dict[str, list[ToolDef]] = {}
        #: each server's prompts (cached, then live)
        self.prompts: dict[str, list[dict[str, Any]]] = {}
        #: each connected server's resources, as listed when it connected
        self.listed_resources: dict[str, list[dict[str, str]]] = {}
        self.cached: set[str] = set()
        #: bumped whenever a server's tool list changes (read by the main thread)
        self.version = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._every: set[Connection] = set()  # replaced ones too, until they have closed
        self._closed = False
        for name, server in self.servers.items():
            tools = cache.load(self.state_dir, name, server.fingerprint())
            if tools is not None:
                self.tools[name] = tools
                self.cached.add(name)
            self.prompts[name] = cache.load_prompts(self.state_dir, name, server.fingerprint())

    # ---- the thread --------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Start the thread and connect every server in the background (idempotent)."""
        if self._thread is not None or self._closed:
            return
        loop = asyncio.new_event_loop()
        self.loop = loop
        self._thread = threading.Thread(target=self._run, name="mcp", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._connect_all(), loop)

    def _run(self) -> None:
        assert self.loop is not None
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self.loop.run_until_complete(
                        asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    async def _connect_all(self) -> None:
        import mcp  # noqa: F401 - the slow import, once, here on the MCP thread

        if self._closed:  # agent exited while the SDK was loading: start nothing
            return
        for name in sorted(self.servers):
            if name not in self.conns:
                self._connect(name)

    def _connect(self, name: str, announce: Callable[[str], None] | None = None
                 ) -> Connection:
        conn = Connection(self.servers[name], workspace=self.workspace,
                          log_dir=self.state_dir / "mcp", on_tools=self._tools_arrived,
                          sandbox=self.sandbox, front=self.front,
                          interactive=self.interactive)
        conn.announce = announce or self.announce
        self.conns[name] = conn
        self._every.add(conn)
        conn.start()
        conn.task.add_done_callback(lambda _t, c=conn: self._ended(c))
        return conn

    def _ended(self, conn: Connection) -> None:
        self._every.discard(conn)
        if conn.state == "failed" and self.on_failed is not None and not self._closed:
            try:
                self.on_failed(conn.name, conn.error)
            except Exception:  # noqa: BLE001 - a report must not break the loop
                log.exception("reporting a failed MCP server")

    def _tools_arrived(self, conn: Connection) -> None:
        name = conn.name
        self.cached.discard(name)
        if self.tools.get(name) != conn.tools:
            self.tools[name] = conn.tools
            self.version += 1
        self.prompts[name] = conn.prompts
        self.listed_resources[name] = conn.listed_resources
        cache.store(self.state_dir, name, conn.server.fingerprint(), conn.tools, conn.prompts)

    # ---- calls (from any thread's loop) ------------------------------------------------------

    async def _ensure(self, name: str) -> Connection:
        conn = self.conns.get(name)
        if conn is None or conn.state in ("failed", "crashed", "closed"):
            conn = self._connect(name)
        await conn.wait_ready()
        return conn

    async def _call(self, server: str, tool: str, arguments: dict[str, Any],
                    on_progress: Callable[[str], None] | None = None
                    ) -> tuple[str, bool, list[Any]]:
        if server not in self.servers:
            raise CallFailed(f'no MCP server named "{server}" is configured')
        conn = await self._ensure(server)
        if conn.gone():  # died while idle: nothing was sent yet, so start it again first
            log.info("mcp server %s went away while idle (%s); restarting it", server,
                     conn.stderr_tail() or "no stderr")
            conn.stop()
            conn = self._connect(server)
            await conn.wait_ready()
        if conn.state != "connected":
            raise CallFailed(conn.down_message())
        return await conn.call(tool, arguments, on_progress)

    async def prompt(self, server: str, name: str, arguments: dict[str, str]) -> str:
        """Prompt ``name`` of ``server`` filled in, from the caller's loop."""
        if self._closed or server not in self.servers:
            raise CallFailed(f'no MCP server named "{server}" is running')
        self.start()
        assert self.loop is not None

        async def run() -> str:
            conn = await self._ensure(server)
            return await conn.prompt(name, arguments)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self.loop))

    async def resources(self, server: str, kind: str, arguments: dict[str, Any]
                        ) -> tuple[str, bool, list[Any]]:
        """List or read ``server``'s resources from the caller's loop (see
        :mod:`.resources`); raises :class:`CallFailed` like :meth:`call`."""
        if self._closed:
            raise CallFailed("the MCP servers were shut down")
        self.start()
        assert self.loop is not None

        async def run() -> tuple[str, bool, list[Any]]:
            conn = await self._ensure(server)
            return await conn.resources(kind, arguments)

        if server not in self.servers:
            raise CallFailed(f'no MCP server named "{server}" is configured')
        future = asyncio.run_coroutine_threadsafe(run(), self.loop)
        return await asyncio.wrap_future(future)

    async def call(self, server: str, tool: str, arguments: dict[str, Any], *,
                   on_progress: Callable[[str], None] | None = None,
                   asker: Any = None, session: Any = None) -> tuple[str, bool, list[Any]]:
        """Call ``server``'s ``tool`` from the caller's loop; waits for a server still
        starting (up to its ``startup_timeout``) and restarts one that crashed.  Progress
        lines go to ``on_progress`` on the caller's loop; the server's questions go to
        ``asker`` (declined without one).  Returns (text, is_error, images); raises
        :class:`CallFailed`."""
        if self._closed:
            raise CallFailed("the MCP servers were shut down")
        self.start()
        assert self.loop is not None
        caller = asyncio.get_running_loop()
        self.front.set(asker, session)
        forward = None
        if on_progress is not None:
            def forward(text: str) -> None:
                caller.call_soon_threadsafe(on_progress, text)
        future = asyncio.run_coroutine_threadsafe(
            self._call(server, tool, arguments, forward), self.loop)
        try:
            return await asyncio.wrap_future(future)
        finally:
            self.front.set(None)

    async def wait_async(self, name: str) -> None:
        """From the caller's loop: until ``name`` has connected or given up."""
        if self._closed or name not in self.servers:
            return
        self.start()
        assert self.loop is not None
        future = asyncio.run_coroutine_threadsafe(self._ensure(name), self.loop)
        await asyncio.wrap_future(future)

    # ---- status ------------------------------------------------------------------------------

    def state_of(self, name: str) -> tuple[str, str]:
        """(state, error) of a server: ``connecting``, ``connected``, ``failed``,
        ``crashed``, ``closed``, or ``not started``."""
        conn = self.conns.get(name)
        if conn is None:
            return ("not started" if not self.started else "connecting"), ""
        return conn.state, conn.error

    def wait_for_tools(self, waits: dict[str, float]) -> list[str]:
        """Block (not on the MCP loop) until each named server has listed its tools or its
        own wait (seconds) is over; servers start in parallel, so the whole wait is the
        longest one.  Returns the servers still without tools."""
        self.start()
        assert self.loop is not None
        # A server's wait is for the server: it begins once the SDK is imported and the
        # servers are started. The import is the agent's own time (2-5 s on a loaded
        # machine); counted in the wait, it left a server with a 3 s startup_timeout
        # not even started when the run gave up on it.
        started = asyncio.run_coroutine_threadsafe(self._connect_all(), self.loop)
        try:
            started.result(SDK_IMPORT_TIMEOUT)
        except concurrent.futures.TimeoutError:
            started.cancel()

        async def ready(name: str, seconds: float) -> None:
            await self._connect_all()
            conn = self.conns.get(name)
            if conn is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(conn.wait_ready()), seconds)
                except TimeoutError:
                    pass

        async def all_ready() -> None:
            await asyncio.gather(*(ready(n, s) for n, s in waits.items()))

        future = asyncio.run_coroutine_threadsafe(all_ready(), self.loop)
        try:
            future.result(max(waits.values(), default=0) + 1.0)
        except concurrent.futures.TimeoutError:
            future.cancel()
        return sorted(n for n in waits if n not in self.tools or n in self.cached)

    def login(self, name: str, announce: Callable[[str], None]) -> tuple[str, str]:
        """Connect ``name`` allowing the browser sign-in (``agent mcp login``); returns its
        (state, error) afterwards."""
        self.interactive, self.announce = True, announce
        self.start()
        assert self.loop is not None

        async def again() -> None:
            await self._connect_all()
            conn = self.conns.get(name)
            if conn is not None:
                await conn.wait_ready()  # the first, non-interactive try
                if conn.state == "connected":
                    return
            conn = self._connect(name, announce)
            await conn.wait_ready()

        asyncio.run_coroutine_threadsafe(again(), self.loop).result()
        return self.state_of(name)

    def wait(self, timeout: float | None = None) -> None:
        """Block (not on the MCP loop) until every server has connected or given up."""
        self.start()
        assert self.loop is not None

        async def all_ready() -> None:
            await self._connect_all()
            await asyncio.gather(*(c.wait_ready() for c in list(self.conns.values())))

        future = asyncio.run_coroutine_threadsafe(all_ready(), self.loop)
        try:
            future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()

    # ---- shutdown ----------------------------------------------------------------------------

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Close every connection (stdio servers exit) and stop the thread."""
        if self._closed:
            return
        self._closed = True
        if self._thread is None or self.loop is None:
            return

        async def close_all() -> None:
            await asyncio.gather(*(c.close() for c in list(self._every)),
                                 return_exceptions=True)

        started = time.monotonic()
        try:
            asyncio.run_coroutine_threadsafe(close_all(), self.loop).result(timeout)
        except concurrent.futures.TimeoutError:
            log.warning("MCP servers did not close within %s s", timeout)
        except Exception:  # noqa: BLE001 - shutting down regardless
            log.exception("closing MCP servers")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        log.debug("MCP servers closed in %.2f s", time.monotonic() - started)
