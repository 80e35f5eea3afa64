"""Plugin discovery, blocking before import, failures, essential plugins, hook coverage."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import sourcetrees
from clirun import run_agent, run_agent_here
from fakeprovider import Reply

ROOT = Path(__file__).parents[2]


def make_dist(site: Path, name: str, body: str) -> Path:
    """A real installed distribution on a path entry: a module plus dist-info entry points."""
    (site / f"{name}.py").write_text(body)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[agent.plugins]\n{name} = {name}\n")
    return site


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "imported.txt"
    make_dist(site, "tattler", f'''"""Records that it was imported."""
from pathlib import Path
Path({str(marker)!r}).write_text("imported")
''')
    make_dist(site, "broken", '"""Fails to import."""\nraise RuntimeError("boom at import")\n')
    make_dist(site, "misspelled", '''"""Implements a hook that does not exist."""
from agent import hookimpl
@hookimpl
def agent_register_toolz(register, config):
    pass
''')
    return site, marker


def test_list_reports_every_state(tmp_path, site):
    path, marker = site
    proc = run_agent_here(["plugins"], home=tmp_path / "h", cwd=tmp_path, PYTHONPATH=str(path))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert "essential" in rows["core"]
    assert "enabled" in rows["time"] and "enabled" in rows["openai"]
    assert "failed" in rows["broken"] and "boom at import" in rows["broken"]
    assert "failed" in rows["misspelled"] and "agent_register_toolz" in rows["misspelled"]
    assert "enabled" in rows["tattler"] and marker.exists()


@pytest.mark.parametrize("how", ["config", "flag", "env"])
def test_blocked_plugin_is_never_imported(tmp_path, site, fake_provider, how):
    path, marker = site
    home = tmp_path / "h"
    home.mkdir()
    args = ["-p", "hi", "--provider", "openai", "--base-url", fake_provider.openai_url,
            "--model", "m"]
    env = {"PYTHONPATH": str(path), "OPENAI_API_KEY": "x"}
    if how == "config":
        (home / "config.toml").write_text('[plugins]\ndisabled = ["tattler"]\n')
    elif how == "flag":
        args += ["--disable", "tattler"]
    else:
        env["AGENT_DISABLE_PLUGINS"] = "tattler,other"
    fake_provider.script(Reply.text("fine"))
    proc = run_agent_here(args, home=home, cwd=tmp_path, **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "fine\n"
    assert not marker.exists()
    # the broken plugin is reported once and does not stop the run
    assert "plugin broken failed to load" in proc.stderr


def test_disable_and_enable_edit_config_without_importing(tmp_path, site):
    path, marker = site
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text('# my settings\nmodel = "m"  # keep me\n')
    proc = run_agent_here(["plugins", "disable", "tattler"], home=home, cwd=tmp_path,
                          PYTHONPATH=str(path))
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    text = (home / "config.toml").read_text()
    assert "# my settings" in text and "# keep me" in text and '"tattler"' in text
    run_agent_here(["plugins", "enable", "tattler"], home=home, cwd=tmp_path, PYTHONPATH=str(path))
    assert '"tattler"' not in (home / "config.toml").read_text() and not marker.exists()


def test_essential_plugin_refuses_to_be_disabled(tmp_path):
    proc = run_agent_here(["plugins", "disable", "core"], home=tmp_path / "h", cwd=tmp_path)
    assert proc.returncode == 2 and "essential" in proc.stderr
    assert not (tmp_path / "h" / "config.toml").exists()


def test_unknown_plugin_name_is_refused(tmp_path):
    proc = run_agent_here(["plugins", "disable", "nosuch"], home=tmp_path / "h", cwd=tmp_path)
    assert proc.returncode == 2 and 'no such plugin "nosuch"' in proc.stderr


@pytest.mark.e2e
def test_no_sdk_import_on_version_help_or_plugins(tmp_path):
    for args in (["--version"], ["--help"], ["plugins"]):
        proc = run_agent(["-X", "importtime"][:0] + args, home=tmp_path / "h", cwd=tmp_path,
                         PYTHONPROFILEIMPORTTIME="1")
        assert proc.returncode == 0, proc.stderr
        imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                    if line.startswith("import time:")}
        for sdk in ("openai", "anthropic", "mcp"):
            assert sdk not in imported, f"{args} imported {sdk}"
        assert "agent" in imported  # the profile really ran


# ---- the shape of the code ----------------------------------------------------------------


def hook_names() -> list[str]:
    tree = ast.parse((ROOT / "agent/contract/hookspecs.py").read_text())
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
            and n.name.startswith("agent_")]


def test_every_hookspec_has_a_full_docstring():
    from agent.contract import hookspecs

    for name in hook_names():
        doc = getattr(hookspecs, name).__doc__ or ""
        assert len(doc) > 200 and "Example::" in doc, name


def test_hook_reference_is_generated_from_the_specs():
    from agent.boot.docgen import hooks_reference

    assert (ROOT / "docs/plugins/hooks.md").read_text() == hooks_reference(), (
        "docs/plugins/hooks.md is stale: run python -m agent.boot.docgen")
    for name in hook_names():
        assert f"## {name}" in hooks_reference(), name


def test_every_hook_is_exercised_by_some_test():
    corpus = "".join(p.read_text() for p in (ROOT / "tests").rglob("*.py")
                     if p.name != "test_plugin_loading.py")
    missing = [n for n in hook_names() if n not in corpus]
    assert not missing, f"hooks no test exercises: {missing}"


def test_core_never_imports_plugins_and_plugins_never_import_each_other():
    for path in (ROOT / "agent").rglob("*.py"):
        assert "plugins_builtin" not in _imports(path), path
    builtin = ROOT / "plugins_builtin"
    for path in builtin.rglob("*.py"):
        own = path.relative_to(builtin).parts[0].removesuffix(".py")
        for name in _imports(path):
            if name.startswith("plugins_builtin."):
                assert name.split(".")[1] == own, f"{path} imports {name}"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    # the parse the meta tests of this process share (sourcetrees: once per file)
    for node in sourcetrees.walk(sourcetrees.parse(path)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_every_builtin_plugin_is_an_entry_point():
    cfg = (ROOT / "setup.cfg").read_text()
    listed = set(re.findall(r"=\s*plugins_builtin\.(\w+)", cfg))
    modules = {p.stem for p in (ROOT / "plugins_builtin").glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in (ROOT / "plugins_builtin").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    assert modules <= listed, modules - listed


def test_no_plugins_keeps_builtins_and_drops_third_party(tmp_path, site, fake_provider):
    path, marker = site
    fake_provider.script(Reply.text("still works"))
    proc = run_agent_here(["-p", "hi", "--no-plugins", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=tmp_path / "h",
                          cwd=tmp_path, PYTHONPATH=str(path), OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "still works\n" and not marker.exists()
    assert "plugin broken failed" not in proc.stderr  # blocked before import
    tools = {t["function"]["name"] for t in fake_provider.requests[0].body["tools"]}
    assert "read_file" in tools and "scribble" not in tools  # builtins stay, example is gone


def test_unknown_plugin_names_in_config_are_reported(tmp_path, fake_provider):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text('[plugins]\ndisabled = ["gaurd"]\n')
    fake_provider.script(Reply.text("ok"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=tmp_path,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0 and "plugin gaurd: no such plugin" in proc.stderr


def test_each_run_logs_into_its_own_state_dir_only(tmp_path, fake_provider):
    """Two runs in one process, each in its own AGENT_HOME, with a plugin whose hook fails
    (logged as a warning): each run's agent.log holds its own warning, and the first run's
    file gets nothing of the second."""
    (tmp_path / "site").mkdir()
    site = make_dist(tmp_path / "site", "grumbler", '''"""Fails to contribute."""
from agent import hookimpl
@hookimpl
def agent_prompt_fragments(session):
    raise RuntimeError("grumble from the prompt fragments")
''')
    logs = []
    for name in ("h1", "h2"):
        fake_provider.script(Reply.text("ok"))
        proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                               fake_provider.openai_url, "--model", "m"], home=tmp_path / name,
                              cwd=tmp_path, PYTHONPATH=str(site), OPENAI_API_KEY="x")
        assert proc.returncode == 0, proc.stderr
        logs.append(tmp_path / name / "state" / "agent.log")
    for log in logs:
        assert log.read_text().count("plugin grumbler: agent_prompt_fragments failed") == 1, log
