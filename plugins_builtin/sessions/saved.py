"""Saved sessions: finding one again (``-c``, ``-r``, ``/resume``), loading it back, and
what is said about it when a run ends.

:func:`open_session` answers ``agent_open_session``: the session a front end runs, resumed
from the id ``-c``/``-r`` resolved to (``agent_find_session``, :func:`find_session`), with the
messages and the persisted part of ``session.data`` restored and a
:class:`~.recorder.SessionRecorder` attached.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

from agent.contract.messages import Message, ToolResultPart
from agent.contract.providers import Usage
from agent.loop.session import Session, SessionClosed, SessionLookupError, new_session_id
from agent.state.store import DB_NAME, SessionRecord, Store, StoreError

from .recorder import SessionRecorder, persisted_keys, read_only_note

log = logging.getLogger("agent.sessions")

UNTITLED = "untitled"

#: What a tool call interrupted by the end of a process is answered with on resume.
ABORTED_BY_EXIT = ("agent exited before this call finished (the process was stopped); its "
                   "effects are unknown.")


def open_store(config: Any) -> Store:
    """The state database of this run: ``<state dir>/agent.db`` (raises StoreError).

    When it exists but cannot be opened for writing (a read-only or full state dir), it is
    opened read-only instead (``store.read_only`` says why): saved sessions can still be
    listed and continued, and the run goes on unsaved, saying so."""
    try:
        return Store.for_config(config)
    except StoreError as exc:
        path = Path(config.state_dir) / DB_NAME
        if not path.is_file():
            raise
        try:
            store = Store.open_read_only(path, str(exc))
        except StoreError:
            raise exc from None
        log.warning("opened %s read-only: %s", path, exc)
        return store


# ---- titles and display ---------------------------------------------------------------------


def title_of(record: SessionRecord) -> str:
    return record.title or UNTITLED


def short_id(store: Store, session_id: str, minimum: int = 8) -> str:
    """The shortest prefix (at least ``minimum`` characters) naming only this session.

    Ids are time-ordered, so sessions started within the same minute share their first eight
    characters; the prefix grows until it is unique among the sessions in the store."""
    before = store.query("SELECT id FROM sessions WHERE id < ? ORDER BY id DESC LIMIT 1",
                         (session_id,))
    after = store.query("SELECT id FROM sessions WHERE id > ? ORDER BY id LIMIT 1",
                        (session_id,))
    shared = 0
    for row in before + after:
        other = row["id"]
        n = 0
        while n < min(len(other), len(session_id)) and other[n] == session_id[n]:
            n += 1
        shared = max(shared, n)
    return session_id[:max(minimum, shared + 1)]


#: Characters of a printed resume id: the whole 48-bit millisecond timestamp (13 characters
#: with its dash) plus the next 12 random bits. A later session can only share this prefix if
#: it starts in the same millisecond *and* draws the same 12 bits (1 in 4,096), so the command
#: printed at exit keeps working as more sessions are started.
RESUME_ID_LENGTH = 18


def resume_id(store: Store, session_id: str) -> str:
    """The id to print in an ``agent -r`` hint: unique now and unlikely ever to collide."""
    return short_id(store, session_id, minimum=RESUME_ID_LENGTH)


def session_line(store: Store, record: SessionRecord, *, with_cwd: bool = False) -> str:
    """``<id8>  <YYYY-MM-DD HH:MM>  <N>msg  <title>`` (plus the directory when asked)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.updated_at))
    line = (f"{short_id(store, record.id):<8}  {when}  {record.message_count}msg  "
            f"{title_of(record)}")
    return f"{line}  ({record.cwd})" if with_cwd else line


# ---- finding a session ----------------------------------------------------------------------


def find_session(store: Store, cwd: str, *, continue_: bool = False,
                 resume: str | None = None) -> SessionRecord:
    """``-c``: the newest session whose directory is ``cwd``; ``-r``: the session whose id is
    ``resume`` or starts with it.  Raises :class:`SessionLookupError` with the message to
    show (none found, or an ambiguous prefix with its candidates)."""
    if resume is not None:
        return lookup(store, resume)
    if continue_:
        found = store.sessions(cwd, limit=1)
        if not found:
            raise SessionLookupError("no saved session for this directory")
        return found[0]
    raise SessionLookupError("nothing to resume: pass -c or -r ID")


