"""Plugins' own tables in the state database, each versioned per plugin.

A plugin that keeps data in ``agent.db`` answers the ``agent_store_schema`` hook with a
:class:`StoreSchema`: its name and its ordered migrations (SQL scripts, or functions taking the
connection for data migrations).  Its version is the number of migrations; the table
``plugin_schema`` records, per plugin, how many have run.  Whenever the store is opened with
the run's schemas (:meth:`agent.state.store.Store.for_config`), the pending migrations of every
plugin run inside one write transaction (``BEGIN IMMEDIATE``), so two processes opening the
database at once cannot both migrate, and a migration that fails leaves nothing half done:
every table and every version stays as it was.

A database whose tables a plugin's *newer* version wrote (the recorded version is higher than
the migrations this plugin ships) is refused with a :class:`agent.state.store.StoreError` naming the
plugin and both versions: an older plugin guessing at a newer layout could lose data.  A
plugin that is disabled or uninstalled is simply not migrated; its tables stay untouched.

Migrations are append-only: never edit one that has shipped, add another.  Write the first
one with ``IF NOT EXISTS`` when the table may already exist from before the plugin owned it
(the memory plugin's table was created by the core's schema v3).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

#: A migration: an SQL script (several statements) or a function run on the connection.
Migration = str | Callable[[sqlite3.Connection], None]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

VERSION_TABLE = """
    CREATE TABLE IF NOT EXISTS plugin_schema (
        plugin      TEXT PRIMARY KEY,
        version     INTEGER NOT NULL
    )
"""


class SchemaError(Exception):
    """A plugin's schema cannot be applied (a downgrade, a bad declaration)."""


@dataclass(frozen=True)
class StoreSchema:
    """One plugin's tables: ``name`` (its plugin name) and its ordered ``migrations``.

    ``version`` is ``len(migrations)``.  Example::

        SCHEMA = StoreSchema("bookmarks", (
            "CREATE TABLE bookmarks (id INTEGER PRIMARY KEY, project TEXT, url TEXT);",
            "ALTER TABLE bookmarks ADD COLUMN title TEXT NOT NULL DEFAULT '';",
        ))
    """

    name: str
    migrations: Sequence[Migration]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise SchemaError(f"store schema name {self.name!r}: use letters, digits, '_', "
                              "'-' and '.'")
        for number, step in enumerate(self.migrations, 1):
            if not (isinstance(step, str) or callable(step)):
                raise SchemaError(f"store schema {self.name}: migration {number} is "
                                  f"{type(step).__name__}, not SQL text or a function")

    @property
    def version(self) -> int:
        return len(self.migrations)


def statements(script: str) -> Iterator[str]:
    """Split an SQL script into complete statements (``executescript`` would commit)."""
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n\t;"):
                yield buffer
            buffer = ""
    if buffer.strip(" \n\t;"):
        yield buffer


def recorded_versions(conn: sqlite3.Connection) -> dict[str, int]:
    """Each plugin's applied schema version (empty before any plugin had tables)."""
    try:
        rows = conn.execute("SELECT plugin, version FROM plugin_schema").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise
    return {str(name): int(version) for name, version in rows}


def _check(schemas: Sequence[StoreSchema]) -> None:
    seen: set[str] = set()
    for schema in schemas:
        if schema.name in seen:
            raise SchemaError(f"two store schemas are named {schema.name!r}")
        seen.add(schema.name)


def pending(conn: sqlite3.Connection, schemas: Sequence[StoreSchema], path: Path | str
            ) -> list[tuple[StoreSchema, int]]:
    """The schemas with migrations to run, with the version each is at now.  Raises
    :class:`SchemaError` when the database holds a newer version of a plugin's tables."""
    versions = recorded_versions(conn)
    todo = []
    for schema in schemas:
        current = versions.get(schema.name, 0)
        if current > schema.version:
            raise SchemaError(
                f"{path}: the tables of plugin {schema.name} are at schema v{current}, written "
                f"by a newer version of it; this one knows v{schema.version}. Upgrade the "
                f"plugin (or agent), disable {schema.name}, or set AGENT_HOME to use another "
                "state directory. Nothing was changed.")
        if current < schema.version:
            todo.append((schema, current))
    return todo


def apply(conn: sqlite3.Connection, schemas: Iterable[StoreSchema], path: Path | str) -> None:
    """Run every plugin's pending migrations in one write transaction (see the module doc).

    ``conn`` is in autocommit mode and not inside a transaction.  Raises :class:`SchemaError`
    (nothing changed) on a downgrade, and lets an ``sqlite3`` error of a migration through
    after rolling everything back.
    """
    schemas = list(schemas)
    _check(schemas)
    if not schemas or not pending(conn, schemas, path):
        return  # the common case: no write lock taken at all
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(VERSION_TABLE)
        for schema, current in pending(conn, schemas, path):  # re-read under the lock
            for number in range(current, schema.version):
                step = schema.migrations[number]
                try:
                    if isinstance(step, str):
                        for statement in statements(step):
                            conn.execute(statement)
                    else:
                        step(conn)
                except sqlite3.Error as exc:
                    raise SchemaError(f"{path}: plugin {schema.name}'s migration to "
                                      f"v{number + 1} failed: {exc}; nothing was changed"
                                      ) from exc
            conn.execute("INSERT INTO plugin_schema (plugin, version) VALUES (?, ?) "
                         "ON CONFLICT (plugin) DO UPDATE SET version = excluded.version",
                         (schema.name, schema.version))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
