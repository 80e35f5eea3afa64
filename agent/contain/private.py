"""File modes of what agent keeps about you: ``AGENT_HOME``, the config and the state dir.

The config can hold an API key and the state dir keeps every tool output verbatim, so both
are the user's alone: directories 0700, files 0600, whatever the umask.  Creation is private
from the start where the core creates things (:func:`private_dir`, :func:`open_private`,
:class:`PrivateFileHandler`, :func:`rewrite_mode` for config rewrites, which keep or tighten
a file's mode, never loosen it); :func:`secure_tree` tightens whatever a plugin created with
default modes, at startup and at exit.  Tightening only removes bits for group and others,
so a mode the user narrowed further (0400) stays.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: Bits a private file or directory must not have.
SHARED_BITS = 0o077


def tighten(path: Path | str) -> None:
    """Drop group and other permission bits of ``path`` (not following a symlink)."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode) or not (info.st_mode & SHARED_BITS):
        return
    try:
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~SHARED_BITS)
    except OSError:
        pass


def private_dir(path: Path | str) -> Path:
    """Create ``path`` (and missing parents) 0700, or tighten it if it exists.  Parents that
    existed already are left alone: they are not agent's."""
    path = Path(path)
    missing: list[Path] = []
    current = path
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR)
        except FileExistsError:
            pass
        tighten(directory)  # mkdir's mode is reduced by the umask, never raised: be sure
    tighten(path)
    return path


def rewrite_mode(path: Path | str) -> int:
    """The mode a rewrite of ``path`` gets: its own mode without group and other bits
    (keeps or tightens), or 0600 for a new file."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & ~SHARED_BITS
    except OSError:
        return PRIVATE_FILE


def open_private(path: Path | str) -> None:
    """Make sure ``path`` exists as a 0600 file (created so, or tightened) without changing
    its content: done before a library (SQLite, logging) opens it with its own modes."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0),
                     PRIVATE_FILE)
        os.close(fd)
    except OSError:
        return
    tighten(path)


def read_private(path: Path | str) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of this user that nobody else can write
    or read (no group or other bits), opened without following a symlink; else None.  For
    caches whose content decides what runs: one someone else could have written is not
    trusted."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() \
                or info.st_mode & SHARED_BITS:
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read()
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


class PrivateFileHandler(logging.FileHandler):
    """A log file handler whose file is created 0600 (logs quote tool output)."""

    def _open(self):  # type: ignore[no-untyped-def]
        open_private(self.baseFilename)
        return super()._open()


def secure_tree(root: Path | str, *, limit: int = 100_000) -> None:
    """Tighten ``root`` and everything under it: directories to 0700, files to 0600 at most
    (an owner's execute bit is kept).  Symlinks are not followed.  At most ``limit`` entries,
    so a huge trash costs a bounded walk."""
    root = Path(root)
    if not root.is_dir():
        tighten(root)
        return
    tighten(root)
    seen = 0
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            seen += 1
            if seen > limit:
                return
            tighten(os.path.join(directory, name))


def secure_home(paths: object, *, deep: bool = True) -> None:
    """Tighten what agent keeps: the config dir itself and its ``config.toml``, and the state
    dir with everything in it (``deep=False``: only its direct entries, a cheap check for
    startup).  Nothing else in a config dir is touched (``AGENT_HOME`` may be a directory
    that holds other things too), and never ``/`` or the home directory."""
    config_dir = getattr(paths, "config_dir", None)
    state_dir = getattr(paths, "state_dir", None)
    never = {Path("/"), Path.home()}
    if config_dir is not None:
        config_dir = Path(config_dir)
        if config_dir.is_dir() and config_dir not in never:
            tighten(config_dir)
        tighten(config_dir / "config.toml")
    if state_dir is None or not Path(state_dir).exists() or Path(state_dir) in never:
        return
    if deep:
        secure_tree(state_dir)
        return
    tighten(state_dir)
    try:
        names = os.listdir(state_dir)
    except OSError:
        return
    for name in names:
        tighten(os.path.join(state_dir, name))
