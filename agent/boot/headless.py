"""``agent -p``: one turn without a screen.  Answer text on stdout, diagnostics on stderr,
or with ``--json`` one event per line on stdout.  Exit codes are in :data:`EXIT_CODES`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any, TextIO

from agent.boot.headless_result import CostTotal, TurnRecord, files_changed
from agent.contract import events as ev
from agent.contract.messages import clean_text
from agent.lib.visible import strip_controls, visible

#: Exit codes of ``agent`` (documented in docs/headless.md; a code is never reused).
EXIT_OK = 0
EXIT_PROVIDER = 1
EXIT_USAGE = 2
EXIT_MAX_STEPS = 3
EXIT_BUDGET = 4
EXIT_UNSAVED = 5
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141

EXIT_CODES = {
    EXIT_OK: "the turn completed (tool denials included)",
    EXIT_PROVIDER: "provider or model error (the request failed, the stream broke, the "
                   "model returned nothing)",
    EXIT_USAGE: "usage or configuration error (bad flag, broken config, no API key)",
    EXIT_MAX_STEPS: "the step cap was reached before the model finished",
    EXIT_BUDGET: "the spending cap (max_spend_usd) would have been crossed",
    EXIT_UNSAVED: "the turn ran, but messages of the session could not be saved (a full, "
                  "read-only or broken state dir); the turn's own failure code wins",
    EXIT_INTERRUPTED: "interrupted by a signal (ctrl-c, SIGTERM)",
    EXIT_PIPE: "stdout was closed by its reader (`agent -p ... | head`); the turn was stopped",
}

_REASON_CODES = {"end": EXIT_OK, "max_steps": EXIT_MAX_STEPS, "error": EXIT_PROVIDER,
                 "budget": EXIT_BUDGET, "interrupted": EXIT_INTERRUPTED}


#: The longest streamed text waits in the buffer before it is flushed (a frame's time): a
#: fast stream is written in a few large writes instead of one per token.
FLUSH_EVERY = 0.016


class BatchedOutput:
    """Text written in batches: what is written within :data:`FLUSH_EVERY` seconds goes to
    ``out`` in one write and one flush (a fast stream costs a few writes a frame, not one
    per token).  Without a running event loop it is written and flushed at once.  A write
    that fails later (a closed pipe) raises at the next write or :meth:`flush_now`."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._pending: list[str] = []
        self._scheduled: asyncio.TimerHandle | None = None
        self._failed: BaseException | None = None

    def write(self, text: str) -> None:
        self._raise_failure()
        if self._scheduled is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.out.write(text)
                self.out.flush()
                return
            self._scheduled = loop.call_later(FLUSH_EVERY, self._deferred_flush)
        self._pending.append(text)

    def flush_now(self) -> None:
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        self._raise_failure()
        self._write_pending()
        self.out.flush()

    def _write_pending(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            self.out.write(pending[0] if len(pending) == 1 else "".join(pending))

    def _deferred_flush(self) -> None:
        self._scheduled = None
        try:
            self._write_pending()
            self.out.flush()
        except (OSError, ValueError) as exc:  # raised where the turn can handle it
            self._failed = exc

    def _raise_failure(self) -> None:
        if self._failed is not None:
            failure, self._failed = self._failed, None
            raise failure


def terminal_text(text: str, raw: bool = False) -> str:
    """The model's text as text mode prints it for a terminal: escape sequences and control
    characters removed (a page the model read could otherwise set the clipboard with OSC 52,
    retitle or clear the screen), unless ``raw`` (``--raw-output``)."""
    text = clean_text(text)
    return text if raw else strip_controls(text)


def diagnostic_text(line: str) -> str:
    """A diagnostic line as stderr shows it: a command, path or argument in it is shown as
    it would run, hidden and reordering characters spelled out (``⟨U+202E⟩``)."""
    return visible(clean_text(line))


class TextPrinter:
    """Plain mode: the answer on stdout, one tagged line per diagnostic on stderr.
    ``raw_output`` prints the model's text as it came (see :func:`terminal_text`)."""

    def __init__(self, out: TextIO, err: TextIO, raw_output: bool = False) -> None:
        self.out, self.err = BatchedOutput(out), err
        self.raw_output = raw_output
        self.ended_with_newline = True

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextEvent):
            self.out.write(terminal_text(event.text, self.raw_output))
            if event.text:
                self.ended_with_newline = event.text.endswith("\n")
            return
        line = _diagnostic(event)
        if line is not None:
            self.out.flush_now()  # the answer so far comes before the diagnostic
            self.err.write(diagnostic_text(line) + "\n")
            self.err.flush()
        if isinstance(event, ev.DoneEvent):
            if not self.ended_with_newline:
                self.out.write("\n")
            self.out.flush_now()

    def finish(self) -> None:
        """Flush what is still buffered (raises if stdout was closed)."""
        self.out.flush_now()


