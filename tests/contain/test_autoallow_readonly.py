"""What runs without a person's yes runs read-only: the installed CLI, headless, the real SDK
against the fake provider.  A command the default policy judges read-only (no rule, grant,
flag or answer let it run) gets the read-only sandbox, so a misjudgement cannot write; a
command a person approved keeps the writable workspace.  Oracles: marker files on disk and
the tool results the fake provider received."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from test_sandbox_acceptance import results

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="Linux only")


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README").write_text("hello\n")
    # The user's home outside /tmp: the sandbox shows its own /tmp, and a home under the
    # host's would be invisible inside (its git settings never read).
    home = Path(tempfile.mkdtemp(prefix="agent-ro-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    yield tmp_path / "agenthome", ws, home
    shutil.rmtree(home, ignore_errors=True)


def run(fake_provider, agent_home, ws, *calls, extra=(), home: Path | None = None):
    """``agent -p`` with the model calling ``bash`` once per item (a command or arguments)."""
    replies = [Reply.tool_call("bash", c if isinstance(c, dict) else {"command": c},
                               id=f"call_{i}") for i, c in enumerate(calls)]
    fake_provider.script(*replies, Reply.text("done"))
    return run_agent_here(["-p", "go", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", *extra],
                          home=agent_home, cwd=ws, OPENAI_API_KEY="sk-test-key-held-by-agent",
                          HOME=os.environ["HOME"], PATH=os.environ.get("PATH", os.defpath))


def plant_global_fsmonitor(home: Path, marker: Path) -> None:
    """A user-level git setting the judge does not read: ``git status`` runs this program."""
    (home / ".gitconfig").write_text(f'[core]\n\tfsmonitor = "touch {marker}; false"\n')


def git_init(ws: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(ws)], check=True)


def test_auto_allowed_commands_run_read_only_and_the_model_is_told_how_to_ask(
        dirs, fake_provider):
    agent_home, ws, home = dirs
    git_init(ws)
    marker = ws / "fsmonitor-ran"
    plant_global_fsmonitor(home, marker)
    proc = run(fake_provider, agent_home, ws, "git status", "cat README")
    assert proc.returncode == 0, proc.stderr
    said = results(fake_provider)
    assert len(said) == 2 and not any("needs approval" in s for s in said), said
    # the git setting's program ran (git status was allowed) but could not write
    assert not marker.exists()
    assert "Read-only file system" in said[0] and '"write": true' in said[0]
    assert "hello" in said[1]  # reading works as before
    assert sorted(p.name for p in ws.iterdir()) == [".git", "README"]


def test_approved_calls_keep_the_writable_workspace(dirs, fake_provider):
    agent_home, ws, home = dirs
    git_init(ws)
    marker = ws / "fsmonitor-ran"
    plant_global_fsmonitor(home, marker)
    # --allow is the user's word for this run: the same command now runs workspace-write
    proc = run(fake_provider, agent_home, ws, "git status", extra=["--allow", "bash:git *"])
    assert proc.returncode == 0, proc.stderr
    assert marker.exists(), results(fake_provider)


def test_yolo_runs_read_only_judged_commands_read_only_too(dirs, fake_provider):
    """--yolo approves what would be asked; what the policy allows alone stays contained."""
    agent_home, ws, home = dirs
    git_init(ws)
    marker = ws / "fsmonitor-ran"
    plant_global_fsmonitor(home, marker)
    proc = run(fake_provider, agent_home, ws, "git status", "echo approved > by-yolo.txt",
               extra=["--yolo"])
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert (ws / "by-yolo.txt").read_text() == "approved\n"


def test_write_true_asks_and_headless_denies_it(dirs, fake_provider):
    agent_home, ws, home = dirs
    git_init(ws)
    marker = ws / "fsmonitor-ran"
    plant_global_fsmonitor(home, marker)
    proc = run(fake_provider, agent_home, ws, {"command": "git status", "write": True})
    assert proc.returncode == 0, proc.stderr
    assert "needs approval" in results(fake_provider)[0]
    assert not marker.exists()
    proc = run(fake_provider, agent_home, ws, {"command": "git status", "write": True},
               extra=["--yolo"])
    assert marker.exists()  # approved (here by --yolo): the workspace is writable


def test_plan_mode_runs_proven_read_only_commands_in_the_read_only_sandbox(dirs,
                                                                          fake_provider):
    agent_home, ws, home = dirs
    git_init(ws)
    marker = ws / "fsmonitor-ran"
    plant_global_fsmonitor(home, marker)
    proc = run(fake_provider, agent_home, ws, "cat README", "git status", "touch asked.txt",
               extra=["--permission-mode", "plan", "--yolo"])
    assert proc.returncode == 0, proc.stderr
    said = results(fake_provider)
    assert "hello" in said[0] and "On branch" in said[1]
    assert "plan mode" in said[2] and not (ws / "asked.txt").exists()
    assert not marker.exists()
