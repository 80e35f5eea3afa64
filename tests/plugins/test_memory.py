"""Project memory: notes on disk (the state database), their injection, and /memory."""

from __future__ import annotations

import json
import sqlite3

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent.testing import collect, make_boot, make_session, run_tool


@pytest.fixture
def setup(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "memory"])
    yield config, hooks, hooks.tools(config)
    hooks.unconfigure(config)


def db_rows(config, sql, params=()):
    """Read the database file directly, as another process would."""
    conn = sqlite3.connect(config.state_dir / "agent.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def call(tools, name, config, **args):
    return await run_tool(tools[name], args, config)


async def test_remember_stores_refuses_duplicates_and_long_notes(setup):
    config, _, tools = setup
    first = await call(tools, "remember", config, kind="command", text="  run tests: make check ")
    assert first.output == "Remembered as command (1 stored): run tests: make check"
    again = await call(tools, "remember", config, kind="fact", text="run tests: make check")
    assert again.output == "Already recorded: run tests: make check"
    long = await call(tools, "remember", config, kind="fact", text="x" * 401)
    assert long.is_error and "at most 400" in long.output
    bad = await call(tools, "remember", config, kind="rumour", text="y")
    assert bad.is_error
    rows = db_rows(config, "SELECT project, kind, text FROM memory")
    assert rows == [(str(config.workspace), "command", "run tests: make check")]


async def test_only_the_newest_300_are_kept(setup):
    config, _, tools = setup
    for i in range(305):
        await call(tools, "remember", config, kind="fact", text=f"note number {i}")
    texts = {r[0] for r in db_rows(config, "SELECT text FROM memory")}
    assert len(texts) == 300
    assert "note number 4" not in texts and "note number 5" in texts
    assert "note number 304" in texts


async def test_recall_matches_every_term_newest_first_and_counts_hits(setup):
    config, _, tools = setup
    for text in ("The API server listens on port 8080", "api keys live in .env.local",
                 "Deploy with make deploy", "The API client retries three times",
                 "Café module is legacy"):
        await call(tools, "remember", config, kind="fact", text=text)
    found = await call(tools, "recall", config, query="API the")
    assert found.output.splitlines() == ["(fact) The API client retries three times",
                                         "(fact) The API server listens on port 8080"]
    assert (await call(tools, "recall", config, query="cafe")).output == \
        "(fact) Café module is legacy"  # the full-text index folds diacritics
    assert (await call(tools, "recall", config, query="env.loc")).output == \
        "(fact) api keys live in .env.local"  # substrings match too
    assert (await call(tools, "recall", config, query="kubernetes")).output == \
        'Nothing recorded about "kubernetes".'
    empty = await call(tools, "recall", config, query="   ")
    assert empty.is_error
    hits = dict(db_rows(config, "SELECT text, hits FROM memory"))
    assert hits["The API client retries three times"] == 1
    assert hits["Deploy with make deploy"] == 0


async def test_recall_returns_at_most_15(setup):
    config, _, tools = setup
    for i in range(20):
        await call(tools, "remember", config, kind="gotcha", text=f"flaky test {i}")
    lines = (await call(tools, "recall", config, query="flaky")).output.splitlines()
    assert len(lines) == 15 and lines[0] == "(gotcha) flaky test 19"


async def test_forget_removes_every_case_insensitive_match(setup):
    config, _, tools = setup
    for text in ("Use Poetry", "poetry lock is slow", "Use tox"):
        await call(tools, "remember", config, kind="fact", text=text)
    assert (await call(tools, "forget", config, text="POETRY")).output == "Forgot 2 memories."
    assert (await call(tools, "forget", config, text="tox")).output == "Forgot 1 memory."
    assert (await call(tools, "forget", config, text="nope")).output == \
        'No memory matches "nope".'
    assert db_rows(config, "SELECT COUNT(*) FROM memory") == [(0,)]


async def test_notes_are_per_project(tmp_path):
    home = tmp_path / "home"
    results = []
    for name in ("one", "two"):
        ws = tmp_path / name
        ws.mkdir()
        config, hooks = make_boot(ws, home, builtins=["memory"])
        tools = hooks.tools(config)
        await call(tools, "remember", config, kind="fact", text=f"project {name}")
        results.append((await call(tools, "recall", config, query="project")).output)
        hooks.unconfigure(config)
    assert results == ["(fact) project one", "(fact) project two"]


async def test_top_20_notes_are_in_the_prompt_by_hits_then_recency(setup, fake_provider):
    config, hooks, tools = setup
    for i in range(25):
        await call(tools, "remember", config, kind="fact", text=f"note {i:02d}")
    await call(tools, "recall", config, query="note 03")  # only note 03 gets a hit
    fake_provider.script(Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "hi")
    system = fake_provider.requests[0].body["messages"][0]["content"]
    block = system[system.index("What you learned about this project"):]
    lines = [ln for ln in block.splitlines() if ln.startswith("- ")]
    assert "Trust it, but verify anything that contradicts" in block
    assert lines == ["- (fact) note 03", *[f"- (fact) note {i:02d}" for i in range(24, 5, -1)]]


def test_no_memory_loads_nothing_offers_no_tools_and_writes_nothing(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    base = ["--provider", "openai", "--base-url", fake_provider.openai_url, "--model", "m",
            "--yolo"]
    fake_provider.script(
        Reply.tool_call("remember", {"kind": "fact", "text": "build with make"}),
        Reply.text("saved"),
        Reply.tool_call("remember", {"kind": "fact", "text": "written without memory"}),
        Reply.text("tried"))
    first = run_agent_here(["-p", "learn", *base], home=home, cwd=ws, OPENAI_API_KEY="x")
    assert first.returncode == 0, first.stderr
    second = run_agent_here(["-p", "learn more", "--no-memory", *base], home=home, cwd=ws,
                            OPENAI_API_KEY="x")
    assert second.returncode == 0, second.stderr
    bodies = fake_provider.bodies
    names = [{t["function"]["name"] for t in b.get("tools", [])} for b in bodies]
    assert {"remember", "recall", "forget"} <= names[0]
    assert not {"remember", "recall", "forget"} & names[2]
    assert "Unknown tool: remember" in json.dumps(bodies[3]["messages"])
    assert "build with make" not in bodies[2]["messages"][0]["content"]
    conn = sqlite3.connect(home / "state" / "agent.db")
    assert conn.execute("SELECT text FROM memory").fetchall() == [("build with make",)]
    conn.close()
    fake_provider.script(Reply.text("hello"))
    third = run_agent_here(["-p", "hi", *base], home=home, cwd=ws, OPENAI_API_KEY="x")
    assert third.returncode == 0, third.stderr  # memory on again: the note is back
    assert "- (fact) build with make" in fake_provider.bodies[4]["messages"][0]["content"]


class App:
    def __init__(self, session):
        self.session = session
        self.shown: list[str] = []

    def info(self, text):
        self.shown.append(text)


async def test_memory_compaction_merges_unused_notes_and_keeps_used_ones(setup, fake_provider):
    config, hooks, tools = setup
    for text in ("use make", "use make to build", "tests need docker", "docs in /site"):
        await call(tools, "remember", config, kind="fact", text=text)
    await call(tools, "recall", config, query="docker")  # used: kept verbatim
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(Reply.text("Here you go:\n[command] make builds everything\n"
                                    "[fact] docs live in /site\nnot a note"))
    app = App(session)
    await hooks.commands(config).get("memory").run(app, "")
    assert app.shown == ["Compacted 3 unused notes into 2; 4 notes before, 3 now."]
    rows = sorted(db_rows(config, "SELECT kind, text, hits FROM memory"))
    assert rows == [("command", "make builds everything", 0), ("fact", "docs live in /site", 0),
                    ("fact", "tests need docker", 1)]
    sent = fake_provider.bodies[0]["messages"][-1]["content"]
    assert "[fact] use make" in sent and "tests need docker" not in sent


@pytest.mark.parametrize("answer", [Reply.text("I could not do that."), Reply.text(""),
                                    Reply.error(500, message="boom")])
async def test_memory_compaction_never_wipes_the_store(setup, fake_provider, answer):
    config, hooks, tools = setup
    for text in ("a note", "another note", "third note"):
        await call(tools, "remember", config, kind="fact", text=text)
    before = db_rows(config, "SELECT id, kind, text, hits FROM memory ORDER BY n")
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(answer)
    app = App(session)
    await hooks.commands(config).get("memory").run(app, "")
    assert "unchanged" in app.shown[0]
    assert db_rows(config, "SELECT id, kind, text, hits FROM memory ORDER BY n") == before


async def test_memory_compaction_needs_two_unused_notes(setup):
    config, hooks, tools = setup
    await call(tools, "remember", config, kind="fact", text="lonely")
    app = App(None)
    await hooks.commands(config).get("memory").run(app, "")
    assert app.shown == ["Nothing to compact: 1 unused note."]


async def test_notes_command_lists_newest_first(setup):
    config, hooks, tools = setup
    app = App(None)
    hooks.commands(config).get("notes").run(app, "")
    assert app.shown[-1].startswith("No notes about this project yet")
    await call(tools, "remember", config, kind="fact", text="older")
    await call(tools, "remember", config, kind="gotcha", text="newer")
    await call(tools, "recall", config, query="older")
    hooks.commands(config).get("notes").run(app, "")
    assert app.shown[-1].splitlines() == ["2 notes about this project, newest first:",
                                          "  (gotcha) newer", "  (fact, used 1x) older"]
