"""The undo plugin (snapshots before every mutating call, /undo, /redo) and the
``agent_before_tool_call`` hook it is built on."""

from __future__ import annotations

import pytest
from fakeprovider import Reply

from agent import Effects, Tool, Verdict, hookimpl
from agent.testing import collect, make_boot, make_session


def _writer(seen: list[str]) -> Tool:
    async def run(args, ctx):
        seen.append("ran " + args["path"])
        ctx.resolve(args["path"]).write_text("new")
        return "wrote"

    return Tool("put", "write a file", run,
                {"type": "object", "properties": {"path": {"type": "string"}}},
                effects=lambda a: Effects(writes=(a["path"],)))


async def test_agent_before_tool_call_runs_before_allowed_calls_only(tmp_path, fake_provider):
    seen: list[str] = []

    class Probe:
        @hookimpl
        def agent_register_tools(self, register, config):
            register(_writer(seen))

        @hookimpl
        def agent_guard_tool_call(self, call, effects, session):
            if "locked" in call.arguments.get("path", ""):
                return Verdict.deny("locked")

        @hookimpl
        def agent_before_tool_call(self, call, effects, session):
            target = session.workspace / effects.writes[0]
            seen.append(f"before {effects.writes[0]} exists={target.exists()}")

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai"],
                              extra=[("probe", Probe())], flags={"yolo": True})
    fake_provider.script(
        Reply(tool_calls=[("put", {"path": "locked.txt"}), ("put", {"path": "a.txt"})]),
        Reply.text("done"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "go")
    assert seen == ["before a.txt exists=False", "ran a.txt"]
    assert not (ws / "locked.txt").exists()


# ---- the undo plugin ----------------------------------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402

from plugins_builtin import undo as undo_plugin  # noqa: E402


class App:
    """The command context as far as /undo and /redo use it."""

    def __init__(self, session):
        self.session = session
        self.shown: list[str] = []

    def info(self, text):
        self.shown.append(text)


def boot(tmp_path, ws, *builtins, **kw):
    return make_boot(ws, tmp_path / "home", builtins=["openai", "undo", *builtins],
                     flags={"yolo": True}, **kw)


def snapshot(ws) -> dict[str, tuple[bytes, int]]:
    """Every file under ``ws`` with its bytes and mode bits."""
    out = {}
    for root, _dirs, files in os.walk(ws):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, ws)
            out[rel] = (open(path, "rb").read(), os.stat(path).st_mode & 0o7777)
    return out


