"""Running guard plugins so that no guard can weaken the gate or stall the session.

A guard answers ``None`` or a valid :class:`~agent.contract.verdict.Verdict`.  Everything else fails
closed, and the plugin is reported once (per kind of fault) with the reason:

- it raises (anything, ``SystemExit`` included): the call is denied;
- it returns something else (the string ``"deny"``, a dict, a ``Verdict`` whose decision is
  not ``allow``/``ask``/``deny``, an awaitable): the call is denied;
- it takes longer than ``guard_timeout`` seconds: the call is denied;
- it is written ``async def``: the plugin is refused when it registers
  (:func:`agent.boot.plugins.async_guard_problem`), and a coroutine a guard
  returns anyway is closed unawaited and denies.

Each guard runs on a daemon thread of its own, all guards of one call in parallel, and the
event loop only awaits their answers, so a guard that hangs (a blocking socket, a sleep, an
endless loop) cannot freeze the screen or the turn.  The threads are reused once idle
(:class:`_Workers`), never shared while busy.  Python cannot kill a thread: a guard that
timed out keeps its thread until it returns, and while it has not, later calls are denied at
once instead of piling more threads up behind it.  Daemon threads never hold up the exit.

Limit: a guard stuck inside C code that never releases the GIL would still stall the whole
process; no thread can prevent that, only a separate process could.
"""

from __future__ import annotations

import concurrent.futures as cf
import inspect
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agent.contract.verdict import DECISIONS, Verdict

log = logging.getLogger("agent.guards")

#: Seconds a guard may take over one call unless ``guard_timeout`` says otherwise.
DEFAULT_TIMEOUT = 2.0

GuardImpl = tuple[str, Callable[..., Any], tuple[str, ...]]


def invalid_result(result: Any) -> str | None:
    """Why ``result`` is not a guard answer (None or a valid Verdict), or None when it is."""
    if result is None:
        return None
    if isinstance(result, Verdict):
        if result.decision not in DECISIONS:
            return (f"returned a Verdict with decision {result.decision!r}; expected one of "
                    f"{', '.join(DECISIONS)}")
        if not isinstance(result.reason, str) or not isinstance(result.source, str):
            return "returned a Verdict whose reason or source is not a string"
        return None
    if inspect.isawaitable(result):
        return (f"returned {type(result).__name__} (an awaitable); guards must answer at once "
                "with a Verdict or None")
    shown = repr(result)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"returned {shown} (a {type(result).__name__}), not a Verdict or None"


@dataclass
class Fault:
    """One guard that did not answer properly for one call."""

    plugin: str
    kind: str  # "raised", "invalid", "timeout", "busy"
    detail: str

    def verdict(self) -> Verdict:
        return Verdict.deny(f"the {self.plugin} guard {self.detail}, so the call was refused "
                            "to be safe", self.plugin)


class _Workers:
    """The daemon threads guards run on, each reused once it is idle.

    A thread of its own per guard call made every call wait for new threads to be
    scheduled (``Thread.start`` returns only once the thread runs, which with other threads
    holding the GIL can take a switch interval).  An idle worker takes the next call from
    its queue instead, and a new worker starts only when none is idle, so a guard that
    hangs keeps its worker, as it kept its thread, and never holds up anyone else's call.
    A worker counts as idle again before it hands its answer over, so calls made one after
    the other all run on the same thread.
    """

    #: Idle workers kept; one finishing beyond these ends.
    MAX_IDLE = 16

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[tuple[str, Callable[[], Any], cf.Future[Any]]]] = []

    def submit(self, name: str, fn: Callable[[], Any]) -> cf.Future[Any]:
        """Run ``fn()`` on an idle worker, or on a new one; its outcome lands in the
        future (an exception, ``SystemExit`` included, as the future's exception)."""
        future: cf.Future[Any] = cf.Future()
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name=name,
                             daemon=True).start()
        inbox.put((name, fn, future))
        return future

    def _serve(self, inbox: queue.SimpleQueue[tuple[str, Callable[[], Any], cf.Future[Any]]]
               ) -> None:
        while self._serve_one(inbox, *inbox.get()):
            pass

    def _serve_one(self, inbox: queue.SimpleQueue[tuple[str, Callable[[], Any],
                                                        cf.Future[Any]]],
                   name: str, fn: Callable[[], Any], future: cf.Future[Any]) -> bool:
        """Run one call; whether this worker stays for the next.  A frame of its own, so an
        idle worker keeps nothing of the call it served (the guard's arguments reach the
        session, its history and results: a worker that held them kept a whole turn alive
        until its next call)."""
        threading.current_thread().name = name  # who is stuck, in a stack dump
        result: Any = None
        error: BaseException | None = None
        if future.set_running_or_notify_cancel():
            try:
                result = fn()
            except BaseException as exc:  # SystemExit from a guard must not end the agent
                error = exc
        with self._lock:
            stay = len(self._idle) < self.MAX_IDLE
            if stay:
                self._idle.append(inbox)
        if future.running():
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
        return stay


