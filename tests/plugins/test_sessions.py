"""Sessions end to end: recording, -c/-r resume on the wire, kill -9, subcommands, slash
commands."""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from clirun import agent_env, run_agent_here
from fakeprovider import Reply
from waiting import wait_until

from agent import hookimpl
from agent.contract.messages import Message, TextPart, ToolCallPart
from agent.loop.session import Runtime, SessionLookupError
from agent.state.store import SessionRecord, Store, UsageEntry
from agent.testing import collect, make_boot, make_session
from plugins_builtin.sessions import commands as sessions_plugin
from plugins_builtin.sessions.recorder import SessionRecorder, make_title
from plugins_builtin.sessions.saved import (
    ABORTED_BY_EXIT,
    clear,
    farewell,
    find_session,
    lookup,
    open_session,
    resume,
    resume_id,
    short_id,
)


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return tmp_path / "home", ws


def agent(srv, args, home, ws, **kw):
    return run_agent_here([*args, "--provider", "openai", "--base-url", srv.openai_url,
                           "--model", "gpt-5"], home=home, cwd=ws, OPENAI_API_KEY="x", **kw)


def db(home) -> sqlite3.Connection:
    return sqlite3.connect(str(home / "state" / "agent.db"))


def wire(request) -> list[tuple[str, str]]:
    """(role, text) of the chat messages a request carried, system prompt left out."""
    return [(m["role"], m["content"] if isinstance(m["content"], str) else json.dumps(
        m["content"])) for m in request.body["messages"] if m["role"] != "system"]


# ---- the CLI, through the fake provider -------------------------------------------------------


def test_continue_and_resume_send_the_earlier_exchange_to_the_model(dirs, fake_provider,
                                                                    tmp_path):
    home, ws = dirs
    fake_provider.script(
        Reply.text("Paris.", usage={"input_tokens": 1000, "output_tokens": 100}),
        Reply.text("About 2.1 million.", usage={"input_tokens": 3000, "output_tokens": 300,
                                                "cached_tokens": 1000}),
        Reply.text("Paris, still."))
    first = agent(fake_provider, ["-p", "capital of France?"], home, ws)
    assert first.returncode == 0, first.stderr
    second = agent(fake_provider, ["-c", "-p", "how many people live there?"], home, ws)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "About 2.1 million.\n"
    assert wire(fake_provider.requests[1]) == [
        ("user", "capital of France?"), ("assistant", "Paris."),
        ("user", "how many people live there?")]
    rows = db(home).execute("SELECT id, title FROM sessions").fetchall()
    assert len(rows) == 1 and rows[0][1] == "capital of France?"  # continued, not a new one
    sid = rows[0][0]

    # -r finds a session from any directory, by a unique prefix in any case.
    other = tmp_path / "other"
    other.mkdir()
    third = agent(fake_provider, ["-r", sid[:13].upper(), "-p", "and the capital?"], home,
                  other)
    assert third.returncode == 0, third.stderr
    assert wire(fake_provider.requests[2])[:4] == wire(fake_provider.requests[1]) + [
        ("assistant", "About 2.1 million.")]

    # One ledger row per model request, numbered by turn, priced from the table.
    ledger = db(home).execute("SELECT session_id, turn, cause, model, input_tokens, "
                              "cached_tokens, cost_usd FROM usage ORDER BY id").fetchall()
    assert [r[:6] for r in ledger] == [(sid, 1, "main", "gpt-5", 1000, 0),
                                       (sid, 2, "main", "gpt-5", 3000, 1000),
                                       (sid, 3, "main", "gpt-5", 10, 0)]
    assert ledger[0][6] == pytest.approx((1000 * 1.25 + 100 * 10) / 1e6)
    assert ledger[1][6] == pytest.approx((2000 * 1.25 + 1000 * 0.125 + 300 * 10) / 1e6)

    listed = run_agent_here(["sessions"], home=home, cwd=ws)
    assert listed.returncode == 0, listed.stderr
    line = listed.stdout.strip()
    assert line.startswith(sid[:8]) and line.endswith("  6msg  capital of France?")


