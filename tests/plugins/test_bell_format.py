"""bell and format: opt-in plugins that act when a turn ends."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from agent import NO_EFFECTS, Effects, Tool, hookimpl
from agent.boot import plugins as plugin_loading
from agent.contract.messages import Message, TextPart, ToolCallPart
from agent.contract.providers import StepFinished, Usage
from agent.loop.session import Runtime, Session
from agent.testing import make_boot
from plugins_builtin.format import format_workspace, formatter_for, run_formatter


class NoteTools:
    """A write tool and a read tool from a plugin the format plugin has never heard of."""

    @hookimpl
    def agent_register_tools(self, register, config):
        async def jot(args, ctx):
            ctx.resolve(args["path"]).write_text("x = 1\n")
            return "jotted"

        async def look(args, ctx):
            return "looked"

        register(Tool("jot", "write a note", jot,
                      {"type": "object", "properties": {"path": {"type": "string"}}},
                      effects=lambda args: Effects(writes=(args["path"],))))
        register(Tool("look", "read nothing", look, effects=lambda args: NO_EFFECTS))


class Scripted:
    label = "scripted"

    def __init__(self, *replies: Message) -> None:
        self.replies = list(replies)

    async def stream(self, request):
        yield StepFinished(self.replies.pop(0), Usage())


def call(name: str, args: dict, call_id: str = "c1") -> Message:
    return Message("assistant", [ToolCallPart(call_id, name, args)])


DONE = Message("assistant", [TextPart("done")])


async def yes(request):
    return "yes"


async def run_turn(config, hooks, *replies: Message, origin: str = "model") -> list:
    session = Session(Runtime(config, hooks, hooks.tools(config), Scripted(*replies),
                              approver=yes), origin=origin)
    events = [event async for event in session.run("go")]
    await session.wait_after_turn()  # the formatter runs after the turn, as the CLI waits
    return events


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


# ---- bell -------------------------------------------------------------------------------------

def test_bell_and_format_are_opt_in():
    host = plugin_loading.load()
    assert host.status["bell"].state == "opt-in"
    assert host.status["format"].state == "opt-in"
    assert plugin_loading.opt_in_names() >= {"bell", "format"}


@pytest.fixture
def nightly(tmp_path, monkeypatch):
    """A third-party distribution declaring its plugin opt-in in its entry points; importing
    the plugin leaves a marker file."""
    import importlib
    import sys

    site = tmp_path / "site"
    marker = tmp_path / "imported"
    dist = site / "agent_nightly-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-nightly\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[agent.plugins]\nnightly = agent_nightly\n\n"
        "[agent.plugins.opt_in]\nnightly = agent_nightly\n")
    (site / "agent_nightly.py").write_text(
        '"""Nightly reports."""\nimport pathlib\n'
        f'pathlib.Path({str(marker)!r}).write_text("imported")\n')
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield marker
    sys.modules.pop("agent_nightly", None)
    importlib.invalidate_caches()


def test_a_third_party_plugin_declares_itself_opt_in_and_is_not_imported(nightly):
    host = plugin_loading.load()
    assert "nightly" in plugin_loading.opt_in_names()
    assert host.status["nightly"].state == "opt-in"
    assert not nightly.exists()  # off means never imported
    host = plugin_loading.load(enabled={"nightly"})
    assert host.status["nightly"].state == "enabled" and nightly.read_text() == "imported"


async def test_bell_rings_once_when_the_turn_ends(workspace, tmp_path, capfd):
    config, hooks = make_boot(workspace, tmp_path / "home", builtins=["bell"],
                              extra=[("notes", NoteTools())])
    events = await run_turn(config, hooks, call("look", {}), DONE)
    assert events[-1].type == "done"
    assert capfd.readouterr().err == "\a"


async def test_bell_stays_quiet_for_subagents_and_when_not_enabled(workspace, tmp_path, capfd):
    config, hooks = make_boot(workspace, tmp_path / "home", builtins=["bell"])
    await run_turn(config, hooks, DONE, origin="worker")
    assert capfd.readouterr().err == ""
    config, hooks = make_boot(workspace, tmp_path / "home2", builtins=["core"])
    await run_turn(config, hooks, DONE)
    assert "\a" not in capfd.readouterr().err


# ---- format: choosing the formatter ---------------------------------------------------------

@pytest.mark.parametrize(("files", "expected"), [
    ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, ["ruff", "format", "."]),
    ({"pyproject.toml": "[tool.black]\n"}, ["black", "."]),
    ({"pyproject.toml": "[project]\nname = 'x'\n"}, None),
    ({"package.json": json.dumps({"scripts": {"format": "prettier -w ."}})},
     ["npm", "run", "format"]),
    ({"package.json": json.dumps({"scripts": {"test": "jest"}})}, None),
    ({"package.json": "{not json"}, None),
    ({"Cargo.toml": "[package]\n"}, ["cargo", "fmt"]),
    ({"go.mod": "module x\n"}, ["gofmt", "-w", "."]),
    ({"pyproject.toml": "[tool.ruff]\n", "Cargo.toml": "", "go.mod": ""},
     ["ruff", "format", "."]),
    ({"package.json": json.dumps({"scripts": {"format": "x"}}), "go.mod": ""},
     ["npm", "run", "format"]),
    ({}, None),
])
def test_formatter_for(workspace, files, expected):
    for name, text in files.items():
        (workspace / name).write_text(text)
    assert formatter_for(workspace) == expected


# ---- format: running it -----------------------------------------------------------------------

def fake_formatter(tmp_path: Path, name: str, body: str) -> Path:
    """An executable on PATH standing in for a real formatter."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / name
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return bindir