def _diagnostic(event: ev.Event) -> str | None:
    if isinstance(event, ev.ToolCallEvent):
        return f"[tool] {event.name} {json.dumps(event.input, ensure_ascii=False)}"
    if isinstance(event, ev.ToolDeniedEvent):
        allow = f" to allow it: {event.allow}" if event.allow else ""
        return f"[denied] {event.name} ({event.reason}){allow}"
    if isinstance(event, ev.ToolErrorEvent):
        return f"[tool-error] {event.name}: {event.error}"
    if isinstance(event, ev.NoticeEvent):
        return f"[notice] {event.text}"
    if isinstance(event, ev.CompactedEvent):
        return f"[compacted] {event.before} messages pruned to {event.after}"
    if isinstance(event, ev.ErrorEvent):
        return f"[error] {event.error}"
    if isinstance(event, ev.SaveFailedEvent):
        return (f"[unsaved] session {event.session[:13]}: {event.unsaved} message(s) not saved: "
                f"{event.error}")
    if isinstance(event, ev.SessionForkedEvent) and event.moved:
        return (f"[forked] another process continued session {event.forked_from[:13]} at the "
                f"same time; this run goes on as {event.session[:13]} (the other run keeps "
                f"{event.forked_from[:13]}, untouched)")
    if isinstance(event, ev.SessionForkedEvent):
        return (f"[forked] another process continued this session ({event.forked_from[:13]}) "
                f"at the same time; its messages went to session {event.session[:13]}")
    return None


class JsonPrinter:
    """``--output-format stream-json`` (``--json``): one event object per line; streamed text
    events are flushed in batches (within :data:`FLUSH_EVERY`), every other event as it
    happens.  Each turn ends with ``done`` and then its ``result``."""

    def __init__(self, out: TextIO) -> None:
        self.out = BatchedOutput(out)

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.TurnStartEvent):
            return
        self.out.write(event.to_line() + "\n")
        if not isinstance(event, (ev.TextEvent, ev.ReasoningEvent)):
            self.out.flush_now()

    def result(self, event: ev.ResultEvent) -> None:
        self(event)

    def finish(self) -> None:
        self.out.flush_now()


class _Expander:
    """The command context an expanding slash command gets in a headless run: it keeps the
    prompt the command starts and passes its warnings on as notices."""

    def __init__(self, session: Any, printer: Any) -> None:
        self.session = session
        self.config = session.config
        self.workspace = session.workspace
        self.prompt: str | None = None
        self._printer = printer

    def run_prompt(self, prompt: str) -> None:
        self.prompt = prompt

    def warn(self, text: str) -> None:
        self._printer(ev.NoticeEvent(text))

    notice = error = warn


async def expand_command(session: Any, prompt: str, printer: Any) -> str:
    """``/name args`` of a command that expands to a prompt (``SlashCommand.expands``: a
    custom command) becomes that prompt; anything else is sent as typed."""
    import inspect

    text = prompt.strip()
    hooks = getattr(session, "hooks", None)
    if not text.startswith("/") or text.startswith("//") or hooks is None:
        return prompt
    name, _, args = text[1:].partition(" ")
    command = hooks.commands(session.config).get(name)
    if command is None or not getattr(command, "expands", False):
        return prompt
    ctx = _Expander(session, printer)
    result = command.run(ctx, args.strip())
    if inspect.isawaitable(result):
        result = await result
    if ctx.prompt is not None:
        return ctx.prompt
    if isinstance(result, str) and result:
        printer(ev.NoticeEvent(result))
    return prompt


