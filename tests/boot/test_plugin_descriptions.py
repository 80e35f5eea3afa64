"""What one process remembers between plugin loads (agent.boot.plugins): a load whose state
dir has no description of a plugin may take this process's earlier one, but only while the
plugin's files are unchanged and only for the same copy of the plugin; and a plugin module's
hook implementations are looked up again wherever its attributes changed.

What is checked is what the next run in the same state dir does with the description that
was written: the tools it offers the model (the request bytes the fake provider received);
and the tools a plugin host built after a module changed registers.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent import Tool, hookimpl
from agent.testing import make_boot

PLUGIN = '''"""Offers one tool."""
from agent import Tool, hookimpl

with open({imports!r}, "a") as log:  # one line each time the module is imported
    log.write("imported\\n")

async def _run(args, ctx):
    return "ok"

@hookimpl
def agent_register_tools(register):
    register(Tool(name={tool!r}, description="a tool", parameters={{"type": "object"}},
                  run=_run))
'''

#: An install's files are older than the run (pip keeps the wheel's times): old enough to
#: be remembered.
LONG_AGO = 1_600_000_000


def install(site: Path, name: str, tool: str) -> None:
    """The distribution ``name`` in ``site``: a plugin offering the tool ``tool``.  (Each
    test has a name of its own: what one test's loads remember is no other test's concern.)"""
    site.mkdir(exist_ok=True)
    module = site / f"{name}.py"
    module.write_text(PLUGIN.format(tool=tool, imports=str(site / "imports.log")))
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[agent.plugins]\n{name} = {name}\n")
    stamp = LONG_AGO + len(tool)  # a rewrite gets another old time, as a reinstall would
    for path in (module, info / "METADATA", info / "entry_points.txt", info, site):
        os.utime(path, (stamp, stamp))


def offered_tools(srv, tmp_path: Path, home: Path, site: Path) -> list[str]:
    """The tool names the model is offered by a run in ``home`` with ``site`` on the path."""
    srv.script(Reply.text("fine"))
    before = len(srv.requests)
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url", srv.openai_url,
                           "--model", "m"], home=home, cwd=tmp_path, PYTHONPATH=str(site),
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    body = srv.requests[before].body
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def twice(srv, tmp_path: Path, home: Path, site: Path) -> tuple[list[str], list[str]]:
    """The tools offered by a first run in a new ``home`` (which imports and describes the
    plugins) and by a second one there, which takes the description the first wrote as
    current: it offers the tools without importing the plugin."""
    log = site / "imports.log"
    log.unlink(missing_ok=True)
    first = offered_tools(srv, tmp_path, home, site)
    assert log.read_text() == "imported\n"
    again = offered_tools(srv, tmp_path, home, site)
    assert log.read_text() == "imported\n", "the description written was not current"
    return first, again


def test_a_rewritten_plugin_is_described_anew(tmp_path, fake_provider):
    site = tmp_path / "site"
    install(site, "teller_a", "tell_one")
    first, again = twice(fake_provider, tmp_path, tmp_path / "h1", site)
    assert "tell_one" in first and "tell_one" in again
    install(site, "teller_a", "tell_other")  # same path, same distribution: new contents
    first, again = twice(fake_provider, tmp_path, tmp_path / "h2", site)
    assert "tell_other" in first and "tell_one" not in first
    assert "tell_other" in again and "tell_one" not in again


def test_another_copy_of_the_same_plugin_is_described_from_its_own_files(
        tmp_path, fake_provider):
    one, other = tmp_path / "site-one", tmp_path / "site-other"
    install(one, "teller_b", "tell_one")
    install(other, "teller_b", "tell_it_otherwise")  # same name and version, another folder
    first, again = twice(fake_provider, tmp_path, tmp_path / "h1", one)
    assert "tell_one" in first and "tell_one" in again
    first, again = twice(fake_provider, tmp_path, tmp_path / "h2", other)
    assert "tell_it_otherwise" in first and "tell_one" not in first
    assert "tell_it_otherwise" in again and "tell_one" not in again


def test_an_unchanged_plugin_is_described_alike_in_every_state_dir(tmp_path, fake_provider):
    site = tmp_path / "site"
    install(site, "teller_c", "tell_one")
    for home in ("h1", "h2", "h3"):
        first, again = twice(fake_provider, tmp_path, tmp_path / home, site)
        assert "tell_one" in first and first == again



def test_a_plugin_module_changed_in_place_registers_what_it_now_holds(tmp_path, monkeypatch):
    module = types.ModuleType("changing_plugin")
    # imported, as an installed plugin is: what a host built for it may be reused
    monkeypatch.setitem(sys.modules, module.__name__, module)

    async def run(args, ctx):
        return "ok"

    def offering(name):
        @hookimpl
        def agent_register_tools(register):
            register(Tool(name=name, description="d", parameters={"type": "object"}, run=run))
        return agent_register_tools

    def tools(plugin_name="changing"):
        config, hooks = make_boot(tmp_path, tmp_path, builtins=["core"],
                                  extra=[(plugin_name, module)])
        return {name for name, tool in hooks.tools(config).items()
                if getattr(tool, "plugin", "") == plugin_name}

    module.agent_register_tools = offering("first_tool")
    assert tools() == {"first_tool"}
    assert tools() == {"first_tool"}  # registered again, unchanged
    assert tools("renamed") == {"first_tool"}  # the same module under another name
    assert tools() == {"first_tool"}
    module.agent_register_tools = offering("second_tool")  # replaced
    assert tools() == {"second_tool"}
    del module.agent_register_tools
    assert tools() == set()
    def agent_register_tools(register):  # a hook's name, not marked as one: not a hook
        register(Tool(name="unmarked_tool", description="d", parameters={"type": "object"},
                      run=run))

    module.agent_register_tools = agent_register_tools
    assert tools() == set()
    module.agent_register_tools = offering("fourth_tool")
    assert tools() == {"fourth_tool"}


def test_hook_options_changed_in_place_are_what_the_next_load_registers(tmp_path, monkeypatch):
    module = types.ModuleType("optional_plugin")
    monkeypatch.setitem(sys.modules, module.__name__, module)

    @hookimpl(optionalhook=True)  # a hook of a later agent: fine to be unknown here
    def agent_hook_of_a_later_version(config):
        raise AssertionError("never called")

    module.agent_hook_of_a_later_version = agent_hook_of_a_later_version

    def state():
        config, _hooks = make_boot(tmp_path, tmp_path, builtins=["core"],
                                   extra=[("optional", module)])
        return config.plugins.status["optional"].state

    assert state() == "enabled"
    assert state() == "enabled"
    agent_hook_of_a_later_version.agent_impl["optionalhook"] = False  # the same function
    assert state() == "failed"  # a misspelt hook now
    agent_hook_of_a_later_version.agent_impl["optionalhook"] = True
    assert state() == "enabled"


def test_a_plugin_module_whose_hook_does_not_fit_fails_on_every_load(tmp_path, monkeypatch):
    module = types.ModuleType("misfit_plugin")
    monkeypatch.setitem(sys.modules, module.__name__, module)

    @hookimpl
    def agent_register_tools(register, not_a_hook_argument):
        raise AssertionError("never called")

    module.agent_register_tools = agent_register_tools
    for _ in range(2):
        config, _hooks = make_boot(tmp_path, tmp_path, builtins=["core"],
                                   extra=[("misfit", module)])
        status = config.plugins.status["misfit"]
        assert status.state == "failed" and "not_a_hook_argument" in status.error


def test_a_plugin_module_with_its_own_dir_registers_what_dir_lists(tmp_path, monkeypatch):
    """pluggy looks for hooks in ``dir(module)``; a module's ``__dir__`` may list more or
    fewer names from one load to the next while its namespace stays the same."""
    module = types.ModuleType("listing_plugin")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    listed: list[str] = []
    module.__dir__ = lambda: list(listed)

    async def run(args, ctx):
        return "ok"

    @hookimpl
    def agent_register_tools(register):
        register(Tool(name="listed_tool", description="d", parameters={"type": "object"},
                      run=run))

    module.agent_register_tools = agent_register_tools

    def tools():
        config, hooks = make_boot(tmp_path, tmp_path, builtins=["core"],
                                  extra=[("listing", module)])
        return {name for name, tool in hooks.tools(config).items()
                if getattr(tool, "plugin", "") == "listing"}

    assert tools() == set()  # not listed: not looked at
    listed.append("agent_register_tools")
    assert tools() == {"listed_tool"}
    listed.clear()
    assert tools() == set()


def test_a_copy_earlier_on_the_path_is_not_taken_for_the_one_described(tmp_path, fake_provider):
    """One state dir: the plugin described from ``site-one``; then another copy of the same
    distribution (same name and version) comes first on the path. What the next run offers
    is that copy's, not the remembered description of the one it no longer imports."""
    one, other = tmp_path / "site-one", tmp_path / "site-other"
    install(one, "teller_c", "tell_one")
    install(other, "teller_c", "tell_it_otherwise")
    home = tmp_path / "h"
    first, again = twice(fake_provider, tmp_path, home, one)
    assert "tell_one" in first and "tell_one" in again
    both = Path(f"{other}{os.pathsep}{one}")
    offered = offered_tools(fake_provider, tmp_path, home, both)
    assert "tell_it_otherwise" in offered and "tell_one" not in offered


