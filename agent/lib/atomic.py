"""Atomic file replacement: the target holds either its old bytes or its new bytes, never part.

Every write of a user's file (the file tools, the trash, undo's restore) and every rewrite of
a config or state file goes through :func:`atomic_write` (or :class:`Staged` for several files
that change together, or :func:`atomic_move` for a move that may cross filesystems):

1. a temporary file is created *in the target's directory* (so the rename cannot cross a
   filesystem), written whole and ``fsync``-ed;
2. it takes the target's permission bits (and owner, where the process may set it), or
   ``mode`` for a new file;
3. it is renamed over the target, and the directory is ``fsync``-ed so the rename survives a
   crash.

Any failure on the way (``ENOSPC``, ``EDQUOT``, ``EACCES``, ``EROFS``, ``EXDEV``, ...)
removes the temporary file and any directory the call created, leaves the original
byte-identical, and raises :class:`AtomicWriteError`, whose message says that nothing changed
and why, in words a model can act on::

    nothing changed: src/app.py: no space left on device (the disk is full)

The price of rename: the file gets a new inode, so a hard link to the old one keeps the old
content (a symlink is followed: the file it points to is replaced, the link stays).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["AtomicWriteError", "Staged", "atomic_write", "atomic_move", "describe_os_error"]

#: Plain-words reasons for the errors a write meets in practice.
_REASONS = {
    errno.ENOSPC: "no space left on device (the disk is full)",
    errno.EDQUOT: "disk quota exceeded (the user's quota on this filesystem is used up)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.EXDEV: "the source and the target are on different filesystems",
    errno.EISDIR: "it is a directory",
    errno.ENOTDIR: "a parent of it is not a directory",
    errno.ENAMETOOLONG: "the file name is too long",
    errno.EFBIG: "the file is too large for this filesystem",
    errno.EIO: "input/output error (the disk or filesystem failed)",
    errno.EMLINK: "too many links",
    errno.ELOOP: "too many levels of symbolic links",
}


def describe_os_error(exc: OSError) -> str:
    """A short lower-case reason for ``exc`` (``no space left on device (the disk is full)``)."""
    if exc.errno in _REASONS:
        return _REASONS[exc.errno]
    text = exc.strerror or str(exc) or type(exc).__name__
    return text[:1].lower() + text[1:]


class AtomicWriteError(OSError):
    """A write that did not happen: the target is exactly as it was before.

    ``str(exc)`` is the whole sentence for a user or a model (``nothing changed: PATH:
    REASON``); ``errno`` and ``filename`` are those of the underlying error, ``shown`` the
    path as it was named to the caller, ``reason`` the plain-words cause.
    """

    def __init__(self, shown: str, cause: OSError, detail: str = "") -> None:
        self.shown = shown
        self.reason = describe_os_error(cause) + (f" ({detail})" if detail else "")
        super().__init__(cause.errno, f"nothing changed: {shown}: {self.reason}",
                         cause.filename)

    def __str__(self) -> str:
        return self.strerror or ""


def _resolve_target(path: Path) -> Path:
    """Follow a symlink at ``path`` (a link to a missing file names that file)."""
    if os.path.islink(path):
        return Path(os.path.realpath(path))
    return path


def _missing_dirs(directory: Path) -> list[Path]:
    """The directories between ``directory`` and its nearest existing ancestor, top first."""
    missing: list[Path] = []
    current = directory
    while not os.path.lexists(current):
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    return list(reversed(missing))


def _make_dirs(missing: Iterable[Path]) -> list[Path]:
    """Create ``missing`` (top first, without recursion); returns those this call created."""
    made: list[Path] = []
    for directory in missing:
        try:
            os.mkdir(directory)
            made.append(directory)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
    return made


def _remove_dirs(made: list[Path]) -> None:
    for directory in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def fsync_dir(directory: Path) -> None:
    """Make a new entry of ``directory`` (a rename, a link) durable.  Some filesystems refuse
    to open or sync a directory; the entry itself is already there, so a failure here
    changes nothing and is let be."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Staged:
    """One file's new content, written and synced beside the target, not yet in place.

    ``commit()`` renames it over the target; ``discard()`` (or leaving a ``with`` block
    without committing) removes it.  Staging every file of a change first and committing
    only when all are staged is how a multi-file change (a patch) is all or nothing: running
    out of space happens while staging, before any target changed.
    """

    def __init__(self, path: Path | str, data: bytes | str | Iterable[bytes], *,
                 shown: str | None = None,
                 mode: int | None = None, make_parents: bool = False,
                 fsync: bool = True) -> None:
        self.shown = shown if shown is not None else str(path)
        self.target = _resolve_target(Path(path))
        self.tmp: Path | None = None
        self._made: list[Path] = []
        self._durable = fsync
        if isinstance(data, str):
            payload: Iterable[bytes] = (data.encode("utf-8"),)
        elif isinstance(data, (bytes, bytearray, memoryview)):
            payload = (bytes(data),)
        else:  # chunks: a large content need not exist twice in memory
            payload = data
        try:
            self._stage(payload, mode, make_parents, fsync)
        except OSError as exc:
            self.discard()
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> AtomicWriteError:
        if isinstance(exc, AtomicWriteError):
            return exc
        detail = ""
        parent = self.target.parent
        if exc.errno in (errno.EACCES, errno.EPERM) and exc.filename == str(self.tmp or ""):
            detail = f"cannot create a file in {parent}"
        return AtomicWriteError(self.shown, exc, detail)

    def _stage(self, payload: Iterable[bytes], mode: int | None, make_parents: bool,
               fsync: bool) -> None:
        parent = self.target.parent
        if make_parents:
            self._made = _make_dirs(_missing_dirs(parent))
        try:
            old = os.stat(self.target)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISDIR(old.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(self.target))
        if old is not None and not stat.S_ISREG(old.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe, socket or device)",
                          str(self.target))
        name = self.target.name
        # A short random tail keeps concurrent writers (two processes, two threads) apart;
        # the leading dot keeps the file out of most listings for the instant it exists.
        tmp = parent / f".{name[:200]}.{secrets.token_hex(4)}.tmp"
        self.tmp = tmp
        wanted = mode if mode is not None else 0o666
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     wanted & 0o777)
        try:
            for chunk in payload:
                view = memoryview(chunk)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            if old is not None:
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    # Only root may give a file away; for anyone else the new file is theirs.
                    # Before the chmod: a chown clears set-id bits.
                    with contextlib.suppress(OSError):
                        os.fchown(fd, old.st_uid, old.st_gid)
                if mode is None:
                    os.fchmod(fd, stat.S_IMODE(old.st_mode))
            if mode is not None:
                os.fchmod(fd, mode & 0o7777)  # exact, whatever the umask
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def commit(self) -> None:
        """Rename the staged file over the target (the moment the change becomes visible)."""
        if self.tmp is None:
            raise RuntimeError("nothing staged")
        try:
            os.replace(self.tmp, self.target)
        except OSError as exc:
            self.discard()
            raise self._error(exc) from None
        self.tmp = None
        self._made = []
        if self._durable:  # a rename made durable over content that is not would be moot
            fsync_dir(self.target.parent)

    def discard(self) -> None:
        """Remove the staged file and any directory made for it; the target is untouched."""
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None
        _remove_dirs(self._made)
        self._made = []

    def __enter__(self) -> Staged:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()


