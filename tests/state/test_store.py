"""The SQLite state store: WAL, migrations, concurrent writers, history, the usage ledger."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from agent.state import store as store_mod
from agent.state.schema import statements
from agent.state.store import MIGRATIONS, SessionRecord, Store, StoreError, UsageEntry


def record(sid: str, cwd: str = "/w", when: float | None = None, **kw) -> SessionRecord:
    when = time.time() if when is None else when
    return SessionRecord(id=sid, cwd=cwd, created_at=when, updated_at=when, **kw)


def raw(path) -> sqlite3.Connection:
    return sqlite3.connect(str(path))


def test_open_creates_a_wal_database_at_the_latest_schema(tmp_path):
    with Store.open(tmp_path / "state") as st:
        assert st.path == tmp_path / "state" / "agent.db"
        assert st.conn.execute("PRAGMA busy_timeout").fetchone()[0] == store_mod.BUSY_TIMEOUT_MS
    conn = raw(tmp_path / "state" / "agent.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "messages", "prompt_history", "usage"} <= tables


@pytest.mark.parametrize("version", range(1, len(MIGRATIONS)))
def test_an_older_database_is_migrated_and_keeps_its_rows(tmp_path, version):
    """Build a database as version N left it, with data, then open it with this code."""
    path = tmp_path / "agent.db"
    conn = raw(path)
    for script in MIGRATIONS[:version]:
        conn.executescript(script)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO sessions (id, cwd, created_at, updated_at, title, data) "
                 "VALUES ('s1', '/w', 1, 2, 'old one', '{\"todos\": []}')")
    conn.execute("INSERT INTO messages VALUES ('s1', 1, 'user', ?, 1)",
                 (json.dumps({"role": "user", "parts": [{"type": "text", "text": "hi"}]}),))
    conn.execute("INSERT INTO prompt_history (cwd, text, ts) VALUES ('/w', 'hi', 1)")
    conn.commit()
    conn.close()

    with Store.connect(path) as st:
        assert st.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert st.get_session("s1").title == "old one"
        assert st.load_messages("s1")[0]["parts"][0]["text"] == "hi"
        assert st.history("/w") == ["hi"]
        st.record_usage(UsageEntry("s1", "gpt-5", input_tokens=3, output_tokens=1))
        assert st.usage_totals()["requests"] == 1


def test_a_database_from_a_newer_agent_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "agent.db"
    conn = raw(path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer agent"):
        Store.connect(path)


def test_a_failing_migration_leaves_the_database_untouched(tmp_path):
    path = tmp_path / "agent.db"
    broken = MIGRATIONS[:1] + ["CREATE TABLE extra (x); THIS IS NOT SQL;"]
    with pytest.raises(StoreError):
        store_mod.connect(path, broken)
    conn = raw(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "extra" not in names and "sessions" not in names


def test_statement_splitter_keeps_semicolons_inside_strings_and_triggers():
    script = ("CREATE TABLE t (x TEXT DEFAULT ';');\n"
              "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET x = 'a;b'; END;\n")
    assert [s.strip().split()[1] for s in statements(script)] == ["TABLE", "TRIGGER"]


WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from agent.state.store import Store, SessionRecord
    path, sid, n, others = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
    st = Store.connect(path)
    # A barrier, not a clock: both writers are connected before either writes, however
    # slowly a loaded machine starts them.
    Path(path + ".ready." + sid).touch()
    deadline = time.time() + 30
    while not all(Path(path + ".ready." + o).exists() for o in others):
        assert time.time() < deadline, "the other writer never started"
        time.sleep(0.001)
    now = time.time()
    st.create_session(SessionRecord(sid, "/same/dir", now, now))
    for i in range(n):
        st.append_message(sid, {"role": "user", "parts": [{"type": "text", "text": f"{sid}-{i}"}]})
        time.sleep(0.001)  # like a real session: writes spread out, so the two overlap
    st.close()
""")


