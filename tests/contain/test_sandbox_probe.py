"""The sandbox's probe (``bwrap ... true``, whether the walls can start here) runs once per
process and bwrap binary: a later sandbox takes the answer back while the binary is the
same file, and probes again when it changed."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from agent.contain.sandbox import Sandbox

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="bubblewrap is Linux only")


class _Config:
    def __init__(self, workspace, **values) -> None:
        self.workspace = str(workspace)
        self.values = values
        self.paths = None

    def get(self, key, default=None):
        return self.values.get(key, default)


def _logging_bwrap(tmp_path, real: str | None) -> tuple[str, object]:
    """A bwrap that appends a line to a log for every start, then runs ``real`` (or fails
    as a bwrap that cannot start would)."""
    log = tmp_path / "bwrap.log"
    wrapper = tmp_path / "bin" / "bwrap"
    wrapper.parent.mkdir()
    body = f'exec "{real}" "$@"' if real else "echo 'bwrap: no namespaces here' >&2; exit 1"
    wrapper.write_text(f"#!/bin/sh\necho start >> '{log}'\n{body}\n")
    wrapper.chmod(0o755)
    return str(wrapper), log


def _starts(log) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _sandbox(tmp_path, name: str, bwrap: str) -> Sandbox:
    workspace = tmp_path / name
    workspace.mkdir()
    return Sandbox(_Config(workspace, sandbox_bwrap=bwrap))


def test_a_working_bwrap_is_probed_once_until_it_changes(tmp_path):
    real = Sandbox(_Config(tmp_path)).status
    if not real.ok:
        pytest.skip(f"no sandbox here: {real.detail}")
    bwrap, log = _logging_bwrap(tmp_path, real.program)
    first = _sandbox(tmp_path, "one", bwrap)
    assert first.status.ok and first.status.program == bwrap and _starts(log) == 1
    second = _sandbox(tmp_path, "two", bwrap)  # another workspace, the same binary
    assert second.status == first.status and second.active and _starts(log) == 1
    # A command still starts the real walls: only the probe was taken back.
    code, output = second.run(["sh", "-c", "touch /etc/agent-probe-test || echo walled"],
                              cwd=tmp_path / "two")
    assert b"walled" in output and _starts(log) == 2
    stat = os.stat(bwrap)
    os.utime(bwrap, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    third = _sandbox(tmp_path, "three", bwrap)
    assert third.status.ok and _starts(log) == 3  # a changed binary is probed again


def test_a_bwrap_that_cannot_start_stays_unavailable_and_is_probed_again_once_replaced(
        tmp_path):
    bwrap, log = _logging_bwrap(tmp_path, None)
    first = _sandbox(tmp_path, "one", bwrap)
    assert not first.status.ok and "no namespaces here" in first.status.detail
    assert first.strict_approvals and _starts(log) == 1
    second = _sandbox(tmp_path, "two", bwrap)
    assert second.status == first.status and second.strict_approvals and _starts(log) == 1
    real = shutil.which("true")
    assert real is not None
    (tmp_path / "bin" / "bwrap").write_text(f"#!/bin/sh\necho start >> '{log}'\n"
                                            f"exec '{real}'\n")  # now it starts (and walls
    third = _sandbox(tmp_path, "three", bwrap)                   # nothing: a probe only)
    assert third.status.ok and _starts(log) == 2
