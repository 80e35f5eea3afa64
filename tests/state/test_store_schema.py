"""Plugins' own tables: versioned per plugin, migrated in one transaction, never downgraded;
the memory plugin's table moved out of the core's schema without losing anyone's notes."""

from __future__ import annotations

import sqlite3
import time

import pytest

from agent import hookimpl
from agent.state.schema import SchemaError, StoreSchema
from agent.state.store import MIGRATIONS, Store, StoreError
from agent.testing import make_boot, run_tool

#: The core schema as agent shipped it before plugins owned their tables: v3 created the
#: memory table.  A copy, so the test keeps building the old layout whatever the code becomes.
OLD_CORE_V3 = [
    """
    CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT NOT NULL, created_at REAL NOT NULL,
        updated_at REAL NOT NULL, title TEXT NOT NULL DEFAULT '', provider TEXT NOT NULL
        DEFAULT '', model TEXT NOT NULL DEFAULT '', agent TEXT NOT NULL DEFAULT '',
        data TEXT NOT NULL DEFAULT '{}');
    CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at);
    CREATE INDEX sessions_by_update ON sessions (updated_at);
    CREATE TABLE messages (session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL, role TEXT NOT NULL, body TEXT NOT NULL, created_at REAL NOT NULL,
        PRIMARY KEY (session_id, seq));
    CREATE TABLE prompt_history (id INTEGER PRIMARY KEY AUTOINCREMENT, cwd TEXT NOT NULL,
        text TEXT NOT NULL, ts REAL NOT NULL);
    CREATE INDEX prompt_history_by_cwd ON prompt_history (cwd, id);
    """,
    """
    CREATE TABLE usage (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
        ts REAL NOT NULL, provider TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',
        input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
        cached_tokens INTEGER NOT NULL DEFAULT 0, reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL,
        turn INTEGER NOT NULL DEFAULT 0, cause TEXT NOT NULL DEFAULT 'main');
    CREATE INDEX usage_by_ts ON usage (ts);
    CREATE INDEX usage_by_session ON usage (session_id, turn);
    """,
    """
    CREATE TABLE memory (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
        project TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL,
        created_at REAL NOT NULL, hits INTEGER NOT NULL DEFAULT 0, last_hit REAL);
    CREATE UNIQUE INDEX memory_by_text ON memory (project, text);
    CREATE INDEX memory_by_project ON memory (project, created_at);
    """,
]


