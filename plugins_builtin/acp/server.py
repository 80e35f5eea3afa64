"""The ACP agent: one editor connection on stdin/stdout, any number of sessions.

Each ACP session is a :class:`agent.loop.session.Session` run through the headless turn
(:func:`agent.boot.headless.run_turn`), so guards, rules, the sandbox and saving work as in
every other front end.  Events become ``session/update`` notifications, sent in order by one
pump per session; every *ask* of the gate becomes ``session/request_permission``, sent after
the updates before it.  stdout belongs to the protocol: before serving, file descriptor 1 is
pointed at stderr, so a stray print (ours or a plugin's) can never corrupt a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp import schema
from acp.helpers import update_available_commands, update_current_mode

from agent import __version__
from agent.contract import events as ev
from agent.loop.gate import ApprovalRequest
from agent.loop.permission_flags import MODES
from plugins_builtin.acp.updates import Translator

log = logging.getLogger(__name__)

MODE_NAMES = {"default": ("Default", "ask before edits, commands and network"),
              "accept-edits": ("Accept edits", "file edits in the workspace run without asking"),
              "plan": ("Plan", "read-only: nothing is written or run")}

#: The permission options of every ask, and the gate's answer each one gives.
OPTIONS = (("allow-once", "Allow once", "allow_once", "yes"),
           ("allow-always", "Allow always", "allow_always", "always"),
           ("reject-once", "Reject", "reject_once", "no"),
           ("reject-always", "Reject always", "reject_always", "no"))
ANSWERS = {option_id: answer for option_id, _, _, answer in OPTIONS}

STOP_REASONS = {"end": "end_turn", "max_steps": "max_turn_requests", "budget": "end_turn",
                "interrupted": "cancelled", "error": "end_turn"}


def _usage(message: str) -> int:
    print(f"agent acp: {message}", file=sys.stderr)
    return 2


def serve(argv: list[str], boot: Any) -> int:
    """Serve ACP until stdin closes; the exit code."""
    if argv and argv[0] in ("-h", "--help"):
        print("usage: agent acp\n\nServe the Agent Client Protocol (JSON-RPC over stdio) for "
              "an editor; see docs/editors.md.", file=sys.stderr)
        return 0
    if argv:
        return _usage(f"unexpected argument {argv[0]!r} (agent acp takes none)")
    protocol_fd = os.dup(1)
    os.dup2(2, 1)  # stdout is the protocol's alone: anything else printed goes to stderr
    sys.stdout = sys.stderr
    for problem in boot.hooks.problems:
        print(f"agent: {problem}", file=sys.stderr)
    _warm_provider_sdk(boot)
    try:
        asyncio.run(_serve(boot, protocol_fd))
    except KeyboardInterrupt:
        return 130
    return 0


def _warm_provider_sdk(boot: Any) -> None:
    """Import the provider's SDK on a thread while the editor initializes and opens a
    session, so the first prompt does not wait for it (as ``agent -p`` does)."""
    from agent.boot import sdk_warmup
    from agent.boot.runtime import StartupError, provider_settings

    specs = boot.hooks.providers(boot.config)
    try:
        settings = provider_settings(boot.config, specs)
    except StartupError:
        return  # session/new will say what is wrong
    spec = specs.get(settings.provider)
    if spec is not None:
        sdk_warmup.start(spec.warm_modules)


class _WriteProtocol(asyncio.BaseProtocol):
    """Flow control for the protocol's write pipe (what ``StreamWriter.drain`` waits on)."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()

    async def _drain_helper(self) -> None:
        if self._waiter is not None:
            await self._waiter


#: The longest message read (images and embedded files ride in prompts).
LINE_LIMIT = 50 * 1024 * 1024

PARSE_ERROR = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: ' \
              b'not a JSON object"}}\n'


async def _streams(protocol_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    raw = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(raw), sys.stdin)
    protocol = _WriteProtocol()
    transport: asyncio.BaseTransport
    try:
        transport, _ = await loop.connect_write_pipe(
            lambda: protocol, os.fdopen(protocol_fd, "wb", buffering=0, closefd=False))
    except ValueError:  # a regular file (a recording): plain blocking writes do
        transport = _FileTransport(protocol_fd)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)  # type: ignore[arg-type]
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    _FILTERS.add(loop.create_task(_only_json(raw, reader, writer)))
    return reader, writer