def in_process(monkeypatch, capsys, home, cwd, argv):
    """``agent ARGV`` through the real ``main`` in this process (fast; no model involved)."""
    from agent.boot.cli import main

    monkeypatch.setenv("AGENT_HOME", str(home))
    monkeypatch.chdir(cwd)
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def seed(home, cwd, *ids, title="t", when=100.0):
    """Saved sessions with one message each, the later ids updated later."""
    store = Store.open(home / "state")
    for n, sid in enumerate(ids):
        store.append_message(sid, Message.user(f"message {n}").to_dict(),
                             new_session=SessionRecord(sid, str(cwd), when + n, when + n,
                                                       title=f"{title} {n}"))
        store.update_session(sid, updated_at=when + n)
    return store


def test_resume_errors_are_usage_errors(dirs, monkeypatch, capsys):
    home, ws = dirs
    ids = ("0190abcd-1111-7000-8000-000000000001", "0190abcd-2222-7000-8000-000000000002")
    seed(home, ws, *ids)
    code, _, err = in_process(monkeypatch, capsys, home, ws, ["-r", "ffff", "-p", "x"])
    assert code == 2 and err.strip().endswith('agent: no session matching "ffff"')
    code, _, err = in_process(monkeypatch, capsys, home, ws, ["-r", "0190abcd", "-p", "x"])
    assert code == 2
    assert 'agent: "0190abcd" matches 2 sessions; give more of the id:' in err
    assert "0190abcd-1  " in err and "0190abcd-2  " in err  # candidates by unique prefix
    code, _, err = in_process(monkeypatch, capsys, home, ws, ["-c", "-r", ids[0], "-p", "x"])
    assert code == 2 and "cannot be used together" in err
    code, _, err = in_process(monkeypatch, capsys, home, ws.parent, ["-c", "-p", "x"])
    assert code == 2 and err.strip().endswith("agent: no saved session for this directory")


def test_without_the_sessions_plugin_c_and_r_say_so_and_a_run_is_not_saved(dirs,
                                                                            fake_provider):
    """Disabled, the feature is gone as a whole: -c/-r exit 2 with a clear line before any
    request, and a headless run works but writes no session row."""
    home, ws = dirs
    seed(home, ws, "0190abcd-1111-7000-8000-000000000001").close()
    for flag in (["-c"], ["-r", "0190abcd"]):
        done = run_agent_here([*flag, "--disable", "sessions", "-p", "x", "--provider",
                                    "openai", "--base-url", fake_provider.openai_url, "--model",
                                    "gpt-5"], home=home, cwd=ws, OPENAI_API_KEY="x")
        assert done.returncode == 2, done.stderr
        assert f"agent: {flag[0]} continues a saved session, but no enabled plugin keeps " \
               "saved sessions" in done.stderr
        assert "Traceback" not in done.stderr
    assert fake_provider.requests == []
    fake_provider.script(Reply.text("Hello."))
    done = run_agent_here(["--disable", "sessions", "-p", "hi", "--provider", "openai",
                                "--base-url", fake_provider.openai_url, "--model", "gpt-5"],
                               home=home, cwd=ws, OPENAI_API_KEY="x")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello.\n" and len(fake_provider.requests) == 1
    assert db(home).execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1  # the seed
    assert db(home).execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1


