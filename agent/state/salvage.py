"""Reading a damaged state database: what can be read is kept, what cannot is named.

Two levels of damage:

- **A damaged row** (a message body that is no longer JSON, or a page SQLite cannot read
  under one row): :func:`read_messages` skips that row and says which ``seq`` it was, so a
  session with one bad message resumes without it instead of not at all.
- **A damaged database** (``PRAGMA quick_check`` finds faults, or the file does not open):
  :func:`check` says so for ``agent doctor``, and :func:`salvage` copies every row that can
  still be read into a new database file, which ``agent doctor --repair`` then puts in place
  of the old one, moved aside under a name it prints.

Only the standard library is imported.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _message(body: object) -> dict[str, Any] | None:
    """A saved message body as a dict, or None when it is damaged."""
    if not isinstance(body, str):
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("role"), str) \
            or not isinstance(value.get("parts"), list):
        return None
    return value


def read_messages(conn: sqlite3.Connection, session_id: str
                  ) -> tuple[list[dict[str, Any]], list[int], int]:
    """A session's readable messages in order, the ``seq`` of every row skipped as damaged,
    and how many rows the session holds.  A page that cannot be read is retried row by row,
    so only the rows on it are lost."""
    try:
        rows = conn.execute("SELECT seq, body FROM messages WHERE session_id = ? ORDER BY seq",
                            (session_id,)).fetchall()
    except sqlite3.DatabaseError:
        rows = _rows_one_by_one(conn, session_id)
    messages: list[dict[str, Any]] = []
    damaged: list[int] = []
    for seq, body in rows:
        message = _message(body)
        if message is None:
            damaged.append(int(seq))
        else:
            messages.append(message)
    highest = max((int(seq) for seq, _ in rows), default=0)
    return messages, damaged, max(highest, len(rows))


def _rows_one_by_one(conn: sqlite3.Connection, session_id: str) -> list[tuple[int, object]]:
    """Each row of the session read alone; one that cannot be read is kept as ``None``."""
    seqs = [int(r[0]) for r in conn.execute(
        "SELECT seq FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))]
    rows: list[tuple[int, object]] = []
    for seq in seqs:
        try:
            row = conn.execute("SELECT body FROM messages WHERE session_id = ? AND seq = ?",
                               (session_id, seq)).fetchone()
        except sqlite3.DatabaseError:
            row = None
        rows.append((seq, row[0] if row is not None else None))
    return rows


def check(path: Path) -> list[str]:
    """What is wrong with the database at ``path`` (empty when it is sound)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return [str(exc)]
    try:
        found = [line.strip() for r in conn.execute("PRAGMA quick_check(20)")
                 for line in str(r[0]).splitlines()]
        problems = [line for line in found if line not in ("", "ok")
                    and not line.startswith("***")]
        if not problems:
            bad = _damaged_bodies(conn)
            if bad:
                problems.append(f"{bad} message row(s) hold damaged text")
        return problems
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    finally:
        conn.close()


def _damaged_bodies(conn: sqlite3.Connection) -> int:
    try:
        rows = conn.execute("SELECT body FROM messages")
        return sum(1 for (body,) in rows if _message(body) is None)
    except sqlite3.DatabaseError:
        return 1


@dataclass
class Salvaged:
    """What :func:`salvage` copied: rows per table, and the rows (or tables) it could not."""

    copied: dict[str, int] = field(default_factory=dict)
    lost: dict[str, int] = field(default_factory=dict)
    sessions: int = 0


