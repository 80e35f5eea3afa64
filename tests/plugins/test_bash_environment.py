"""What a ``bash`` command starts with: the PATH the agent was started with, whatever a login
profile would do to it, and none of the profile's noise in what the model reads.

Through the CLI (``-p``), the real SDK and the fake provider: the oracle is the tool result the
provider received in the next request."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

NOISE = "pyenv: cannot rehash: /root/.pyenv/shims isn't writable"


def noisy_home(home: Path) -> Path:
    """A home whose login and rc files (and a ``BASH_ENV`` script) print what a version
    manager prints when it cannot write, and reset PATH as Debian's ``/etc/profile`` does."""
    script = f'echo "{NOISE}" >&2\necho "profile-stdout-noise"\nexport PATH=/usr/bin:/bin\n'
    for name in (".bash_profile", ".bash_login", ".profile", ".bashrc", "env.sh"):
        (home / name).write_text(script)
    return home / "env.sh"


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_commands_see_the_started_path_and_no_profile_noise(tmp_path, monkeypatch,
                                                           fake_provider, sandbox):
    ws = tmp_path / "ws"
    venv_bin = ws / ".venv" / "bin"  # a project's own venv, activated in the user's shell
    venv_bin.mkdir(parents=True)
    tool = venv_bin / "projecttool"
    tool.write_text("#!/bin/sh\necho projecttool from the venv\n")
    tool.chmod(0o755)
    home = tmp_path / "userhome"
    home.mkdir()
    bash_env = noisy_home(home)
    monkeypatch.setenv("HOME", str(home))
    fake_provider.script(
        Reply.tool_call("bash", {"command": 'projecttool; echo "PATH=$PATH"'}, id="c1"),
        Reply.tool_call("bash", {"command": "sh -c 'echo sh child'"}, id="c2"),
        Reply.text("done"))
    proc = run_agent_here(
        ["-p", "go", "--yolo", "--sandbox", sandbox, "--provider", "openai", "--base-url",
         fake_provider.openai_url, "--model", "m"], home=tmp_path / "agenthome", cwd=ws,
        OPENAI_API_KEY="sk-test", PATH=f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        BASH_ENV=str(bash_env), ENV=str(bash_env))
    assert proc.returncode == 0, proc.stderr
    first, second = fake_provider.tool_results()
    assert first.startswith("exit: 0"), first
    assert "projecttool from the venv" in first
    assert f"PATH={venv_bin}{os.pathsep}" in first
    assert second.startswith("exit: 0") and "sh child" in second, second
    for request in fake_provider.requests:
        body = json.dumps(request.body)
        assert "cannot rehash" not in body and "profile-stdout-noise" not in body


def test_a_venv_on_path_under_the_hosts_tmp_is_seen_read_only(tmp_path, monkeypatch,
                                                              fake_provider):
    """The sandbox's /tmp is private; a venv the user made under the host's /tmp (outside the
    workspace) and put on PATH is shown, read-only, packages and all."""
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venvs" / "tools"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib").mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "data.txt").write_text("venv package data\n")
    tool = venv / "bin" / "venvtool"
    tool.write_text('#!/bin/sh\ncat "$(dirname "$0")/../lib/data.txt"\n')
    tool.chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    fake_provider.script(
        Reply.tool_call("bash", {"command": "venvtool"}, id="c1"),
        Reply.tool_call("bash", {"command": f"touch {venv}/lib/planted"}, id="c2"),
        Reply.text("done"))
    proc = run_agent_here(
        ["-p", "go", "--yolo", "--provider", "openai", "--base-url", fake_provider.openai_url,
         "--model", "m"], home=tmp_path / "agenthome", cwd=ws, OPENAI_API_KEY="sk-test",
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert proc.returncode == 0, proc.stderr
    ran, planted = fake_provider.tool_results()
    assert ran.startswith("exit: 0") and "venv package data" in ran, ran
    assert "Read-only file system" in planted
    assert not (venv / "lib" / "planted").exists()
