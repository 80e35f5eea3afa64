"""The state database: one SQLite file, ``<state dir>/agent.db``, in WAL mode.

It holds sessions and their messages, the prompt history, and the usage ledger (one row per
model request).  Why SQLite rather than loose JSON files: every message is committed in its own
transaction the moment it exists, so ``kill -9`` at any instant loses at most the reply that
was still streaming; two ``agent`` processes can write at once without corrupting or
interleaving each other's sessions (WAL + ``busy_timeout`` + ``BEGIN IMMEDIATE``); and the
ledger can be summed with plain SQL.

The core's schema changes are ordered SQL scripts in :data:`MIGRATIONS`; ``PRAGMA
user_version`` records how many have been applied.  Opening an older database applies the
missing ones inside one write transaction (so two processes opening it at once cannot both
migrate).  Never edit a shipped script; append one.

A plugin's tables are not here: the plugin declares them with the ``agent_store_schema`` hook
(a :class:`agent.state.schema.StoreSchema`, versioned per plugin), and
:meth:`Store.for_config` applies every enabled plugin's pending migrations when it opens the
database.  The plugin then reads and writes them through :meth:`Store.transaction` and
:meth:`Store.query`.

Only the standard library is imported, so opening the store costs a few milliseconds.
:data:`REPAIR_HINT` and :func:`is_damage` (from :mod:`agent.state.salvage`) are here for the
plugins that tell a user their database is damaged.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agent.contain.private import open_private, private_dir, tighten
from agent.state import lease
from agent.state.lease import Owner
from agent.state.salvage import REPAIR_HINT as REPAIR_HINT
from agent.state.salvage import is_damage as is_damage
from agent.state.salvage import read_messages
from agent.state.schema import SchemaError, StoreSchema, statements
from agent.state.schema import apply as apply_schemas

DB_NAME = "agent.db"

log = logging.getLogger("agent.state")

#: How long a writer waits for another process's write transaction, in milliseconds.
BUSY_TIMEOUT_MS = 10_000
#: SQLite page cache per connection (KiB).
CACHE_KIB = 256

#: Prompt history entries kept per directory.
HISTORY_LIMIT = 200

#: Ordered schema migrations; ``user_version`` = how many have run.  Append only.
MIGRATIONS: list[str] = [
    # v1: sessions, their messages, prompt history.
    """
    CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        cwd         TEXT NOT NULL,
        created_at  REAL NOT NULL,
        updated_at  REAL NOT NULL,
        title       TEXT NOT NULL DEFAULT '',
        provider    TEXT NOT NULL DEFAULT '',
        model       TEXT NOT NULL DEFAULT '',
        agent       TEXT NOT NULL DEFAULT '',
        data        TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at);
    CREATE INDEX sessions_by_update ON sessions (updated_at);
    CREATE TABLE messages (
        session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq         INTEGER NOT NULL,
        role        TEXT NOT NULL,
        body        TEXT NOT NULL,
        created_at  REAL NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE prompt_history (
        id    INTEGER PRIMARY KEY AUTOINCREMENT,
        cwd   TEXT NOT NULL,
        text  TEXT NOT NULL,
        ts    REAL NOT NULL
    );
    CREATE INDEX prompt_history_by_cwd ON prompt_history (cwd, id);
    """,
    # v2: the usage ledger.  No foreign key: spending stays on record when a session is deleted.
    """
    CREATE TABLE usage (
        id                  INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id          TEXT NOT NULL,
        ts                  REAL NOT NULL,
        provider            TEXT NOT NULL DEFAULT '',
        model               TEXT NOT NULL DEFAULT '',
        input_tokens        INTEGER NOT NULL DEFAULT 0,
        output_tokens       INTEGER NOT NULL DEFAULT 0,
        cached_tokens       INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens  INTEGER NOT NULL DEFAULT 0,
        cost_usd            REAL,
        turn                INTEGER NOT NULL DEFAULT 0,
        cause               TEXT NOT NULL DEFAULT 'main'
    );
    CREATE INDEX usage_by_ts ON usage (ts);
    CREATE INDEX usage_by_session ON usage (session_id, turn);
    """,
    # v3 created the memory plugin's table; the plugin now owns it through its own versioned
    # schema (agent.state.schema), whose first migration adopts the table where v3 made it.
    # Kept as an empty step so databases at v3 stay current.
    "",
    # v4: one writer per session (agent.state.lease): who holds each session, and the runs
    # that forked off a held session, so its holder is told.
    """
    CREATE TABLE session_leases (
        session_id  TEXT PRIMARY KEY,
        host        TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        started     TEXT NOT NULL,
        token       TEXT NOT NULL,
        taken_at    REAL NOT NULL
    );
    CREATE TABLE session_forks (
        origin      TEXT NOT NULL,
        fork        TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        created_at  REAL NOT NULL,
        PRIMARY KEY (origin, fork)
    );
    """,
]


class StoreError(Exception):
    """The database cannot be used (unreadable, from a newer ``agent``, corrupt)."""


class StoreConflict(StoreError):
    """Another process wrote to the session since this one last did (two ``agent -c`` on
    one session): writing on would interleave two conversations."""


class LeaseHeld(StoreConflict):
    """Another live writer holds the session's lease (:mod:`agent.state.lease`); nothing was
    written.  ``holder`` is who."""

    def __init__(self, session_id: str, holder: Owner) -> None:
        super().__init__(f"session {session_id} is being written by another agent process "
                         f"({holder.describe()})")
        self.holder = holder


@dataclass
class Continuation:
    """What :meth:`Store.continue_session` read: the saved ``messages`` (readable rows, in
    order), the ``seqs`` of rows skipped as damaged, ``rows`` (how many the session holds,
    damaged ones included) and ``holder``, the live writer that keeps the session (None
    when this process holds its lease now)."""

    messages: list[dict[str, Any]]
    damaged: list[int]
    rows: int
    holder: Owner | None = None


@dataclass
class SessionRecord:
    """A saved session, without its messages."""

    id: str
    cwd: str
    created_at: float
    updated_at: float
    title: str = ""
    provider: str = ""
    model: str = ""
    agent: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    message_count: int = 0


@dataclass
class UsageEntry:
    """One model request in the ledger.  ``cost_usd`` is None when the model is unpriced.
    ``cause`` is ``main`` (the session's own loop), ``tool:NAME``, ``subagent:KIND``,
    ``skill:NAME`` or ``command:NAME``."""

    session_id: str
    model: str
    provider: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    turn: int = 0
    cause: str = "main"
    ts: float = 0.0


def _dumps(value: Any) -> str:
    """Compact JSON for a column.  Text SQLite cannot store (a lone surrogate: a file name
    that is not UTF-8, a model's stray escape) is written as a JSON ``\\u`` escape instead,
    which ``json.loads`` turns back into the same string."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"))
    return text


def connect(path: Path | str, migrations: list[str] | None = None,
            schemas: Iterable[StoreSchema] = ()) -> sqlite3.Connection:
    """Open ``path`` (creating it and its directory), set WAL mode, and migrate it: the
    core's :data:`MIGRATIONS`, then the plugins' ``schemas`` (:mod:`agent.state.schema`).

    The connection is in autocommit mode (``isolation_level=None``): write through
    :meth:`Store.transaction`, which issues ``BEGIN IMMEDIATE`` so concurrent writers queue on
    ``busy_timeout`` instead of failing halfway.  Raises :class:`StoreError`.
    """
    migrations = MIGRATIONS if migrations is None else migrations
    path = Path(path)
    schemas = list(schemas)
    try:
        # 0700 dir, 0600 file before SQLite opens it: its -wal and -shm take the file's mode.
        private_dir(path.parent)
        if not os.path.lexists(path):
            _create_whole(path, migrations, schemas)
        if os.path.lexists(path):
            # Never open and close the file itself once it exists: closing any descriptor
            # of it drops every POSIX lock this process holds on it, those of a connection
            # already open included (the memory plugin opens its own).  A process whose
            # locks were dropped looks gone to the others: the last one to close then
            # checkpoints and removes the WAL under it, and what it writes next is lost.
            tighten(path)
        else:
            open_private(path)
        for suffix in ("-wal", "-shm"):
            tighten(f"{path}{suffix}")
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    try:
        _set_up(conn, migrations, path, schemas)
    except SchemaError as exc:
        conn.close()
        raise StoreError(str(exc)) from None
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: {exc}") from None
    except StoreError:
        conn.close()
        raise
    return conn


#: The bytes of a database :func:`_create_whole` built, by what it was built from (SQLite's
#: version, the core's migrations, each plugin schema's name and SQL): a process creating
#: another new state database (an embedder's second state dir; the test suite's in-process
#: runs, each in a new ``AGENT_HOME``) writes the same bytes instead of running the same
#: statements again.  Schemas with a function among their migrations are built each time.
_IMAGES: dict[tuple[Any, ...], bytes] = {}


def _image_key(migrations: list[str], schemas: list[StoreSchema]) -> tuple[Any, ...] | None:
    if not all(isinstance(step, str) for schema in schemas for step in schema.migrations):
        return None
    return (sqlite3.sqlite_version, tuple(migrations),
            tuple((schema.name, tuple(schema.migrations)) for schema in schemas))


def _create_whole(path: Path, migrations: list[str], schemas: list[StoreSchema]) -> None:
    """Make the new database ``path`` whole, or not at all: built (WAL mode, every
    migration) in a hidden file beside it without a sync per step, synced once, then
    hard-linked into place, which never replaces a database another process made meanwhile
    (that one is used).  Building in place switched the journal to WAL and migrated with
    eight fdatasyncs; this takes two (the file, the directory), and a crash leaves either no
    database or a complete one (at worst a hidden ``.agent.db.*.new`` file beside it).

    Best effort: where it cannot be done (no hard links on this filesystem, a migration that
    fails, a full disk) it leaves nothing behind and :func:`connect` builds the database in
    place as before, reporting what fails there."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.new")
    key = _image_key(migrations, schemas)
    linked = False
    try:
        image = _IMAGES.get(key) if key is not None else None
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            if image is None:
                _build(temp, migrations, schemas)
                if key is not None:
                    _IMAGES[key] = temp.read_bytes()
            else:
                view = memoryview(image)
                while view:
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, path)
        linked = True
    except FileExistsError:
        pass  # another process made it meanwhile: that one is opened
    except (OSError, sqlite3.Error, SchemaError, StoreError) as exc:
        log.debug("%s: not built whole (%s); building it in place", path, exc)
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(f"{temp}{suffix}")
            except OSError:
                pass
    if linked:
        from agent.lib.atomic import fsync_dir  # here: the store's import stays stdlib-only

        fsync_dir(path.parent)


def _build(temp: Path, migrations: list[str], schemas: list[StoreSchema]) -> None:
    """The whole schema in the new, empty file ``temp``, checkpointed into it on close (its
    header keeps WAL mode).  No syncs: the caller syncs the finished file once."""
    conn = sqlite3.connect(str(temp), isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA journal_mode = WAL")
        _migrate(conn, migrations, temp)
        apply_schemas(conn, schemas, temp)
    finally:
        conn.close()


def _set_up(conn: sqlite3.Connection, migrations: list[str], path: Path,
            schemas: list[StoreSchema]) -> None:
    """Pragmas and migrations, retried while another process holds the lock.

    Switching a new database to WAL (and migrating it) needs locks that SQLite may refuse at
    once with "database is locked", without waiting on ``busy_timeout``, when two ``agent``
    processes open a fresh state directory at the same moment.  Retrying with a short pause
    until the busy timeout makes the second one simply wait its turn.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            # In WAL mode NORMAL loses nothing on a process crash, only on power loss.
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # A small page cache: a long session only appends, and the default 2 MiB cache
            # filled with pages written once was memory a long turn grew by.
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            _migrate(conn, migrations, path)
            apply_schemas(conn, schemas, path)
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _migrate(conn: sqlite3.Connection, migrations: list[str], path: Path) -> None:
    if schema_version(conn) == len(migrations):
        return  # the common case: no write lock taken at all
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(conn)  # re-read under the lock: another process may have won
        if current > len(migrations):
            raise StoreError(
                f"{path} was written by a newer agent (schema v{current}; this version knows "
                f"v{len(migrations)}). Upgrade agent, or set AGENT_HOME to use another state "
                "directory.")
        for number in range(current, len(migrations)):
            for statement in statements(migrations[number]):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(migrations)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class Store:
    """The state database of one ``agent`` process.

    ``Store.open(state_dir)`` opens ``<state_dir>/agent.db``.  Every write method is one
    short transaction.  The connection may be shared by threads (a lock serialises use).
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        #: why this store was opened read-only (see :meth:`open_read_only`), else None
        self.read_only: str | None = None
        self._lock = threading.RLock()

    @classmethod
    def open(cls, state_dir: Path | str, schemas: Iterable[StoreSchema] = ()) -> Store:
        """Open ``<state_dir>/agent.db`` with the core's tables and the given plugin
        ``schemas`` migrated (raises :class:`StoreError`)."""
        path = Path(state_dir) / DB_NAME
        return cls(connect(path, schemas=schemas), path)

    @classmethod
    def for_config(cls, config: Any) -> Store:
        """Open the run's state database with every enabled plugin's tables migrated (the
        schemas the ``agent_store_schema`` hook answered, kept in ``config.store_schemas``).
        The way plugins open the store."""
        return cls.open(config.state_dir, config.store_schemas)

    @classmethod
    def open_read_only(cls, path: Path | str, reason: str) -> Store:
        """Open an existing database without writing to it or to its directory: a
        read-only or full state dir, where :meth:`open` fails.  Sessions can be listed and
        resumed; every write raises.  ``reason`` (why the normal open failed) is kept in
        :attr:`read_only`.  Raises :class:`StoreError`.

        ``mode=ro`` is tried first (it still sees other processes' writes, but needs the WAL
        index file to exist or be creatable); then ``immutable=1``, which reads the file as
        it is (on a read-only filesystem nobody can be writing to it)."""
        path = Path(path)
        if not path.is_file():
            raise StoreError(f"{path} does not exist")
        target = quote(str(path.resolve()))
        problem = "unknown error"
        for flags in ("mode=ro", "immutable=1"):
            try:
                conn = sqlite3.connect(f"file:{target}?{flags}", uri=True,
                                       timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                       check_same_thread=False)
            except sqlite3.Error as exc:
                problem = str(exc)
                continue
            try:
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                version = schema_version(conn)
                conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
            except sqlite3.Error as exc:
                conn.close()
                problem = str(exc)
                continue
            if version != len(MIGRATIONS):
                conn.close()
                raise StoreError(f"{path} needs schema v{len(MIGRATIONS)} (it has v{version}) "
                                 "and cannot be upgraded read-only")
            store = cls(conn, path)
            store.read_only = reason
            return store
        raise StoreError(f"cannot open {path} even read-only: {problem}")

    @classmethod
    def connect(cls, path: Path | str) -> Store:
        """Open the database file at ``path`` itself (tests, tools)."""
        return cls(connect(path), Path(path))

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): committed on success, rolled back on
        any exception."""
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            cur = self.conn.execute(sql, params)
            cur.row_factory = sqlite3.Row
            return cur.fetchall()

    # ---- sessions ---------------------------------------------------------------------------

    def create_session(self, record: SessionRecord) -> None:
        """Insert a session row (no-op if the id exists)."""
        with self.transaction() as conn:
            _insert_session(conn, record)

    def continue_session(self, session_id: str, owner: Owner | None, fork: str | None = None
                         ) -> Continuation:
        """Read a saved session to continue it, and take its lease for ``owner``, in one
        transaction.  When another live process holds the lease, nothing is taken and the
        answer names that ``holder``; with ``fork`` (the id this run will write under
        instead) the fork is recorded in the same transaction, so the holder is told
        (:meth:`forks_of`) whenever it writes or ends next.  Without ``owner`` (a read-only
        store) the session is only read."""
        if owner is None:
            with self._lock:
                return Continuation(*read_messages(self.conn, session_id))
        with self.transaction() as conn:
            holder = lease.acquire(conn, session_id, owner)
            if holder is not None and fork is not None:
                lease.record_fork(conn, session_id, fork, owner)
                lease.take(conn, fork, owner)
            messages, damaged, rows = read_messages(conn, session_id)
        return Continuation(messages, damaged, rows, holder)

    def release(self, session_id: str, owner: Owner) -> list[str]:
        """Give up ``owner``'s lease of ``session_id``; returns the sessions forked off it
        since ``owner`` took it (read in the same transaction, so none is missed)."""
        with self.transaction() as conn:
            forks = self._forks(conn, session_id, owner)
            lease.release(conn, session_id, owner)
        return forks

    def record_fork(self, origin: str, fork: str, owner: Owner) -> None:
        """Note that ``owner`` moved its run off ``origin`` to ``fork`` (a lost lease), so
        the holder of ``origin`` is told."""
        with self.transaction() as conn:
            lease.record_fork(conn, origin, fork, owner)

    def forks_of(self, session_id: str, owner: Owner) -> list[str]:
        """Sessions other processes forked off ``session_id`` while ``owner`` held it."""
        with self._lock:
            return self._forks(self.conn, session_id, owner)

    @staticmethod
    def _forks(conn: sqlite3.Connection, session_id: str, owner: Owner) -> list[str]:
        row = conn.execute("SELECT taken_at FROM session_leases WHERE session_id = ? AND "
                           "token = ?", (session_id, owner.token)).fetchone()
        return [] if row is None else lease.forks_of(conn, session_id, float(row[0]) - 1)

    def append_message(self, session_id: str, message: dict[str, Any], *,
                       new_session: SessionRecord | None = None,
                       update: dict[str, Any] | None = None,
                       expect_seq: int | None = None, owner: Owner | None = None) -> int:
        """Commit one message (``Message.to_dict()``) at the end of a session; returns its
        ``seq``.  ``new_session`` creates the session row in the same transaction;
        ``update`` sets session columns (``title``, ``model``, ``data``...) alongside.
        With ``expect_seq``, raise :class:`StoreConflict` (writing nothing) unless the
        message would get exactly that ``seq``.  With ``owner``, raise :class:`LeaseHeld`
        (writing nothing) unless ``owner`` holds the session's lease or can take it."""
        now = time.time()
        body = _dumps(message)
        with self.transaction() as conn:
            _check_lease(conn, session_id, owner)
            if new_session is not None:
                _insert_session(conn, new_session)
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?",
                (session_id,)).fetchone()[0]
            if expect_seq is not None and seq != expect_seq:
                raise StoreConflict(f"session {session_id} has {seq - 1} messages saved; "
                                    f"this process expected {expect_seq - 1}")
            conn.execute(
                "INSERT INTO messages (session_id, seq, role, body, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (session_id, seq, str(message.get("role", "")), body, now))
            _update_session(conn, session_id, {**(update or {}), "updated_at": now})
        return int(seq)

    def replace_messages(self, session_id: str, messages: list[dict[str, Any]], *,
                         expect_count: int | None = None, owner: Owner | None = None) -> None:
        """Rewrite a session's whole history in one transaction (compaction, repairs).
        With ``expect_count``, raise :class:`StoreConflict` (changing nothing) unless the
        session holds exactly that many messages; with ``owner``, :class:`LeaseHeld` unless
        ``owner`` holds (or can take) the session's lease."""
        now = time.time()
        with self.transaction() as conn:
            _check_lease(conn, session_id, owner)
            if expect_count is not None:
                count = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?",
                                     (session_id,)).fetchone()[0]
                if count != expect_count:
                    raise StoreConflict(f"session {session_id} has {count} messages saved; "
                                        f"this process expected {expect_count}")
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.executemany(
                "INSERT INTO messages (session_id, seq, role, body, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(session_id, i + 1, str(m.get("role", "")),
                  _dumps(m), now)
                 for i, m in enumerate(messages)])
            _update_session(conn, session_id, {"updated_at": now})

    def update_session(self, session_id: str, **columns: Any) -> None:
        """Set columns of a session (``title``, ``model``, ``data`` (a dict), ...)."""
        with self.transaction() as conn:
            _update_session(conn, session_id, columns)

    def delete_session(self, session_id: str) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            conn.execute("DELETE FROM session_leases WHERE session_id = ?", (session_id,))

    def load_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages in order, as dicts for ``Message.from_dict``."""
        rows = self.query("SELECT body FROM messages WHERE session_id = ? ORDER BY seq",
                          (session_id,))
        return [json.loads(r["body"]) for r in rows]

    def get_session(self, session_id: str) -> SessionRecord | None:
        rows = self.query(_SESSION_SELECT + " WHERE s.id = ?", (session_id,))
        return _record(rows[0]) if rows else None

    def sessions(self, cwd: str | None = None, limit: int | None = 100) -> list[SessionRecord]:
        """Saved sessions, newest update first; only those in ``cwd`` when given."""
        sql = _SESSION_SELECT
        params: list[object] = []
        if cwd is not None:
            sql += " WHERE s.cwd = ?"
            params.append(cwd)
        sql += " ORDER BY s.updated_at DESC, s.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_record(r) for r in self.query(sql, tuple(params))]

    def sessions_with_prefix(self, prefix: str, limit: int = 20) -> list[SessionRecord]:
        """Sessions whose id starts with ``prefix`` (case-insensitive), newest first."""
        prefix = prefix.strip().lower()
        rows = self.query(_SESSION_SELECT + " WHERE substr(s.id, 1, ?) = ? "
                          "ORDER BY s.updated_at DESC, s.id DESC LIMIT ?",
                          (len(prefix), prefix, limit))
        return [_record(r) for r in rows]

    # ---- prompt history ---------------------------------------------------------------------

    def add_history(self, cwd: str, text: str, limit: int = HISTORY_LIMIT) -> bool:
        """Remember a prompt typed in ``cwd``; False if it equals the previous one."""
        if not text.strip():
            return False
        with self.transaction() as conn:
            last = conn.execute("SELECT text FROM prompt_history WHERE cwd = ? "
                                "ORDER BY id DESC LIMIT 1", (cwd,)).fetchone()
            if last is not None and last[0] == text:
                return False
            conn.execute("INSERT INTO prompt_history (cwd, text, ts) VALUES (?, ?, ?)",
                         (cwd, text, time.time()))
            conn.execute("DELETE FROM prompt_history WHERE cwd = ? AND id NOT IN ("
                         "SELECT id FROM prompt_history WHERE cwd = ? ORDER BY id DESC LIMIT ?)",
                         (cwd, cwd, limit))
        return True

    def history(self, cwd: str, limit: int = HISTORY_LIMIT) -> list[str]:
        """Prompts typed in ``cwd``, oldest first (the newest is last)."""
        rows = self.query("SELECT text FROM prompt_history WHERE cwd = ? "
                          "ORDER BY id DESC LIMIT ?", (cwd, limit))
        return [r["text"] for r in reversed(rows)]

    # ---- usage ledger -----------------------------------------------------------------------

    def record_usage(self, entry: UsageEntry) -> None:
        """Add one model request to the ledger."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO usage (session_id, ts, provider, model, input_tokens, "
                "output_tokens, cached_tokens, reasoning_tokens, cache_write_tokens, cost_usd, "
                "turn, cause) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (entry.session_id, entry.ts or time.time(), entry.provider, entry.model,
                 entry.input_tokens, entry.output_tokens, entry.cached_tokens,
                 entry.reasoning_tokens, entry.cache_write_tokens, entry.cost_usd, entry.turn,
                 entry.cause))

    def last_turn(self, session_id: str) -> int:
        row = self.query("SELECT COALESCE(MAX(turn), 0) AS t FROM usage WHERE session_id = ?",
                         (session_id,))
        return int(row[0]["t"])

    def usage_totals(self, *, session_id: str | None = None, since: float | None = None
                     ) -> dict[str, Any]:
        """Summed tokens and cost.  ``cost_usd`` sums the priced rows only; ``unpriced``
        counts the rows without a price."""
        groups = self.usage_groups("all", session_id=session_id, since=since)
        return groups[0] if groups else _empty_totals()

    def usage_groups(self, by: str, *, session_id: str | None = None,
                     since: float | None = None) -> list[dict[str, Any]]:
        """Ledger sums grouped ``by`` ``day`` (local), ``model``, ``tool``, ``subagent``,
        ``cause``, ``session`` or ``all``.  ``tool`` and ``subagent`` keep only the rows those
        caused.  Rows are sorted by key (days newest first)."""
        key_sql = {
            "day": "date(ts, 'unixepoch', 'localtime')",
            "model": "model",
            "tool": "substr(cause, 6)",
            "subagent": "substr(cause, 10)",
            "cause": "cause",
            "session": "session_id",
            "all": "'all'",
        }.get(by)
        if key_sql is None:
            raise ValueError(f"unknown grouping {by!r}")
        where: list[str] = []
        params: list[object] = []
        if by == "tool":
            where.append("cause LIKE 'tool:%'")
        elif by == "subagent":
            where.append("cause LIKE 'subagent:%'")
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if since is not None:
            where.append("ts >= ?")
            params.append(since)
        sql = (f"SELECT {key_sql} AS key, COUNT(*) AS requests, "
               "SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, "
               "SUM(cached_tokens) AS cached_tokens, SUM(cost_usd) AS cost_usd, "
               "SUM(cost_usd IS NULL) AS unpriced FROM usage")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " GROUP BY key ORDER BY key" + (" DESC" if by == "day" else "")
        return [dict(r) for r in self.query(sql, tuple(params))]