class ResultPrinter(TextPrinter):
    """``--output-format json``: stdout holds only each turn's ``result`` object (one line);
    diagnostics go to stderr as in plain mode."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        super().__init__(out, err)
        self.answer_out = out

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, (ev.TextEvent, ev.DoneEvent)):
            return
        super().__call__(event)

    def result(self, event: ev.ResultEvent) -> None:
        self.out.write(event.to_line() + "\n")
        self.out.flush_now()


#: ``--output-format`` values.
OUTPUT_FORMATS = ("text", "json", "stream-json")


def printer_for(output: str, out: TextIO, err: TextIO, raw_output: bool = False) -> Any:
    """The printer of an ``--output-format`` (``raw_output``: ``--raw-output``, text only)."""
    if output == "stream-json":
        return JsonPrinter(out)
    if output == "json":
        return ResultPrinter(out, err)
    return TextPrinter(out, err, raw_output)


class Turns:
    """What the turns of one run share: the printer, and the cost so far (``total_cost_usd``)."""

    def __init__(self, session: Any, printer: Any) -> None:
        self.session = session
        self.printer = printer
        self.costs = CostTotal()
        self.last_code = EXIT_OK

    async def run(self, prompt: str, piped: str = "") -> int:
        """Run one turn for ``prompt`` (``piped``, the stdin block, after it), print its
        events and its ``result``; return its exit code.  Cancelled (a signal, an
        ``interrupt`` line), it ends the turn as ``interrupted``, prints that, and
        re-raises."""
        record = TurnRecord()
        printer = self.printer

        def show(event: ev.Event) -> None:
            record.see(event)
            printer(event)

        try:
            code = await run_turn(self.session, prompt, show, piped)
        except asyncio.CancelledError:
            show(ev.DoneEvent("interrupted", steps=0))
            self._result(record, EXIT_INTERRUPTED)
            raise
        if code == EXIT_OK and (record.save_failed
                                or (getattr(self.session, "unsaved_reason", None)
                                    and self.session.messages)):
            code = EXIT_UNSAVED  # messages missing from the store: never a silent 0
        self._result(record, code)
        return code

    def _result(self, record: TurnRecord, code: int) -> None:
        self.last_code = code
        total = self.costs.add(record)
        result = getattr(self.printer, "result", None)
        if result is None:
            return
        try:
            changed = files_changed(self.session)
        except Exception:  # a report that cannot be made never costs the turn its record
            changed = []
        result(record.build(self.session, code, total, changed))
        finish = getattr(self.printer, "finish", None)
        if finish is not None:
            finish()


def init_event(session: Any) -> ev.InitEvent:
    """The ``system``/``init`` line that opens a ``stream-json`` run."""
    try:
        tools = [tool.name for tool in session.tools_for_step()]
    except Exception:  # a plugin narrowing the tools failed: the turn will say so
        tools = sorted(getattr(session, "tools", {}))
    config = getattr(session, "config", None)
    mode = config.get("permission_mode") if config is not None else None
    return ev.InitEvent(session_id=session.id, cwd=str(getattr(session, "workspace", "")),
                        model=str(getattr(session, "model", "") or ""), tools=tools,
                        permission_mode=str(mode or "default"))


async def run_turn(session: Any, prompt: str, printer: Any, piped: str = "") -> int:
    """Run one turn, print every event, and return the exit code.  ``piped`` (the block of
    piped stdin) follows the prompt; ``@`` mentions are looked for in the prompt only."""
    code = EXIT_PROVIDER
    prompt = await expand_command(session, prompt, printer)
    message: Any = prompt + piped
    hooks = getattr(session, "hooks", None)
    if "@" in prompt and hooks is not None:  # @server:uri mentions attach what they name
        from agent.contract.mentions import expand
        from agent.contract.messages import Message, TextPart

        message, warnings = await expand(prompt, hooks.mentions(session.config))
        if piped:
            parts = list(message.parts)
            if parts and isinstance(parts[0], TextPart):
                parts[0] = TextPart(parts[0].text + piped)
            else:
                parts.insert(0, TextPart(prompt + piped))
            message = Message(message.role, parts)
        for warning in warnings:
            printer(ev.NoticeEvent(warning))
    # aclosing: if printing fails (a closed pipe), the turn ends now, its history valid.
    async with contextlib.aclosing(session.run(message)) as events:
        async for event in events:
            printer(event)
            if isinstance(event, ev.DoneEvent):
                code = _REASON_CODES.get(event.reason, EXIT_PROVIDER)
    finish = getattr(printer, "finish", None)
    if finish is not None:
        finish()
    return code


def run(session: Any, prompt: str, *, json_mode: bool = False, output: str | None = None,
        out: TextIO | None = None, err: TextIO | None = None,
        messages: Any = None, raw_output: bool = False, piped: str = "") -> int:
    """Run the headless turn in a fresh event loop; SIGINT/SIGTERM end it with 130.

    ``output`` is the ``--output-format`` (``json_mode`` is the older spelling of
    ``stream-json``); ``piped`` is the block of piped stdin that follows ``prompt``.  With
    ``messages`` (``--input-format stream-json``: a
    :class:`agent.boot.stream_input.MessageStream`), the prompts come from there, one turn
    each, after ``prompt`` when it is not empty."""
    out = out or sys.stdout
    err = err or sys.stderr
    for stream in (out, err):
        # A terminal whose encoding lacks a character the model wrote gets a "?", not a
        # traceback in the middle of the answer.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):
                pass
    output = output or ("stream-json" if json_mode else "text")
    printer = printer_for(output, out, err, raw_output)
    turns = Turns(session, printer)
    if output == "stream-json":
        printer(init_event(session))

    async def main() -> int:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, task.cancel)
            except (NotImplementedError, RuntimeError):  # not the main thread / platform
                pass
        try:
            if messages is None:
                code = await turns.run(prompt, piped)
            else:
                code = await messages.drive(turns, prompt)
        except asyncio.CancelledError:
            return EXIT_INTERRUPTED
        except BrokenPipeError:  # the reader went away, as `| head` does: stop quietly
            _discard_output(out)
            return EXIT_PIPE
        try:
            # The turn's after-turn work (the formatter) finishes before the run exits.
            await session.wait_after_turn()
        except asyncio.CancelledError:  # ctrl-c while waiting: the work is cancelled too
            return EXIT_INTERRUPTED
        return code

    return asyncio.run(main())


def _discard_output(stream: TextIO) -> None:
    """Point a closed pipe's file descriptor at /dev/null, so the flush at exit does not
    fail again with a traceback."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
