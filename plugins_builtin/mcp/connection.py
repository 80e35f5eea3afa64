"""One connection to one MCP server, living in one asyncio task on the MCP thread's loop.

The SDK's transports and ``ClientSession`` are anyio task groups: they must be entered and
left by the same task.  So :meth:`Connection._serve` opens the transport and the session,
lists the tools, then waits for :meth:`Connection.stop`, and closes both on its way out.
Tool calls from other tasks only send requests through the open session.

States: ``connecting`` → ``connected`` → ``closed``, or ``failed`` (never came up) or
``crashed`` (went away, hung, or broke the protocol after connecting).  A failed or crashed
connection is replaced by a fresh one on the next call (see :mod:`.manager`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plugins_builtin.mcp.cache import ToolDef
from plugins_builtin.mcp.client_side import (
    FrontEnd,
    elicitation_callback,
    progress_text,
    roots_callback,
    sampling_callback,
)
from plugins_builtin.mcp.resources import (
    LIST_RESOURCES,
    READ_RESOURCE,
    resource_content,
    resource_entries,
    resource_tools,
)
from plugins_builtin.mcp.resources import (
    resource_listing as _resource_listing,
)
from plugins_builtin.mcp.results import result_content
from plugins_builtin.mcp.servers import ServerConfig, format_seconds
from plugins_builtin.mcp.tools import tool_name

log = logging.getLogger("agent.mcp")

#: Codes of the SDK's MCPError (mcp_types.CONNECTION_CLOSED, REQUEST_TIMEOUT).
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001

#: Server stderr logs are cut back to their tail beyond this size.
LOG_LIMIT = 1_000_000


class CallFailed(Exception):
    """A call that got no usable answer; the message is what the model reads."""


class StartupProblem(Exception):
    """A server that cannot be started as configured; the message says why."""


def scrubbed_environment(sandbox: Any, passthrough: Any = ()) -> dict[str, str]:
    """This process's environment without the credentials a server must not inherit.

    Only the server's own ``env_passthrough`` (and ``env``) bring one back: ``shell_env``'s
    ``include`` is for commands, though its ``exclude`` takes variables from servers too."""
    from agent.contain.envpolicy import EnvPolicy, scrub_environment

    held = sandbox.held_keys() if sandbox is not None else []
    policy = getattr(sandbox, "env_policy", None)
    exclude = policy.exclude if isinstance(policy, EnvPolicy) else ()
    return scrub_environment(os.environ, keep=tuple(passthrough), secret_values=held,
                             policy=EnvPolicy(exclude=exclude))


def _process_ended(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie not yet reaped counts), read from
    /proc; False where there is no /proc to read (then the transport's flag decides)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return os.path.isdir("/proc/self")  # reaped already, if there is a /proc at all
    except (OSError, IndexError):
        return False


class Connection:
    """A server connection.  Every method runs on the MCP loop."""

    def __init__(self, server: ServerConfig, *, workspace: Path, log_dir: Path,
                 on_tools: Callable[[Connection], None], sandbox: Any = None,
                 front: FrontEnd | None = None, interactive: bool = True) -> None:
        self.server = server
        self._interactive = interactive
        #: shows an OAuth sign-in URL (None: the log)
        self.announce: Callable[[str], None] | None = None
        self._sandbox = sandbox
        #: who answers the server's questions (elicitation) during a call
        self.front = front or FrontEnd()
        #: the server's prompts: name, description, arguments (name, description, required)
        self.prompts: list[dict[str, Any]] = []
        #: the resources the server listed when it connected (the ``@`` picker's entries)
        self.listed_resources: list[dict[str, str]] = []
        self.has_resources = False
        self.name = server.name
        self.state = "connecting"
        self.error = ""
        self.tools: list[ToolDef] = []
        self.server_info = ""
        self.started = time.monotonic()
        self._workspace = workspace
        self._log_path = log_dir / f"{server.name}.stderr.log"
        self._log_offset = 0
        self._on_tools = on_tools
        self._session: Any = None
        #: the local server's process id once started (what :meth:`gone` looks at)
        self._pid: int | None = None
        self._http_error = ""  # the last HTTP error status of a remote server, e.g. "HTTP 401"
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._startup_expired = False
        self._background: set[asyncio.Task[None]] = set()
        self.task: asyncio.Task[None] | None = None

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._serve(),
                                                           name=f"mcp {self.name}")
        asyncio.get_running_loop().call_later(self.server.startup_timeout, self._startup_over)

    async def wait_ready(self) -> None:
        """Until connected or given up (bounded by ``startup_timeout``)."""
        await self._ready.wait()

    def stop(self) -> None:
        """Ask the serving task to close the session and the transport (it does so itself)."""
        self._stop.set()

    async def close(self) -> None:
        """Stop and wait until the transport is closed (a stdio server has exited)."""
        self.stop()
        if self.state == "connecting" and self.task is not None:
            self.task.cancel()  # still starting: it would not look at the stop event yet
        if self.task is not None:
            try:
                await self.task
            except BaseException:  # already recorded in state/error
                pass

    def _startup_over(self) -> None:
        if self.state == "connecting" and self.task is not None and not self.task.done():
            self._startup_expired = True
            self.task.cancel()

    async def _serve(self) -> None:
        from mcp import ClientSession
        from mcp_types import Implementation, SamplingCapability

        from agent import __version__

        errlog = None
        try:
            if self.server.kind == "local":
                errlog = self._open_log()
            async with self._transport(errlog) as streams:
                async with ClientSession(
                        streams[0], streams[1],
                        client_info=Implementation(name="agent", version=__version__),
                        message_handler=self._on_message,
                        list_roots_callback=roots_callback(self._workspace),
                        elicitation_callback=elicitation_callback(self.front, self.name),
                        sampling_callback=sampling_callback(self.front, self.name),
                        sampling_capabilities=SamplingCapability(),
                        ) as session:
                    init = await session.initialize()
                    info = getattr(init, "server_info", None)
                    if info is not None:
                        self.server_info = f"{info.name} {info.version}".strip()
                    caps = getattr(init, "capabilities", None)
                    self.listed_resources = (
                        await _first_resources(session)
                        if getattr(caps, "resources", None) is not None else [])
                    self.has_resources = bool(self.listed_resources)
                    self.tools = await _list_tools(session)
                    if getattr(caps, "prompts", None) is not None:
                        self.prompts = await _list_prompts(session)
                    if self.has_resources:
                        self.tools += resource_tools(self.name, self.tools)
                    self._session = session
                    self.state = "connected"
                    self._ready.set()
                    self._on_tools(self)
                    await self._stop.wait()
        except asyncio.CancelledError:
            if not self._startup_expired:
                self._set_down("closed", "")
                raise
            self._set_down("failed", "did not start within "
                           f"{format_seconds(self.server.startup_timeout)}")
        except BaseException as exc:  # noqa: BLE001 - an ExceptionGroup from anyio, OSError...
            log.info("mcp server %s: %s", self.name, exc, exc_info=exc)
            reason = describe(exc, self.server)
            if self._http_error and "error response" in reason:
                reason = f"{self._http_error} from {self.server.url}"
                if self._http_error in ("HTTP 401", "HTTP 403"):
                    reason += " (check the server's headers in the config)"
            self._set_down("failed" if self.state == "connecting" else "crashed",
                           self._with_stderr(reason))
        finally:
            self._session = None
            if self.state in ("connecting", "connected"):
                self.state = "closed"
            self._ready.set()
            if errlog is not None:
                errlog.close()

    async def _on_message(self, message: Any) -> None:
        """A server notification: a changed tool list is fetched again, in a task of its own
        (the SDK delivers notifications from its read loop, which the request would need)."""
        if getattr(message, "method", "") == "notifications/tools/list_changed":
            task = asyncio.get_running_loop().create_task(self._relist())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _relist(self) -> None:
        session = self._session
        if session is None:
            return
        try:
            self.tools = await _list_tools(session)
        except Exception as exc:  # noqa: BLE001 - keep the old list; calls will tell
            log.info("mcp server %s: listing changed tools failed: %s", self.name, exc)
            return
        self._on_tools(self)

    def _set_down(self, state: str, error: str) -> None:
        if self.state in ("connecting", "connected"):
            self.state, self.error = state, error

    def _sandboxed(self, argv: list[str], env: dict[str, str], cwd: Path | None
                   ) -> tuple[list[str], dict[str, str]]:
        """``sandbox = true``: the server's command under the sandbox, or a refusal to start
        it when no sandbox can start here (never silently unsandboxed)."""
        server, sandbox = self.server, self._sandbox
        if sandbox is None or not sandbox.status.ok:
            why = sandbox.status.detail if sandbox is not None else "no sandbox"
            raise StartupProblem(f"sandbox = true, but the sandbox cannot start here ({why}); "
                                 "the server was not started")
        try:
            # The server's script may live under the host's /tmp (a checkout there), which
            # the sandbox's own /tmp hides: the paths the config names are shown read-only.
            wrapped, _ = sandbox.command(argv, mode=server.sandbox, network=server.network,
                                         cwd=str(cwd or self._workspace), env=env,
                                         required=True, show=argv[1:])
        except FileNotFoundError as exc:
            raise StartupProblem(str(exc)) from None
        keep = {*server.env_passthrough, *(k for k, _ in server.env)}
        return wrapped, {**sandbox.environment(env, keep=keep)}

    def _transport(self, errlog: Any) -> Any:
        server = self.server
        if server.kind == "local":
            from mcp import StdioServerParameters

            from .stdio import stdio_client  # linear-time reads (a 20 MB result arrives)

            cwd = None
            if server.cwd:
                cwd = (self._workspace / os.path.expanduser(server.cwd)).resolve()
                if not cwd.is_dir():
                    raise StartupProblem(f"cwd {cwd} is not a directory")
            # stdio_client passes only HOME, PATH, ... plus params.env: merge ourselves so the
            # server inherits the environment without credentials (no provider key, no
            # AGENT_*, *_API_KEY, *_TOKEN, *_SECRET unless env_passthrough names it), with
            # the config's own env on top.
            env = {**scrubbed_environment(self._sandbox, server.env_passthrough),
                   **dict(server.env)}
            argv = [server.command, *server.args]
            if server.sandbox:
                argv, env = self._sandboxed(argv, env, cwd)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
            return stdio_client(params, errlog=errlog, on_start=self._started_as)
        headers = dict(server.headers)
        if server.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(server.url, headers=headers or None)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async def note_status(response: Any) -> None:
            # The SDK turns an HTTP error into "Server returned an error response": keep the
            # status so a failure can say 401 (a bad token) rather than that.
            if response.status_code >= 400:
                self._http_error = f"HTTP {response.status_code}"

        auth = None
        if server.auth == "oauth":
            from plugins_builtin.mcp.oauth import make_auth

            auth = make_auth(server, self._log_path.parent.parent,
                             interactive=self._interactive, say=self.announce)
        from agent.loop.retry import verify_context  # verify=True without reloading the CAs

        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0),
                                    event_hooks={"response": [note_status]}, auth=auth,
                                    verify=verify_context())
        return _owning(client, streamable_http_client(server.url, http_client=client))

    # ---- calls -------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any],
                   on_progress: Callable[[str], None] | None = None
                   ) -> tuple[str, bool, list[Any]]:
        """Call ``tool``; returns (text, is_error, images).  Progress notifications go to
        ``on_progress`` as lines of text.  Raises :class:`CallFailed` when the server
        crashed, hung or refused; a crashed or hung server is stopped so the next call starts
        it again."""
        from mcp.shared.exceptions import MCPError

        session = self._session
        if session is None or self.state != "connected":
            raise CallFailed(self.down_message())
        timeout = self.server.timeout
        self._http_error = ""
        try:
            progress = None
            if on_progress is not None:
                async def progress(done: float, total: float | None, message: str | None,
                                   ) -> None:
                    on_progress(progress_text(done, total, message))
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout,
                                             progress_callback=progress)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                self._give_up("crashed", f"did not answer within {format_seconds(timeout)}")
                raise CallFailed(f'mcp server "{self.name}" did not answer within '
                                 f"{format_seconds(timeout)}; it will be restarted on the next "
                                 "call") from None
            if exc.code == CONNECTION_CLOSED:
                self._give_up("crashed", self._with_stderr("the connection closed"))
                raise CallFailed(self.down_message()) from None
            status = f" ({self._http_error})" if self._http_error else ""
            raise CallFailed(f'mcp server "{self.name}" refused the call: {exc.message}{status}'
                             ) from None
        except (RuntimeError, ValueError) as exc:  # a result breaking its schema, input asks
            raise CallFailed(f'mcp server "{self.name}" sent an unusable answer: {exc}'
                             ) from None
        except Exception as exc:  # the transport broke in a way the SDK did not wrap
            log.info("mcp server %s: call failed", self.name, exc_info=exc)
            self._give_up("crashed", self._with_stderr(describe(exc, self.server)))
            raise CallFailed(self.down_message()) from None
        reader = (tool_name(self.name, READ_RESOURCE)
                  if getattr(self, "has_resources", False) else "")
        text, images = result_content(result, reader=reader,
                                      source=tool_name(self.name, tool))
        return text, bool(getattr(result, "is_error", False)), images

    async def prompt(self, name: str, arguments: dict[str, str]) -> str:
        """The text of prompt ``name`` filled with ``arguments`` (messages joined)."""
        from mcp.shared.exceptions import MCPError

        session = self._session
        if session is None or self.state != "connected":
            raise CallFailed(self.down_message())
        try:
            result = await session.get_prompt(name, arguments)
        except MCPError as exc:
            raise CallFailed(f'mcp server "{self.name}" refused the prompt {name}: '
                             f"{exc.message}") from None
        parts = []
        for message in getattr(result, "messages", None) or []:
            content = getattr(message, "content", None)
            text = getattr(content, "text", None)
            if text is None and getattr(content, "type", "") == "resource":
                text = getattr(getattr(content, "resource", None), "text", None)
            if text:
                parts.append(text)
        return "\n\n".join(parts)

    async def resources(self, kind: str, arguments: dict[str, Any]
                        ) -> tuple[str, bool, list[Any]]:
        """``list_resources`` or ``read_resource`` (the tools agent adds for a server that
        offers resources); returns (text, is_error, images) like :meth:`call`."""
        from mcp.shared.exceptions import MCPError

        session = self._session
        if session is None or self.state != "connected":
            raise CallFailed(self.down_message())
        try:
            if kind == LIST_RESOURCES:
                return await _resource_listing(session), False, []
            result = await session.read_resource(str(arguments.get("uri", "")))
        except MCPError as exc:
            return f"mcp server {self.name} could not do that: {exc.message}", True, []
        except Exception as exc:  # the transport broke
            self._give_up("crashed", self._with_stderr(describe(exc, self.server)))
            raise CallFailed(self.down_message()) from None
        uri = str(arguments.get("uri", ""))
        text, images = resource_content(result, source=f"{self.name}:{uri}")
        return text, False, images

    def _started_as(self, pid: int) -> None:
        self._pid = pid

    def gone(self) -> bool:
        """True when a connected server is already gone (it died while idle): a call would
        fail before reaching it, so it can be restarted first.  A local server's process is
        looked at directly, since the transport notices the closed pipe only when its reader
        next runs (on a loaded machine after the call was sent); otherwise the SDK
        dispatcher's private flag says whether the transport closed."""
        if self.state != "connected":
            return False
        if self._pid is not None and _process_ended(self._pid):
            return True
        dispatcher = getattr(self._session, "_dispatcher", None)
        return bool(getattr(dispatcher, "_closed", False))

    def _give_up(self, state: str, error: str) -> None:
        self.state, self.error = state, error
        self.stop()

    def down_message(self) -> str:
        """What a call to this (not connected) server tells the model."""
        verb = {"crashed": "crashed", "failed": "failed to start"}.get(self.state, self.state)
        again = "restarted" if self.server.kind == "local" else "reconnected"
        detail = f": {self.error}" if self.error else ""
        return (f'mcp server "{self.name}" {verb}{detail}; it will be {again} on the '
                "next call")

    # ---- the server's stderr -----------------------------------------------------------------

    def _open_log(self) -> Any:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if self._log_path.stat().st_size > LOG_LIMIT:
                tail = self._log_path.read_bytes()[-LOG_LIMIT // 10:]
                self._log_path.write_bytes(tail)
        except OSError:
            pass
        handle = open(self._log_path, "ab")  # noqa: SIM115 - closed when the task ends
        handle.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} started\n".encode())
        handle.flush()
        self._log_offset = handle.tell()
        return handle

    def stderr_tail(self, lines: int = 3) -> str:
        """The last lines the server wrote to stderr since it started."""
        try:
            with open(self._log_path, "rb") as f:
                f.seek(self._log_offset)
                text = f.read()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""
        kept = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(kept[-lines:])

    def _with_stderr(self, message: str) -> str:
        if self.server.kind != "local":
            return message
        tail = self.stderr_tail()
        return f"{message} (stderr: {tail})" if tail else message


