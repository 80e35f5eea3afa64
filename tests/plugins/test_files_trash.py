"""The trash: delete_file keeps files per session; /trash and `agent trash` list and restore."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from clirun import run_agent_here
from files_support import boot_files

from plugins_builtin.files import trash


@dataclass
class FakeSession:
    """Only what a tool reads from a session: its id and per-plugin data."""

    id: str
    data: dict = field(default_factory=dict)


@pytest.fixture
def env(tmp_path):
    return boot_files(tmp_path)


def _index(env, session="nosession"):
    return json.loads((env.home / "state/trash" / session / "index.json").read_text())


async def test_delete_goes_to_the_sessions_trash(env):
    env.write("a/b.txt", "hello")
    result = await env.call("delete_file", {"path": "a/b.txt"}, session=FakeSession("s-123"))
    assert not result.is_error
    [entry] = _index(env, "s-123")
    stored = env.home / "state/trash/s-123" / entry["id"] / "a/b.txt"
    assert stored.read_text() == "hello"
    assert entry["original"] == str(env.workspace / "a/b.txt")
    assert entry["size"] == 5 and entry["time"] > 0
    assert entry["id"] in result.output


async def test_list_and_restore(env):
    env.write("x.txt", "one")
    env.write("y/z.txt", "two!")
    await env.ok("delete_file", {"path": "x.txt"})
    await env.ok("delete_file", {"path": "y/z.txt"})
    state = env.home / "state"
    listing = trash.list_text(state, env.workspace)
    lines = listing.splitlines()
    assert lines[0] == "2 deleted file(s), newest first:"
    assert "  y/z.txt  4B  " in lines[1] and "  x.txt  3B  " in lines[2]
    assert lines[-1] == "Restore one with: restore ID"
    ident = _index(env)[0]["id"]
    text, ok = trash.command_text(state, env.workspace, f"restore {ident}")
    assert ok and text == f"Restored {env.workspace / 'x.txt'} (3 bytes)"
    assert env.read("x.txt") == "one"
    assert [e["relative"] for e in _index(env)] == ["y/z.txt"]
    assert not (state / "trash/nosession" / ident).exists()


async def test_restore_never_overwrites(env):
    env.write("f.txt", "original")
    await env.ok("delete_file", {"path": "f.txt"})
    env.write("f.txt", "newer")
    ident = _index(env)[0]["id"]
    text, ok = trash.command_text(env.home / "state", env.workspace, ["restore", ident])
    target = env.workspace / "f.txt"
    assert not ok
    assert text == (f"Not restored: {target} already exists. Move it away first, then restore "
                    f"{ident} again (it would go back to {target}).")
    assert env.read("f.txt") == "newer"
    assert len(_index(env)) == 1


async def test_ids_across_sessions(env):
    state = env.home / "state"
    for session in ("s1", "s2"):
        env.write("same.txt", session)
        await env.call("delete_file", {"path": "same.txt"}, session=FakeSession(session))
    ids = {_index(env, "s1")[0]["id"], _index(env, "s2")[0]["id"]}
    assert trash.command_text(state, env.workspace, "restore nope")[0] == (
        "No trash entry nope. List them with: trash list --all")
    if len(ids) == 1:  # same second: the bare id is ambiguous, SESSION/ID is not
        [ident] = ids
        text, ok = trash.command_text(state, env.workspace, f"restore {ident}")
        assert not ok and "several sessions" in text and f"s1/{ident}" in text
    ident = _index(env, "s2")[0]["id"]
    text, ok = trash.command_text(state, env.workspace, f"restore s2/{ident}")
    assert ok and env.read("same.txt") == "s2"


async def test_listing_scope_and_usage(env, tmp_path):
    other = tmp_path / "elsewhere"
    env.write("mine.txt", "m")
    await env.ok("delete_file", {"path": "mine.txt"})
    state = env.home / "state"
    assert trash.list_text(state, other) == "The trash is empty for this workspace."
    assert "mine.txt" in trash.list_text(state, other, show_all=True)
    assert trash.command_text(state, env.workspace, "list --all")[1]
    assert trash.command_text(state, env.workspace, "frob") == (trash.USAGE, False)
    assert trash.command_text(state, env.workspace, "restore") == (trash.USAGE, False)


async def test_slash_command(env):
    commands = env.hooks.commands(env.config)
    command = commands.get("trash")
    assert command is not None and command.takes_args
    assert command.summary == "list and restore deleted files"
    env.write("gone.txt", "bye")
    await env.ok("delete_file", {"path": "gone.txt"})

    class App:
        def __init__(self):
            self.shown = []
            self.session = None

        def info(self, text):
            self.shown.append(text)

    app = App()
    assert command.run(app, "") is None
    assert "gone.txt" in app.shown[0]
    text = command.run(object(), "list")  # no info(): the text is returned
    assert "gone.txt" in text
    ident = _index(env)[0]["id"]
    command.run(app, f"restore {ident}")
    assert app.shown[-1].startswith("Restored ") and env.read("gone.txt") == "bye"


async def test_cli_subcommand(env):
    env.write("doc.md", "# doc\n")
    await env.ok("delete_file", {"path": "doc.md"})
    ident = _index(env)[0]["id"]

    def agent(*argv):  # `agent trash ...`: what the CLI decides, run in this process
        return run_agent_here(["trash", *argv], home=env.home, cwd=env.workspace)

    listed = agent("list")
    assert listed.returncode == 0 and f"  {ident}  doc.md  6B  " in listed.stdout
    env.write("doc.md", "in the way")
    blocked = agent("restore", ident)
    assert blocked.returncode == 1 and blocked.stdout.startswith("Not restored: ")
    (env.workspace / "doc.md").unlink()
    restored = agent("restore", ident)
    assert restored.returncode == 0 and restored.stdout.startswith("Restored ")
    assert Path(env.workspace / "doc.md").read_text() == "# doc\n"
    assert agent("nonsense").returncode == 1
