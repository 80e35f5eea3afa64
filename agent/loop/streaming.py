"""Stream deadlines and retries, shared by the provider plugins (all three wire formats).

The SDKs alone cannot keep a turn from hanging: their timeout bounds each socket read, so a
server that sends SSE keep-alive comments (or pings) forever is never cut, and they retry
only the opening of a request, never a stream that went silent after its headers.  So the
provider plugins hand the SDK ``max_retries=0`` and run every attempt through this module:

- ``stream_idle_timeout``: the longest wait for *content*, from sending the request to the
  first content event and between content events.  Keep-alive comments, pings and other
  events that carry nothing (the provider says which, with ``is_content``) do not reset it.
- ``request_deadline``: the longest one model request may take in all, every attempt and
  every wait between attempts included.
- Retries (``max_retries``): a failure that waiting could cure (``ProviderError.retryable``:
  408/409/429/5xx, a connection failure, a timeout, a stall) is tried again while nothing was
  shown yet, after the delay the server asked for (``retry-after``) or an exponential backoff
  from ``retry_backoff``.
  A server asking for longer than ``retry_after_cap`` fails at once, naming the wait.  A
  failure after output began is never retried: the session keeps what arrived.

Everything waits with asyncio, so cancelling the turn (esc) ends a wait at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from agent.contract.providers import (
    ProviderError,
    ProviderNotice,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
)

T = TypeVar("T")

#: The stream events :func:`merge_deltas` joins when they follow each other.
_DELTAS = (TextDelta, ReasoningDelta)

#: Backoff between attempts when the server names no delay (the SDKs' own schedule): the
#: first wait (``retry_backoff`` overrides it), doubled per retry up to ``BACKOFF_MAX``.
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 8.0


@dataclass
class StreamPolicy:
    """How one endpoint's requests are bounded and retried.  ``host`` is how errors name the
    endpoint (``api.openai.com``, ``127.0.0.1:8080``)."""

    host: str
    idle: float = 60.0
    deadline: float = 1800.0
    max_retries: int = 3
    retry_after_cap: float = 60.0
    #: The wait before the first retry when the server names none.
    backoff_first: float = BACKOFF_FIRST

    @classmethod
    def of(cls, settings: Any, host: str) -> StreamPolicy:
        """The policy in a :class:`agent.contract.providers.ProviderSettings`."""
        return cls(host=host, idle=float(settings.stream_idle_timeout),
                   deadline=float(settings.request_deadline),
                   max_retries=max(0, int(settings.max_retries)),
                   retry_after_cap=max(0.0, float(settings.retry_after_cap)),
                   backoff_first=max(0.0, float(settings.retry_backoff)))


def _seconds(value: float) -> str:
    return f"{value:g} s"


class Deadlines:
    """The clock of one model request: the overall deadline, and the idle deadline of the
    attempt in progress.

    ``now`` is the running event loop's clock unless given: the deadlines are kept on the
    clock of the timers that enforce them, so a loop whose clock is moved on (a test that
    fires a 30 s deadline without waiting 30 s) moves both together.  For the standard loops
    it is ``time.monotonic``."""

    def __init__(self, policy: StreamPolicy, now: Callable[[], float] | None = None) -> None:
        self.policy = policy
        self.now = now if now is not None else asyncio.get_running_loop().time
        self.started = self.now()
        self.overall_at = self.started + policy.deadline
        self.idle_at = self.started + policy.idle
        #: Retries made so far (0 on the first attempt); providers tell the server, as the
        #: SDKs do, in ``x-stainless-retry-count``.
        self.retries = 0
        #: Set by the provider once the attempt in progress has shown output; decides the
        #: wording of a stall and that it is not retried.
        self.shown = False

    def headers(self) -> dict[str, str]:
        """Headers for the attempt in progress."""
        return {"x-stainless-retry-count": str(self.retries)}

    def touch(self) -> None:
        """Content arrived: the idle deadline starts again."""
        self.idle_at = self.now() + self.policy.idle

    def remaining(self) -> float:
        """Seconds left before the overall deadline."""
        return self.overall_at - self.now()

    def _next(self) -> tuple[float, str]:
        return (self.idle_at, "idle") if self.idle_at <= self.overall_at \
            else (self.overall_at, "overall")

    def expired(self, which: str, *, output_started: bool) -> ProviderError:
        """The error for a deadline that passed."""
        p = self.policy
        if which == "overall":
            return ProviderError(
                f"{p.host} did not finish answering within request_deadline = "
                f"{_seconds(p.deadline)}", kind="timeout", retryable=False,
                output_started=output_started)
        if output_started:
            return ProviderError(
                f"{p.host} stopped sending in the middle of the answer: no content for "
                f"{_seconds(p.idle)} (stream_idle_timeout)", kind="timeout", retryable=True,
                output_started=True)
        return ProviderError(
            f"{p.host} sent no content for {_seconds(p.idle)} (stream_idle_timeout)",
            kind="timeout", retryable=True)

    async def bounded(self, awaitable: Awaitable[T], *, output_started: bool = False) -> T:
        """Await ``awaitable`` (e.g. sending the request) within the next deadline."""
        when, which = self._next()
        loop = asyncio.get_running_loop()
        # An injected ``now`` may differ from the loop's clock, so convert.
        timer = asyncio.timeout_at(loop.time() + (when - self.now()))
        try:
            async with timer:
                return await awaitable
        except TimeoutError:
            if timer.expired():
                raise self.expired(which, output_started=output_started) from None
            raise

    async def watch(self, items: Any, is_content: Callable[[Any], bool]) -> AsyncIterator[Any]:
        """Iterate the SDK's event stream ``items`` within the deadlines.  ``is_content``
        says whether an event is progress."""
        iterator = items.__aiter__()
        while True:
            try:
                item = await self.bounded(iterator.__anext__(), output_started=self.shown)
            except StopAsyncIteration:
                return
            if is_content(item):
                self.touch()
            yield item


class Watchdog:
    """``clock``'s deadlines over many reads for the price of one timer.

    :meth:`Deadlines.bounded` arms and cancels an asyncio timeout around each await, which on
    a stream is once per socket read.  The watchdog instead keeps one timer that wakes only
    when a deadline may have passed: if content moved the idle deadline meanwhile it sleeps
    again, else it cancels the task while it is inside :meth:`read` (a read is the only
    place the cancellation is turned into the deadline's error), or leaves the error for the
    next :meth:`read` when the task is elsewhere (handing an event on).  Use it from one task,
    and :meth:`close` it when the stream ends."""

    def __init__(self, clock: Deadlines) -> None:
        self.clock = clock
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._reading = False
        self._fired: str | None = None  # the deadline that passed
        self._cancelled = False  # we cancelled the task for it (once)
        self._handle: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        when, _ = self.clock._next()
        self._handle = self._loop.call_later(max(0.0, when - self.clock.now()), self._wake)

    def _wake(self) -> None:
        self._handle = None
        when, which = self.clock._next()
        if when > self.clock.now():
            self._arm()  # content moved the idle deadline on: sleep until the new one
            return
        self._fired = which
        if self._reading and self._task is not None and not self._cancelled:
            self._cancelled = True
            self._task.cancel()

    async def read(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` (one read) within the deadlines."""
        if self._fired is not None:
            raise self.clock.expired(self._fired, output_started=self.clock.shown)
        self._reading = True
        try:
            return await awaitable
        except asyncio.CancelledError:
            task = self._task
            if self._cancelled and task is not None:
                self._cancelled = False
                if task.uncancel() == 0:  # ours alone, not also the turn being cancelled
                    raise self.clock.expired(self._fired or "idle",
                                             output_started=self.clock.shown) from None
            raise
        finally:
            self._reading = False

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


#: ``feed(name, value, out)``: one SSE event (its ``event:`` name and JSON value) into the
#: stream events it makes, appended to ``out``.
Feed = Callable[[Any, Any, list[StreamEvent]], None]


async def read_sse(clock: Deadlines, response: Any, *, named: bool,
                   is_content: Callable[[Any, Any], bool], feed: Feed
                   ) -> AsyncIterator[StreamEvent]:
    """The stream events of an SSE ``response`` (an ``httpx2.Response`` the SDK opened, its
    body unread), read within ``clock``'s deadlines and split by
    :class:`agent.lib.sse.SSESplitter`; ``is_content(name, value)`` says whether an event is
    progress (resets the idle deadline).

    What one read of the socket brings is handled together: consecutive text (or reasoning)
    deltas become one event, so a fast stream costs a few events per read, not one per token.
    A malformed event, or an error ``feed`` raises (a stream error event), ends the stream
    after every event before it has gone out.  After OpenAI's ``[DONE]`` the rest of the body
    is read but not parsed, so the connection can be reused (see :func:`_drain`).
    """
    from agent.lib.sse import DONE, MalformedStream, SSESplitter, clip

    splitter = SSESplitter(named)
    chunks = response.aiter_bytes()
    watchdog = Watchdog(clock)
    done = False
    try:
        while True:
            if done:
                await _drain(chunks)
                return
            try:
                chunk = await watchdog.read(chunks.__anext__())
            except StopAsyncIteration:
                return
            out: list[StreamEvent] = []
            failure: Exception | None = None
            touched = False
            for name, value in splitter.feed(chunk):
                if value is DONE:
                    done = True
                    break
                try:
                    if not touched and is_content(name, value):
                        touched = True
                    feed(name, value, out)
                except ProviderError as exc:
                    failure = exc
                    break
                except (TypeError, AttributeError, KeyError, IndexError, ValueError):
                    # e.g. "choices": null, or a delta that is a string, not an object
                    failure = MalformedStream(
                        "an event of a shape the format does not allow",
                        clip(json.dumps(value, ensure_ascii=False)))
                    break
            if touched:
                clock.touch()
            for event in out if len(out) < 2 else merge_deltas(out):
                yield event
            if failure is None:
                failure = splitter.error
            if failure is not None:
                raise failure
    finally:
        watchdog.close()
        await chunks.aclose()


#: The longest the rest of a body is read after OpenAI's ``[DONE]`` (normally just the
#: chunked encoding's end, in the same read or the next).
DRAIN_AFTER_DONE = 2.0


async def attempt_sse(clock: Deadlines, opening: Awaitable[Any], assembler: Any, *,
                      named: bool, map_error: Callable[..., BaseException], host: str = ""
                      ) -> AsyncIterator[StreamEvent]:
    """One try of a streamed request: ``opening`` is the SDK's ``create(stream=True)`` (auth,
    headers, status errors raised before any body is read); its body is read with
    :func:`read_sse` into ``assembler`` (``is_content``, ``feed``, ``whole``,
    ``finish_step``), whose finished step comes last.  A body that is not an event stream is
    read as a whole JSON answer (``assembler.whole`` turns it into the stream's events) or
    fails naming what arrived; a step with no text and no tool call fails too
    (:mod:`agent.loop.answers`).  Any failure is raised as ``map_error(exc,
    output_started=..., connected=...)``, so a retry policy knows whether output was already
    shown.  ``host`` names the server in those messages."""
    from agent.loop.answers import check_answer, is_event_stream, read_plain

    started = connected = False
    try:
        stream = await clock.bounded(opening)
        connected = True
        async with stream:  # closes the body however the attempt ends
            if not is_event_stream(stream.response):
                answer = await read_plain(clock, stream.response, host)
                for event in assembler.whole(answer):
                    started = clock.shown = True
                    yield event
            else:
                async for event in read_sse(clock, stream.response, named=named,
                                            is_content=assembler.is_content,
                                            feed=assembler.feed):
                    started = clock.shown = True
                    yield event
        finished = assembler.finish_step()
        check_answer(finished, host)
    except Exception as exc:
        raise map_error(exc, output_started=started, connected=connected) from exc
    yield finished


async def _drain(chunks: Any) -> None:
    """Read what follows ``[DONE]`` so the pool can reuse the connection; the answer is
    complete, so a body that does not end soon, or breaks, only costs the connection."""
    try:
        async with asyncio.timeout(DRAIN_AFTER_DONE):
            async for _ in chunks:
                pass
    except (TimeoutError, OSError, ValueError, RuntimeError):
        pass
    except Exception as exc:  # the transport's own errors (httpx2.TransportError)
        if not _is_transport_error(exc):
            raise


def _is_transport_error(exc: BaseException) -> bool:
    import httpx2

    return isinstance(exc, httpx2.TransportError | httpx2.StreamError)


def merge_deltas(events: list[StreamEvent]) -> list[StreamEvent]:
    """``events`` with each run of text deltas (and of reasoning deltas) joined into one."""
    merged: list[StreamEvent] = []
    run: list[str] = []
    kind: type | None = None
    for event in events:
        if type(event) is kind:
            run.append(event.text)  # type: ignore[union-attr]
            continue
        if kind is not None:
            merged.append(kind("".join(run)))
            kind = None
        if type(event) in _DELTAS:
            kind, run = type(event), [event.text]  # type: ignore[union-attr]
        else:
            merged.append(event)
    if kind is not None:
        merged.append(kind("".join(run)))
    return merged


def backoff(retry: int, first: float = BACKOFF_FIRST) -> float:
    """The delay before retry number ``retry`` (1-based) when the server names none: ``first``
    doubled per retry, at most ``BACKOFF_MAX`` (or ``first``, if that is more), less a random
    quarter at most so that clients that failed together do not retry together."""
    delay = min(first * 2.0 ** (retry - 1), max(BACKOFF_MAX, first))
    return delay * (1 - 0.25 * random.random())


Attempt = Callable[[Deadlines], AsyncIterator[StreamEvent]]


async def with_retries(policy: StreamPolicy, attempt: Attempt) -> AsyncIterator[StreamEvent]:
    """Run ``attempt`` (one request: send, stream, finish) until it succeeds, fails in a way
    waiting cannot cure, fails after output began, or the retries or the deadline run out.
    Each retry is announced with a :class:`ProviderNotice`."""
    clock = Deadlines(policy)
    retries = 0
    while True:
        shown = clock.shown = False
        try:
            async for event in attempt(clock):
                if not isinstance(event, ProviderNotice):
                    shown = True
                yield event
            return
        except ProviderError as exc:
            if shown or exc.output_started or not exc.retryable:
                raise _noted(exc, retries) from None
            asked = exc.retry_after
            if asked is not None and asked > policy.retry_after_cap:
                exc.message = (f"{exc.message}; the server asked to retry after "
                               f"{_seconds(round(asked, 3))}, more than retry_after_cap = "
                               f"{_seconds(policy.retry_after_cap)}, so it was not retried")
                exc.args = (exc.message,)
                raise _noted(exc, retries) from None
            if retries >= policy.max_retries:
                raise _noted(exc, retries) from None
            delay = asked if asked is not None and asked >= 0 else backoff(retries + 1,
                                                                       policy.backoff_first)
            if delay >= clock.remaining():
                exc.message += (f"; no time left to retry within request_deadline = "
                                f"{_seconds(policy.deadline)}")
                exc.args = (exc.message,)
                raise _noted(exc, retries) from None
            retries += 1
            clock.retries = retries
            yield ProviderNotice(f"{exc.message}; retrying in {_seconds(round(delay, 2))} "
                                 f"(retry {retries} of {policy.max_retries})")
            await asyncio.sleep(delay)
            clock.touch()  # a new attempt: its own idle allowance


def _noted(exc: ProviderError, retries: int) -> ProviderError:
    """``exc`` with the retries already spent on it, when there were any."""
    if retries:
        exc.message = f"{exc.message} (after {retries} {'retry' if retries == 1 else 'retries'})"
        exc.args = (exc.message,)
    return exc


# ---- naming what went wrong -------------------------------------------------------------------


def _detail(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.rstrip(".") if text else ""


def transport_failure(exc: BaseException, host: str, *, connected: bool,
                      output_started: bool) -> ProviderError:
    """An ``httpx2`` transport exception (the cause of an SDK's connection error) as a
    :class:`ProviderError` that says what happened: the connection could not be made, it
    broke before the server answered, or it broke in the middle of the answer."""
    import httpx2

    detail = _detail(exc)
    if isinstance(exc, httpx2.ConnectTimeout):
        text = f"could not connect to {host}: no answer to the connection attempt"
        kind = "timeout"
    elif isinstance(exc, httpx2.ConnectError):
        text = f"could not connect to {host}: {detail or 'connection refused'}"
        kind = "connection"
    elif isinstance(exc, httpx2.TimeoutException):
        what = "in the middle of the answer" if output_started or connected else \
            "before answering"
        text = f"{host} timed out {what}: no bytes within request_timeout"
        kind = "timeout"
    else:
        broke = ("in the middle of the answer" if output_started
                 else "after answering, before any content" if connected
                 else "before it answered")
        reason = detail or {"ReadError": "the connection was reset",
                            "WriteError": "the request could not be sent"}.get(
                                type(exc).__name__, type(exc).__name__)
        text = f"the connection to {host} broke {broke}: {reason}"
        kind = "connection"
    return ProviderError(text, retryable=True, kind=kind, output_started=output_started)


def status_failure(host: str, status: int, text: str, headers: Any, *, kind: str,
                   output_started: bool, retryable: bool | None = None) -> ProviderError:
    """An HTTP error status as a :class:`ProviderError` naming the host, with the delay the
    server asked for and its ``x-should-retry`` verdict."""
    from agent.loop.retry import retry_after_seconds, should_retry_header

    if retryable is None:
        retryable = status in (408, 409, 429) or status >= 500
    verdict = should_retry_header(headers) if headers is not None else None
    if verdict is not None:
        retryable = verdict
    return ProviderError(f"{host} returned {status}: {text}", status=status,
                         retryable=retryable, kind=kind, output_started=output_started,
                         retry_after=retry_after_seconds(headers) if headers is not None else None)


def malformed_failure(exc: Any, host: str, *, output_started: bool) -> ProviderError:
    """A :class:`agent.loop.retry.MalformedStream` as a :class:`ProviderError` (never retried:
    a server that breaks the format once will break it again)."""
    return ProviderError(f"{host} sent a malformed stream: {exc.why}: {exc.line}",
                         kind="protocol", output_started=output_started)


def host_of(base_url: str) -> str:
    """How errors name an endpoint: the host (and port) of its URL."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        host, port = parts.hostname, None
    if not host:
        return "the endpoint"
    if ":" in host:
        host = f"[{host}]"  # IPv6
    return f"{host}:{port}" if port else host  # never the user:password part


#: The GIL switch interval while :func:`quick_gil_handoff` is in effect (Python's is 5 ms).
HANDOFF_INTERVAL = 0.001
_handoff_lock = threading.Lock()
_handoff_users = 0
_handoff_saved = 0.005


@contextlib.contextmanager
def quick_gil_handoff() -> Iterator[None]:
    """Shorten the GIL switch interval while a background thread runs Python for long (an
    SDK import, building a client).  The event loop's thread gives the GIL up at every read,
    select and write, and then waits up to the interval for the busy thread to hand it
    back: at 5 ms a key and its frame took 7-17 ms at p95 (up to 67 ms) beside an
    ``import openai``, at 1 ms 0.4-1.4 ms.  Nested and concurrent uses share one setting,
    restored when the last ends."""
    global _handoff_users, _handoff_saved
    with _handoff_lock:
        if _handoff_users == 0:
            _handoff_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_handoff_saved, HANDOFF_INTERVAL))
        _handoff_users += 1
    try:
        yield
    finally:
        with _handoff_lock:
            _handoff_users -= 1
            if _handoff_users == 0:
                sys.setswitchinterval(_handoff_saved)


async def on_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on a new daemon thread (under :func:`quick_gil_handoff`); its result
    (or exception), awaited.  For work that may import an SDK (which nothing can
    interrupt): unlike ``asyncio.to_thread``, leaving the program never waits for it."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # the awaiting task was cancelled
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            with quick_gil_handoff():
                value, ok = fn(*args), True
        except BaseException as exc:  # handed to the awaiting task
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(deliver, ok, value)

    threading.Thread(target=work, name="sdk-import", daemon=True).start()
    return await future
