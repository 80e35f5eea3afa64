"""The agent loop: one turn is one async generator of :mod:`agent.contract.events`.

``Session.run(prompt)`` appends the prompt, then per step: re-assembles the system prompt from
fragments (so state changed by one step is visible in the next), lets plugins prepare the
request, streams the provider's answer, and runs every tool call the model made through the
gate.  It ends when the model answers without calling a tool, when the step cap is reached, on
a provider error, or when the consumer cancels it (esc).  History is always left valid: every
tool call gets a result, interrupted ones included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent.boot import sdk_warmup
from agent.contract import events as ev
from agent.contract.messages import (
    INVALID_JSON,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    bounded_images,
    clean_text,
)
from agent.contract.prompt import assemble
from agent.contract.providers import (
    BudgetExceeded,
    ProviderError,
    ProviderNotice,
    ProviderRequest,
    ProviderSpec,
    ReasoningDelta,
    StepFinished,
    TextDelta,
    ToolCallStarted,
    Usage,
)
from agent.contract.tools import (
    AllowedBy,
    Effects,
    Tool,
    ToolCall,
    ToolContext,
    ToolError,
    ToolResult,
    cap_output,
)
from agent.contract.validate import check_arguments, parse_arguments
from agent.loop.gate import Approver, Gate
from agent.loop.saved_results import keep_large

if TYPE_CHECKING:
    from agent.boot.config import Config
    from agent.contract.hooks import Hooks
    from agent.contract.providers import Provider
    from agent.ui.context import CommandContext

log = logging.getLogger("agent.session")

INTERRUPTED = "The user interrupted this command. It did not finish, so its effects are unknown."
TURN_ABORTED = "The turn was interrupted before this call finished; its effects are unknown."
#: Seconds the next turn and the end of a run wait for after-turn work (``after_turn_timeout``).
AFTER_TURN_TIMEOUT = 120.0
#: Seconds cancelled after-turn work gets to stop the processes it started.
CLEANUP_GRACE = 5.0


def new_session_id() -> str:
    """A time-sortable id (UUIDv7 layout: 48-bit milliseconds, then random bits)."""
    ms = int(time.time() * 1000)
    rand = uuid.uuid4().int & ((1 << 74) - 1)
    value = ((ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62)
             | (rand & ((1 << 62) - 1)))
    return str(uuid.UUID(int=value))


class SessionLookupError(Exception):
    """The saved session ``-c``/``-r`` (or ``/resume``) asked for does not exist, or an id
    prefix names several; the message says which.  Raised by the plugin answering
    ``agent_find_session``/``agent_open_session``; the CLI prints it and exits 2."""


class Recorder(Protocol):
    """What saves a session as it runs: ``Session.recorder``, set by the plugin answering
    ``agent_open_session`` (the builtin ``sessions`` plugin's writes to the state database).

    The loop calls :meth:`message_added` for every message it appends and
    :meth:`step_finished` after every model request.  A recorder may also offer, and the core
    and plugins use when present: ``take_events(final)`` (events to pass on in the stream,
    such as ``save-failed``), ``flush(session)`` (save what is not saved yet; returns how
    many messages are still unsaved), ``error`` and ``read_only`` (why saving failed or is
    off), ``store`` (the :class:`agent.state.store.Store` it writes to, which holds the
    prompt history), ``record_usage(usage, model=, cause=)`` (a model call made outside the
    loop), ``child(cause)`` (a usage-only recorder for a subagent) and ``rewrite(session)``
    (after the history was edited in place).
    """

    def message_added(self, session: Session, message: Message) -> None: ...

    def step_finished(self, session: Session, usage: Usage, model: str | None = None
                      ) -> None: ...


@dataclass
class SessionClosed:
    """What the plugin that saves sessions says when a front end is done with its main
    session (``agent_close_session``)."""

    #: lines for the user (without the ``agent: `` prefix): unsaved messages, forks
    notes: list[str] = field(default_factory=list)
    #: how many of the session's messages the store does not hold (headless: exit 5)
    unsaved: int = 0


#: The front end's question channel for the ``ask`` tool: ``asker(question, options,
#: multiple)`` with options as ``{"label", "detail"}`` dicts (recommended first); returns the
#: chosen label, several labels (``multiple``), free text, or None when the user dismissed it.
Asker = Callable[[str, list[dict[str, str]], bool], Awaitable["str | list[str] | None"]]


@dataclass(slots=True)
class Runtime:
    """What sessions share: config, hooks, tools, the provider, the approver, and the
    front end's question channel (``asker``; None when nobody can answer, e.g. headless).

    Every field is declared here (the class has ``__slots__``): a plugin or front end that
    needs to hand something to the sessions adds a field, it cannot set an attribute on the
    side.
    """

    config: Config
    hooks: Hooks
    tools: dict[str, Tool]
    provider: Provider
    approver: Approver | None = None
    model: str = ""
    asker: Asker | None = None
    #: the name the provider was registered under (``settings.provider``)
    provider_name: str = ""
    #: its registration: key variable, default model, SDK modules to warm
    provider_spec: ProviderSpec | None = None
    #: the full-screen UI's context for tools and plugins (None headless)
    ui: CommandContext | None = None

    @property
    def workspace(self) -> Path:
        return self.config.workspace


@dataclass
class TurnUsage:
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    #: usage per model that answered (a fallback endpoint may answer with another model)
    by_model: dict[str, Usage] = field(default_factory=dict)

    def add(self, model: str, usage: Usage) -> None:
        self.usage.add(usage)
        self.by_model.setdefault(model, Usage()).add(usage)

    def cost(self, default_model: str,
             price: Callable[[str, Usage], float | None]) -> float | None:
        """The turn's cost, each step priced by ``price`` (the plugins' ``agent_price_usage``)
        at the model that answered it (None when one of them has no price)."""
        if not self.by_model:
            return price(default_model, self.usage)
        costs = [price(model, usage) for model, usage in self.by_model.items()]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def root_session(session: Any) -> Any:
    """The main session ``session`` belongs to (itself unless it is a subagent)."""
    while getattr(session, "parent", None) is not None:
        session = session.parent
    return session


class Session:
    """A conversation with the model and the tools, one turn at a time."""

    def __init__(self, runtime: Runtime, *, session_id: str | None = None,
                 messages: list[Message] | None = None, origin: str = "model",
                 max_steps: int | None = None, thinking: str | None = None,
                 tools: dict[str, Tool] | None = None, gate: Gate | None = None,
                 recorder: Recorder | None = None, parent: Session | None = None) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.hooks = runtime.hooks
        self.id = session_id or new_session_id()
        self.messages: list[Message] = list(messages or [])
        self.origin = origin
        self.model = runtime.model or self.config.get("model") or ""
        self.thinking = thinking or self.config.get("thinking") or "medium"
        #: whether the user chose the thinking level (see ProviderRequest.thinking_chosen)
        self.thinking_chosen: bool = (parent.thinking_chosen if parent is not None
                                else self.config.source("thinking") != "default")
        self.max_steps = max_steps or int(self.config.get("max_steps") or 50)
        self.tools = tools if tools is not None else runtime.tools
        self.gate = gate or Gate(self.hooks, self.config, runtime.approver,
                                 yolo=bool(self.config.get("yolo")))
        self.data: dict[str, Any] = {}  # per-plugin state, keyed by plugin name
        self.usage = Usage()
        self.offered_tools: list[Tool] = []
        self.busy = False
        self._running: dict[str, asyncio.Task[Any]] = {}
        #: who let each approved call of the turn run (the gate's ``allowed_by``)
        self._allowed_by: dict[str, AllowedBy] = {}
        self._results: dict[str, ToolResultPart] = {}
        self._interrupted: set[str] = set()
        self._notes: dict[str, str] = {}  # call id -> note from an edited approval
        self._notices: list[str] = []  # from notify(), not shown yet
        #: after-turn work still running (agent_after_turn), task -> plugin; a subagent's
        #: goes into its parent's, so waiting for the main session covers every subagent
        self._after_turn: dict[asyncio.Task[None], str] = (
            parent._after_turn if parent is not None else {})
        self._noticed: asyncio.Event | None = None
        #: saves each message as it is appended, or None: set by the plugin answering
        #: ``agent_open_session`` (it has ``message_added``, ``step_finished``,
        #: ``record_usage``, ``child``, ``take_events``; ``flush``/``error``/``read_only``/
        #: ``store`` when it writes to the state database)
        self.recorder = recorder
        #: ids this conversation was saved under before this one (the recorder moved it to a
        #: new id when another process wrote the same session): their saved tool results
        #: stay readable (agent.loop.saved_results)
        self.earlier_ids: list[str] = []
        #: why this session is not being saved at all (no usable state database), or None
        self.unsaved_reason: str | None = None
        #: the session that started this one (a subagent's parent), or None
        self.parent = parent
        #: the paths the calls of the current (or last) turn that finished without an error
        #: declared they change (``Effects.changed_paths``); a shell command's own writes are
        #: known only to a plugin watching the files (``agent_turn_files_changed``)
        self.turn_changed_paths: set[str] = set()
        self.hooks.session_start(self)

    @property
    def workspace(self) -> Path:
        return self.config.workspace

    # ---- what the model sees ------------------------------------------------------------------

    def tools_for_step(self) -> list[Tool]:
        """Registered tools narrowed by tool sets, then by plugins (variants, headless...)."""
        sets = set(self.config.get("tool_sets") or []) | {"core"}
        tools = [t for t in self.tools.values() if t.tool_set is None or t.tool_set in sets]
        tools.sort(key=lambda t: t.name)
        return self.hooks.offered_tools(tools, self)

    def system_prompt(self) -> str:
        return assemble(self.hooks.prompt_fragments(self))

    async def build_request(self) -> ProviderRequest:
        self.offered_tools = self.tools_for_step()
        request = ProviderRequest(
            model=self.model,
            system=self.system_prompt(),
            messages=list(self.messages),
            tools=[t.spec() for t in self.offered_tools],
            thinking=self.thinking,
            thinking_chosen=self.thinking_chosen,
            max_tokens=int(self.config.get("max_tokens") or 16000),
            metadata={"session": self.id},
        )
        return await self.hooks.prepare_request(request, self)

    def notify(self, text: str) -> None:
        """Show ``text`` to the user now, as a ``notice`` event, while the turn waits on a
        plugin's work before a request (e.g. the prune plugin summarising a long history on
        resume).  Outside that wait the notice comes with the next event of the turn."""
        self._notices.append(text)
        if self._noticed is not None:
            self._noticed.set()

    async def _prepare_request(self) -> AsyncIterator[ev.NoticeEvent | ProviderRequest]:
        """Build the request, yielding the notices plugins give (:meth:`notify`) while it is
        being prepared; the request itself comes last."""
        self._noticed = asyncio.Event()
        task = asyncio.ensure_future(self.build_request())
        try:
            while True:
                waiter = asyncio.ensure_future(self._noticed.wait())
                try:
                    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiter.cancel()
                self._noticed.clear()
                while self._notices:
                    yield ev.NoticeEvent(self._notices.pop(0))
                if task.done():
                    break
            yield task.result()
        finally:
            self._noticed = None
            if not task.done():  # the turn was cancelled (esc) while preparing
                task.cancel()

    # ---- interrupting ----------------------------------------------------------------------

    def running_calls(self) -> list[str]:
        return list(self._running)

    def interrupt_tools(self) -> list[str]:
        """Stop every running tool call (ctrl-c); the turn itself goes on."""
        ids = list(self._running)
        for call_id, task in list(self._running.items()):
            self._interrupted.add(call_id)
            task.cancel()
        return ids

    def was_interrupted(self, call_id: str) -> bool:
        """True when ``call_id`` was stopped by :meth:`interrupt_tools` (ctrl-c) rather than
        by the whole turn being cancelled.  A tool that catches ``CancelledError`` asks this:
        interrupted, it cleans up and fails the call with a message; otherwise it re-raises."""
        return call_id in self._interrupted

    # ---- the turn ---------------------------------------------------------------------------

    async def run(self, prompt: str | Message) -> AsyncIterator[ev.Event]:
        """Run one turn for ``prompt``; yields events and ends with a ``done`` event.

        What the recorder has to say (a message that could not be saved, a fork to a new
        session id) is passed on as soon as it happens, and always before ``done``."""
        async with contextlib.aclosing(self._turn(prompt)) as events:
            async for event in events:
                # Before the event: a failure while the loop worked since the last one (a
                # tool result that could not be saved) is told before the text that follows.
                for note in self._recorder_events(final=isinstance(event, ev.DoneEvent)):
                    yield note
                yield event

    def _recorder_events(self, final: bool = False) -> list[ev.Event]:
        take = getattr(self.recorder, "take_events", None)
        if take is None:
            return []
        events: list[ev.Event] = take(final=final)
        for event in events:
            self._emit_coarse(event)
        return events

    async def _turn(self, prompt: str | Message) -> AsyncGenerator[ev.Event, None]:
        message = prompt if isinstance(prompt, Message) else Message.user(prompt)
        if self.parent is None:  # the person's prompt: plugins may refuse it or add to it
            refused, context = self.hooks.prompt_submitted(message.text, self)
            if refused is not None:
                error = ev.ErrorEvent(refused, "refused")
                self._emit_coarse(error)
                yield error
                yield ev.DoneEvent("error")
                return
            if context:
                message = Message(message.role, [*message.parts, TextPart(context)])
        self._append(message)
        if self.parent is None:  # a subagent shares its parent's gate, and its turn
            self.gate.new_turn()
        self.turn_changed_paths = set()
        self.busy = True
        turn = TurnUsage()
        compaction_reported = False
        self._emit_coarse(ev.TurnStartEvent(message.text))
        try:
            if self._after_turn:
                # The last turn's formatter may still be rewriting files: the model must not
                # read or edit them before it is done.
                yield ev.NoticeEvent("waiting for the last turn's after-turn work: "
                                     + ", ".join(self.after_turn_pending))
                await self.wait_after_turn()
            while True:
                if turn.steps >= self.max_steps:
                    notice = ev.NoticeEvent(
                        f"stopped after {self.max_steps} steps (the step cap); "
                        "send another prompt to continue")
                    yield notice
                    yield self._done("max_steps", turn)
                    return
                turn.steps += 1
                finished: StepFinished | None = None
                partial: list[str] = []
                try:
                    request = None
                    async for prepared in self._prepare_request():
                        if isinstance(prepared, ProviderRequest):
                            request = prepared
                        else:
                            yield prepared
                    assert request is not None
                    for text in request.metadata.get("notices") or ():
                        yield ev.NoticeEvent(str(text))
                    compacted = request.metadata.get("compacted")
                    if compacted and not compaction_reported:  # once per turn, not per step
                        compaction_reported = True
                        event = ev.CompactedEvent(int(compacted[0]), int(compacted[1]))
                        self._emit_coarse(event)
                        yield event
                    spec = self.runtime.provider_spec
                    if spec is not None and spec.warm_modules:
                        # Its SDK imports on a worker: the UI keeps drawing meanwhile.
                        await sdk_warmup.import_off_loop(spec.warm_modules)
                    async for item in self.runtime.provider.stream(request):
                        if isinstance(item, TextDelta):
                            text = clean_text(item.text)  # as the history will hold it
                            partial.append(text)
                            yield ev.TextEvent(text)
                        elif isinstance(item, ReasoningDelta):
                            yield ev.ReasoningEvent(clean_text(item.text))
                        elif isinstance(item, ToolCallStarted):
                            yield ev.ToolStartEvent(item.id, item.name)
                        elif isinstance(item, ProviderNotice):
                            yield ev.NoticeEvent(item.text)
                        elif isinstance(item, StepFinished):
                            finished = item
                except ProviderError as exc:
                    self._keep_partial(partial)
                    if isinstance(exc, BudgetExceeded):  # refused before sending: no step
                        turn.steps -= 1
                    budget = exc.kind == "budget"
                    error = ev.ErrorEvent(exc.message, "budget" if budget else "provider",
                                          exc.status)
                    self._emit_coarse(error)
                    yield error
                    yield self._done("budget" if budget else "error", turn)
                    return
                except (asyncio.CancelledError, GeneratorExit):  # esc, or the consumer left
                    self._keep_partial(partial)
                    raise
                except Exception as exc:  # a broken provider plugin fails the turn, not the run
                    log.exception("the model request failed unexpectedly")
                    self._keep_partial(partial)
                    error = ev.ErrorEvent(
                        f"the model request failed unexpectedly ({type(exc).__name__}: {exc}); "
                        "details are in the log", "internal")
                    self._emit_coarse(error)
                    yield error
                    yield self._done("error", turn)
                    return
                if finished is None:
                    self._keep_partial(partial)
                    error = ev.ErrorEvent("the provider's stream ended before the step finished",
                                          "provider")
                    self._emit_coarse(error)
                    yield error
                    yield self._done("error", turn)
                    return
                self._append(finished.message)
                answered = finished.model or request.model or self.model
                turn.add(answered, finished.usage)
                self.usage.add(finished.usage)
                self.hooks.request_done(self, answered, finished.usage)
                if self.recorder is not None:
                    self.recorder.step_finished(self, finished.usage, model=answered)
                calls = finished.message.tool_calls
                if not calls:
                    yield self._done("end", turn)
                    return
                async for call_event in self._run_calls(calls):
                    yield call_event
        finally:
            self.busy = False
            self._close_open_calls()

    # ---- tool calls -------------------------------------------------------------------------

    async def _run_calls(self, calls: list[ToolCallPart]) -> AsyncIterator[ev.Event]:
        """Gate every call in order, then run the approved ones; answer all of them."""
        results: dict[str, ToolResultPart] = {}
        self._results = results  # so an aborted turn keeps the answers it already has
        approved: list[tuple[ToolCall, Tool, dict[str, Any], Effects]] = []
        offered = {t.name: t for t in self.offered_tools}
        for part in calls:
            call = ToolCall(part.id, part.name, part.arguments, part.raw_arguments, self.origin)
            yield ev.ToolCallEvent(part.id, part.name, part.arguments, self.origin)
            try:
                tool, args, effects = self._prepare(part, offered)
            except ToolError as exc:
                message = cap_output(str(exc))  # it may quote the model's input at length
                results[part.id] = ToolResultPart(part.id, part.name, message, True)
                error = ev.ToolErrorEvent(part.id, part.name, message)
                self._emit_coarse(error)
                yield error
                continue
            call.arguments = args
            decision = await self.gate.decide(call, tool, effects, self)
            for text in decision.notices:
                notice = ev.NoticeEvent(text)
                self._emit_coarse(notice)
                yield notice
            if not decision.allowed:
                results[part.id] = ToolResultPart(part.id, part.name, decision.message, True)
                denied = ev.ToolDeniedEvent(part.id, part.name, decision.message, decision.by,
                                            decision.allow_hint)
                self._emit_coarse(denied)
                yield denied
                continue
            if decision.arguments is not None:  # the user edited the call (rejected hunks)
                try:
                    args, effects = _edited_call(tool, effects, decision.arguments)
                except ToolError as exc:
                    results[part.id] = ToolResultPart(part.id, part.name, str(exc), True)
                    denied = ev.ToolDeniedEvent(part.id, part.name, str(exc), "user")
                    self._emit_coarse(denied)
                    yield denied
                    continue
                call.arguments = args
            if decision.note:
                self._notes[call.id] = decision.note
            self._allowed_by[call.id] = decision.allowed_by
            approved.append((call, tool, args, effects))

        for batch in _batches(approved):
            async for item in self._execute_batch(batch, results):
                yield item
        self._append(Message("tool", [results[p.id] for p in calls]))

    def _prepare(self, part: ToolCallPart,
                 offered: dict[str, Tool]) -> tuple[Tool, dict[str, Any], Effects]:
        tool = offered.get(part.name)
        if tool is None:
            names = ", ".join(sorted(offered)) or "none"
            name = part.name if len(part.name) <= 100 else part.name[:100] + "..."
            raise ToolError(f"Unknown tool: {name}. Tools available now: {names}.")
        if INVALID_JSON in part.arguments or (not part.arguments and part.raw_arguments
                                                     and part.raw_arguments.strip() != "{}"):
            args = parse_arguments(part.name, part.arguments.get(INVALID_JSON,
                                                                 part.raw_arguments))
        else:
            args = dict(part.arguments)
        check_arguments(tool, args)
        try:
            effects = tool.effects(args)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(
                f"{part.name} could not work out what this call would do: {exc}") from exc
        return tool, args, effects

    async def _execute_batch(self, batch: list[tuple[ToolCall, Tool, dict[str, Any], Effects]],
                             results: dict[str, ToolResultPart]) -> AsyncIterator[ev.Event]:
        """Run a batch concurrently, streaming their output events as they come."""
        queue: asyncio.Queue[ev.Event | None] = asyncio.Queue()
        tasks: list[asyncio.Task[None]] = []
        for call, tool, args, effects in batch:
            self.hooks.before_tool_call(call, effects, self)
            task = asyncio.create_task(self._execute(call, tool, args, queue, results))
            self._running[call.id] = task
            tasks.append(task)
        pending = len(tasks)
        try:
            while pending:
                item = await queue.get()
                if item is None:
                    pending -= 1
                    continue
                yield item
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            for call, _tool, _args, effects in batch:
                self._running.pop(call.id, None)
                self._interrupted.discard(call.id)
                done = results.get(call.id)
                if done is not None and not done.is_error:
                    self.turn_changed_paths.update(effects.changed_paths)

    async def _execute(self, call: ToolCall, tool: Tool, args: dict[str, Any],
                       queue: asyncio.Queue[ev.Event | None],
                       results: dict[str, ToolResultPart]) -> None:
        printed: list[str] = []  # what the call showed, kept if the turn is cancelled

        def emit(chunk: str) -> None:
            if chunk:
                printed.append(chunk)
                queue.put_nowait(ev.ToolOutputEvent(call.id, chunk))

        ctx = ToolContext(workspace=self.workspace, state_dir=self.config.state_dir, call=call,
                          config=self.config, session=self, emit_output=emit,
                          allowed_by=self._allowed_by.pop(call.id, "policy"))
        try:
            try:
                out = await tool.run(args, ctx)
                result = out if isinstance(out, ToolResult) else ToolResult(str(out))
            except ToolError as exc:
                result = ToolResult(str(exc), is_error=True)
            except asyncio.CancelledError:
                if call.id not in self._interrupted:
                    # The whole turn is cancelled (esc, a signal in headless): what the call
                    # printed so far goes into the history with the note, on every front end.
                    aborted = TURN_ABORTED
                    if printed:
                        aborted = keep_large(f"{TURN_ABORTED}\nOutput so far:\n{''.join(printed)}",
                                             state_dir=self.config.state_dir,
                                             session_id=self.id, call_id=call.id)
                    results[call.id] = ToolResultPart(call.id, call.name, aborted, True)
                    raise
                result = ToolResult(INTERRUPTED, is_error=True)
            except Exception as exc:  # a broken tool fails its call, never the turn
                log.exception("tool %s raised", call.name)
                result = ToolResult(f"{call.name} failed: {type(exc).__name__}: {exc}",
                                    is_error=True)
            result = self.hooks.tool_result(call, result, self)
            # Over the cap, the whole result is saved under the state dir and the model
            # gets its head, its tail and the path to read the rest from.
            output = keep_large(result.output, state_dir=self.config.state_dir,
                                session_id=self.id, call_id=call.id)
            images, dropped = bounded_images(list(result.images or ()))
            if dropped:  # said where the model reads it, never truncated away
                output = "\n".join([output, *dropped])
            note = self._notes.pop(call.id, "")
            if note:  # what the user changed about the call, never truncated away
                output = f"{output}\n\n{note}"
            results[call.id] = ToolResultPart(call.id, call.name, output, result.is_error,
                                              images)
            if result.is_error:
                event: ev.Event = ev.ToolErrorEvent(call.id, call.name, output)
            else:
                event = ev.ToolResultEvent(call.id, call.name, output, result.summary,
                                           result.display)
            self._emit_coarse(event)
            queue.put_nowait(event)
        finally:
            queue.put_nowait(None)

    # ---- bookkeeping ------------------------------------------------------------------------

    def _append(self, message: Message) -> None:
        """Add a message to the history; the recorder commits it to the store at once.
        Its text is cleaned first: a lone surrogate would break every later request."""
        self.messages.append(message.clean())
        if self.recorder is not None:
            self.recorder.message_added(self, message)

    def _keep_partial(self, partial: list[str]) -> None:
        """Keep an answer cut short (error, esc) in the history, as the user saw it."""
        text = "".join(partial)
        if text:
            self._append(Message("assistant", [TextPart(text)]))

    def _close_open_calls(self) -> None:
        """Give every unanswered tool call a result so the history stays valid."""
        if not self.messages:
            return
        last = self.messages[-1]
        if last.role != "assistant" or not last.tool_calls:
            return
        done = self._results
        self._append(Message("tool", [
            done.get(c.id) or ToolResultPart(c.id, c.name, TURN_ABORTED, True)
            for c in last.tool_calls]))

    def _done(self, reason: str, turn: TurnUsage) -> ev.DoneEvent:
        done = ev.DoneEvent(reason, turn.usage.input_tokens, turn.usage.output_tokens,
                            turn.usage.cached_tokens, turn.cost(self.model, self.hooks.price_usage),
                            turn.steps, reasoning_tokens=turn.usage.reasoning_tokens,
                            cache_write_tokens=turn.usage.cache_write_tokens)
        self._emit_coarse(done)
        self._start_after_turn(done)
        return done

    # ---- after the turn ---------------------------------------------------------------------

    def _start_after_turn(self, done: ev.DoneEvent) -> None:
        for plugin, work in self.hooks.after_turn(done, self):
            task = asyncio.ensure_future(self._supervised(plugin, work))
            self._after_turn[task] = plugin
            task.add_done_callback(lambda t: self._after_turn.pop(t, None))

    async def _supervised(self, plugin: str, work: Awaitable[None]) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a plugin's failure never breaks the session
            self.hooks.report(plugin, "after-turn work", exc)

    @property
    def after_turn_pending(self) -> list[str]:
        """The plugins whose after-turn work (``agent_after_turn``) is still running."""
        return sorted(set(self._after_turn.values()))

    async def after_turn_idle(self) -> None:
        """Return once no after-turn work runs (no bound, nothing cancelled): for a front end
        that refreshes what it shows when the work ends."""
        while self._after_turn:
            await asyncio.wait(list(self._after_turn))

    async def wait_after_turn(self, timeout: float | None = None) -> list[str]:
        """Wait for the after-turn work started so far, for at most ``timeout`` seconds (by
        default the ``after_turn_timeout`` setting); then cancel what is left, let it clean
        up, and report it.  Returns the plugins whose work was cancelled.

        Cancelling the caller (esc while the next turn waits) leaves the work running."""
        if not self._after_turn:
            return []
        if timeout is None:
            timeout = float(self.config.get("after_turn_timeout") or AFTER_TURN_TIMEOUT)
        tasks = dict(self._after_turn)
        _, late = await asyncio.wait(tasks, timeout=timeout)
        if not late:
            return []
        for task in late:
            task.cancel()
        await asyncio.wait(late, timeout=CLEANUP_GRACE)
        cancelled = sorted({tasks[t] for t in late})
        for plugin in cancelled:
            note = (f"plugin {plugin}: after-turn work still running after {timeout:g} s; "
                    "cancelled")
            log.warning(note)
            self.hooks.problems.append(note)
        return cancelled

    def _emit_coarse(self, event: ev.Event) -> None:
        self.hooks.event(event, self)


def _edited_call(tool: Tool, approved: Effects,
                 arguments: dict[str, Any]) -> tuple[dict[str, Any], Effects]:
    """Check arguments the user edited at approval: valid, and touching nothing more than the
    call that was approved."""
    check_arguments(tool, arguments)
    effects = tool.effects(arguments)
    extra = set(effects.subjects()) - set(approved.subjects())
    if extra or (effects.opaque and not approved.opaque):
        raise ToolError("The edited call would touch more than was approved "
                        f"({', '.join(sorted(extra)) or 'unknown effects'}), so it was not run.")
    return arguments, effects


def _batches(approved: list[tuple[ToolCall, Tool, dict[str, Any], Effects]]
             ) -> list[list[tuple[ToolCall, Tool, dict[str, Any], Effects]]]:
    """Consecutive calls that only read run together; anything that may change state runs
    alone, in the order the model asked."""
    batches: list[list[tuple[ToolCall, Tool, dict[str, Any], Effects]]] = []
    for item in approved:
        parallel = not item[3].mutating
        if parallel and batches and all(not b[3].mutating for b in batches[-1]):
            batches[-1].append(item)
        else:
            batches.append([item])
    return batches