def atomic_write(path: Path | str, data: bytes | str | Iterable[bytes], *,
                 shown: str | None = None,
                 mode: int | None = None, make_parents: bool = False,
                 fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` (bytes, text written as UTF-8, or an iterable of byte
    chunks), all or nothing.

    ``shown`` is the path as the caller's user knows it (it starts the error message);
    ``mode`` sets the permission bits exactly (default: an existing file's own bits, or
    0o666 less the umask for a new one); ``make_parents`` creates missing directories (and
    removes them again if the write fails).  ``fsync=False`` (a cache the next run can
    rebuild) syncs neither the file nor its directory: all or nothing still, durable when
    the system gets to it.  Raises :class:`AtomicWriteError`, the target unchanged.
    """
    Staged(path, data, shown=shown, mode=mode, make_parents=make_parents,
           fsync=fsync).commit()


def atomic_move(src: Path | str, dst: Path | str, *, shown: str | None = None,
                make_parents: bool = False) -> None:
    """Move the file or symlink ``src`` to ``dst``, across filesystems if need be.

    On one filesystem this is a rename.  Across filesystems (``EXDEV``) the content is staged
    beside ``dst`` and committed like :func:`atomic_write` before ``src`` is removed, so a
    full disk at the target leaves ``src`` where it was and no partial ``dst``.  An existing
    ``dst`` is replaced, as by rename.  Raises :class:`AtomicWriteError`.
    """
    src, dst = Path(src), Path(dst)
    shown = shown if shown is not None else str(dst)
    made: list[Path] = []
    try:
        if make_parents:
            made = _make_dirs(_missing_dirs(dst.parent))
        os.rename(src, dst)
        fsync_dir(dst.parent)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            _remove_dirs(made)
            raise AtomicWriteError(shown, exc) from None
    try:
        info = os.lstat(src)
    except OSError as exc:
        _remove_dirs(made)
        raise AtomicWriteError(shown, exc) from None
    if stat.S_ISLNK(info.st_mode):
        _move_symlink(src, dst, shown, made)
        return
    try:
        with open(src, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        _remove_dirs(made)
        raise AtomicWriteError(shown, exc) from None
    try:
        Staged(dst, data, shown=shown, mode=stat.S_IMODE(info.st_mode)).commit()
    except AtomicWriteError:
        _remove_dirs(made)
        raise
    with contextlib.suppress(OSError):
        os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
    try:
        os.unlink(src)
    except OSError as exc:
        # The copy is in place; the original could not be removed: say so rather than
        # pretend the move failed (both copies exist, nothing is lost).
        raise OSError(exc.errno, f"copied to {shown}, but the original could not be removed: "
                                 f"{describe_os_error(exc)}", str(src)) from None


def _move_symlink(src: Path, dst: Path, shown: str, made: list[Path]) -> None:
    tmp = dst.parent / f".{dst.name[:200]}.{secrets.token_hex(4)}.tmp"
    try:
        os.symlink(os.readlink(src), tmp)
        os.replace(tmp, dst)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _remove_dirs(made)
        raise AtomicWriteError(shown, exc) from None
    os.unlink(src)