def lookup(store: Store, query: str) -> SessionRecord:
    """The session with id ``query`` or the only one whose id starts with it."""
    key = query.strip().lower()
    if not key:
        raise SessionLookupError("no session id given")
    exact = store.get_session(key)
    if exact is not None:
        return exact
    matches = store.sessions_with_prefix(key, limit=11)
    if not matches:
        raise SessionLookupError(f'no session matching "{query}"')
    if len(matches) > 1:
        shown = "\n".join("  " + session_line(store, r, with_cwd=True) for r in matches[:10])
        more = "\n  ..." if len(matches) > 10 else ""
        raise SessionLookupError(
            f'"{query}" matches {len(matches) if len(matches) <= 10 else "more than 10"} '
            f"sessions; give more of the id:\n{shown}{more}")
    return matches[0]


# ---- opening, resuming, clearing ------------------------------------------------------------


def open_session(runtime: Any, *, store: Store | None = None, continue_: bool = False,
                 resume: str | None = None, session_id: str | None = None,
                 provider: str = "") -> Any:
    """The session a front end should run, recorded into the store.

    Resumes ``session_id``, else ``config.resume_session_id`` (what ``-c``/``-r``
    resolved to), else what ``continue_``/``resume`` find; otherwise a new session.  Raises
    :class:`SessionLookupError` when the session to resume does not exist.  When the store
    cannot be opened, a new session runs unsaved and the reason is added to
    ``runtime.hooks.problems``.
    """
    config = runtime.config
    cwd = str(config.workspace)
    session_id = session_id or config.resume_session_id
    wants_old = bool(session_id or continue_ or resume)
    if store is None:
        try:
            store = open_store(config)
        except StoreError as exc:
            if wants_old:
                raise SessionLookupError(f"cannot resume: {exc}") from None
            reason = f"this session will not be saved: {exc}"
            runtime.hooks.problems.append(reason)
            unsaved = Session(runtime)
            unsaved.unsaved_reason = reason
            return unsaved
    if store.read_only:
        runtime.hooks.problems.append(read_only_note(store))
    record: SessionRecord | None = None
    if session_id:
        record = store.get_session(session_id)
        if record is None:
            raise SessionLookupError(f'no session matching "{session_id}"')
    elif continue_ or resume:
        record = find_session(store, cwd, continue_=continue_, resume=resume)
    recorder = SessionRecorder(store, cwd=cwd,
                               provider=provider or str(config.get("provider") or ""),
                               agent=str(config.get("agent") or ""),
                               price=runtime.hooks.price_usage)
    session = Session(runtime, recorder=recorder)
    if record is not None:
        load_into(session, record)
        runtime.hooks.problems.extend(getattr(session, "load_notes", []))
    return session


