"""State hygiene: after onboarding, after ``agent plugins disable time`` and after a run that
kept undo snapshots, every directory under AGENT_HOME is 0700 and every file 0600."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from fakeprovider import Reply
from ui_harness import make_app, press, type_text, wait_for

from plugins_builtin import anthropic as provider_anthropic
from plugins_builtin import openai as provider_openai
from plugins_builtin.setup.presets import offered

#: the setup's list with both shipped provider plugins loaded (as the app loads them here)
PRESETS = offered({"openai": provider_openai.SPEC, "anthropic": provider_anthropic.SPEC})

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from clirun import run_agent  # noqa: E402

pytestmark = pytest.mark.e2e  # runs the agent as a process (docs/testing.md)

CUSTOM_OPENAI = next(i for i, p in enumerate(PRESETS) if p.id == "custom-openai")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_API_KEY", "AGENT_PROVIDER",
                 "AGENT_MODEL", "AGENT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def modes(root: Path, *, skip_root: bool = False) -> dict[str, str]:
    """Every entry under ``root`` (and ``root``), relative path -> octal permission bits."""
    out = {} if skip_root else {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            out[str(path.relative_to(root))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return out


def loose(found: dict[str, str], root: Path) -> dict[str, str]:
    """The entries whose mode is not 0700 (directories) or 0600 (files)."""
    bad = {}
    for rel, mode in found.items():
        want = "0o700" if (root / rel).is_dir() else "0o600"
        if mode != want:
            bad[rel] = mode
    return bad


async def test_onboarding_then_plugins_disable_leave_everything_private(tmp_path,
                                                                       fake_provider):
    os.umask(0o022)  # what most users have: everything would come out 0644 / 0755
    app = make_app(tmp_path, None, builtins=["anthropic"])
    home = tmp_path / "home"
    app.start()
    await wait_for(app, "Choose a provider")
    await press(app, *["down"] * CUSTOM_OPENAI, "enter")
    await wait_for(app, "endpoint URL")
    await type_text(app, fake_provider.openai_url, enter=True)
    await wait_for(app, "API key")
    await type_text(app, "sk-secret-key-1234", enter=True)
    await wait_for(app, "Choose a model")
    await press(app, "enter")
    await wait_for(app, "configured with fake-model")
    fake_provider.script(Reply.text("hello"))
    await type_text(app, "hi", enter=True)
    await wait_for(app, "hello")
    assert "sk-secret-key-1234" in (home / "config.toml").read_text()
    # The harness made the home dir itself; everything agent made in it is private.
    after_onboarding = modes(home, skip_root=True)
    assert "config.toml" in after_onboarding and "state/agent.db" in after_onboarding
    assert loose(after_onboarding, home) == {}
    proc = run_agent(["plugins", "disable", "time"], home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert loose(modes(home), home) == {}


def test_a_loose_old_install_is_tightened_and_a_run_keeps_it_so(tmp_path, fake_provider):
    os.umask(0o022)
    home = tmp_path / "agenthome"
    (home / "state").mkdir(parents=True)
    os.chmod(home, 0o755)
    config = home / "config.toml"
    config.write_text('api_key = "sk-old-install"\n')
    os.chmod(config, 0o644)
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_provider.script(Reply.tool_call("write_file", {"path": "a.txt", "content": "x\n"},
                                         id="c1"),
                         Reply.tool_call("write_file", {"path": "a.txt", "content": "y\n"},
                                         id="c2"),
                         Reply.text("done"))
    proc = run_agent(["-p", "go", "--yolo", "--provider", "openai", "--base-url",
                      fake_provider.openai_url, "--model", "m"], home=home, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "a.txt").read_text() == "y\n"
    found = modes(home)
    assert any(rel.startswith("state/undo/") for rel in found)  # snapshots were kept
    assert loose(found, home) == {}
    # The workspace is the user's: agent's privacy does not leak into it.
    assert stat.S_IMODE((ws / "a.txt").stat().st_mode) == 0o644
    os.chmod(config, 0o400)  # a user who narrowed it further keeps that
    proc = run_agent(["plugins", "disable", "time"], home=home, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert "time" in config.read_text() and "sk-old-install" in config.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o400