_FILTERS: set[asyncio.Task[None]] = set()


async def _only_json(raw: asyncio.StreamReader, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
    """Pass on the lines that are JSON objects; answer any other line with JSON-RPC's
    parse error (-32700) and keep serving.  (The SDK would log and drop it, leaving the
    client waiting.)"""
    import json

    try:
        while True:
            try:
                line = await raw.readline()
            except ValueError:  # longer than LINE_LIMIT: drop it, answer, go on
                writer.write(PARSE_ERROR)
                continue
            if not line:
                break
            if not line.strip():
                continue
            try:
                ok = isinstance(json.loads(line), dict)
            except ValueError:
                ok = False
            if ok:
                reader.feed_data(line)
            else:
                writer.write(PARSE_ERROR)
    finally:
        reader.feed_eof()


class _FileTransport(asyncio.WriteTransport):
    """Writes to a file descriptor that is no pipe (asyncio's pipe transport refuses it)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(bytes(data))
        while view:
            view = view[os.write(self._fd, view):]

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def can_write_eof(self) -> bool:
        return False


async def _serve(boot: Any, protocol_fd: int) -> None:
    agent = AcpAgent(boot)
    reader, writer = await _streams(protocol_fd)
    try:
        await acp.run_agent(agent, writer, reader)
    finally:
        await agent.close()


@dataclass
class AcpSession:
    """One ACP session: the agent session, its update pump and its running turn."""

    #: the id the client knows it by
    id: str
    session: Any
    translator: Translator
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    turn: asyncio.Task[Any] | None = None
    pump: asyncio.Task[None] | None = None
    #: grant patterns per tool the user answered "reject always" for
    rejected: dict[str, set[str]] = field(default_factory=dict)


class AcpAgent:
    """The agent side of ACP (the SDK's ``acp.Agent`` interface)."""

    def __init__(self, boot: Any) -> None:
        self.boot = boot
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self.client_capabilities: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # ---- lifecycle ---------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> schema.InitializeResponse:
        self.client_capabilities = client_capabilities
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(
                    image=False, audio=False, embedded_context=True),
                mcp_capabilities=schema.McpCapabilities(http=False, sse=False)),
            agent_info=schema.Implementation(name="agent", title="agent", version=__version__),
            auth_methods=[])

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise acp.RequestError.invalid_params(
            {"message": "agent takes its API key from its config or environment"})

    async def new_session(self, cwd: str, mcp_servers: Any = None,
                          **kwargs: Any) -> schema.NewSessionResponse:
        acp_session = self._start(cwd, mcp_servers, None)
        return schema.NewSessionResponse(session_id=acp_session.id, modes=self._modes())

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> schema.LoadSessionResponse:
        """A saved session, its conversation replayed as ``session/update`` before the
        answer."""
        from plugins_builtin.acp.updates import replay

        acp_session = self._start(cwd, mcp_servers, session_id)
        for update in replay(acp_session.session.messages,
                             acp_session.translator.workspace):
            acp_session.queue.put_nowait(update)
        await acp_session.queue.join()
        return schema.LoadSessionResponse(modes=self._modes())

    def _start(self, cwd: str, mcp_servers: Any, session_id: str | None) -> AcpSession:
        """A session in the workspace (new, or the saved ``session_id``) served here."""
        workspace = Path(self.boot.config.workspace).resolve()
        try:
            asked = Path(cwd).resolve()
        except (OSError, RuntimeError, ValueError):
            asked = None
        if asked != workspace:
            raise acp.RequestError.invalid_params({"message": (
                f"cwd {cwd!r} is not this agent's workspace ({workspace}); start `agent acp` "
                "in the project's folder (one workspace per process)")})
        if session_id is not None and session_id in self.sessions:
            raise acp.RequestError.invalid_params(
                {"message": f"session {session_id!r} is already open on this connection"})
        if mcp_servers:
            log.warning("acp: client-provided MCP servers are not connected yet (%d given)",
                        len(mcp_servers))
        session, holder = self._open_session(session_id)
        acp_session = AcpSession(session_id or session.id, session, Translator(workspace))
        holder["session"] = acp_session
        acp_session.pump = asyncio.create_task(self._pump(acp_session.id, acp_session.queue))
        self.sessions[acp_session.id] = acp_session
        commands = self._commands()
        if commands:
            acp_session.queue.put_nowait(update_available_commands(commands))
        return acp_session

    def _commands(self) -> list[schema.AvailableCommand]:
        """The slash commands a prompt can start here: the ones that expand to a prompt
        (custom commands, skills, MCP prompts).  The UI's own commands need its screen."""
        try:
            registry = self.boot.hooks.commands(self.boot.config)
        except Exception as exc:  # a plugin's broken command costs only the list
            log.warning("acp: listing the slash commands failed: %s", exc)
            return []
        seen: dict[str, schema.AvailableCommand] = {}
        for command in registry.commands.values():
            if not getattr(command, "expands", False) or command.name in seen:
                continue
            hint = command.args or ("arguments" if command.takes_args else "")
            seen[command.name] = schema.AvailableCommand(
                name=command.name, description=command.summary or command.name,
                input=schema.UnstructuredCommandInput(hint=hint) if hint else None)
        return sorted(seen.values(), key=lambda c: c.name)

    def _open_session(self, session_id: str | None) -> tuple[Any, dict[str, AcpSession]]:
        """An agent session (new, or the saved ``session_id``) whose gate asks through this
        connection; the holder gets its :class:`AcpSession` once that exists."""
        from agent.boot.runtime import StartupError, provider_settings
        from agent.loop.session import Runtime, SessionLookupError

        config, hooks = self.boot.config, self.boot.hooks
        specs = hooks.providers(config)
        try:
            settings = provider_settings(config, specs)
        except StartupError as exc:
            raise acp.RequestError.internal_error({"message": str(exc)}) from None
        provider = hooks.select_provider(config, specs, settings)
        if provider is None:
            raise acp.RequestError.internal_error(
                {"message": f'no plugin could build the provider "{settings.provider}"'})
        holder: dict[str, AcpSession] = {}

        async def approver(request: ApprovalRequest) -> str:
            return await self._ask(holder["session"], request)

        runtime = Runtime(config=config, hooks=hooks, tools=hooks.tools(config),
                          provider=provider, approver=approver, model=settings.model,
                          provider_name=settings.provider,
                          provider_spec=specs.get(settings.provider))
        try:
            return hooks.open_session(runtime, session_id), holder
        except SessionLookupError as exc:
            raise acp.RequestError.invalid_params({"message": str(exc)}) from None

    def _modes(self) -> schema.SessionModeState:
        current = str(self.boot.config.get("permission_mode") or "default")
        return schema.SessionModeState(current_mode_id=current, available_modes=[
            schema.SessionMode(id=mode, name=MODE_NAMES[mode][0],
                               description=MODE_NAMES[mode][1]) for mode in MODES])

    async def close(self) -> None:
        """The editor went away: stop every turn, save and let go of every session."""
        for acp_session in list(self.sessions.values()):
            if acp_session.turn is not None:
                acp_session.turn.cancel()
                with contextlib.suppress(BaseException):
                    await acp_session.turn
            if acp_session.pump is not None:
                acp_session.pump.cancel()
            closed = self.boot.hooks.close_session(acp_session.session)
            for note in closed.notes:
                print(f"agent: {note}", file=sys.stderr)
        self.sessions.clear()

    # ---- prompt turns --------------------------------------------------------------------------

    def _get(self, session_id: str) -> AcpSession:
        acp_session = self.sessions.get(session_id)
        if acp_session is None:
            raise acp.RequestError.invalid_params({"message": f"no session {session_id!r}"})
        return acp_session

    async def prompt(self, prompt: list[Any], session_id: str,
                     **kwargs: Any) -> schema.PromptResponse:
        from agent.boot.headless import run_turn

        acp_session = self._get(session_id)
        if acp_session.turn is not None and not acp_session.turn.done():
            raise acp.RequestError.invalid_request(
                {"message": "a prompt is already running in this session"})
        text = prompt_text(prompt)
        reasons: list[str] = []

        def show(event: ev.Event) -> None:
            if isinstance(event, ev.DoneEvent):
                reasons.append(event.reason)
            for update in acp_session.translator.updates(event):
                acp_session.queue.put_nowait(update)

        turn = asyncio.create_task(run_turn(acp_session.session, text, show))
        acp_session.turn = turn
        try:
            await turn
            stop = STOP_REASONS.get(reasons[-1] if reasons else "end", "end_turn")
        except asyncio.CancelledError:
            if not turn.cancelled():
                raise  # the request itself was cancelled, not the turn
            stop = "cancelled"
        finally:
            acp_session.turn = None
        await acp_session.queue.join()  # every update of the turn before its answer
        return schema.PromptResponse(stop_reason=stop)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        acp_session = self.sessions.get(session_id)
        if acp_session is not None and acp_session.turn is not None:
            acp_session.turn.cancel()  # the tools' process trees are killed as it unwinds

    async def set_session_mode(self, mode_id: str, session_id: str,
                               **kwargs: Any) -> schema.SetSessionModeResponse:
        from agent.loop.gate import flag_rules

        acp_session = self._get(session_id)
        if mode_id not in MODES:
            raise acp.RequestError.invalid_params(
                {"message": f"unknown mode {mode_id!r} (one of: {', '.join(MODES)})"})
        config = self.boot.config
        config.flag_values["permission_mode"] = mode_id
        acp_session.session.gate.flags = flag_rules(config)
        acp_session.queue.put_nowait(update_current_mode(mode_id))
        await acp_session.queue.join()
        return schema.SetSessionModeResponse()

    async def _pump(self, session_id: str, queue: asyncio.Queue[Any]) -> None:
        """Send one session's updates in order."""
        while True:
            update = await queue.get()
            try:
                await self.conn.session_update(session_id=session_id, update=update)
            except Exception as exc:  # a client that cannot take one misses only that one
                log.warning("acp: session/update failed: %s", exc)
            finally:
                queue.task_done()

    # ---- approvals ------------------------------------------------------------------------------

    async def _ask(self, acp_session: AcpSession, request: ApprovalRequest) -> str:
        """An *ask* of the gate as ``session/request_permission``: the gate's answer.
        Anything but a valid selection (a cancelled request, a disconnect, garbage) is no."""
        call = request.call
        grants = set(request.grants)
        refused = acp_session.rejected.get(call.name, set())
        if grants and grants <= refused:
            return "no"  # the user said "reject always" to this already
        await acp_session.queue.join()  # the tool_call is on the client before the question
        args = call.arguments if isinstance(call.arguments, dict) else {}
        start = acp_session.translator.start(call.id, call.name, args)
        tool_call = schema.ToolCallUpdate(
            tool_call_id=call.id, title=start.title, kind=start.kind, status="pending",
            content=start.content, locations=start.locations, raw_input=args)
        options = [schema.PermissionOption(option_id=oid, name=name, kind=kind)
                   for oid, name, kind, _ in OPTIONS]
        try:
            response = await self.conn.request_permission(
                session_id=acp_session.id, tool_call=tool_call, options=options)
            outcome = response.outcome
            option_id = getattr(outcome, "option_id", None) \
                if getattr(outcome, "outcome", None) == "selected" else None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # fail closed: no valid answer is a no
            log.warning("acp: request_permission failed, denying: %s", exc)
            return "no"
        answer = ANSWERS.get(str(option_id), "no")
        if option_id == "reject-always":
            acp_session.rejected.setdefault(call.name, set()).update(grants)
        if answer != "no":
            acp_session.queue.put_nowait(acp.update_tool_call(call.id, status="in_progress"))
        return answer


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's content blocks as the text of one user message: text as is, a resource
    link as its URI, an embedded text resource as a fenced block named by its URI."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"@{_uri_path(block.uri)}")
        elif kind == "resource":
            resource = block.resource
            body = getattr(resource, "text", None)
            if isinstance(body, str):
                parts.append(f"\n<file uri=\"{resource.uri}\">\n{body}\n</file>\n")
            else:
                parts.append(f"[binary resource {resource.uri} not included]")
        else:
            parts.append(f"[{kind} content is not supported yet and was left out]")
    return "\n".join(part for part in parts if part)


def _uri_path(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri
