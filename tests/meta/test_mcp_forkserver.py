"""The fork server that starts the Python MCP test servers (tests/mcp_forkserver.py) keeps what
a client could observe of a server process: its argv, environment, folder and pipes are the
launcher's, the launcher exits as the server does, signals to the launcher reach the server,
and a launcher killed outright takes its server with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from mcp_forkserver import server_command
from waiting import wait_until

SERVER = """\
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "mark": os.environ.get("MARK"),
                  "pid": os.getpid()}), flush=True)
sys.stdin.read()  # until the client closes stdin
sys.exit(int(sys.argv[1]))
"""


def start(tmp_path, *args):
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    (tmp_path / "cwd").mkdir()
    command, launch_args = server_command(script, *args)
    proc = subprocess.Popen([command, *launch_args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=tmp_path / "cwd",
                            env={**os.environ, "MARK": "here"}, start_new_session=True)
    hello = json.loads(proc.stdout.readline())
    return proc, hello


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def test_the_server_gets_the_launchers_argv_env_folder_and_pipes_and_its_exit_is_the_launchers(
        tmp_path):
    proc, hello = start(tmp_path, "3", "two words")
    assert hello["argv"] == ["3", "two words"]
    assert hello["cwd"] == str(tmp_path / "cwd") and hello["mark"] == "here"
    assert hello["pid"] != proc.pid  # a process of its own
    proc.stdin.close()  # EOF on the server's stdin: it exits 3
    assert proc.wait(60) == 3
    wait_until(lambda: gone(hello["pid"]), "the server process to end", timeout=30)


def test_sigterm_to_the_launcher_reaches_the_server(tmp_path):
    proc, hello = start(tmp_path, "0")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == -signal.SIGTERM
    wait_until(lambda: gone(hello["pid"]), "the server process to end", timeout=30)


def test_a_killed_launcher_takes_its_server_with_it(tmp_path):
    proc, hello = start(tmp_path, "0")
    proc.kill()
    proc.wait(60)
    wait_until(lambda: gone(hello["pid"]), "the server process to end", timeout=30)
    proc.stdin.close()


def test_the_fork_server_is_this_process_own(tmp_path):
    _, args = server_command(tmp_path / "server.py")
    folder = os.path.dirname(args[3])
    assert os.stat(folder).st_mode & 0o077 == 0 and os.stat(folder).st_uid == os.getuid()
    assert args[:3] == ["-S", str(sys.modules["mcp_forkserver"].LAUNCHER), "launch"]