@pytest.fixture
def plain_dir(tmp_path):
    """A workspace that is NOT a git repository (no .git anywhere above tmp)."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\n")
    (ws / "b.bin").write_bytes(bytes(range(256)) * 40)
    (ws / "sub" / "g.txt").write_text("to be removed\n")
    (ws / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (ws / "run.sh").chmod(0o755)
    try:
        probe = subprocess.run(["git", "-C", str(ws), "rev-parse", "--git-dir"],
                               capture_output=True)
    except FileNotFoundError:  # no git at all: certainly not a repository
        return ws
    assert probe.returncode != 0, "the test needs a directory outside any git repo"
    return ws


COMMAND = ("sed -i 's/alpha/ALPHA/' a.txt && rm sub/g.txt && rmdir sub && printf new > h.txt"
           " && head -c 500 /dev/urandom > b.bin && chmod 600 run.sh")


async def test_undo_restores_what_bash_changed_byte_for_byte(tmp_path, plain_dir,
                                                              fake_provider):
    ws = plain_dir
    before = snapshot(ws)
    config, hooks = boot(tmp_path, ws, "bash")
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(Reply.tool_call("bash", {"command": COMMAND}), Reply.text("done"))
    events = await collect(session, "change things with the shell")
    assert [e.type for e in events if e.type.startswith("tool-")][-1] == "tool-result", events
    after = snapshot(ws)
    assert after["a.txt"][0] == b"ALPHA\nbeta\n" and "h.txt" in after
    assert "sub/g.txt" not in after and not (ws / "sub").exists()

    app = App(session)
    hooks.commands(config).get("undo").run(app, "")
    assert snapshot(ws) == before
    report = app.shown[-1]
    assert report.startswith('Undid prompt "change things with the shell" (5 files):')
    for line in ("restored a.txt", "restored b.bin", "restored run.sh", "deleted h.txt",
                 "recreated sub/g.txt"):
        assert f"  {line}" in report, report

    hooks.commands(config).get("redo").run(app, "")
    assert snapshot(ws) == after
    assert app.shown[-1].startswith('Redid prompt "change things with the shell" (5 files):')
    hooks.commands(config).get("undo").run(app, "")
    assert snapshot(ws) == before


async def test_undo_goes_back_prompt_by_prompt_across_tools(tmp_path, plain_dir,
                                                             fake_provider):
    ws = plain_dir
    config, hooks = boot(tmp_path, ws, "bash", "files")
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    states = [snapshot(ws)]
    fake_provider.script(
        Reply.tool_call("write_file", {"path": "notes/new.md", "content": "# new\n"}),
        Reply.text("wrote"),
        Reply.text("nothing to change"),
        Reply.tool_call("edit_file", {"path": "a.txt", "oldString": "beta",
                                      "newString": "BETA"}),
        Reply.tool_call("bash", {"command": "echo more >> a.txt"}),
        Reply.text("edited"))
    await collect(session, "first")
    states.append(snapshot(ws))
    await collect(session, "second, a question only")
    await collect(session, "third")
    states.append(snapshot(ws))
    assert states[2]["a.txt"][0] == b"alpha\nBETA\nmore\n"
    app = App(session)
    undo = hooks.commands(config).get("undo")
    undo.run(app, "")
    assert snapshot(ws) == states[1] and "third" in app.shown[-1]
    undo.run(app, "")
    assert snapshot(ws) == states[0] and not (ws / "notes").exists()
    undo.run(app, "")
    assert app.shown[-1].startswith("Nothing to undo")
    hooks.commands(config).get("redo").run(app, "")
    assert snapshot(ws) == states[1]
    undo.run(app, "list")
    assert '"third"' in app.shown[-1] and "(undone)" in app.shown[-1]


async def test_a_new_change_after_undo_ends_redo(tmp_path, plain_dir, fake_provider):
    ws = plain_dir
    config, hooks = boot(tmp_path, ws, "bash")
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(Reply.tool_call("bash", {"command": "echo 1 > one.txt"}),
                         Reply.text("ok"),
                         Reply.tool_call("bash", {"command": "echo 2 > two.txt"}),
                         Reply.text("ok"))
    await collect(session, "one")
    app = App(session)
    hooks.commands(config).get("undo").run(app, "")
    assert not (ws / "one.txt").exists()
    await collect(session, "two")
    hooks.commands(config).get("redo").run(app, "")
    assert app.shown[-1] == "Nothing to redo."
    assert not (ws / "one.txt").exists() and (ws / "two.txt").exists()


async def test_undo_conversation_also_rewinds_the_messages(tmp_path, plain_dir, fake_provider):
    ws = plain_dir
    config, hooks = boot(tmp_path, ws, "bash")
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(Reply.text("hello"),
                         Reply.tool_call("bash", {"command": "echo x > made.txt"}),
                         Reply.text("made it"))
    await collect(session, "hi")
    await collect(session, "make a file")
    assert len(session.messages) == 6
    app = App(session)
    hooks.commands(config).get("undo").run(app, "conversation")
    assert not (ws / "made.txt").exists()
    assert [m.text for m in session.messages] == ["hi", "hello"]
    assert "Dropped 4 messages from the conversation." in app.shown[-1]
    hooks.commands(config).get("redo").run(app, "")
    assert (ws / "made.txt").read_text() == "x\n" and len(session.messages) == 6


def test_ignored_files_and_the_store_itself_are_not_snapshotted(tmp_path):
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build" / "out.o").write_bytes(b"\0" * 100)
    (ws / "src.c").write_text("int main;\n")
    recorder = undo_plugin.Recorder(ws, ws / ".state")
    (ws / ".state").mkdir()
    (ws / ".state" / "junk").write_text("x")
    assert sorted(recorder._files()) == [".gitignore", "src.c"]


def test_unchanged_files_are_copied_once(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(20):
        (ws / f"f{i}.txt").write_text(f"file {i}\n")
    recorder = undo_plugin.Recorder(ws, tmp_path / "state")

    class S:
        id, messages, busy = "s", [], False

    session = S()
    recorder.open(session, "p1")
    recorder.before_call(Effects(command="true"), session)
    objects = sorted((tmp_path / "state" / "undo" / "objects").rglob("*"))
    stamps = {p: p.stat().st_mtime_ns for p in objects if p.is_file()}
    assert len(stamps) == 20
    (ws / "f3.txt").write_text("changed\n")
    recorder.before_call(Effects(command="true"), session)
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "state" / "undo" / "objects").rglob("*")
             if p.is_file()}
    assert len(after) == 20  # f3's new content is recorded at the turn's end, not before
    recorder.close()
    after = {p for p in (tmp_path / "state" / "undo" / "objects").rglob("*") if p.is_file()}
    assert len(after) == 21 and all(stamps[p] == p.stat().st_mtime_ns for p in stamps)


def test_a_prompt_that_changes_nothing_does_not_rewrite_the_index(tmp_path):
    """The index is written (an atomic replace and an fsync) only when it changed: after a
    prompt that changed nothing the file still holds the bytes it had (here the same index
    laid out differently, which a rewrite would not keep)."""
    import json

    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(5):
        (ws / f"f{i}.txt").write_text(f"file {i}\n")

    class S:
        id, messages, busy = "s", [], False

    session = S()
    recorder = undo_plugin.Recorder(ws, tmp_path / "state")
    recorder.open(session, "p1")
    recorder.before_call(Effects(command="true"), session)
    recorder.close()
    index = recorder.dir / "index.json"
    laid_out = json.dumps(json.loads(index.read_text()), indent=1)
    index.write_text(laid_out)
    for prompt in ("p2", "p3"):  # nothing changes: in this recorder, then in a new one
        recorder.open(session, prompt)
        recorder.before_call(Effects(command="true"), session)
        assert recorder.close() is None
        assert index.read_text() == laid_out
        recorder = undo_plugin.Recorder(ws, tmp_path / "state")
    recorder.open(session, "p4")
    recorder.before_call(Effects(command="true"), session)
    (ws / "f1.txt").write_text("changed, and longer\n")  # what the command did
    assert recorder.close() is not None
    assert json.loads(index.read_text())["f1.txt"][1] == len("changed, and longer\n")


async def test_a_turn_that_changes_no_file_writes_nothing_of_undo(tmp_path, fake_provider):
    """A turn whose only call reads (no snapshot was taken) leaves no undo file in the state
    dir: an empty index is what a missing one reads as, so it is not written (and fsynced).
    The next turn's write is still recorded and undone."""
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    seen: list[str] = []

    class Writer:
        @hookimpl
        def agent_register_tools(self, register, config):
            register(_writer(seen))

    config, hooks = make_boot(ws, home, builtins=["openai", "undo", "time"],
                              extra=[("writer", Writer())], flags={"yolo": True})
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    fake_provider.script(Reply.tool_call("current_time", {}), Reply.text("noon"))
    await collect(session, "what time is it")
    assert "current_time" in [t["function"]["name"]
                              for t in fake_provider.requests[0].body["tools"]]
    assert [p for p in (home / "state" / "undo").rglob("*") if p.is_file()] == []
    fake_provider.script(Reply.tool_call("put", {"path": "a.txt"}), Reply.text("done"))
    await collect(session, "write a.txt")
    assert (ws / "a.txt").read_text() == "new"
    assert [p.name for p in (home / "state" / "undo").rglob("index.json")] == ["index.json"]
    recorder = next(p for p in config.plugins.pm.get_plugins()
                    if isinstance(p, undo_plugin.Recorder))
    recorder.undo()
    assert not (ws / "a.txt").exists()


def test_old_checkpoints_are_capped_and_their_objects_collected(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    recorder = undo_plugin.Recorder(ws, tmp_path / "state", max_checkpoints=3)

    class S:
        id, messages, busy = "s", [], False

    for i in range(6):
        recorder.open(S(), f"p{i}")
        recorder.before_call(Effects(writes=("f.txt",)), S())
        (ws / "f.txt").write_text(f"version {i}\n" * 50)
        recorder.close()
    assert [c.prompt for c in recorder.load()] == ["p3", "p4", "p5"]
    blobs = {p.read_bytes() for p in (tmp_path / "state" / "undo" / "objects").rglob("*")
             if p.is_file()}
    assert blobs == {f"version {i}\n".encode() * 50 for i in (2, 3, 4, 5)}
