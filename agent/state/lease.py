"""One writer per session: the lease a process holds on the session it writes.

Two ``agent -c`` in two terminals load the same saved session.  If both appended to it, the
saved history would interleave two conversations.  So a process writes a session only while
it holds that session's row in ``session_leases``: who (host, pid, the process's start time,
and a token naming one writer inside the process) and since when.  The lease keeps
processes apart; two writers inside one process pass it between them, and the ``seq``
check of every append (:meth:`~agent.state.store.Store.append_message`) keeps them apart.

- The lease is taken in the same transaction that reads the session's messages
  (:func:`continue_session`), so a second process either sees the lease held, and becomes a
  fork from exactly the messages it read, or finds it free and owns the session; never both.
- Every append and every rewrite checks, inside its own transaction, that the lease is still
  this writer's (:func:`acquire`); a writer that lost it writes nothing
  (:class:`~agent.state.store.StoreConflict`).
- A lease outlives a process killed with ``kill -9``; it is recognisably stale when no process
  with that pid runs on this host, or one does with another start time (the pid was reused,
  or the machine rebooted).  A stale lease is taken over.  A lease from another host (a state
  dir on a network home) cannot be checked and counts as held: the next ``-c`` forks, and the
  fork, being the newest session, is what the one after continues.

The start time is Linux's ``/proc/PID/stat`` start ticks with the boot id; elsewhere it is
empty and only the pid's existence is checked.  Only the standard library is imported.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from dataclasses import dataclass


def process_started(pid: int) -> str | None:
    """When process ``pid`` started, as ``<boot id>:<start ticks>``; ``""`` where the system
    does not say (not Linux); None when no such process exists."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else _exists(pid)
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: fields after the last ')'.
    fields = stat[stat.rfind(")") + 2:].split()
    ticks = fields[19] if len(fields) > 19 else ""
    return f"{_boot_id()}:{ticks}"


def _exists(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        return ""  # it exists, owned by someone else
    return ""


_BOOT: list[str] = []


def _boot_id() -> str:
    if not _BOOT:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                _BOOT.append(f.read().strip())
        except OSError:
            _BOOT.append("")
    return _BOOT[0]


@dataclass(frozen=True)
class Owner:
    """Who holds a lease: this host, a pid, its start time, and a token for one writer."""

    host: str
    pid: int
    started: str
    token: str

    @classmethod
    def new(cls) -> Owner:
        """A new writer of this process."""
        pid = os.getpid()
        return cls(socket.gethostname(), pid, process_started(pid) or "", os.urandom(8).hex())

    def describe(self) -> str:
        return f"pid {self.pid}" + ("" if self.host == socket.gethostname()
                                    else f" on {self.host}")


def _holder(row: sqlite3.Row | tuple[object, ...] | None) -> Owner | None:
    if row is None:
        return None
    host, pid, started, token = row[0], row[1], row[2], row[3]
    return Owner(str(host), int(str(pid)), str(started), str(token))


def is_stale(holder: Owner) -> bool:
    """True when ``holder``'s process is gone (or is a new process under a reused pid)."""
    if holder.host != socket.gethostname():
        return False  # cannot be checked from here: counts as held
    if holder.pid == os.getpid():
        # Another writer of this same process (an embedder's second session, a test): one
        # program, so the lease passes between them; the seq check still keeps them apart.
        return True
    now = process_started(holder.pid)
    if now is None:
        return True
    return bool(holder.started and now and now != holder.started)


def current_holder(conn: sqlite3.Connection, session_id: str) -> Owner | None:
    """The lease row of ``session_id``, stale or not (None when there is none)."""
    return _holder(conn.execute(
        "SELECT host, pid, started, token FROM session_leases WHERE session_id = ?",
        (session_id,)).fetchone())


def take(conn: sqlite3.Connection, session_id: str, owner: Owner) -> None:
    """Make ``owner`` the lease holder of ``session_id`` (inside the caller's transaction)."""
    conn.execute(
        "INSERT INTO session_leases (session_id, host, pid, started, token, taken_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET host = excluded.host, "
        "pid = excluded.pid, started = excluded.started, token = excluded.token, "
        "taken_at = excluded.taken_at",
        (session_id, owner.host, owner.pid, owner.started, owner.token, time.time()))


def acquire(conn: sqlite3.Connection, session_id: str, owner: Owner) -> Owner | None:
    """Take the lease of ``session_id`` for ``owner`` when it is free, stale or already
    ``owner``'s (inside the caller's write transaction).  Returns the live holder that keeps
    it instead, or None when ``owner`` holds it now."""
    holder = current_holder(conn, session_id)
    if holder is not None and holder.token != owner.token and not is_stale(holder):
        return holder
    if holder is None or holder.token != owner.token:
        take(conn, session_id, owner)
    return None


def release(conn: sqlite3.Connection, session_id: str, owner: Owner) -> None:
    """Give up ``owner``'s lease of ``session_id`` (no-op when another holds it)."""
    conn.execute("DELETE FROM session_leases WHERE session_id = ? AND token = ?",
                 (session_id, owner.token))


def record_fork(conn: sqlite3.Connection, origin: str, fork: str, owner: Owner) -> None:
    """Note that ``fork`` continues ``origin``'s conversation in another process, so that the
    holder of ``origin`` finds it (:func:`forks_of`) at its next write."""
    conn.execute("INSERT OR IGNORE INTO session_forks (origin, fork, pid, created_at) "
                 "VALUES (?, ?, ?, ?)", (origin, fork, owner.pid, time.time()))


def forks_of(conn: sqlite3.Connection, origin: str, since: float) -> list[str]:
    """Sessions forked off ``origin`` since ``since`` (unix seconds), oldest first."""
    rows = conn.execute("SELECT fork FROM session_forks WHERE origin = ? AND created_at >= ? "
                        "ORDER BY created_at, fork", (origin, since)).fetchall()
    return [str(r[0]) for r in rows]
