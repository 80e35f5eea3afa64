"""Recording a :class:`~agent.loop.session.Session` into the store as it happens.

A :class:`SessionRecorder` is attached to the main session by ``agent_open_session``
(:mod:`.saved`): it commits every message the moment the loop appends it and one ledger row
per model request.  An empty session is never written: its row appears with its first
message.

Which ``session.data`` keys are saved with the session is explicit: the keys plugins declare
with ``agent_persisted_keys`` (:func:`persisted_keys`); other plugins keep run-time state
there (handles, flags of the current agent variant) that must not come back from an old
session.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.contract.events import SaveFailedEvent, SessionForkedEvent
from agent.contract.messages import Message
from agent.contract.providers import Usage
from agent.loop.session import new_session_id
from agent.state.store import (
    REPAIR_HINT,
    Owner,
    SessionRecord,
    Store,
    StoreConflict,
    StoreError,
    UsageEntry,
    is_damage,
)

log = logging.getLogger("agent.sessions")

TITLE_LIMIT = 60


def persisted_keys(session: Any) -> frozenset[str]:
    """The ``session.data`` keys saved with ``session`` (what the plugins declare)."""
    keys: frozenset[str] = session.hooks.persisted_keys(session.config)
    return keys


def read_only_note(store: Store) -> str:
    """The line telling the user that this run is not being saved, and why."""
    return (f"the state database {store.path} could not be opened for writing "
            f"({store.read_only}); it was opened read-only: this run will not be saved")


def make_title(text: str) -> str:
    """The first user message on one line, clipped to 60 characters plus ``...``."""
    line = " ".join(text.split())
    return line[:TITLE_LIMIT] + "..." if len(line) > TITLE_LIMIT else line


# ---- recording ------------------------------------------------------------------------------


@dataclass
class _Saved:
    """What the store already holds for the current session id."""

    session_id: str = ""
    title: str = ""
    data_json: str = "{}"
    model: str = ""
    count: int = 0  # messages saved, to notice a history edited in place
    #: rows of the saved session that were skipped as damaged when it was loaded: the store
    #: holds them beyond ``count``, so the next message's seq is after them
    skipped: int = 0


class SessionRecorder:
    """Commits a session's messages and usage to the store as they happen.

    ``Session`` calls :meth:`message_added` for every message it appends and
    :meth:`step_finished` after every model request.  Nested model calls made outside the
    loop (``/compact``, a tool asking a model) go through :meth:`record_usage` with their own
    ``cause``; subagents get a usage-only :meth:`child`.  A failing store never breaks a
    turn: the error is logged and kept in :attr:`error`.
    """

    def __init__(self, store: Store, *, cwd: str, provider: str = "", agent: str = "",
                 cause: str = "main",
                 price: Callable[[str, Usage], float | None] | None = None) -> None:
        self.store = store
        #: prices a request for its ledger row (the plugins' ``agent_price_usage``); None
        #: leaves every row unpriced
        self.price = price
        self.cwd = cwd
        self.provider = provider
        self.agent = agent
        self.cause = cause
        self.turn = 0
        self.error: str | None = None
        self.pending_title = ""
        #: the id this session was saved under before another process wrote to it too
        self.forked_from: str | None = None
        #: why nothing is written at all (the database could only be opened read-only)
        self.read_only = read_only_note(store) if getattr(store, "read_only", None) else None
        if self.read_only:
            self.error = self.read_only
        self._saved = _Saved()
        self._events: list[Any] = []
        self._reported_turn = -1
        #: the unsaved count the last ``save-failed`` event said, and the session it was of
        self._reported_count = 0
        self._session: Any = None
        #: the last failure was a write lock another process held past the busy timeout
        self._locked = False
        #: sessions other processes forked off this one while this run continued it
        self.forks_off: list[str] = []
        #: this recorder as the writer of its session: the lease it holds (agent.state.lease)
        self.owner = Owner.new()

    @property
    def title(self) -> str:
        """The saved (or chosen, not yet saved) title of the current session."""
        return self.pending_title or self._saved.title

    # -- the loop's two calls --

    def message_added(self, session: Any, message: Message) -> None:
        if message.role == "user":
            self.turn += 1
        self._session = session
        if self.read_only:
            self._report(session)
            return
        failed_before = self.error
        self.error = None
        self._guard(self._commit, session, message)
        if self.error is not None:
            self._report(session)
        elif failed_before and self.unsaved(session):
            self.error = failed_before
        else:
            self._check_forks()  # the holder hears of a fork at its next write

    def unsaved(self, session: Any) -> int:
        """How many of ``session``'s messages the store does not hold."""
        saved = self._saved.count if self._saved.session_id == session.id else 0
        return max(0, len(session.messages) - saved)

    def flush(self, session: Any) -> int:
        """Try once more to save what is not saved yet (the end of a run); returns how many
        messages are still unsaved."""
        if self.read_only or not self.unsaved(session):
            return self.unsaved(session)
        self.error = None
        self._guard(self.rewrite, session)
        return self.unsaved(session)

    def take_events(self, final: bool = False) -> list[Any]:
        """Events for the front end since the last call (``save-failed``,
        ``session-forked``); the loop passes them on in its stream.  ``final`` (the end of a
        turn) also looks for another process that forked off this session meanwhile."""
        if final:
            self._check_forks()
            self._report_final()
        events, self._events = self._events, []
        return events

    def _check_forks(self, forks: list[str] | None = None) -> None:
        """Another process that continued this session while this one held it was moved to
        a new id (it found the lease held): tell this run once per fork."""
        sid = self._saved.session_id
        if not sid or self.read_only:
            return
        if forks is None:
            try:
                forks = self.store.forks_of(sid, self.owner)
            except (sqlite3.Error, StoreError):
                return
        for fork in forks:
            if fork not in self.forks_off:
                self.forks_off.append(fork)
                self._events.append(SessionForkedEvent(sid, fork, moved=False))

    def _report(self, session: Any) -> None:
        if self._locked:
            # Another process holds the database's write lock past the busy timeout: the
            # next write (or the flush before done) usually catches up, so this is said
            # only if messages are still missing then (:meth:`_report_final`).
            return
        if self._reported_turn == self.turn:
            return  # once per turn: the banner stays up, the stream is not flooded
        self._reported_turn = self.turn
        self._reported_count = self.unsaved(session)
        self._events.append(SaveFailedEvent(self.error or "unknown error",
                                               self._reported_count, session.id))

    def _report_final(self) -> None:
        """Before ``done``: when more messages failed since the turn's ``save-failed`` event
        (a disk that stayed full), say the count again, so the last event agrees with what
        is missing from the store (and with the note at exit)."""
        session = self._session
        if session is None or self.error is None:
            return
        left = self.flush(session)  # a lock that has gone since: caught up, nothing to say
        if not left:
            return
        if left and left != self._reported_count:
            self._reported_count = left
            self._events.append(SaveFailedEvent(self.error, left, session.id))

    def step_finished(self, session: Any, usage: Usage, model: str | None = None) -> None:
        """Book one finished step, priced at ``model`` (the one that answered; default the
        session's)."""
        self.record_usage(usage, model=model or session.model, session_id=session.id)

    # -- other writers --

    def record_usage(self, usage: Usage, *, model: str, cause: str | None = None,
                     session_id: str | None = None, turn: int | None = None) -> None:
        """Add a ledger row for one model request (priced by :attr:`price`)."""
        entry = UsageEntry(
            session_id=session_id or self._saved.session_id, model=model,
            provider=self.provider, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, cached_tokens=usage.cached_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=self.price(model, usage) if self.price else None,
            turn=self.turn if turn is None else turn, cause=cause or self.cause)
        self._guard(self.store.record_usage, entry)

    def child(self, cause: str) -> UsageRecorder:
        """A recorder for a subagent: its requests land in this session's ledger under
        ``cause`` (``subagent:explore``); its messages are not saved."""
        return UsageRecorder(self, cause)

    def save(self, session: Any) -> bool:
        """Write the title, model and persisted data now; False when there is nothing to
        save yet (no messages)."""
        if not session.messages:
            return False
        if self._saved.session_id != session.id:
            # A session built with messages but never recorded (a test, an import): write all.
            return bool(self._guard(self.rewrite, session))
        self._guard(self.store.update_session, session.id, **self._changes(session, None))
        return self.error is None

    def set_title(self, session: Any, title: str) -> None:
        self.pending_title = title
        if self._saved.session_id == session.id:
            self._guard(self.store.update_session, session.id, title=title)
            self._saved.title = title

    def rewrite(self, session: Any) -> bool:
        """Replace the saved history with ``session.messages`` (after compaction or any
        in-place edit of the history)."""
        if self._saved.session_id != session.id:
            new = self._new_record(session, session.messages[:1])
            self.store.create_session(new)
            self._saved = _Saved(new.id, new.title, json.dumps(new.data, sort_keys=True),
                                 new.model)
            expect = None
        else:
            expect = self._saved.count + self._saved.skipped
        try:
            self.store.replace_messages(session.id, [m.to_dict() for m in session.messages],
                                        expect_count=expect, owner=self.owner)
        except StoreConflict:
            return self._fork(session)
        self._saved.count = len(session.messages)
        self._saved.skipped = 0
        self.store.update_session(session.id, **self._changes(session, None))
        return True

    def _fork(self, session: Any) -> bool:
        """Another process is writing the same session (``agent -c`` twice at once): rather
        than interleave two conversations into one invalid history, save this one whole
        under a new id and go on there.  The other process keeps the old id."""
        old = session.id
        session.id = new_session_id()
        self.forked_from = old
        session.data["forked_from"] = old  # saved with the row: the other process finds it
        session.earlier_ids = [*getattr(session, "earlier_ids", []), old]
        self.pending_title = self.pending_title or self._saved.title
        self._saved = _Saved()
        log.warning("session %s was also written by another process; this one continues as "
                    "%s", old, session.id)
        self._events.append(SessionForkedEvent(old, session.id))
        self._guard(self.store.record_fork, old, session.id, self.owner)
        return self.rewrite(session)

    def fork_at_load(self, session: Any, origin: str, fork: str) -> None:
        """``origin`` was loaded while another live process holds it: this run goes on as
        the new session ``fork`` (whose lease it holds), starting from the messages it read;
        nothing is written under ``origin``.  Told at once (a ``session-forked`` event);
        the fork's row is written with its first message, as for any new session."""
        session.id = fork
        self.forked_from = origin
        session.data["forked_from"] = origin  # saved with the row
        session.earlier_ids = [*getattr(session, "earlier_ids", []), origin]
        self.pending_title = self.pending_title or self._saved.title
        self._saved = _Saved()
        log.warning("session %s is being written by another process; this run goes on as %s",
                    origin, fork)
        self._events.append(SessionForkedEvent(origin, fork))

    def attach(self, session: Any, record: SessionRecord, skipped: int = 0) -> None:
        """Continue recording into the saved ``record`` (resume), whose lease this recorder
        holds; ``skipped`` rows of it were damaged and left out of ``session.messages``."""
        self.release(keep=record.id)
        self._saved = _Saved(record.id, record.title, json.dumps(record.data, sort_keys=True),
                             record.model, len(session.messages), skipped)
        self.pending_title = record.title
        users = sum(1 for m in session.messages if m.role == "user")
        try:
            self.turn = max(users, self.store.last_turn(record.id))
        except (sqlite3.Error, StoreError):
            self.turn = users

    def detach(self) -> None:
        """Forget the current session (``/clear``): the next message starts a new row."""
        self.release()
        self._saved = _Saved()
        self.pending_title = ""

    def release(self, keep: str | None = None) -> None:
        """Give up the lease of the current session (unless it is ``keep``), hearing of
        forks made off it until that moment."""
        sid = self._saved.session_id
        if not sid or sid == keep or self.read_only:
            return
        forks = self._guard(self.store.release, sid, self.owner)
        if forks:
            self._check_forks(forks)

    def close(self) -> None:
        self.release()
        self._guard(self.store.close)

    # -- internals --

    def _commit(self, session: Any, message: Message) -> None:
        known = self._saved.count if self._saved.session_id == session.id else 0
        if len(session.messages) != known + 1 or session.messages[-1] is not message:
            # The history was replaced or edited in place since the last write (compaction,
            # a failed write): save it whole so the store matches what the model sees.
            self.rewrite(session)
            return
        new = None
        if self._saved.session_id != session.id:
            new = self._new_record(session, [message])
            self._saved = _Saved(new.id, new.title, json.dumps(new.data, sort_keys=True),
                                 new.model)
        update = self._changes(session, message)
        try:
            self.store.append_message(
                session.id, message.to_dict(), new_session=new, update=update,
                expect_seq=None if new is not None else known + self._saved.skipped + 1,
                owner=self.owner)
        except StoreConflict:
            self._fork(session)
            return
        except BaseException:
            if new is not None:
                self._saved = _Saved()  # the row was not written: try again next message
            raise
        self._saved.count += 1

    def _new_record(self, session: Any, first: list[Message]) -> SessionRecord:
        now = time.time()
        title = self.pending_title or next(
            (make_title(m.text) for m in session.messages + first
             if m.role == "user" and m.text.strip()), "")
        return SessionRecord(id=session.id, cwd=self.cwd, created_at=now, updated_at=now,
                             title=title, provider=self.provider, model=session.model,
                             agent=self.agent, data=persisted_data(session))

    def _changes(self, session: Any, message: Message | None) -> dict[str, Any]:
        """Columns that changed since the last write (title, model, persisted data)."""
        changes: dict[str, Any] = {}
        if not self._saved.title and message is not None and message.role == "user" \
                and message.text.strip() and self._saved.session_id == session.id:
            changes["title"] = self._saved.title = make_title(message.text)
        if self.pending_title and self.pending_title != self._saved.title:
            changes["title"] = self._saved.title = self.pending_title
        if session.model and session.model != self._saved.model:
            changes["model"] = self._saved.model = session.model
        data = persisted_data(session)
        data_json = json.dumps(data, sort_keys=True)
        if data_json != self._saved.data_json:
            changes["data"] = data
            self._saved.data_json = data_json
        return changes

    def _guard(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if self.read_only:
            return None
        try:
            result = fn(*args, **kwargs)
        except (sqlite3.Error, StoreError, OSError, ValueError, TypeError) as exc:
            log.warning("could not save the session: %s", exc, exc_info=exc)
            text = str(exc).lower()
            self._locked = isinstance(exc, sqlite3.OperationalError) and (
                "locked" in text or "busy" in text)
            self.error = f"{type(exc).__name__}: {exc}"
            if is_damage(exc):
                self.error += f" ({REPAIR_HINT})"
            return None
        self._locked = False
        return result


class UsageRecorder:
    """A subagent's recorder: usage rows under the parent session, no messages."""

    def __init__(self, parent: SessionRecorder, cause: str) -> None:
        self.parent = parent
        self.cause = cause

    def message_added(self, session: Any, message: Message) -> None:
        return None

    def step_finished(self, session: Any, usage: Usage, model: str | None = None) -> None:
        self.record_usage(usage, model=model or session.model)

    def record_usage(self, usage: Usage, *, model: str, cause: str | None = None) -> None:
        self.parent.record_usage(usage, model=model, cause=cause or self.cause)

    def child(self, cause: str) -> UsageRecorder:
        return UsageRecorder(self.parent, cause)


def persisted_data(session: Any) -> dict[str, Any]:
    """The saved part of ``session.data``: the declared keys (:func:`persisted_keys`) holding
    plain JSON."""
    out: dict[str, Any] = {}
    for key in sorted(persisted_keys(session)):
        if key not in session.data:
            continue
        try:
            json.dumps(session.data[key])
        except (TypeError, ValueError):
            log.warning("session.data[%r] is not plain JSON; not saved", key)
            continue
        out[key] = session.data[key]
    return out