@pytest.mark.e2e
def test_kill_9_mid_stream_keeps_the_prompt_and_continue_resends_it(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.stall(30, after=2), Reply.text("recovered"))
    cmd = [sys.executable, "-m", "agent", "-p", "the prompt that must survive", "--provider",
           "openai", "--base-url", fake_provider.openai_url, "--model", "gpt-5"]
    proc = subprocess.Popen(cmd, cwd=ws, env=agent_env(home, OPENAI_API_KEY="x"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        fake_provider.wait_requests(1, timeout=20)
        # The first words are on stdout: the kill lands mid-stream.
        ready = wait_until(lambda: select.select([proc.stdout], [], [], 0.05)[0],
                           "the first streamed words on stdout")
        assert ready and os.read(proc.stdout.fileno(), 100)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    conn = db(home)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    bodies = [json.loads(b) for (b,) in conn.execute("SELECT body FROM messages ORDER BY seq")]
    assert [b["role"] for b in bodies] == ["user"]
    assert bodies[0]["parts"][0]["text"] == "the prompt that must survive"
    again = agent(fake_provider, ["-c", "-p", "go on"], home, ws)
    assert again.returncode == 0, again.stderr
    assert wire(fake_provider.requests[1]) == [("user", "the prompt that must survive"),
                                               ("user", "go on")]


@pytest.mark.e2e
def test_two_agents_in_one_directory_keep_separate_sessions(dirs, fake_provider):
    home, ws = dirs
    fake_provider.script(Reply.text("answer", delay=0.05), Reply.text("answer", delay=0.05))
    cmds = [[sys.executable, "-m", "agent", "-p", f"question {n}", "--provider", "openai",
             "--base-url", fake_provider.openai_url, "--model", "gpt-5"] for n in (1, 2)]
    procs = [subprocess.Popen(c, cwd=ws, env=agent_env(home, OPENAI_API_KEY="x"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in cmds]
    for p in procs:
        p.communicate(timeout=60)
        assert p.returncode == 0
    conn = db(home)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    titles = {}
    for sid, title in conn.execute("SELECT id, title FROM sessions"):
        roles = [r for (r,) in conn.execute(
            "SELECT role FROM messages WHERE session_id = ? ORDER BY seq", (sid,))]
        assert roles == ["user", "assistant"]
        titles[title] = sid
    assert sorted(titles) == ["question 1", "question 2"]


def test_usage_subcommand_reports_the_ledger(dirs, monkeypatch, capsys):
    home, ws = dirs
    sid = "0190abcd-1111-7000-8000-000000000001"
    store = seed(home, ws, sid)
    now = time.time()
    for entry in (
        UsageEntry(sid, "gpt-5", input_tokens=1000, output_tokens=100, cost_usd=0.0022, turn=1),
        UsageEntry(sid, "gpt-5", input_tokens=3000, cached_tokens=1000, output_tokens=300,
                   cost_usd=0.005625, turn=2),
        UsageEntry(sid, "llama-3", input_tokens=50, output_tokens=5, turn=2,
                   cause="tool:git_commit_message"),
        UsageEntry(sid, "gpt-5", input_tokens=1, output_tokens=1, cost_usd=1.0,
                   ts=now - 40 * 86400),
    ):
        store.record_usage(entry)
    code, out, _ = in_process(monkeypatch, capsys, home, ws, ["usage", "--by", "model"])
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["model", "requests", "input", "cached", "output", "cost"]
    assert lines[1].split() == ["gpt-5", "3", "4,001", "1,000", "401", "$1.01"]
    assert lines[2].split() == ["llama-3", "1", "50", "0", "5", "unpriced"]
    assert lines[3].split() == ["total", "4", "4,051", "1,000", "406", "$1.01", "(+1",
                                "unpriced)"]
    since = time.strftime("%Y-%m-%d", time.localtime(now - 86400))
    code, out, _ = in_process(monkeypatch, capsys, home, ws, ["usage", "--since", since])
    assert out.splitlines()[1].split() == [time.strftime("%Y-%m-%d"), "3", "4,050", "1,000",
                                           "405", "$0.0078", "(+1", "unpriced)"]
    code, out, _ = in_process(monkeypatch, capsys, home, ws, ["usage", "--by", "tool"])
    assert out.splitlines()[1].split() == ["git_commit_message", "1", "50", "0", "5",
                                           "unpriced"]
    code, out, _ = in_process(monkeypatch, capsys, home, ws, ["usage", "--by", "subagent"])
    assert out.strip() == "no subagent requests recorded yet"
    code, _, err = in_process(monkeypatch, capsys, home, ws, ["usage", "--since", "yesterday"])
    assert code == 2
    assert err.strip().endswith('agent: --since needs a date like 2026-01-31, got "yesterday"')
    code, _, err = in_process(monkeypatch, capsys, home, ws, ["usage", "--by", "colour"])
    assert code == 2 and "invalid choice" in err


def test_sessions_subcommand(dirs, monkeypatch, capsys, tmp_path):
    home, ws = dirs
    code, out, _ = in_process(monkeypatch, capsys, home, ws, ["sessions"])
    assert (code, out.strip()) == (0, "no saved sessions in this directory")
    seed(home, ws, "0190abcd-1111-7000-8000-000000000001")
    seed(home, tmp_path, "0190abcd-2222-7000-8000-000000000002", title="elsewhere",
         when=86400 * 365)
    code, out, _ = in_process(monkeypatch, capsys, home, ws, ["sessions"])
    old = time.strftime("%Y-%m-%d %H:%M", time.localtime(100))
    new = time.strftime("%Y-%m-%d %H:%M", time.localtime(86400 * 365))
    assert out.splitlines() == [f"0190abcd-1  {old}  1msg  t 0"]
    code, out, _ = in_process(monkeypatch, capsys, home, ws, ["sessions", "--all"])
    assert out.splitlines() == [f"0190abcd-2  {new}  1msg  elsewhere 0  ({tmp_path})",
                                f"0190abcd-1  {old}  1msg  t 0  ({ws})"]


# ---- in process: recorder, resume, slash commands ---------------------------------------------


@pytest.fixture
def boot(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return make_boot(ws, tmp_path / "home", builtins=["sessions", "todos", "openai", "time"])


def offline_runtime(config, hooks) -> Runtime:
    return Runtime(config=config, hooks=hooks, tools=hooks.tools(config), provider=None,
                   model="gpt-5")


class App:
    """The bits of a front end's command context the slash commands use."""

    def __init__(self, session) -> None:
        self.session = session
        self.shown: list[str] = []
        self.cleared = 0

    def info(self, text: str) -> None:
        self.shown.append(text)

    def clear_transcript(self) -> None:
        self.cleared += 1


async def test_every_message_is_committed_as_the_turn_runs(boot, fake_provider):
    config, hooks = boot
    store = Store.open(config.state_dir)
    fake_provider.script(Reply.tool_call("current_time", {}, id="c1"), Reply.text("Noon."))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5",
                           recorder=SessionRecorder(store, cwd=str(config.workspace)))
    await collect(session, "what time is it? " + "x" * 80)
    saved = [m["role"] for m in store.load_messages(session.id)]
    assert saved == ["user", "assistant", "tool", "assistant"]
    assert store.load_messages(session.id) == [m.to_dict() for m in session.messages]
    record = store.get_session(session.id)
    assert record.title == make_title("what time is it? " + "x" * 80)
    assert len(record.title) == 63 and record.title.endswith("...")
    assert [r["turn"] for r in store.query("SELECT turn FROM usage")] == [1, 1]


def test_titles_are_one_line_and_clipped():
    assert make_title("  fix\n the   bug ") == "fix the bug"
    assert make_title("a" * 60) == "a" * 60
    assert make_title("a" * 61) == "a" * 60 + "..."


def test_an_empty_session_is_never_written(boot):
    config, hooks = boot
    session = open_session(offline_runtime(config, hooks))
    assert session.recorder.save(session) is False
    assert session.recorder.store.sessions() == []
    assert farewell(session) == "Good bye. Nothing to save from this session."


def test_resume_answers_tool_calls_left_open_by_a_dead_process(boot):
    config, hooks = boot
    store = Store.open(config.state_dir)
    now = time.time()
    store.create_session(SessionRecord("0190dead-0000-7000-8000-000000000000",
                                       str(config.workspace), now, now, title="t"))
    for message in (Message.user("run it"),
                    Message("assistant", [TextPart("running"),
                                          ToolCallPart("call_9", "bash", {"command": "make"})])):
        store.append_message("0190dead-0000-7000-8000-000000000000", message.to_dict())
    session = open_session(offline_runtime(config, hooks), store=store, continue_=True)
    last = session.messages[-1]
    assert last.role == "tool" and last.tool_results[0].call_id == "call_9"
    assert last.tool_results[0].output == ABORTED_BY_EXIT and last.tool_results[0].is_error
    assert store.load_messages(session.id)[-1] == last.to_dict()  # the repair is saved too


def test_find_session_messages(boot):
    config, _ = boot
    store = Store.open(config.state_dir)
    with pytest.raises(SessionLookupError, match="no saved session for this directory"):
        find_session(store, "/nowhere", continue_=True)
    with pytest.raises(SessionLookupError, match='no session matching "abc"'):
        find_session(store, "/nowhere", resume="abc")


def test_short_ids_grow_until_unique(boot):
    config, _ = boot
    store = Store.open(config.state_dir)
    for sid in ("0190aaaa-1111-7", "0190aaaa-1122-7", "0190bbbb-0000-7"):
        store.create_session(SessionRecord(sid, "/w", 1, 1))
    assert short_id(store, "0190bbbb-0000-7") == "0190bbbb"
    assert short_id(store, "0190aaaa-1111-7") == "0190aaaa-11"[:11] + "1"
    assert short_id(store, "0190aaaa-1122-7") == "0190aaaa-112"


def test_slash_commands_list_resume_title_save_and_clear(boot):
    config, hooks = boot
    runtime = offline_runtime(config, hooks)
    old = open_session(runtime)
    old.data["todos"] = [{"content": "write docs", "status": "in_progress"}]
    old._append(Message.user("first task"))
    old._append(Message("assistant", [TextPart("on it")]))
    old_id = old.id

    session = open_session(runtime)
    app = App(session)
    assert sessions_plugin.run_sessions(app, "") is None
    assert app.shown[-1].endswith("  2msg  first task")
    assert sessions_plugin.run_resume(app, "") is None
    assert app.shown[-1] == "usage: /resume <session-id>"
    sessions_plugin.run_resume(app, "nope")
    assert app.shown[-1] == 'no session matching "nope"'

    sessions_plugin.run_resume(app, old_id[:13])
    assert app.shown[-1] == f"resumed {short_id(session.recorder.store, old_id)} (2 messages): " \
                            "first task"
    assert app.cleared == 1
    assert session.id == old_id and [m.text for m in session.messages] == ["first task", "on it"]
    assert session.data["todos"][0]["content"] == "write docs"  # the task list comes back too

    sessions_plugin.run_title(app, "docs  sprint")
    assert app.shown[-1].endswith("is now titled: docs sprint")
    store = session.recorder.store
    assert store.get_session(old_id).title == "docs sprint"
    session.data["todos"] = []
    sessions_plugin.run_save(app, "")
    assert app.shown[-1] == f"saved {old_id}"
    assert store.get_session(old_id).data == {"todos": []}

    sessions_plugin.run_clear(app, "")
    assert app.shown[-1].startswith("started a new session; the previous one is saved")
    assert session.id != old_id and session.messages == [] and "todos" not in session.data
    session._append(Message.user("fresh start"))
    assert store.get_session(session.id).title == "fresh start"
    assert store.get_session(old_id).message_count == 2  # the old session is untouched
    assert sessions_plugin.slash_sessions(session, "bogus") == "usage: /sessions [all]"


def test_slash_commands_return_text_without_an_info_method(boot):
    config, hooks = boot
    session = open_session(offline_runtime(config, hooks))

    class Bare:
        pass

    bare = Bare()
    bare.session = session
    assert sessions_plugin.run_sessions(bare, "") == "no saved sessions in this directory"
    assert sessions_plugin.run_save(bare, "") == \
        "nothing to save yet: this session has no messages"


def test_title_chosen_before_the_first_message_is_used(boot):
    config, hooks = boot
    session = open_session(offline_runtime(config, hooks))
    assert sessions_plugin.slash_title(session, "named early").endswith("named early")
    session._append(Message.user("the prompt"))
    assert session.recorder.store.get_session(session.id).title == "named early"


def test_farewell_names_the_resume_commands(boot):
    config, hooks = boot
    session = open_session(offline_runtime(config, hooks))
    session._append(Message.user("tidy the imports"))
    text = farewell(session)
    sid = resume_id(session.recorder.store, session.id)
    assert text == ('Good bye.\nSaved 1 message: "tidy the imports"\n\nResume it with:\n'
                    "  agent -c    newest session in this directory\n"
                    f"  agent -r {sid}    this session by id")


def test_farewell_after_resume_names_the_resumed_session_not_agent_c(boot):
    config, hooks = boot
    older = open_session(offline_runtime(config, hooks))
    older._append(Message.user("the older one"))
    newer = open_session(offline_runtime(config, hooks), store=older.recorder.store)
    newer._append(Message.user("the newer one"))
    assert "agent -c" in farewell(newer)  # the newest: -c continues it
    assert resume(newer, older.id).startswith("resumed ")
    text = farewell(newer)
    sid = resume_id(newer.recorder.store, older.id)
    assert text == ('Good bye.\nSaved 1 message: "the older one"\n\nResume it with:\n'
                    f"  agent -r {sid}    this session by id")
    assert lookup(newer.recorder.store, sid).id == older.id


def test_the_printed_resume_id_still_resumes_after_more_sessions_start(boot):
    # Sessions started within a minute share their first 8 characters (time bits); the id
    # printed at exit must keep naming only this session as later ones are created.
    config, hooks = boot
    session = open_session(offline_runtime(config, hooks))
    session._append(Message.user("the first one"))
    printed = farewell(session).rsplit("agent -r ", 1)[1].split()[0]
    store = session.recorder.store
    later_ids = []
    for n in range(5):
        later = open_session(offline_runtime(config, hooks), store=store)
        later._append(Message.user(f"a later one {n}"))
        later_ids.append(later.id)
    assert any(other[:8] == session.id[:8] for other in later_ids)  # the case that failed
    assert lookup(store, printed).id == session.id
    old_id = session.id
    hint = clear(session).rsplit("agent -r ", 1)[1].rstrip(")")
    for n in range(3):
        later = open_session(offline_runtime(config, hooks), store=store)
        later._append(Message.user(f"after the clear {n}"))
    assert lookup(store, hint).id == old_id


def test_clear_on_an_unsaved_session(boot):
    config, hooks = boot
    session = open_session(offline_runtime(config, hooks))
    assert clear(session) == "started a new session"
    assert resume(session, "") == "usage: /resume <session-id>"


def test_a_history_replaced_in_place_is_saved_whole_with_the_next_message(boot):
    """Compaction swaps session.messages in place; the store must follow, or a resumed
    session would bring back what was compacted away."""
    config, hooks = boot
    session = open_session(offline_runtime(config, hooks))
    for text in ("one", "two", "three"):
        session._append(Message.user(text))
    session.messages[:] = [Message.user("Summary of the session so far: counting")]
    session._append(Message.user("four"))
    store = session.recorder.store
    assert [m["parts"][0]["text"] for m in store.load_messages(session.id)] == [
        "Summary of the session so far: counting", "four"]
    session.recorder.rewrite(session)  # the explicit way does the same, idempotently
    assert store.get_session(session.id).message_count == 2
    session._append(Message.user("five"))
    assert store.get_session(session.id).message_count == 3


class ReviewedFiles:
    """A third-party plugin that keeps one saved key and one run-time key in session.data."""

    @hookimpl
    def agent_persisted_keys(self, config):
        return ["reviewed"]


def test_only_the_keys_plugins_declare_are_saved_and_restored(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    builtins = ["sessions", "todos", "openai"]
    config, hooks = make_boot(ws, tmp_path / "home", builtins=builtins,
                              extra=[("reviewed", ReviewedFiles())])
    session = open_session(offline_runtime(config, hooks))
    session.data.update(reviewed=["a.py"], todos=[{"content": "x", "status": "pending"}],
                        scratch="run-time only")
    session._append(Message.user("review a.py"))
    with Store.open(config.state_dir) as store:
        assert store.get_session(session.id).data == {
            "reviewed": ["a.py"], "todos": [{"content": "x", "status": "pending"}]}
    later = open_session(offline_runtime(config, hooks), session_id=session.id)
    assert later.data["reviewed"] == ["a.py"] and "scratch" not in later.data
    hooks.unconfigure(config)

    # The same store read by a run without the plugin: its key is neither restored nor saved.
    config, hooks = make_boot(ws, tmp_path / "home", builtins=builtins)
    plain = open_session(offline_runtime(config, hooks), session_id=session.id)
    assert "reviewed" not in plain.data and plain.data["todos"][0]["content"] == "x"
    plain.data["reviewed"] = ["b.py"]
    plain._append(Message.user("again"))
    with Store.open(config.state_dir) as store:
        assert "reviewed" not in store.get_session(session.id).data
    hooks.unconfigure(config)


# ---- the seam: another plugin saving sessions its own way -------------------------------------


class Notebook:
    """A third-party plugin that keeps sessions as JSON lines, through the four session hooks
    only (the builtin ``sessions`` plugin is not loaded)."""

    def __init__(self, path) -> None:
        self.path = path
        self.closed: list[str] = []

    def lines(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines()]

    @hookimpl
    def agent_find_session(self, config, continue_, resume):
        ids = [line["session"] for line in self.lines()]
        if continue_ and ids:
            return ids[-1]
        if resume and resume in ids:
            return resume
        raise SessionLookupError("nothing like that in the notebook")

    @hookimpl
    def agent_open_session(self, runtime, session_id):
        from agent.loop.session import Session

        notebook = self

        class LineRecorder:
            def message_added(self, session, message):
                with notebook.path.open("a") as out:
                    out.write(json.dumps({"session": session.id,
                                          "message": message.to_dict()}) + "\n")

            def step_finished(self, session, usage, model=None):
                return None

        earlier = [Message.from_dict(line["message"]) for line in self.lines()
                   if line["session"] == session_id]
        return Session(runtime, session_id=session_id, messages=earlier,
                       recorder=LineRecorder())

    @hookimpl
    def agent_close_session(self, session):
        from agent.loop.session import SessionClosed

        self.closed.append(session.id)
        return SessionClosed([f"notebook: {len(session.messages)} messages"])

    @hookimpl
    def agent_farewell(self, session):
        return f"Good bye from the notebook ({session.id[:8]})."


async def test_a_third_party_plugin_can_keep_sessions_through_the_hooks(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    notebook = Notebook(tmp_path / "notebook.jsonl")
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai"],
                              extra=[("notebook", notebook)])
    assert hooks.pm.get_plugin("sessions") is None  # only the notebook answers
    probe = make_session(config, hooks, base_url=fake_provider.openai_url, model="gpt-5")
    fake_provider.script(Reply.text("Paris."), Reply.text("Still Paris."))

    first = hooks.open_session(probe.runtime, None)
    await collect(first, "capital of France?")
    assert [(line["session"], line["message"]["role"]) for line in notebook.lines()] == [
        (first.id, "user"), (first.id, "assistant")]
    assert hooks.close_session(first).notes == ["notebook: 2 messages"]
    assert hooks.farewell(first) == f"Good bye from the notebook ({first.id[:8]})."

    found = hooks.find_session(config, continue_=True)
    assert found == first.id
    again = hooks.open_session(probe.runtime, found)
    await collect(again, "sure?")
    assert wire(fake_provider.requests[1]) == [
        ("user", "capital of France?"), ("assistant", "Paris."), ("user", "sure?")]
    with pytest.raises(SessionLookupError, match="nothing like that in the notebook"):
        hooks.find_session(config, resume="0190")


def test_without_a_session_plugin_the_core_runs_an_unsaved_session(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai"])
    runtime = offline_runtime(config, hooks)
    assert hooks.find_session(config, continue_=True) is None
    session = hooks.open_session(runtime, None)
    assert session.recorder is None and session.unsaved_reason is None
    with pytest.raises(SessionLookupError, match="no enabled plugin keeps saved sessions"):
        hooks.open_session(runtime, "0190abcd")
    assert hooks.close_session(session).notes == []
    assert hooks.farewell(session) == "Good bye."
    assert not (tmp_path / "home" / "state" / "agent.db").exists() or \
        sqlite3.connect(tmp_path / "home" / "state" / "agent.db").execute(
            "SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