_WORKERS = _Workers()


def _start(plugin: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> cf.Future[Any]:
    """Run ``fn(**kwargs)`` on a daemon worker thread; its outcome lands in the future."""
    return _WORKERS.submit(f"guard:{plugin}", lambda: fn(**kwargs))


class GuardRunner:
    """Calls the guards of one plugin manager; remembers hung guards and what was reported."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report
        self._reported: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        #: a guard's call that overran its time and has not returned yet
        self._hung: dict[str, cf.Future[Any]] = {}
        #: problems reported since :meth:`take_new_problems` was last called
        self._new: list[str] = []

    # ---- the two ways to wait ---------------------------------------------------------------

    async def run(self, impls: Iterable[GuardImpl], kwargs: dict[str, Any],
                  timeout: float) -> list[Verdict]:
        """Every guard's verdict, awaited without blocking the event loop."""
        import asyncio  # here: this module is on the way to --help, which needs no loop

        started = self._start_all(impls, kwargs)
        pending = {name: asyncio.wrap_future(fut) for name, fut in started if fut is not None}
        if pending:
            _done, late = await asyncio.wait(pending.values(), timeout=timeout)
            for waiter in late:  # detach: the thread's late answer is dropped
                waiter.cancel()
        return self._collect(started, timeout)

    def run_sync(self, impls: Iterable[GuardImpl], kwargs: dict[str, Any],
                 timeout: float) -> list[Verdict]:
        """The same, for callers without an event loop (``agent policy explain``)."""
        started = self._start_all(impls, kwargs)
        futures = [fut for _name, fut in started if fut is not None]
        if futures:
            cf.wait(futures, timeout=timeout)
        return self._collect(started, timeout)

    # ---- plumbing ---------------------------------------------------------------------------

    def _start_all(self, impls: Iterable[GuardImpl], kwargs: dict[str, Any]
                   ) -> list[tuple[str, cf.Future[Any] | None]]:
        started: list[tuple[str, cf.Future[Any] | None]] = []
        for plugin, fn, argnames in impls:
            with self._lock:
                hung = self._hung.get(plugin)
                if hung is not None and hung.done():
                    del self._hung[plugin]
                    hung = None
            if hung is not None:
                started.append((plugin, None))  # still busy with a call that overran
                continue
            started.append((plugin, _start(plugin, fn, {k: kwargs.get(k) for k in argnames})))
        return started

    def _collect(self, started: list[tuple[str, cf.Future[Any] | None]],
                 timeout: float) -> list[Verdict]:
        verdicts: list[Verdict] = []
        for plugin, future in started:
            if future is None:
                fault = Fault(plugin, "busy", f"has not answered an earlier call it took "
                                              f"longer than {timeout:g} s over")
            elif not future.done():
                with self._lock:
                    self._hung[plugin] = future
                fault = Fault(plugin, "timeout", f"did not answer within {timeout:g} s "
                                                 "(guard_timeout)")
            elif future.exception() is not None:
                exc = future.exception()
                fault = Fault(plugin, "raised", f"failed ({type(exc).__name__}: {exc})")
                log.warning("guard %s raised", plugin, exc_info=exc)
            else:
                result = future.result()
                problem = invalid_result(result)
                if problem is None:
                    if result is not None:
                        verdicts.append(Verdict(result.decision, result.reason,
                                                result.source or plugin))
                    continue
                if inspect.iscoroutine(result):
                    result.close()  # never awaited on purpose: no "never awaited" warning
                fault = Fault(plugin, "invalid", problem)
            self._fault(fault)
            verdicts.append(fault.verdict())
        return verdicts

    def _fault(self, fault: Fault) -> None:
        key = (fault.plugin, fault.kind)
        with self._lock:
            if key in self._reported:
                return
            self._reported.add(key)
        message = (f"plugin {fault.plugin}: its guard {fault.detail}; calls it cannot judge "
                   "are refused")
        log.warning(message)
        self._new.append(message)
        self._report(message)

    def take_new_problems(self) -> list[str]:
        """Problems reported since the last call (for the session to show once)."""
        out, self._new = self._new, []
        return out