def load_into(session: Any, record: SessionRecord) -> int:
    """Make ``session`` continue the saved ``record``: its id, messages, task list and token
    counters.  Returns the number of messages loaded.

    The messages are read and the session's lease taken in one transaction
    (:meth:`Store.continue_session`).  When another live process holds the session, this
    run becomes a fork from what it read (less the holder's turn still in progress) under
    a new id, and both runs are told.  Damaged rows are skipped; ``session.load_notes``
    says which."""
    recorder = session.recorder
    store: Store = recorder.store
    fork_id = new_session_id()
    # A read-only store writes nothing: no lease to take.
    try:
        cont = store.continue_session(record.id, None if store.read_only else recorder.owner,
                                      fork=fork_id)
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc).lower() and "busy" not in str(exc).lower():
            raise
        # Another process holds the write lock past the busy timeout: read without the
        # lease; the first append takes it (or finds it held, and this run forks then).
        cont = store.continue_session(record.id, None)
    messages, broken = _messages(cont.messages)
    damaged = len(cont.damaged) + broken
    if cont.holder is not None:
        messages = _complete_turns(messages)
    session.id = record.id
    session.messages = messages
    session.load_notes = []
    if damaged:
        session.load_notes.append(
            f"{damaged} damaged message(s) of session {record.id[:8]} could not be read and "
            f"were skipped (agent doctor checks the state database)")
    keys = persisted_keys(session)
    for key in keys:
        session.data.pop(key, None)
    session.data.update({k: v for k, v in record.data.items() if k in keys})
    origin = record.data.get("forked_from")
    session.earlier_ids = [origin] if isinstance(origin, str) and origin else []
    totals = store.usage_totals(session_id=record.id)
    session.usage = Usage(input_tokens=int(totals["input_tokens"] or 0),
                          output_tokens=int(totals["output_tokens"] or 0),
                          cached_tokens=int(totals["cached_tokens"] or 0))
    recorder.attach(session, record, skipped=cont.rows - len(messages))
    if cont.holder is not None:
        recorder.fork_at_load(session, record.id, fork_id)
        return len(messages)
    mended = mend(messages)
    if mended is not messages:  # a damaged row broke a call/result pair: the store follows
        session.messages = mended
        recorder.rewrite(session)
    repair = _answer_open_calls(session.messages)
    if repair is not None:
        session._append(repair)  # through the recorder, so the store is repaired too
    return len(session.messages)


def _messages(dicts: list[dict[str, Any]]) -> tuple[list[Message], int]:
    """Saved message bodies as messages, and how many could not be read as one."""
    out: list[Message] = []
    for d in dicts:
        try:
            out.append(Message.from_dict(d))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out, len(dicts) - len(out)


def _complete_turns(messages: list[Message]) -> list[Message]:
    """``messages`` up to the last finished answer: what another process is still adding
    (its prompt, its tool calls) is its run's, not this fork's."""
    for end in range(len(messages), 0, -1):
        last = messages[end - 1]
        if last.role == "assistant" and not last.tool_calls:
            return messages[:end]
    return []


#: What a tool call whose saved result was damaged is answered with on resume.
RESULT_LOST = "the saved result of this call was damaged and could not be read"


def mend(messages: list[Message]) -> list[Message]:
    """A history that lost rows made valid again (the same list when nothing is wrong):
    tool results that answer no call just before them are dropped, and calls whose results
    were lost are answered with :data:`RESULT_LOST`."""
    out: list[Message] = []
    changed = False
    for message in messages:
        open_calls = out[-1].tool_calls if out and out[-1].role == "assistant" else []
        if message.role == "tool":
            ids = {c.id for c in open_calls}
            kept = [p for p in message.parts if getattr(p, "call_id", None) in ids]
            if len(kept) != len(message.parts):
                changed = True
            if not kept:
                continue
            missing = ids - {p.call_id for p in kept}  # type: ignore[attr-defined]
            if missing:
                changed = True
                kept += [ToolResultPart(c.id, c.name, RESULT_LOST, True) for c in open_calls
                         if c.id in missing]
            out.append(Message("tool", kept))
            continue
        if open_calls and message.role != "tool" and out[-1].role == "assistant":
            changed = True
            out.append(Message("tool", [ToolResultPart(c.id, c.name, RESULT_LOST, True)
                                        for c in open_calls]))
        out.append(message)
    return out if changed else messages


def _answer_open_calls(messages: list[Message]) -> Message | None:
    """If the process died while tools ran, the last assistant message has calls without
    results; providers reject such a history, so answer them."""
    if not messages or messages[-1].role != "assistant" or not messages[-1].tool_calls:
        return None
    return Message("tool", [ToolResultPart(c.id, c.name, ABORTED_BY_EXIT, True)
                            for c in messages[-1].tool_calls])