def salvage(old: Path, new: sqlite3.Connection) -> Salvaged:
    """Copy every readable row of the database file ``old`` into ``new`` (a database with
    the current schema, in autocommit mode).  Tables are copied by the columns both have;
    messages whose body is damaged are left out; rows SQLite cannot read are skipped one by
    one.  Returns what was copied and lost."""
    result = Salvaged()
    source = sqlite3.connect(f"file:{old}?mode=ro", uri=True)
    try:
        wanted = [str(r[0]) for r in new.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        try:
            names = {str(r[0]) for r in source.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError:
            names = set(wanted)  # the catalogue is damaged: try every table we know
        # A table before those whose foreign keys point at it; leases are never carried over.
        referenced = {str(fk[2]) for name in wanted
                      for fk in new.execute(f'PRAGMA foreign_key_list("{name}")')}
        order = sorted((n for n in wanted if n in names and n != "session_leases"),
                       key=lambda n: (n not in referenced, n))
        new.execute("BEGIN IMMEDIATE")
        try:
            for name in order:
                _copy_table(source, new, name, result)
            new.execute("COMMIT")
        except BaseException:
            new.execute("ROLLBACK")
            raise
    finally:
        source.close()
    result.sessions = int(new.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])
    return result


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _copy_table(source: sqlite3.Connection, new: sqlite3.Connection, table: str,
                result: Salvaged) -> None:
    try:
        have = _columns(source, table)
    except sqlite3.DatabaseError:
        result.lost[table] = -1
        return
    columns = [c for c in _columns(new, table) if c in have]
    if not columns:
        return
    listed = ", ".join(f'"{c}"' for c in columns)
    insert = (f'INSERT OR IGNORE INTO "{table}" ({listed}) '
              f'VALUES ({", ".join("?" for _ in columns)})')
    body_at = columns.index("body") if table == "messages" and "body" in columns else None
    copied = lost = 0
    for row in _readable_rows(source, table, listed):
        if row is None or (body_at is not None and _message(row[body_at]) is None):
            lost += 1
            continue
        try:
            new.execute(insert, row)
            copied += 1
        except sqlite3.Error:  # a row the new schema refuses (a message of a lost session)
            lost += 1
    result.copied[table] = copied
    if lost:
        result.lost[table] = lost


def _readable_rows(source: sqlite3.Connection, table: str, listed: str) -> Any:
    """Every row of ``table`` in rowid order; None for each one that cannot be read.  A
    scan that fails part way goes on row by row from where it stopped."""
    last = 0
    try:
        for row in source.execute(f'SELECT rowid, {listed} FROM "{table}" ORDER BY rowid'):
            last = int(row[0])
            yield row[1:]
        return
    except sqlite3.DatabaseError:
        pass
    try:
        top = source.execute(f'SELECT MAX(rowid) FROM "{table}"').fetchone()[0] or 0
    except sqlite3.DatabaseError:
        return
    for rowid in range(last + 1, int(top) + 1):
        try:
            row = source.execute(f'SELECT {listed} FROM "{table}" WHERE rowid = ?',
                                 (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            yield None
            continue
        if row is not None:
            yield row


def is_damage(exc: BaseException) -> bool:
    """True when ``exc`` says the database file itself is damaged (not locked, not full)."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and (
        "malformed" in text or "not a database" in text or "corrupt" in text)


#: What a run says after a damaged database's error.
REPAIR_HINT = ("the state database is damaged: `agent doctor --repair` copies every readable "
               "session into a new one and moves this one aside")


def live_writers(path: Path) -> list[str]:
    """The live agent processes holding a session of the database at ``path`` (``pid N``);
    empty when the lease table cannot be read."""
    from agent.state.lease import Owner, is_stale

    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return []
    try:
        rows = conn.execute("SELECT DISTINCT host, pid, started, token FROM session_leases"
                            ).fetchall()
    except sqlite3.DatabaseError:
        return []
    finally:
        conn.close()
    holders = [Owner(str(h), int(p), str(s), str(t)) for h, p, s, t in rows]
    return sorted({h.describe() for h in holders if not is_stale(h)})


def aside_name(path: Path) -> Path:
    """Where the damaged ``path`` is moved: ``agent.db.damaged-YYYYmmdd-HHMMSS``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while os.path.lexists(target):
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    return target
