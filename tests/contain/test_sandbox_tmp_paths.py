"""A program the sandbox runs may live under the host's ``/tmp`` (a checkout cloned there):
the sandbox's own ``/tmp`` hides the host's, so what the caller's configuration names there
(``show``: an MCP server's script) is shown read-only, and nothing else of the host's ``/tmp``
is, whatever a command line mentions."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent.contain.sandbox import Sandbox

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="Linux only")


def test_a_script_under_the_hosts_tmp_runs_and_its_neighbours_stay_read_only(tmp_path):
    assert str(tmp_path).startswith("/tmp/"), "the case needs a path under the host's /tmp"
    checkout = tmp_path / "checkout" / "tests"
    checkout.mkdir(parents=True)
    script = checkout / "server.py"
    script.write_text("import pathlib, sys\n"
                      "print(pathlib.Path(sys.argv[0]).with_name('data.txt').read_text())\n"
                      "open(sys.argv[0] + '.planted', 'w')\n")
    (checkout / "data.txt").write_text("sibling data\n")
    elsewhere = tmp_path / "not-named"
    elsewhere.mkdir()
    (elsewhere / "private.txt").write_text("not for the sandbox\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox = Sandbox.standalone(ws)
    if not sandbox.active:
        pytest.skip(f"no sandbox here: {sandbox.status.detail}")
    argv, sandboxed = sandbox.command([sys.executable, str(script)], show=[str(script)])
    assert sandboxed
    done = subprocess.run(argv, cwd=ws, env=sandbox.environment(), capture_output=True,
                          text=True, timeout=60)
    text = done.stdout + done.stderr
    assert "sibling data" in text, text
    assert done.returncode != 0 and "Read-only file system" in text  # shown, not writable
    assert not (checkout / "server.py.planted").exists()
    # Not named by the caller (a command line that mentions a path is not a list to show).
    for argv in (["cat", str(elsewhere / "private.txt")],
                 ["bash", "-c", f"cat {elsewhere}/private.txt"]):
        code, out = sandbox.run(argv, mode="workspace-write")
        assert code != 0 and b"not for the sandbox" not in out
