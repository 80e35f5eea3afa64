"""Lazy plugins: registered from the cached description, imported only when first needed.

Each plugin here is a real installed distribution on a throwaway path entry whose module
writes a marker file when imported; a ``sitecustomize`` on the same path writes the names of
the plugin modules the process imported, at exit.  The first run in a home imports every
plugin (to describe it); the runs after that show what laziness saves and that nothing else
changes.

What a new interpreter imported (the ``sitecustomize`` log) needs a process: those tests are
``e2e``.  What the markers, the prompt and the cache file show is the same in process
(``run_agent_here`` imports the site's plugins afresh each run and forgets them after), so
the describing run and the tests that read only those run in process.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import stat

import pytest
from clirun import run_agent, run_agent_here
from fakeprovider import FakeProvider, Reply
from test_plugin_loading import make_dist

SITECUSTOMIZE = '''
import atexit, os, sys

def _write():
    names = sorted(m for m in sys.modules if m.startswith(("plugins_builtin.", "lazy_", "openai",
                                                          "anthropic", "mcp")))
    with open(os.environ["IMPORTED_LOG"], "w") as handle:
        handle.write("\\n".join(names))

if os.environ.get("IMPORTED_LOG"):
    atexit.register(_write)
'''

UI_ONLY = '''"""Contributes a slash command only: a headless run never needs it."""
from pathlib import Path
Path({marker!r}).write_text("imported")
from agent import SlashCommand, hookimpl

@hookimpl
def agent_register_commands(register, config):
    register(SlashCommand("lazyui", "a command", lambda app, args: None))
'''

IDLE = '''"""Has work only when idle_things is configured."""
from pathlib import Path
Path({marker!r}).write_text("imported")
from agent import Fragment, Option, hookimpl

AGENT_IDLE_WHEN = {{"config": {{"idle_things": []}}}}

@hookimpl
def agent_addoption(options):
    options.add(Option("idle_things", type="list", default=[], help="things to mention"))

@hookimpl
def agent_configure(config):
    config.extra["lazy_idle_things"] = list(config.get("idle_things"))

@hookimpl
def agent_prompt_fragments(session):
    things = session.config.extra.get("lazy_idle_things") or []
    return [Fragment("lazy-idle", "IDLE-PLUGIN-SAYS " + " ".join(things))] if things else []
'''

SPEAKS = '''"""Always adds a prompt line, so it is imported on every run that builds a prompt."""
from pathlib import Path
Path({marker!r}).write_text("imported")
from agent import Fragment, hookimpl

@hookimpl
def agent_prompt_fragments(session):
    return [Fragment("lazy-speaks", "SPEAKS-{version}")]
'''

TOOL = '''"""Contributes a tool whose registration reads no config: recorded, imported on a call."""
from pathlib import Path
Path({marker!r}).write_text("imported")
from agent import Effects, Tool, hookimpl

async def run(args, ctx):
    return "LAZY-TOOL-SAYS " + args["word"].upper()

@hookimpl
def agent_register_tools(register):
    register(Tool("lazy_shout", "Shouts a word back.", run,
                  {{"type": "object", "properties": {{"word": {{"type": "string"}}}},
                   "required": ["word"], "additionalProperties": False}},
                  effects=lambda args: Effects(), read_only=True, subjectless=True))
'''


def build_site(root):
    """The plugins of this module on a throwaway path entry, with their markers."""
    site = root / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    markers = {name: root / f"{name}.imported" for name in ("lazy_ui", "lazy_idle",
                                                             "lazy_speaks", "lazy_off",
                                                             "lazy_tool")}
    make_dist(site, "lazy_ui", UI_ONLY.format(marker=str(markers["lazy_ui"])))
    make_dist(site, "lazy_idle", IDLE.format(marker=str(markers["lazy_idle"])))
    make_dist(site, "lazy_speaks", SPEAKS.format(marker=str(markers["lazy_speaks"]),
                                                 version="ONE"))
    make_dist(site, "lazy_off", UI_ONLY.format(marker=str(markers["lazy_off"])))
    make_dist(site, "lazy_tool", TOOL.format(marker=str(markers["lazy_tool"])))
    return site, markers


@pytest.fixture
def site(tmp_path):
    """A site of the test's own, for the tests that change its files."""
    return build_site(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One site for the tests that leave its files alone, and the plugin cache the first run
    in a home writes for it: (site, markers, cache file).  That first run is what
    test_headless_run_imports_neither_unneeded_nor_disabled_nor_idle_plugins checks; the
    others only need a home that has had one, and get a copy of its cache (a new
    interpreter each, as before: only the describing run is not repeated).  The describing
    run is made in process: what it leaves (the markers, the cache) is what a process
    leaves."""
    root = tmp_path_factory.mktemp("lazy")
    path, markers = build_site(root)
    with FakeProvider.start() as server:
        _, home = headless_here(root, path, server)
    imported = {name for name, marker in markers.items() if marker.exists()}
    return path, markers, home / "state" / "plugin-cache.json", imported


def described(tmp_path, shared):
    """A home for ``headless`` that has had its first (describing) run: the shared cache
    copied in, its mode (0600, which the agent checks) kept."""
    path, markers, cache, _ = shared
    state = tmp_path / "h" / "state"
    state.mkdir(parents=True)
    shutil.copy2(cache, state / cache.name)
    clear(markers)
    return path, markers


def headless(tmp_path, site, fake_provider, *extra, **env):
    home = tmp_path / "h"
    home.mkdir(exist_ok=True)
    log = tmp_path / "imported.log"
    fake_provider.script(Reply.text("fine"))
    proc = run_agent(["-p", "hi", "--provider", "openai", "--base-url", fake_provider.openai_url,
                      "--model", "m", "--disable", "lazy_off", *extra], home=home, cwd=tmp_path,
                     PYTHONPATH=str(site), OPENAI_API_KEY="x", IMPORTED_LOG=str(log),
                     timeout=240, **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fine\n"
    return set(log.read_text().split()), system_prompt(fake_provider), home


def headless_here(tmp_path, site, fake_provider, *extra, **env):
    """:func:`headless` in this process: the system prompt the model got, and the home."""
    home = tmp_path / "h"
    home.mkdir(exist_ok=True)
    fake_provider.script(Reply.text("fine"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", "--disable", "lazy_off",
                           *extra], home=home, cwd=tmp_path, PYTHONPATH=str(site),
                          OPENAI_API_KEY="x", **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fine\n"
    return system_prompt(fake_provider), home


def system_prompt(fake_provider) -> str:
    body = fake_provider.requests[-1].body
    return body["messages"][0]["content"] if "messages" in body else body["instructions"]


def clear(markers):
    for marker in markers.values():
        marker.unlink(missing_ok=True)


@pytest.mark.e2e
def test_headless_run_imports_neither_unneeded_nor_disabled_nor_idle_plugins(
        tmp_path, shared, fake_provider):
    # the first run in a home (the shared fixture's) describes every plugin that is not
    # blocked, so it imports them, and leaves its cache private
    _, _, cache, first = shared
    assert {"lazy_ui", "lazy_idle"} <= first and "lazy_off" not in first
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    path, markers = described(tmp_path, shared)

    modules, system, _ = headless(tmp_path, path, fake_provider)
    assert not markers["lazy_ui"].exists(), "a plugin with only a slash command was imported"
    assert not markers["lazy_idle"].exists(), "an unconfigured (idle) plugin was imported"
    assert not markers["lazy_off"].exists(), "a disabled plugin was imported"
    assert markers["lazy_speaks"].exists() and "SPEAKS-ONE" in system
    assert "IDLE-PLUGIN-SAYS" not in system
    assert not markers["lazy_tool"].exists(), "a tool nobody called imported its plugin"
    # builtins: the provider not selected, MCP without servers, the registry with nothing
    # installed, the renderers of the UI, the UI's commands (no [ui] table to check), and
    # the plugins that only register tools the turn did not call
    for module in ("plugins_builtin.anthropic", "plugins_builtin.mcp",
                   "plugins_builtin.registry", "plugins_builtin.markdown",
                   "plugins_builtin.diff", "plugins_builtin.commands",
                   "plugins_builtin.files", "plugins_builtin.git", "plugins_builtin.time",
                   "plugins_builtin.web_fetch", "anthropic", "mcp"):
        assert module not in modules, f"{module} was imported on the headless path"
    assert "plugins_builtin.openai" in modules and "openai" in modules


@pytest.mark.e2e
@pytest.mark.parametrize("api,used,unused", [
    ("chat", "openai.resources.chat.completions", "openai.resources.responses"),
    ("responses", "openai.resources.responses", "openai.resources.chat")])
def test_only_the_wire_api_in_use_is_imported(tmp_path, shared, fake_provider, api, used,
                                              unused):
    # The SDK import starts on a thread before the plugins load, from the provider specs
    # the cache recorded; it must guess the same resource the provider will use, or it
    # would import the types the issue keeps out.
    path, _ = described(tmp_path, shared)
    modules, _, _ = headless(tmp_path, path, fake_provider, AGENT_OPENAI_API=api)
    assert used in modules
    assert not [m for m in modules if m == unused or m.startswith(unused + ".")]


@pytest.mark.e2e
def test_a_recorded_tool_is_offered_unimported_and_runs_when_called(tmp_path, shared,
                                                                   fake_provider):
    path, markers = described(tmp_path, shared)
    (tmp_path / "notes.txt").write_text("READ-FROM-DISK 42\n")
    fake_provider.script(Reply(tool_calls=[("lazy_shout", {"word": "quiet"}),
                                           ("read_file", {"path": "notes.txt"})]))
    modules, _, _ = headless(tmp_path, path, fake_provider)
    # the schema the model saw came from the cache, exactly as the plugin declares it
    first = fake_provider.bodies[-2]
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert offered["lazy_shout"]["parameters"]["required"] == ["word"]
    assert offered["lazy_shout"]["description"] == "Shouts a word back."
    assert "read_file" in offered
    # called, each plugin was imported and its tool ran for real
    results = [m["content"] for m in fake_provider.bodies[-1]["messages"] if m["role"] == "tool"]
    assert results[0] == "LAZY-TOOL-SAYS QUIET"
    assert "READ-FROM-DISK 42" in results[1]
    assert markers["lazy_tool"].exists() and "plugins_builtin.files" in modules
    assert not markers["lazy_ui"].exists()  # the cache was believed: nothing re-described


def test_an_idle_plugin_works_as_before_once_configured(tmp_path, shared, fake_provider):
    path, markers = described(tmp_path, shared)
    (tmp_path / "h" / "config.toml").write_text('idle_things = ["apples", "pears"]\n')
    system, _ = headless_here(tmp_path, path, fake_provider)
    assert markers["lazy_idle"].exists()
    assert "IDLE-PLUGIN-SAYS apples pears" in system
    assert not markers["lazy_ui"].exists()  # the cache was believed: nothing re-described


# A process each run: in process, a rewrite of the same size within the same second would
# meet the byte code this process compiled for the file before.
@pytest.mark.e2e
def test_a_changed_plugin_is_described_again(tmp_path, site, fake_provider):
    path, markers = site
    headless(tmp_path, path, fake_provider)
    module = path / "lazy_ui.py"
    module.write_text(module.read_text() + '''
from agent import Fragment

@hookimpl
def agent_prompt_fragments(session):
    return [Fragment("lazy-ui-now", "UI-PLUGIN-GREW-A-HOOK")]
''')
    clear(markers)
    _, system, _ = headless(tmp_path, path, fake_provider)
    assert markers["lazy_ui"].exists() and "UI-PLUGIN-GREW-A-HOOK" in system
    # a new distribution version is a change too, even with the same files
    (path / "lazy_speaks.py").write_text(SPEAKS.format(marker=str(markers["lazy_speaks"]),
                                                       version="TWO"))
    clear(markers)
    _, system, _ = headless(tmp_path, path, fake_provider)
    assert "SPEAKS-TWO" in system and "SPEAKS-ONE" not in system


@pytest.mark.parametrize("damage", ["garbage", "wrong-shape", "shared-mode"])
def test_a_damaged_or_foreign_cache_is_rebuilt_not_trusted(tmp_path, shared, fake_provider,
                                                            damage):
    path, markers = described(tmp_path, shared)
    cache = tmp_path / "h" / "state" / "plugin-cache.json"
    if damage == "garbage":
        cache.write_bytes(b"\x00{not json")
    elif damage == "wrong-shape":
        data = json.loads(cache.read_text())
        data["plugins"]["lazy_speaks"]["hooks"] = "everything"
        cache.write_text(json.dumps(data))
    else:
        # the same user's cache, but group-writable: it would decide which hooks run, so a
        # copy anyone else could have edited is not believed (here: the speaking hook removed)
        data = json.loads(cache.read_text())
        data["plugins"]["lazy_speaks"]["hooks"] = []
        cache.write_text(json.dumps(data))
        os.chmod(cache, 0o664)
    clear(markers)
    system, _ = headless_here(tmp_path, path, fake_provider)
    assert "SPEAKS-ONE" in system
    assert markers["lazy_speaks"].exists()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    rebuilt = json.loads(cache.read_text())
    assert isinstance(rebuilt["plugins"]["lazy_speaks"]["hooks"], list)
    assert rebuilt["plugins"]["lazy_speaks"]["hooks"]


def test_plugin_list_and_subcommands_need_no_import(tmp_path, shared):
    # a home that has had its describing run (the shared fixture's headless one)
    path, markers = described(tmp_path, shared)
    home = tmp_path / "h"
    proc = run_agent_here(["plugins"], home=home, cwd=tmp_path, PYTHONPATH=str(path))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert "enabled" in rows["lazy_ui"] and "enabled" in rows["lazy_idle"]
    assert "Contributes a slash command only" in rows["lazy_ui"]
    assert not markers["lazy_ui"].exists() and not markers["lazy_idle"].exists()


def test_a_plugin_that_breaks_after_it_was_described_is_isolated(tmp_path, site,
                                                                 fake_provider):
    path, markers = site
    flag = tmp_path / "break-now"
    module = path / "lazy_speaks.py"
    module.write_text(module.read_text().replace(
        '"""\n', f'"""\nimport os\nif os.path.exists({str(flag)!r}):\n'
                 f'    raise RuntimeError("gone missing")\n', 1))
    headless_here(tmp_path, path, fake_provider)
    # now it fails at import with its files unchanged (as when a dependency goes away)
    flag.write_text("")
    system, _ = headless_here(tmp_path, path, fake_provider)
    assert "SPEAKS-ONE" not in system  # the run went on without it (headless_here checked)
    proc = run_agent_here(["plugins"], home=tmp_path / "h", cwd=tmp_path,
                          PYTHONPATH=str(path))
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert "failed" in rows["lazy_speaks"] and "gone missing" in rows["lazy_speaks"]


# ---- the stand-ins as pluggy sees them ------------------------------------------------------

def _builtin_modules():
    import importlib

    from agent.boot.plugins import BUILTIN_DISTRIBUTION, entry_points
    return [(ep.name, ep.value, importlib.import_module(ep.value))
            for ep in entry_points() if ep.dist_name == BUILTIN_DISTRIBUTION]


def test_every_builtin_stand_in_offers_pluggy_the_real_argument_names():
    """pluggy takes an implementation's argument names from its signature (up to 1.6) or its
    code object (1.7 on): a stand-in must give the real names both ways, or pluggy calls it
    with no arguments.  Registered through pluggy's own register, each hook's implementations
    from the stand-in and from the real module agree on every argument name."""
    import pluggy

    from agent.boot.lazy_plugins import LazyPlugin
    from agent.boot.plugin_cache import describe
    from agent.contract import hookspecs

    checked = 0
    for name, value, module in _builtin_modules():
        entry = describe(module, value, value, "agent-cli")
        lazy = LazyPlugin(name, entry, lambda module=module: module, lambda *_: None)
        managers = []
        for plugin in (module, lazy):
            pm = pluggy.PluginManager("agent")
            pm.add_hookspecs(hookspecs)
            pm.register(plugin, name)
            managers.append({hook: [impl.argnames for impl in caller.get_hookimpls()]
                             for hook, caller in vars(pm.hook).items()
                             if hook.startswith("agent_")})
        real, stood_in = managers
        assert stood_in == real, name
        for hook in entry["hooks"]:
            stub = getattr(lazy, hook["attr"])
            code = stub.__code__
            assert list(code.co_varnames[:code.co_argcount]) == hook["params"], (name, hook)
            assert list(inspect.signature(stub).parameters) == hook["params"], (name, hook)
            checked += 1
    assert checked >= 60  # every builtin's hooks, not an empty loop


def test_a_cache_whose_parameter_names_are_code_runs_nothing(tmp_path, shared, fake_provider):
    """The stand-ins' parameter names come from the plugin cache, a file on disk.  A cache
    whose "names" are code (a default that would run when a stub is defined) makes that
    description malformed: the run describes the plugin again from its module, the code
    never runs, and the plugin works as before."""
    path, markers = described(tmp_path, shared)
    cache = tmp_path / "h" / "state" / "plugin-cache.json"
    marker = tmp_path / "ran"
    data = json.loads(cache.read_text())
    entry = data["plugins"]["lazy_speaks"]
    (hook,) = [h for h in entry["hooks"] if h["attr"] == "agent_prompt_fragments"]
    hook["params"] = [f"session=__import__('os').system('touch {marker}')"]
    with open(cache, "w") as handle:  # the same file: its 0600 mode is kept
        json.dump(data, handle)
    system, _ = headless_here(tmp_path, path, fake_provider)
    assert not marker.exists()
    assert "SPEAKS-ONE" in system and markers["lazy_speaks"].exists()
    rewritten = json.loads(cache.read_text())["plugins"]["lazy_speaks"]
    assert [h["params"] for h in rewritten["hooks"]] == [["session"]]


def test_the_plugin_manager_registers_what_pluggy_itself_would():
    """agent's manager reuses a module's hook implementations between loads (see
    agent.boot.plugins._Manager) with pluggy internals: on whatever pluggy is installed, a
    first and a reused registration of every builtin give each hook the implementations,
    in the order, with the names and options that pluggy's own register gives."""
    import pluggy

    from agent.boot.plugins import new_manager
    from agent.contract import hookspecs

    def picture(pm):
        return {hook: [(impl.plugin_name, impl.function, impl.argnames, impl.kwargnames,
                        impl.hookwrapper, impl.wrapper, impl.tryfirst, impl.trylast,
                        impl.optionalhook) for impl in caller.get_hookimpls()]
                for hook, caller in vars(pm.hook).items() if hook.startswith("agent_")}

    modules = _builtin_modules()
    reference = pluggy.PluginManager("agent")
    reference.add_hookspecs(hookspecs)
    for name, _value, module in modules:
        reference.register(module, name)
    for _ in range(2):  # the second load takes the reused implementations
        ours = new_manager()
        for name, _value, module in modules:
            ours.register(module, name)
        assert picture(ours) == picture(reference)
    assert sum(map(len, picture(reference).values())) >= 60