def resume(session: Any, query: str) -> str:
    """``/resume ID``: load a saved session into the running one; returns the line to show."""
    recorder = session.recorder
    if recorder is None:
        return "sessions are not being saved in this run"
    if not query.strip():
        return "usage: /resume <session-id>"
    if getattr(session, "busy", False):
        return "a turn is running; wait for it (or press esc) before resuming"
    try:
        record = lookup(recorder.store, query)
    except SessionLookupError as exc:
        return str(exc)
    count = load_into(session, record)
    line = f"resumed {short_id(recorder.store, record.id)} ({count} messages): {title_of(record)}"
    notes = list(getattr(session, "load_notes", []))
    if recorder.forked_from == record.id:
        notes.append(f"another agent process is running this session; this one goes on as "
                     f"a new session {session.id[:8]}")
    return "\n".join([line, *notes])


def clear(session: Any) -> str:
    """``/clear``: start a fresh session (new id, no messages, counters and task list reset);
    the old one stays saved."""
    old_id, had_messages = session.id, bool(session.messages)
    session.id = new_session_id()
    session.messages = []
    session.usage = Usage()
    for key in persisted_keys(session):
        session.data.pop(key, None)
    session.earlier_ids = []
    recorder = session.recorder
    if recorder is not None:
        recorder.detach()
        if had_messages:
            return (f"started a new session; the previous one is saved "
                    f"(agent -r {resume_id(recorder.store, old_id)})")
    return "started a new session"


def farewell(session: Any) -> str:
    """The lines printed after the full-screen UI exits."""
    if not session.messages:
        return "Good bye. Nothing to save from this session."
    count = len(session.messages)
    title = ""
    recorder = session.recorder
    sid = session.id[:RESUME_ID_LENGTH]
    if recorder is not None:
        try:
            record = recorder.store.get_session(session.id)
            title = record.title if record else ""
            sid = resume_id(recorder.store, session.id)
        except (sqlite3.Error, StoreError):
            pass
    if recorder is None or recorder.error:
        return f"Good bye. This session could not be saved ({count} messages lost)."
    if len(title) > 52:
        title = title[:52] + "..."
    saved = f"Saved {count} message{'s' if count != 1 else ''}" + (f': "{title}"' if title
                                                                    else "")
    # `agent -c` opens the newest session of this directory: only offered when that is this
    # one (not after /resume of an older session, or of one from another directory).
    try:
        newest = recorder.store.sessions(recorder.cwd, limit=1)
    except (sqlite3.Error, StoreError):
        newest = []
    continues = ("  agent -c    newest session in this directory\n"
                 if newest and newest[0].id == session.id else "")
    return ("Good bye.\n" + saved + "\n\nResume it with:\n" + continues +
            f"  agent -r {sid}    this session by id")


def close(session: Any) -> SessionClosed:
    """``agent_close_session``: try once more to save what is not saved, release the store,
    and say what the user must know (messages missing from the store, a fork to a new id
    because another process continued the same session)."""
    recorder = session.recorder
    if recorder is None:
        reason = getattr(session, "unsaved_reason", None)
        if reason and session.messages:
            return SessionClosed([f"{len(session.messages)} message(s) were not saved: "
                                  f"{reason}"], unsaved=len(session.messages))
        return SessionClosed()
    notes: list[str] = []
    unsaved = recorder.flush(session) if hasattr(recorder, "flush") else 0
    if unsaved:
        where = getattr(recorder.store, "path", "the state database")
        notes.append(f"{unsaved} of {len(session.messages)} message(s) of session "
                     f"{session.id[:RESUME_ID_LENGTH]} could not be saved to {where}: "
                     f"{recorder.error}")
    forked_from = getattr(recorder, "forked_from", None)
    if forked_from:
        notes.append(f"another agent process continued session {forked_from[:8]} at the "
                     f"same time; this run was saved as a new session "
                     f"(agent -r {session.id[:RESUME_ID_LENGTH]}); {forked_from[:8]} holds "
                     f"the other run's messages, untouched")
    for other in getattr(recorder, "forks_off", None) or ():
        notes.append(f"another agent process continued this session ({session.id[:8]}) at "
                     f"the same time; its messages were saved as session "
                     f"{other[:RESUME_ID_LENGTH]} (agent -r {other[:RESUME_ID_LENGTH]}), this "
                     f"one holds only this run's")
    recorder.close()
    return SessionClosed(notes, unsaved=unsaved)
