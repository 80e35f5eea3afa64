"""The suite's hang protection (pytest-timeout's thread method, timed by tests/hangwatch.py's
one watchdog thread): a test stuck in a lock ends its pytest process with every thread's
stack written out, the tests before it having passed, and no timer thread is started per
test.  Checked on a pytest run of its own (a throwaway test folder, a short timeout)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parents[1]

SUITE = '''
import threading

def test_one_before():
    names = [t.name for t in threading.enumerate()]
    assert "hangwatch" in names, names
    assert not any(n.startswith("pytest_timeout") for n in names), names

def test_two_before():
    test_one_before()

def test_stuck_in_a_lock():
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()  # never returns: only the watchdog ends this

def test_never_reached():
    pass
'''


def test_a_test_stuck_in_a_lock_ends_the_run_with_every_stack(tmp_path):
    (tmp_path / "test_hang.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\ntimeout = 0.5\ntimeout_method = thread\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "hangwatch", "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
         str(tmp_path / "test_hang.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "test_one_before PASSED" in out and "test_two_before PASSED" in out, out
    assert "+ Timeout +" in out, out
    assert "lock.acquire()  # never returns" in out, out  # the stuck thread's stack
    assert "test_never_reached" not in out, out