async def _half_run(args, ctx):
    return "ran"


class HalfPlugin:
    """The same plugin as an instance: pluggy's own register, not agent's module path."""

    @hookimpl
    def agent_register_tools(self, register):
        register(Tool(name="half_registered", description="d", parameters={}, run=_half_run))

    @hookimpl
    def agent_unconfigure(self, config, not_a_hook_argument):
        raise AssertionError("never called")


@pytest.mark.parametrize("form", ["module", "instance"])
def test_a_plugin_that_fails_to_register_leaves_none_of_its_hooks(tmp_path, monkeypatch, form):
    """A hook that does not fit fails the whole plugin: its other hooks, valid ones found
    before it, must not stay registered (its tool offered while the plugin is 'failed')."""
    module = types.ModuleType("half_plugin")
    monkeypatch.setitem(sys.modules, module.__name__, module)

    @hookimpl
    def agent_register_tools(register):  # found first: pluggy walks the names sorted
        register(Tool(name="half_registered", description="d", parameters={}, run=_half_run))

    @hookimpl
    def agent_unconfigure(config, not_a_hook_argument):
        raise AssertionError("never called")

    module.agent_register_tools = agent_register_tools
    module.agent_unconfigure = agent_unconfigure
    for _ in range(2):  # the second load takes agent's reused implementations
        if form == "instance":
            module = HalfPlugin()
        config, hooks = make_boot(tmp_path, tmp_path, builtins=["core", "files"],
                                  extra=[("half", module)])
        status = config.plugins.status["half"]
        assert status.state == "failed" and "not_a_hook_argument" in status.error
        tools = hooks.tools(config)
        assert "read_file" in tools and "half_registered" not in tools
        assert "half" not in config.plugins.enabled_names()
