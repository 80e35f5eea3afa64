"""Small real filesystems for fault tests: a 1 MB tmpfs that can be filled to the last block
or remounted read-only.  Needs root (CI runs as root); where mounting is impossible the test
is skipped with the reason ``mount`` gave."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_fs(where: Path, size: str = "1m", mode: str = "0755") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` at ``where`` (created), and always unmount it afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode={mode}", "tmpfs",
                           str(where)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        # Lazy: a file still open somewhere must not leave the mount behind.
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _write_until_full(path: Path, chunk: bytes) -> bool:
    """Append ``chunk`` to ``path`` until the disk is full; False when not even one fitted."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    wrote = False
    try:
        while True:
            os.write(fd, chunk)
            wrote = True
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return wrote


def fill(mount: Path) -> None:
    """Use up every free block of ``mount`` (the next write of any size fails ENOSPC)."""
    _write_until_full(mount / ".filler", b"\0" * 65536)
    n = 0
    while True:  # the last partial chunk's worth, byte by byte, in files of their own
        n += 1
        if not _write_until_full(mount / f".filler-{n}", b"\0" * 512):
            return


def remount_read_only(mount: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True, capture_output=True)


def free_bytes(mount: Path) -> int:
    info = os.statvfs(mount)
    return info.f_bavail * info.f_frsize
