"""A read-only git command in a repository whose own files name a program: never auto-allowed.

Each hostile repository makes plain ``git status`` (or ``git log``, ``git diff``) run
``evil.sh``, which creates ``marker``: a one-line ``[core] fsmonitor = ...``, a
``config.worktree``, a ``post-index-change`` hook, a nested repository reached by ``cd``, odd
spellings git accepts.  The control runs real git and sees the marker; the agent's gate (default
policy, nobody to ask) with the real bash tool must never let it appear.  The config reader is
also compared with ``git config --list`` itself on tricky files.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.contract.tools import ToolCall
from agent.loop.gate import Gate
from agent.shell.gitconfig import ConfigError, keys
from agent.testing import make_boot, run_tool

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
EVIL = '#!/bin/sh\ntouch "$(dirname "$0")/marker" "$PWD/marker" 2>/dev/null; exit 0\n'


def git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=ws,
                   check=True, capture_output=True, env=GIT_ENV)


def repo(ws: Path) -> Path:
    ws.mkdir(parents=True)
    git(ws, "init", "-q")
    (ws / "t.txt").write_text("a\n")
    git(ws, "add", "t.txt")
    git(ws, "commit", "-qm", "one")
    (ws / "evil.sh").write_text(EVIL)
    (ws / "evil.sh").chmod(0o755)
    os.utime(ws / "t.txt", (1_500_000_000, 1_500_000_000))  # status refreshes the index
    return ws


def append_config(ws: Path, text: str, name: str = "config") -> None:
    with open(ws / ".git" / name, "a") as f:
        f.write(text)


def one_line(ws: Path) -> str:
    append_config(ws, "[core] fsmonitor = ./evil.sh\n")
    return "git status"


def no_spaces(ws: Path) -> str:
    append_config(ws, "[core]fsmonitor=./evil.sh\n")
    return "git status --short"


def upper_case(ws: Path) -> str:
    append_config(ws, "[CORE]\n\tFSMonitor = ./evil.sh\n")
    return "git status"


def value_continued(ws: Path) -> str:
    append_config(ws, "[core]\n\tfsmonitor = ./ev\\\nil.sh\n")
    return "git status"


def after_comment(ws: Path) -> str:
    append_config(ws, "# [core] fsmonitor = nothing\n[user] name = x ; c\n"
                  "[core] fsmonitor = \"./evil.sh\" # quoted\n")
    return "git status"


def worktree_config(ws: Path) -> str:
    git(ws, "config", "extensions.worktreeConfig", "true")
    append_config(ws, "[core]\n\tfsmonitor = ./evil.sh\n", "config.worktree")
    return "git status"


def hook(ws: Path) -> str:
    target = ws / ".git" / "hooks" / "post-index-change"
    target.write_text(EVIL.replace('$(dirname "$0")', "$PWD"))
    target.chmod(0o755)
    return "git status"


def nested_repo(ws: Path) -> str:
    sub = repo(ws / "sub")
    append_config(sub, "[core] fsmonitor = ../evil.sh\n")
    return "cd sub && git status"


def nested_pushd(ws: Path) -> str:
    sub = repo(ws / "sub")
    append_config(sub, "[core] fsmonitor = ../evil.sh\n")
    return "pushd sub >/dev/null; git status"


def include(ws: Path) -> str:
    (ws / "inc.cfg").write_text("[core]\n\tfsmonitor = ./evil.sh\n")
    append_config(ws, "[include] path = ../inc.cfg\n")
    return "git status"


def textconv(ws: Path) -> str:
    (ws / ".gitattributes").write_text("*.txt diff=x\n")
    append_config(ws, '[diff "x"] textconv = ./evil.sh\n')
    (ws / "t.txt").write_text("b\n")
    return "git diff"


def pager(ws: Path) -> str:
    append_config(ws, "[pager] log = ./evil.sh\n")
    return "git log -1"


def subsection_dots(ws: Path) -> str:
    append_config(ws, "[diff.x] textconv = ./evil.sh\n")
    (ws / ".gitattributes").write_text("*.txt diff=x\n")
    (ws / "t.txt").write_text("b\n")
    return "git diff"


HOSTILE = [one_line, no_spaces, upper_case, value_continued, after_comment, worktree_config,
           hook, nested_repo, nested_pushd, include, textconv, pager, subsection_dots]


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    (tmp_path / "userhome").mkdir()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", "/dev/null")
    return tmp_path


def markers(ws: Path) -> list[Path]:
    return sorted(ws.rglob("marker"))


#: git pages only to a terminal, so the pager case has no control without one.
LIVE = [m for m in HOSTILE if m is not pager]


@pytest.mark.parametrize("make", LIVE, ids=[m.__name__ for m in LIVE])
def test_control_real_git_runs_the_program(make, isolated):
    ws = repo(isolated / "ws")
    command = make(ws)
    subprocess.run(["bash", "-c", command], cwd=ws, env=GIT_ENV, capture_output=True,
                   timeout=60)
    assert markers(ws), command


@pytest.mark.parametrize("make", HOSTILE, ids=[m.__name__ for m in HOSTILE])
async def test_the_gate_never_auto_allows_git_in_a_hostile_repository(make, isolated):
    ws = repo(isolated / "ws")
    command = make(ws)
    config, hooks = make_boot(ws, isolated / "home", file_data={"sandbox": "off"})
    bash = hooks.tools(config)["bash"]
    call = ToolCall("c1", "bash", {"command": command})
    decision = await Gate(hooks, config, None).decide(call, bash, bash.effects(call.arguments),
                                                      None)
    if decision.allowed:
        await run_tool(bash, {"command": command, "timeout": 20000}, config)
    assert not decision.allowed, decision
    assert markers(ws) == []


async def test_control_a_plain_repository_runs_git_status_without_a_prompt(isolated):
    ws = repo(isolated / "ws")
    config, hooks = make_boot(ws, isolated / "home", file_data={"sandbox": "off"})
    bash = hooks.tools(config)["bash"]
    for command in ("git status", "cd . && git status", "git log -1 --oneline"):
        call = ToolCall("c1", "bash", {"command": command})
        decision = await Gate(hooks, config, None).decide(call, bash,
                                                          bash.effects(call.arguments), None)
        assert decision.allowed and decision.by == "allow", (command, decision)


TRICKY = [
    "[core] fsmonitor = x\n",
    "[core]fsmonitor=x\n",
    "[core]\n\tbare = false\n\tfsmonitor\n",
    "[CORE]\n\tFsMonitor = \"a b\" ; c\n",
    "[diff \"A.b\"]\n\ttextconv = x # c\n",
    "[diff.x]\n\ttextconv = y\n",
    "[core]\n\tpager = a\\\nb\n",
    "; c\n# d\n[alias]\n\tst = !touch m\n[user] name = n\n",
    "\ufeff[core] editor = e\n",
    "[a \"q\\\"x\"] k = \"v\\\\\"\n",
    "[include]\n\tpath = other\n[includeIf \"gitdir:/x/\"]\n\tpath = y\n",
    "[core]\n\tk1 = 1\n\n[ core ]\n",
    "k = v\n",
    "[core\n",
    "[core] k = \"open\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_the_config_reader_agrees_with_git(text, tmp_path):
    path = tmp_path / "cfg"
    path.write_text(text)
    proc = subprocess.run(["git", "config", "--file", str(path), "--list", "--name-only"],
                          capture_output=True, text=True, env=GIT_ENV)
    try:
        ours = [key for key, _value in keys(text)]
    except ConfigError:
        assert proc.returncode != 0, proc.stdout  # we refuse only what git refuses
        return
    assert proc.returncode == 0, proc.stderr
    theirs = proc.stdout.split()
    # git lower-cases the section and key; a subsection keeps its case
    assert [k.lower() for k in ours] == [k.lower() for k in theirs]
