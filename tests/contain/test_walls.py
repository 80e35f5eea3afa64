"""The walls under every sandboxed command, as a user meets them (the installed CLI, the real
SDK against the fake provider, default mode and ``--yolo``) and through the bash tool with
each kind of approval.  Oracles: files on disk, canary sockets that count connections, the
environment and results the fake provider received."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_autoallow_readonly import run
from test_sandbox_acceptance import results
from test_walls_corpus import Canary

from agent.testing import gate_decision, make_boot, run_tool

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="Linux only")

PY = shlex.quote(sys.executable)
PLANTS = (
    "mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch /var/tmp/pwned\\n' > .git/hooks/pre-commit",
    "git config core.fsmonitor 'touch /var/tmp/pwned'",
    "echo 'touch /var/tmp/pwned' > .envrc",
    "mkdir -p .vscode && echo '{\"tasks\": []}' > .vscode/tasks.json",
    "mkdir -p .agent && echo 'model = \"evil\"' > .agent/config.toml",
    "echo '{}' > .mcp.json",
    "mv .git .g; mkdir -p .git/hooks && echo x > .git/hooks/post-checkout",
)


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    home = Path(tempfile.mkdtemp(prefix="agent-walls-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    yield tmp_path / "agenthome", ws, home
    shutil.rmtree(home, ignore_errors=True)


def tree(ws: Path) -> dict[str, bytes | None]:
    """Every path under the workspace with its bytes (None for a folder)."""
    out: dict[str, bytes | None] = {}
    for path in sorted(ws.rglob("*")):
        rel = str(path.relative_to(ws))
        out[rel] = None if path.is_dir() else path.read_bytes()
    return out


# the protect guard refuses some of these before they run: without it the sandbox alone holds
@pytest.mark.parametrize("flags", [["--yolo", "--disable", "protect"],
                                   ["--allow", "bash", "--allow", "write_file",
                                    "--disable", "protect"]])
def test_no_approved_command_can_plant_a_persistence_file(dirs, fake_provider, flags):
    agent_home, ws, home = dirs
    before = tree(ws)
    proc = run(fake_provider, agent_home, ws, *PLANTS, "echo made > made.txt", extra=flags)
    assert proc.returncode == 0, proc.stderr
    after = tree(ws)
    assert after.pop("made.txt") == b"made\n"  # the workspace itself is writable
    assert after == before  # nothing planted, no placeholder left behind
    assert not Path("/var/tmp/pwned").exists()
    said = results(fake_provider)
    assert all('"write_protected"' in s for s in said[:len(PLANTS)]), said


def test_a_wall_is_lifted_only_by_a_persons_yes_naming_the_path(dirs, fake_provider):
    agent_home, ws, home = dirs
    config_before = (ws / ".git" / "config").read_bytes()
    call = {"command": "git config user.name Someone", "write_protected": [".git/config"]}
    proc = run(fake_provider, agent_home, ws, call, extra=["--yolo", "--allow", "bash"])
    assert proc.returncode == 0, proc.stderr
    assert "only a person" in results(fake_provider)[0]
    assert (ws / ".git" / "config").read_bytes() == config_before


async def test_the_bash_tool_writes_a_named_wall_on_a_yes_and_refuses_without_one(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    config, hooks = make_boot(ws, tmp_path / "agenthome", builtins=["bash"])
    bash = hooks.tools(config)["bash"]
    args = {"command": "git config user.name Someone", "write_protected": [".git/config"]}
    refused = await run_tool(bash, args, config, allowed_by="yolo")
    assert refused.is_error and "user's own yes" in refused.output
    assert b"Someone" not in (ws / ".git" / "config").read_bytes()
    done = await run_tool(bash, args, config, allowed_by="user")
    assert "exit: 0" in done.output, done.output
    assert b"name = Someone" in (ws / ".git" / "config").read_bytes()
    # the dialog says what the file does
    asked = []

    async def approver(request):
        asked.append(request)
        return "no"

    decision = await gate_decision(config, hooks, bash, args, approver=approver, yolo=True)
    assert not decision.allowed and asked
    assert any("some of them run programs" in line for line in bash.describe(args).details)


@pytest.fixture
def canaries(tmp_path, monkeypatch):
    far = Path(tempfile.mkdtemp(prefix="agent-sock-", dir="/var/tmp"))
    root = "/run/user" if os.access("/run/user", os.W_OK) else str(far)
    runtime = Path(tempfile.mkdtemp(prefix="agent-xdg-", dir=root))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    found = [Canary(str(far / "agent.sock")), Canary(str(runtime / "bus"))]
    yield found
    for canary in found:
        canary.close()
    shutil.rmtree(far, ignore_errors=True)
    shutil.rmtree(runtime, ignore_errors=True)


def connect(path: str) -> str:
    return (PY + " -c \"import socket; s = socket.socket(socket.AF_UNIX); "
            f"s.connect('{path}'); print('connected')\"")


@pytest.mark.parametrize("flags", [[], ["--yolo"]])
def test_no_command_reaches_a_host_unix_socket_or_learns_the_agents(dirs, fake_provider,
                                                                    canaries, flags):
    agent_home, ws, home = dirs
    calls = [connect(c.path) for c in canaries]
    calls += [{"command": connect(c.path), "network": True} for c in canaries]
    calls.append("printenv SSH_AUTH_SOCK GPG_AGENT_INFO; echo end-of-env")
    # without --yolo a network call is asked about, and headless denied: not sent
    replies = calls if flags else calls[:2] + calls[-1:]
    proc = run(fake_provider, agent_home, ws, *replies, extra=flags)
    assert proc.returncode == 0, proc.stderr
    assert sum(c.contacts for c in canaries) == 0
    said = results(fake_provider)
    assert not any("connected\n" in s for s in said)
    assert "end-of-env" in said[-1] and canaries[0].path not in said[-1]


async def test_a_socket_named_in_an_approved_call_is_reachable_and_only_then(tmp_path,
                                                                           canaries,
                                                                           monkeypatch):
    monkeypatch.setenv("SSH_AUTH_SOCK", canaries[0].path)
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "agenthome", builtins=["bash"])
    bash = hooks.tools(config)["bash"]
    command = connect(canaries[0].path) + "; printenv SSH_AUTH_SOCK"
    plain = await run_tool(bash, {"command": command}, config, allowed_by="user")
    assert canaries[0].contacts == 0 and "Operation not permitted" in plain.output
    named = await run_tool(bash, {"command": command, "sockets": [canaries[0].path]}, config,
                           allowed_by="user")
    assert canaries[0].contacts == 1, named.output
    assert canaries[0].path in named.output  # SSH_AUTH_SOCK comes with its socket
    assert canaries[1].contacts == 0


def test_a_command_cannot_trace_or_stop_its_sandbox(dirs, fake_provider):
    """Attaching to the sandbox's init used to stop it, and the call hung until the turn
    was killed; now the attach fails and the command goes on."""
    agent_home, ws, home = dirs
    (ws / "attach.py").write_text(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print('attach', libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno())\n")
    attach = f"{PY} attach.py; kill -STOP 1; echo survived"
    proc = run(fake_provider, agent_home, ws, {"command": attach, "timeout": 30_000},
               extra=["--yolo"])
    assert proc.returncode == 0, proc.stderr
    said = results(fake_provider)[0]
    assert "attach -1 1" in said and "survived" in said and "exit: 0" in said


async def test_file_tools_ask_before_writing_a_persistence_file_even_accepting_edits(
        tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "agenthome", builtins=["files", "protect"],
                              file_data={"permission_mode": "accept-edits"})
    write = hooks.tools(config)["write_file"]
    asked = []

    async def approver(request):
        asked.append(request.reason)
        return "no"

    for path, says in ((".envrc", "direnv runs .envrc"), (".vscode/tasks.json", "VS Code"),
                       (".agent/config.toml", "agent's own project config"),
                       (".claude/settings.json", "Claude Code"), (".mcp.json", "MCP servers")):
        decision = await gate_decision(config, hooks, write, {"path": path, "content": "x"},
                                       approver=approver)
        assert not decision.allowed and says in asked[-1], (path, asked)
        assert not (ws / path).exists()
    plain = await gate_decision(config, hooks, write, {"path": "src/a.py", "content": "x"},
                                approver=approver)
    assert plain.allowed and len(asked) == 5  # an ordinary edit is not asked about
