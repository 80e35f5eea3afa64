"""A new state database is made whole beside its path and linked into place
(agent.state.store._create_whole): what is opened is what building it in place gave, for
every set of plugin schemas a process opens, and nothing else is left in the state dir."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from agent.state.schema import StoreSchema
from agent.state.store import MIGRATIONS, Store, StoreError

ALPHA = StoreSchema("alpha", ("CREATE TABLE alpha_rows (x TEXT);",
                              "CREATE INDEX alpha_by_x ON alpha_rows (x);"))
BETA = StoreSchema("beta", ("CREATE TABLE beta_rows (y INTEGER);",))


def _add_gamma(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE gamma_rows (z BLOB)")


GAMMA = StoreSchema("gamma", (_add_gamma,))  # a function among the migrations


def layout(db: Path) -> tuple:
    """Everything a database's schema is: its journal mode, version, every object's SQL,
    the plugin versions recorded."""
    conn = sqlite3.connect(str(db))
    try:
        objects = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                               "ORDER BY type, name").fetchall()
        names = {row[1] for row in objects}
        versions = conn.execute("SELECT plugin, version FROM plugin_schema ORDER BY plugin"
                                ).fetchall() if "plugin_schema" in names else []
        return (conn.execute("PRAGMA journal_mode").fetchone()[0],
                conn.execute("PRAGMA user_version").fetchone()[0], objects, versions)
    finally:
        conn.close()


def built_in_place(folder: Path, schemas: list[StoreSchema]) -> tuple:
    """The layout of a database built where it lies (its empty file made first, as an older
    agent did: the store then migrates the file in place)."""
    folder.mkdir()
    (folder / "agent.db").touch(mode=0o600)
    Store.open(folder, schemas).close()
    return layout(folder / "agent.db")


@pytest.mark.parametrize("order", ["whole first", "in place first"])
def test_each_new_database_has_the_schema_it_was_opened_with(tmp_path, order):
    """Five new state dirs with different schema sets, twice each (the second of a kind
    comes from this process's image of the first): every one equals the database built in
    place with the same schemas."""
    sets = [[ALPHA], [ALPHA, BETA], [], [BETA, ALPHA], [ALPHA, GAMMA]]
    expected = {}
    if order == "in place first":
        expected = {i: built_in_place(tmp_path / f"ref{i}", s) for i, s in enumerate(sets)}
    for round_ in range(2):
        for i, schemas in enumerate(sets):
            folder = tmp_path / f"new{i}-{round_}"
            with Store.open(folder, schemas) as store:
                assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            got = layout(folder / "agent.db")
            assert got[0] == "wal" and got[1] == len(MIGRATIONS)
            if i not in expected:
                expected[i] = built_in_place(tmp_path / f"ref{i}", schemas)
            assert got == expected[i], schemas
    tables = {i: {o[1] for o in expected[i][2] if o[0] == "table"} for i in expected}
    assert "alpha_rows" in tables[0] and "beta_rows" not in tables[0]
    assert {"alpha_rows", "beta_rows"} <= tables[1] and "alpha_rows" not in tables[2]
    assert "gamma_rows" in tables[4]


def test_a_new_database_is_private_and_alone_in_its_folder(tmp_path):
    folder = tmp_path / "state"
    for _ in range(2):  # built, then from the image
        with Store.open(folder, [ALPHA]) as store:
            with store.transaction() as conn:
                conn.execute("INSERT INTO alpha_rows (x) VALUES ('kept')")
        assert sorted(p.name for p in folder.iterdir()) == ["agent.db"]
        assert stat.S_IMODE((folder / "agent.db").stat().st_mode) == 0o600
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        conn = sqlite3.connect(str(folder / "agent.db"))
        assert conn.execute("SELECT x FROM alpha_rows").fetchall() == [("kept",)]
        conn.close()
        folder = tmp_path / "state2"


def test_an_existing_database_is_opened_as_it_is(tmp_path):
    """A database already at the path (another process made it first) is never replaced."""
    folder = tmp_path / "state"
    with Store.open(folder, [ALPHA]) as store:
        with store.transaction() as conn:
            conn.execute("INSERT INTO alpha_rows (x) VALUES ('first')")
    with Store.open(folder, [ALPHA]) as store:
        assert store.query("SELECT x FROM alpha_rows")[0][0] == "first"


def test_a_schema_that_fails_is_reported_and_leaves_no_hidden_file(tmp_path):
    """A plugin migration that fails cannot be built whole: the database is built in place,
    which reports the failure as before (the core's tables, none of the plugins')."""
    bad = StoreSchema("broken", ("CREATE TABLE broken_rows (x); THIS IS NOT SQL;",))
    folder = tmp_path / "state"
    for _ in range(2):
        with pytest.raises(StoreError) as caught:
            Store.open(folder, [ALPHA, bad])
        assert "plugin broken's migration to v1 failed" in str(caught.value)
        assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(
            "agent.db-")) == ["agent.db"]
    names = {o[1] for o in layout(folder / "agent.db")[2]}
    assert "sessions" in names and not {"alpha_rows", "broken_rows"} & names