def rows(path, sql):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def tables(path):
    return {r[0] for r in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


BOOKMARKS_V1 = "CREATE TABLE bookmarks (id INTEGER PRIMARY KEY, url TEXT NOT NULL);"
BOOKMARKS_V2 = "ALTER TABLE bookmarks ADD COLUMN title TEXT NOT NULL DEFAULT 'untitled';"


def test_a_plugin_schema_is_created_then_upgraded_step_by_step_keeping_rows(tmp_path):
    db = tmp_path / "agent.db"
    with Store.open(tmp_path, [StoreSchema("bookmarks", (BOOKMARKS_V1,))]) as st:
        with st.transaction() as conn:
            conn.execute("INSERT INTO bookmarks (url) VALUES ('https://a.example')")
    assert rows(db, "SELECT plugin, version FROM plugin_schema") == [("bookmarks", 1)]
    with Store.open(tmp_path, [StoreSchema("bookmarks", (BOOKMARKS_V1, BOOKMARKS_V2))]):
        pass
    assert rows(db, "SELECT url, title FROM bookmarks") == [("https://a.example", "untitled")]
    assert rows(db, "SELECT plugin, version FROM plugin_schema") == [("bookmarks", 2)]
    # Opened again at the same version: nothing runs (v1 would fail: the table exists).
    with Store.open(tmp_path, [StoreSchema("bookmarks", (BOOKMARKS_V1, BOOKMARKS_V2))]):
        pass
    assert rows(db, "SELECT plugin, version FROM plugin_schema") == [("bookmarks", 2)]


def test_a_newer_plugin_schema_on_disk_is_refused_and_nothing_changes(tmp_path):
    db = tmp_path / "agent.db"
    with Store.open(tmp_path, [StoreSchema("bookmarks", (BOOKMARKS_V1, BOOKMARKS_V2))]) as st:
        with st.transaction() as conn:
            conn.execute("INSERT INTO bookmarks (url, title) VALUES ('u', 't')")
    before = db.read_bytes()
    other = StoreSchema("other", ("CREATE TABLE other_things (x);",))
    with pytest.raises(StoreError) as caught:
        Store.open(tmp_path, [StoreSchema("bookmarks", (BOOKMARKS_V1,)), other])
    message = str(caught.value)
    assert "plugin bookmarks" in message and "v2" in message and "knows v1" in message
    assert "Nothing was changed" in message
    assert "other_things" not in tables(db)  # the other plugin was not migrated either
    assert rows(db, "SELECT url, title FROM bookmarks") == [("u", "t")]
    assert rows(db, "SELECT plugin, version FROM plugin_schema") == [("bookmarks", 2)]
    assert db.read_bytes() == before


def test_a_failing_migration_rolls_back_every_plugin(tmp_path):
    db = tmp_path / "agent.db"
    good = StoreSchema("alpha", ("CREATE TABLE alpha_rows (x);",))
    bad = StoreSchema("beta", ("CREATE TABLE beta_rows (x); THIS IS NOT SQL;",))
    with pytest.raises(StoreError) as caught:
        Store.open(tmp_path, [good, bad])
    assert "plugin beta's migration to v1 failed" in str(caught.value)
    assert not {"alpha_rows", "beta_rows", "plugin_schema"} & tables(db)
    with Store.open(tmp_path, [good]):  # the good one alone still applies
        pass
    assert rows(db, "SELECT plugin, version FROM plugin_schema") == [("alpha", 1)]


def test_a_migration_may_be_a_function_for_data_changes(tmp_path):
    def split_urls(conn):
        conn.execute("ALTER TABLE bookmarks ADD COLUMN host TEXT NOT NULL DEFAULT ''")
        conn.execute("UPDATE bookmarks SET host = substr(url, 9, instr(substr(url, 9), '/') - 1)")

    with Store.open(tmp_path, [StoreSchema("bookmarks", (BOOKMARKS_V1,))]) as st:
        with st.transaction() as conn:
            conn.execute("INSERT INTO bookmarks (url) VALUES ('https://docs.example/x')")
    with Store.open(tmp_path, [StoreSchema("bookmarks", (BOOKMARKS_V1, split_urls))]):
        pass
    assert rows(tmp_path / "agent.db", "SELECT host FROM bookmarks") == [("docs.example",)]


def test_bad_declarations_are_refused_with_their_reason():
    with pytest.raises(SchemaError, match="use letters"):
        StoreSchema("no spaces", ())
    with pytest.raises(SchemaError, match="migration 2 is int"):
        StoreSchema("ok", ("CREATE TABLE t (x);", 5))


def test_a_plugin_cannot_declare_another_plugins_tables(tmp_path):
    class Squatter:
        @hookimpl
        def agent_store_schema(self, config):
            return StoreSchema("memory", ("DROP TABLE memory;",))

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["memory"],
                              extra=[("squatter", Squatter())])
    try:
        assert [s.name for s in config.store_schemas] == ["memory"]
        assert any("plugin squatter: agent_store_schema must return a StoreSchema named "
                   "'squatter'" in p for p in hooks.problems)
    finally:
        hooks.unconfigure(config)


async def test_a_database_from_the_old_core_schema_keeps_its_notes(tmp_path):
    """A user's agent.db as the core's schema v3 left it (the memory table in the core):
    opened by this version, the memory plugin adopts the table and every note is there."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "home" / "state"
    state.mkdir(parents=True)
    conn = sqlite3.connect(state / "agent.db")
    for script in OLD_CORE_V3:
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 3")
    project = str(ws.resolve())
    for n, text in enumerate(("build with make", "tests need ripgrep")):
        conn.execute("INSERT INTO memory (id, project, kind, text, created_at, hits) "
                     "VALUES (?, ?, 'fact', ?, ?, ?)", (f"id{n}", project, text, time.time(), n))
    conn.commit()
    conn.close()

    config, hooks = make_boot(ws, tmp_path / "home", builtins=["memory"])
    try:
        tools = hooks.tools(config)
        found = await run_tool(tools["recall"], {"query": "make"}, config)
        assert found.output == "(fact) build with make"
        added = await run_tool(tools["remember"], {"kind": "gotcha", "text": "slow CI"}, config)
        assert added.output == "Remembered as gotcha (3 stored): slow CI"
    finally:
        hooks.unconfigure(config)
    db = state / "agent.db"
    assert rows(db, "SELECT plugin, version FROM plugin_schema") == [("memory", 1)]
    assert rows(db, "PRAGMA user_version") == [(len(MIGRATIONS),)]
    assert sorted(r[0] for r in rows(db, "SELECT text FROM memory")) == [
        "build with make", "slow CI", "tests need ripgrep"]


def test_a_new_database_gets_the_memory_table_from_the_plugin_only(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with Store.open(tmp_path / "bare"):
        pass
    assert "memory" not in tables(tmp_path / "bare" / "agent.db")  # not the core's table
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["memory"])
    try:
        with Store.for_config(config):
            pass
    finally:
        hooks.unconfigure(config)
    assert "memory" in tables(tmp_path / "home" / "state" / "agent.db")