def test_two_processes_writing_two_sessions_at_once_never_interleave(tmp_path):
    path = tmp_path / "agent.db"
    n = 200
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), sid, str(n),
                               "alpha,beta"], stderr=subprocess.PIPE, text=True)
             for sid in ("alpha", "beta")]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    conn = raw(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for sid in ("alpha", "beta"):
        rows = conn.execute("SELECT seq, body FROM messages WHERE session_id = ? ORDER BY seq",
                            (sid,)).fetchall()
        assert [r[0] for r in rows] == list(range(1, n + 1))
        texts = [json.loads(r[1])["parts"][0]["text"] for r in rows]
        assert texts == [f"{sid}-{i}" for i in range(n)]
    # The writes really overlapped in time (otherwise this test proves nothing).
    times = {sid: conn.execute("SELECT MIN(created_at), MAX(created_at) FROM messages "
                               "WHERE session_id = ?", (sid,)).fetchone()
             for sid in ("alpha", "beta")}
    assert times["alpha"][0] < times["beta"][1] and times["beta"][0] < times["alpha"][1]


def test_messages_are_numbered_per_session_and_can_be_rewritten(tmp_path):
    with Store.connect(tmp_path / "a.db") as st:
        st.create_session(record("s1"))
        st.create_session(record("s2"))
        assert st.append_message("s1", {"role": "user", "parts": []}) == 1
        assert st.append_message("s2", {"role": "user", "parts": []}) == 1
        assert st.append_message("s1", {"role": "assistant", "parts": []}) == 2
        st.replace_messages("s1", [{"role": "user", "parts": [{"type": "text", "text": "sum"}]}])
        assert st.load_messages("s1") == [{"role": "user",
                                           "parts": [{"type": "text", "text": "sum"}]}]
        assert st.get_session("s1").message_count == 1
        assert st.get_session("s2").message_count == 1


def test_append_can_create_the_session_row_in_the_same_transaction(tmp_path):
    with Store.connect(tmp_path / "a.db") as st:
        st.append_message("new", {"role": "user", "parts": []},
                          new_session=record("new", title="first"), update={"model": "m2"})
        rec = st.get_session("new")
        assert (rec.title, rec.model, rec.message_count) == ("first", "m2", 1)


def test_sessions_are_listed_newest_first_per_directory_and_found_by_prefix(tmp_path):
    with Store.connect(tmp_path / "a.db") as st:
        st.create_session(record("0190aaaa-1", "/a", when=100))
        st.create_session(record("0190aaaa-2", "/b", when=200))
        st.create_session(record("0190bbbb-3", "/a", when=300))
        assert [r.id for r in st.sessions("/a")] == ["0190bbbb-3", "0190aaaa-1"]
        assert [r.id for r in st.sessions()] == ["0190bbbb-3", "0190aaaa-2", "0190aaaa-1"]
        assert [r.id for r in st.sessions_with_prefix("0190AAAA")] == ["0190aaaa-2",
                                                                       "0190aaaa-1"]
        assert st.sessions_with_prefix("0190aaaa_") == []  # no LIKE wildcards


def test_prompt_history_skips_repeats_and_keeps_the_newest_200_per_directory(tmp_path):
    with Store.connect(tmp_path / "a.db") as st:
        assert st.add_history("/a", "one") is True
        assert st.add_history("/a", "one") is False  # same as the previous entry
        st.add_history("/a", "two")
        st.add_history("/a", "one")  # not consecutive: kept
        st.add_history("/b", "elsewhere")
        assert st.history("/a") == ["one", "two", "one"]
        for i in range(250):
            st.add_history("/a", f"p{i}")
        hist = st.history("/a")
        assert len(hist) == 200 and hist[0] == "p50" and hist[-1] == "p249"
        assert st.history("/b") == ["elsewhere"]
        count = st.conn.execute("SELECT COUNT(*) FROM prompt_history WHERE cwd = '/a'")
        assert count.fetchone()[0] == 200  # trimmed on disk, not only in the answer


def test_the_ledger_sums_priced_rows_and_counts_unpriced_ones(tmp_path):
    day1 = time.mktime((2026, 3, 1, 12, 0, 0, 0, 0, -1))
    day2 = time.mktime((2026, 3, 2, 12, 0, 0, 0, 0, -1))
    rows = [
        UsageEntry("s1", "gpt-5", input_tokens=100, output_tokens=10, cost_usd=0.5, ts=day1),
        UsageEntry("s1", "gpt-5", input_tokens=200, output_tokens=20, cost_usd=0.25, ts=day2,
                   turn=2),
        UsageEntry("s1", "llama", input_tokens=50, output_tokens=5, cost_usd=None, ts=day2,
                   cause="tool:git_commit_message"),
        UsageEntry("s2", "gpt-5", input_tokens=7, output_tokens=1, cost_usd=0.125, ts=day2,
                   cause="subagent:explore"),
    ]
    with Store.connect(tmp_path / "a.db") as st:
        for row in rows:
            st.record_usage(row)
        total = st.usage_totals()
        assert (total["requests"], total["input_tokens"], total["output_tokens"]) == (4, 357, 36)
        assert total["cost_usd"] == pytest.approx(0.875) and total["unpriced"] == 1
        assert st.usage_totals(session_id="s1")["cost_usd"] == pytest.approx(0.75)
        assert st.usage_totals(since=day2 - 3600)["requests"] == 3
        by_day = st.usage_groups("day")
        assert [g["key"] for g in by_day] == ["2026-03-02", "2026-03-01"]
        by_model = {g["key"]: g for g in st.usage_groups("model")}
        assert by_model["llama"]["cost_usd"] is None and by_model["llama"]["unpriced"] == 1
        assert by_model["gpt-5"]["requests"] == 3
        assert [(g["key"], g["requests"]) for g in st.usage_groups("tool")] == [
            ("git_commit_message", 1)]
        assert [(g["key"], g["cost_usd"]) for g in st.usage_groups("subagent")] == [
            ("explore", 0.125)]
        assert st.last_turn("s1") == 2
        with pytest.raises(ValueError):
            st.usage_groups("color")


OPENER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from agent.state.store import Store
    folder, me, other, trials = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    in_place = sys.argv[5] == "in place"
    try:
        for trial in range(trials):
            if in_place:  # an empty file already there: the database is built where it lies
                (folder / f"fresh-{trial}.db").touch(mode=0o600)
            # A barrier before each trial, not a clock: both openers are at the starting
            # line before either opens, so the two meet in the switch to WAL every time.
            (folder / f"ready.{trial}.{me}").touch()
            deadline = time.time() + 30
            while not (folder / f"ready.{trial}.{other}").exists():
                if (folder / f"failed.{other}").exists():
                    sys.exit(f"the other opener failed before trial {trial}")
                assert time.time() < deadline, f"the other opener never reached trial {trial}"
                time.sleep(0.0005)
            Store.connect(str(folder / f"fresh-{trial}.db")).close()
    except BaseException:
        (folder / f"failed.{me}").touch()  # so the other one stops waiting at the barrier
        raise
""")


@pytest.mark.parametrize("how", ["built whole", "in place"])
def test_two_processes_opening_a_fresh_database_at_once_both_succeed(tmp_path, how):
    """Two agents starting at once on a new state dir: each builds the database beside it
    and links it into place, and the one that comes second opens the first one's
    (``built whole``).  Where a database is built in place (its empty file was there: an
    older agent's, or no hard links), the two meet in SQLite's switch to WAL, which can
    answer "database is locked" at once instead of waiting; the store must retry.  The race
    is timing-dependent, so the same two processes open 60 fresh databases, meeting at a
    barrier before each: with the retry taken out, 8 runs of this test in 10 failed when it
    had only the in-place case (two new processes for each of 10 databases, started at once
    without a barrier, failed in none of 5 runs, and cost 3.4 s of CPU instead of 0.7 s); 7
    in 10 of the in-place case since databases are built whole, the built-whole case in
    none (a second opener finds the first one's database linked, whatever the timing: 20
    trials)."""
    trials = 60 if how == "in place" else 20
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(tmp_path), me, other,
                               str(trials), how], stderr=subprocess.PIPE, text=True)
             for me, other in (("a", "b"), ("b", "a"))]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], "\n".join(errors)
    for trial in range(trials):
        path = tmp_path / f"fresh-{trial}.db"
        assert raw(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