def _empty_totals() -> dict[str, Any]:
    return {"key": "all", "requests": 0, "input_tokens": 0, "output_tokens": 0,
            "cached_tokens": 0, "cost_usd": None, "unpriced": 0}


_SESSION_COLUMNS = ("title", "provider", "model", "agent", "data", "updated_at", "cwd")

_SESSION_SELECT = (
    "SELECT s.id, s.cwd, s.created_at, s.updated_at, s.title, s.provider, s.model, s.agent, "
    "s.data, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count "
    "FROM sessions s")


def _check_lease(conn: sqlite3.Connection, session_id: str, owner: Owner | None) -> None:
    if owner is not None:
        holder = lease.acquire(conn, session_id, owner)
        if holder is not None:
            raise LeaseHeld(session_id, holder)


def _insert_session(conn: sqlite3.Connection, r: SessionRecord) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO sessions (id, cwd, created_at, updated_at, title, provider, "
        "model, agent, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (r.id, r.cwd, r.created_at, r.updated_at, r.title, r.provider, r.model, r.agent,
         _dumps(r.data)))


def _update_session(conn: sqlite3.Connection, session_id: str, columns: dict[str, Any]) -> None:
    if not columns:
        return
    unknown = set(columns) - set(_SESSION_COLUMNS)
    if unknown:
        raise ValueError(f"not session columns: {', '.join(sorted(unknown))}")
    values = {k: (_dumps(v) if k == "data" else v) for k, v in columns.items()}
    assignments = ", ".join(f"{k} = ?" for k in values)
    conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?",
                 (*values.values(), session_id))


def _record(row: sqlite3.Row) -> SessionRecord:
    try:
        data = json.loads(row["data"] or "{}")
    except json.JSONDecodeError:
        data = {}
    return SessionRecord(id=row["id"], cwd=row["cwd"], created_at=row["created_at"],
                         updated_at=row["updated_at"], title=row["title"],
                         provider=row["provider"], model=row["model"], agent=row["agent"],
                         data=data if isinstance(data, dict) else {},
                         message_count=int(row["message_count"]))