@pytest.fixture
def ruff_project(workspace, tmp_path, monkeypatch):
    (workspace / "pyproject.toml").write_text("[tool.ruff]\n")
    bindir = fake_formatter(tmp_path, "ruff", 'echo "$PWD $*" >> "$PWD/.formatted"\n')
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return workspace


async def test_format_runs_after_a_turn_that_wrote_files(ruff_project, tmp_path):
    config, hooks = make_boot(ruff_project, tmp_path / "home", builtins=["format"],
                              extra=[("notes", NoteTools())])
    await run_turn(config, hooks, call("jot", {"path": "a.py"}), DONE)
    assert (ruff_project / ".formatted").read_text() == f"{ruff_project} format .\n"


async def test_format_skips_turns_that_changed_nothing(ruff_project, tmp_path):
    config, hooks = make_boot(ruff_project, tmp_path / "home", builtins=["format"],
                              extra=[("notes", NoteTools())])
    await run_turn(config, hooks, call("look", {}), DONE)
    await run_turn(config, hooks, DONE)
    assert not (ruff_project / ".formatted").exists()


async def test_format_runs_once_per_turn_and_not_for_subagents(ruff_project, tmp_path):
    config, hooks = make_boot(ruff_project, tmp_path / "home", builtins=["format"],
                              extra=[("notes", NoteTools())])
    two_writes = Message("assistant", [ToolCallPart("c1", "jot", {"path": "a.py"}),
                                       ToolCallPart("c2", "jot", {"path": "b.py"})])
    await run_turn(config, hooks, two_writes, DONE)
    await run_turn(config, hooks, call("jot", {"path": "c.py"}), DONE, origin="worker")
    assert len((ruff_project / ".formatted").read_text().splitlines()) == 1


async def test_npm_format_script_really_runs(workspace, tmp_path):
    if not any((Path(p) / "npm").exists() for p in os.environ["PATH"].split(os.pathsep)):
        pytest.skip("npm is not installed")
    (workspace / "package.json").write_text(json.dumps(
        {"name": "x", "version": "1.0.0", "scripts": {"format": "echo ran > formatted.txt"}}))
    await format_workspace(workspace)
    assert (workspace / "formatted.txt").read_text().strip() == "ran"


def test_a_failing_formatter_is_logged_and_swallowed(workspace, tmp_path, monkeypatch, caplog):
    (workspace / "go.mod").write_text("module x\n")
    bindir = fake_formatter(tmp_path, "gofmt", "echo 'syntax error in main.go' >&2; exit 2\n")
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    with caplog.at_level(logging.WARNING, logger="agent.plugins.format"):
        run_formatter(workspace)
    assert "exited 2" in caplog.text and "syntax error in main.go" in caplog.text


def test_a_missing_formatter_is_logged_and_swallowed(workspace, tmp_path, monkeypatch, caplog):
    (workspace / "pyproject.toml").write_text("[tool.black]\n")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with caplog.at_level(logging.WARNING, logger="agent.plugins.format"):
        run_formatter(workspace)
    assert "could not run black" in caplog.text


def test_a_hanging_formatter_is_killed_with_its_children(workspace, tmp_path, monkeypatch,
                                                         caplog):
    (workspace / "Cargo.toml").write_text("[package]\n")
    token = f"30.{os.getpid() % 100000}9"
    bindir = fake_formatter(tmp_path, "cargo", f'setsid sleep {token} & touch started; wait\n')
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    with caplog.at_level(logging.WARNING, logger="agent.plugins.format"):
        run_formatter(workspace, timeout=0.5)
    assert "was killed" in caplog.text  # not waited out: the formatter waits on a 30 s child
    assert (workspace / "started").exists()  # the child had been started
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and _sleepers(token):
        time.sleep(0.02)
    assert not _sleepers(token)


def _sleepers(token: str) -> list[int]:
    """Live processes running ``sleep TOKEN``, seen from the host (any PID namespace)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if len(argv) > 1 and argv[0].endswith(b"sleep") and argv[1] == token.encode() \
                and state != "Z":
            found.append(int(entry.name))
    return found


def test_the_formatter_cannot_write_outside_the_workspace(workspace, tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    (workspace / "go.mod").write_text("module x\n")
    bindir = fake_formatter(tmp_path, "gofmt", f'echo formatted > main.go; echo x > {victim}\n')
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    run_formatter(workspace)
    assert (workspace / "main.go").read_text() == "formatted\n"
    assert victim.read_text() == "original\n"
