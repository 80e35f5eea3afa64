"""The example plugin in tests/example_plugin, found through the entry point group, used for real.

conftest.py lays it out as a distribution in a throwaway directory for the test run only.
"""

from __future__ import annotations

import importlib.metadata
import json

import pytest
from clirun import run_agent, run_agent_here
from fakeprovider import Reply


def base(fake_provider):
    return ["-p", "note it", "--json", "--provider", "openai", "--base-url",
            fake_provider.openai_url, "--model", "m"]


def test_example_plugin_is_installed_through_the_entry_point_group():
    names = {ep.name for ep in importlib.metadata.entry_points(group="agent.plugins")}
    assert "example" in names


def shipped_plugin_names() -> set[str]:
    import configparser
    from pathlib import Path

    setup = configparser.ConfigParser()
    setup.read(Path(__file__).parents[2] / "setup.cfg")
    lines = setup["options.entry_points"]["agent.plugins"].strip().splitlines()
    return {line.split("=")[0].strip() for line in lines}


@pytest.mark.e2e
def test_the_users_own_agent_lists_exactly_the_shipped_plugins(tmp_path):
    # The environment the tests ran in, without this run's throwaway PYTHONPATH: what the
    # user's own `agent` sees afterwards.
    proc = run_agent(["plugins", "list"], home=tmp_path / "h", cwd=tmp_path, PYTHONPATH="")
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert listed == shipped_plugin_names()


def test_write_tool_is_denied_headless_without_yolo(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("scribble", {"path": "n.note", "text": "hi"}, id="s1"),
                         Reply.text("I could not write it."))
    proc = run_agent_here(base(fake_provider), home=tmp_path / "h", cwd=tmp_path,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    denied = [e for e in events if e["type"] == "tool-denied"]
    assert denied and denied[0]["name"] == "scribble" and denied[0]["by"] == "headless"
    assert not (tmp_path / "n.note").exists()
    told = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"]
    assert "needs approval" in told[0]["content"]


def test_write_tool_runs_with_yolo(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("scribble", {"path": "n.note", "text": "hi"}, id="s1"),
                         Reply.text("done"))
    proc = run_agent_here(base(fake_provider) + ["--yolo"], home=tmp_path / "h", cwd=tmp_path,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "n.note").read_text() == "hi"


def test_plugin_guard_holds_under_yolo(tmp_path, fake_provider):
    fake_provider.script(
        Reply.tool_call("scribble", {"path": "forbidden/x.note", "text": "hi"}, id="s1"),
        Reply.text("ok"))
    proc = run_agent_here(base(fake_provider) + ["--yolo"], home=tmp_path / "h", cwd=tmp_path,
                          OPENAI_API_KEY="x")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    denied = [e for e in events if e["type"] == "tool-denied"]
    assert denied and denied[0]["by"] == "guard" and "forbids" in denied[0]["reason"]
    assert not (tmp_path / "forbidden").exists()


def test_disabling_the_plugin_removes_its_tool(tmp_path, fake_provider):
    home = tmp_path / "h"
    disabled = run_agent_here(["plugins", "disable", "example"], home=home, cwd=tmp_path)
    assert disabled.returncode == 0
    fake_provider.script(Reply.text("ok"))
    proc = run_agent_here(base(fake_provider), home=home, cwd=tmp_path, OPENAI_API_KEY="x")
    assert proc.returncode == 0
    names = {t["function"]["name"] for t in fake_provider.requests[0].body["tools"]}
    assert "scribble" not in names and "current_time" in names


def test_slash_command_from_the_installed_plugin(tmp_path):
    from types import SimpleNamespace

    from agent.testing import make_boot

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.note").write_text("x")
    config, hooks = make_boot(ws, tmp_path / "h")  # every installed plugin, as agent loads them
    command = hooks.commands(config).get("/scribbles")
    assert command is not None and command.plugin == "example"
    shown = []
    app = SimpleNamespace(config=config, info=lambda title, body: shown.append((title, body)))
    assert command.run(app, "") == "a.note" and shown == [("scribbles", "a.note")]