async def _list_prompts(session: Any) -> list[dict[str, Any]]:
    """The server's prompts (first page of up to a few hundred; a failure lists none)."""
    try:
        page = await session.list_prompts()
    except Exception as exc:  # noqa: BLE001 - prompts are optional
        log.info("listing prompts failed: %s", exc)
        return []
    return [{"name": p.name, "description": p.description or "",
             "arguments": [{"name": a.name, "description": a.description or "",
                            "required": bool(a.required)} for a in (p.arguments or [])]}
            for p in page.prompts[:300]]


async def _first_resources(session: Any) -> list[dict[str, str]]:
    """What a server declaring the resources capability lists (many frameworks declare it
    with none; their tool list then stays as the server wrote it)."""
    try:
        return (await resource_entries(session))[0]
    except Exception as exc:  # noqa: BLE001 - no resources then; tools still work
        log.info("listing resources failed: %s", exc)
        return []


async def _list_tools(session: Any) -> list[ToolDef]:
    """Every tool, following pagination."""
    from mcp_types import PaginatedRequestParams

    tools: list[ToolDef] = []
    cursor = None
    for _ in range(100):  # a server paging forever is cut off
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            definition: ToolDef = {"name": tool.name, "description": tool.description or "",
                                   "input_schema": dict(tool.input_schema or {})}
            execution = getattr(tool, "execution", None)
            if execution is not None and getattr(execution, "task_support", None):
                definition["task_support"] = str(execution.task_support)
            annotations = getattr(tool, "annotations", None)
            title = getattr(tool, "title", None) or getattr(annotations, "title", None)
            if title:  # the server's name for people, for the approval dialog
                definition["title"] = str(title)
            if annotations is not None:
                hints = {key: value for key, value in (
                    ("read_only", annotations.read_only_hint),
                    ("destructive", annotations.destructive_hint),
                    ("idempotent", annotations.idempotent_hint),
                    ("open_world", annotations.open_world_hint)) if value is not None}
                if hints:
                    definition["hints"] = hints
            tools.append(definition)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


class _owning:
    """Enter ``client`` around ``inner`` (an async context manager) and close it after."""

    def __init__(self, client: Any, inner: Any) -> None:
        self.client, self.inner = client, inner

    async def __aenter__(self) -> Any:
        await self.client.__aenter__()
        try:
            return await self.inner.__aenter__()
        except BaseException:
            await self.client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self.inner.__aexit__(*exc)
        finally:
            await self.client.__aexit__(None, None, None)


def describe(exc: BaseException, server: ServerConfig) -> str:
    """A one-line reason for a failure (the innermost error of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, StartupProblem) or type(exc).__name__ == "LoginRequired":
        return str(exc)
    if isinstance(exc, FileNotFoundError) and server.kind == "local":
        return f"command not found: {server.command}"
    if isinstance(exc, PermissionError) and server.kind == "local":
        return f"command not executable: {server.command}"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is not None:
        return f"HTTP {status} from {server.url}"
    name = type(exc).__name__
    if "Connect" in name and server.kind == "remote":
        return f"cannot connect to {server.url} ({exc or name})"
    text = str(exc).strip()
    if getattr(exc, "code", None) == CONNECTION_CLOSED:
        return "the connection closed"
    return f"{name}: {text}" if text and name not in text else (text or name)
