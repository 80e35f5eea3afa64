"""A child the sandbox starts is reaped by the event loop that started it, from a pidfd
(agent/contain/reaper.py): no thread per child, its exit status intact, in any thread's
loop, with the sandbox off or on."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

from agent.contain import reaper
from agent.contain.sandbox import READ_ONLY, Sandbox

pytestmark = pytest.mark.skipif(
    not hasattr(os, "pidfd_open") or sys.platform != "linux", reason="Linux pidfds only")


def _waiters() -> list[str]:
    """Threads asyncio's threaded child watcher starts (``asyncio-waitpid-N``)."""
    return [t.name for t in threading.enumerate() if "waitpid-" in t.name]


async def _run(sandbox: Sandbox, tmp_path, mode: str) -> tuple[int, int, list[str]]:
    """Start ``cat`` (it waits on its stdin), look at the threads while it lives, then let it
    exit with a status of its own; (exit status, pid, waiter threads seen)."""
    proc = await sandbox.spawn(["sh", "-c", "cat; exit 7"], mode=mode, cwd=tmp_path,
                               stdin=asyncio.subprocess.PIPE)
    seen = _waiters()
    proc.stdin.close()
    return await proc.wait(), proc.pid, seen


@pytest.mark.parametrize("mode", ["off", READ_ONLY])
async def test_a_child_is_reaped_from_a_pidfd_with_its_status(tmp_path, mode):
    sandbox = Sandbox.standalone(tmp_path, sandbox=mode)
    if mode != "off" and not sandbox.active:
        pytest.skip(f"no sandbox here: {sandbox.status.detail}")
    code, pid, seen = await _run(sandbox, tmp_path, mode)  # the spawn installs the reaper
    assert code == 7 and seen == []
    assert type(asyncio.get_event_loop_policy().get_child_watcher()).__name__ in (
        "PidfdReaper", "PidfdChildWatcher")  # ours on 3.11, asyncio's own from 3.12
    with pytest.raises(ChildProcessError):  # reaped already: no zombie left behind
        os.waitpid(pid, os.WNOHANG)


def test_a_loop_in_another_thread_reaps_its_own_children(tmp_path):
    sandbox = Sandbox.standalone(tmp_path, sandbox="off")
    got: list[object] = []

    def elsewhere() -> None:
        try:
            got.append(asyncio.run(_run(sandbox, tmp_path, "off")))
        except BaseException as exc:  # reported below, not lost in the thread
            got.append(exc)

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join(60)
    assert not worker.is_alive()
    code, _, seen = got[0]
    assert code == 7 and seen == []
    assert reaper.install()  # in use (installed by that spawn, or before it)
