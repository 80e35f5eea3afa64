"""What the model last saw of each file, and writes that only land over exactly that.

Every read and write of a file tool records a digest of the file's bytes for the session that
made it.  A tool that changes a file then writes through :func:`commit_checked`: the new content
is staged beside the target, and only under an advisory lock on the target's directory is the
file compared with what the change was based on and the staged copy renamed over it.  Check and
rename are one step for every writer that takes the lock (two agents, two sessions, two
threads), so two writers can never both win; a writer that takes no lock (a person's editor)
is caught by the comparison, which fails closed: the change is refused, nothing is touched, and
the refusal shows what changed since (a short diff) so the model can read the file again.

A file this session never saw is replaced whole only when it does not exist yet (``write_file``
to a new path); the edit tools base every change on a fresh read made inside the same step.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import fcntl
import hashlib
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import AtomicWriteError, Staged, ToolContext, ToolError

#: The text kept per file to show a diff when it changes under the model (larger files are
#: described by size only).
DIFF_KEEP_BYTES = 256 * 1024
#: How many files' texts one session keeps for diffs (digests are kept for every file).
DIFF_KEEP_FILES = 64
#: Lines of diff a refusal shows at most.
DIFF_LINES = 40
#: How long a writer waits for another one's lock before refusing (they hold it for the
#: duration of one rename).
LOCK_WAIT = 10.0


@dataclass(frozen=True)
class Seen:
    """One file as the model last saw it: a digest, and its bytes when small."""

    digest: str
    size: int
    data: bytes | None = None


def digest_of(data: bytes | None) -> str:
    """The digest recorded for ``data`` (``missing`` for a file that does not exist)."""
    return "missing" if data is None else hashlib.sha256(data).hexdigest()


class _Book:
    """Per-session records, shared by the tools' threads.  A session's records live as long
    as the session object does (weak keys): a long-lived process (``agent acp``, a UI that
    resumes session after session) does not keep every finished session's files."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: MutableMapping[Any, dict[str, Seen]] = weakref.WeakKeyDictionary()
        self._texts: MutableMapping[Any, OrderedDict[str, None]] = weakref.WeakKeyDictionary()

    def put(self, key: str, path: str, seen: Seen) -> None:
        with self._lock:
            files = self._digests.setdefault(key, {})
            order = self._texts.setdefault(key, OrderedDict())
            files[path] = seen
            order.pop(path, None)
            if seen.data is not None:
                order[path] = None
                while len(order) > DIFF_KEEP_FILES:
                    oldest, _ = order.popitem(last=False)
                    old = files.get(oldest)
                    if old is not None:  # keep the digest, drop the text
                        files[oldest] = Seen(old.digest, old.size)

    def get(self, key: str, path: str) -> Seen | None:
        with self._lock:
            return self._digests.get(key, {}).get(path)

    def drop(self, key: str, path: str) -> None:
        with self._lock:
            self._digests.get(key, {}).pop(path, None)
            self._texts.get(key, OrderedDict()).pop(path, None)


_BOOK = _Book()


class _Keys:
    """Stand-in keys, weakly referable, for what cannot be a weak key itself: calls without a
    session, and session objects that are not hashable (kept by id, for the process)."""

    _by_id: dict[str, _Keys] = {}

    @classmethod
    def of(cls, name: str) -> _Keys:
        return cls._by_id.setdefault(name, cls())


def _key(ctx: ToolContext) -> Any:
    session = ctx.session
    if session is None:
        return _Keys.of("")
    try:
        weakref.ref(session)
        hash(session)
    except TypeError:
        return _Keys.of(str(getattr(session, "id", "") or ""))
    return session


def _path_key(real: Path) -> str:
    return os.path.realpath(real)


def record(ctx: ToolContext, real: Path, data: bytes | None) -> None:
    """Note that the model now knows ``real`` holds ``data`` (None: it does not exist)."""
    if data is None:
        _BOOK.drop(_key(ctx), _path_key(real))
        return
    kept = data if len(data) <= DIFF_KEEP_BYTES else None
    _BOOK.put(_key(ctx), _path_key(real), Seen(digest_of(data), len(data), kept))


def record_digest(ctx: ToolContext, real: Path, digest: str, size: int) -> None:
    """Like :func:`record`, for a file read in pieces (no text kept for a diff)."""
    _BOOK.put(_key(ctx), _path_key(real), Seen(digest, size))


def forget(ctx: ToolContext, real: Path) -> None:
    """The model no longer knows ``real`` (it was moved away or deleted)."""
    _BOOK.drop(_key(ctx), _path_key(real))


def moved(ctx: ToolContext, src: Path, dst: Path) -> None:
    """``src`` was renamed to ``dst``: what the model saw of one is what it knows of the
    other."""
    key = _key(ctx)
    before = _BOOK.get(key, _path_key(src))
    _BOOK.drop(key, _path_key(src))
    if before is not None:
        _BOOK.put(key, _path_key(dst), before)


def last_seen(ctx: ToolContext, real: Path) -> Seen | None:
    """What this session last saw of ``real``, or None when it never read or wrote it."""
    return _BOOK.get(_key(ctx), _path_key(real))


def _text(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def what_changed(before: Seen | None, now: bytes | None, shown: str) -> str:
    """A short account of how ``shown`` differs from what the model saw: a unified diff when
    both sides are small text, else their sizes."""
    if now is None:
        return f"{shown} has been deleted since."
    if before is None or before.data is None or len(now) > DIFF_KEEP_BYTES:
        was = f"{before.size:,} bytes when you last saw it" if before is not None else "unknown"
        return f"It is now {len(now):,} bytes ({was})."
    lines = list(difflib.unified_diff(_text(before.data), _text(now), f"{shown} (you saw)",
                                      f"{shown} (now)", n=1))
    if not lines:
        return "Its bytes differ (line ends or encoding)."
    body = [line if line.endswith("\n") else line + "\n" for line in lines]
    if len(body) > DIFF_LINES:
        more = len(body) - DIFF_LINES
        body = body[:DIFF_LINES] + [f"... ({more} more diff lines)\n"]
    return "What changed since:\n" + "".join(body).rstrip("\n")


def changed_error(shown: str, before: Seen | None, now: bytes | None, verb: str) -> ToolError:
    """The refusal for a file that no longer holds what the change was based on."""
    return ToolError(f"{shown} changed since you last read it (another program or agent wrote "
                     f"it), so it was not {verb}; nothing was written. Read it again and "
                     f"redo the change.\n{what_changed(before, now, shown)}")


def check_fresh(ctx: ToolContext, real: Path, data: bytes | None, shown: str, verb: str) -> None:
    """Refuse when this session saw ``real`` and ``data`` (its bytes now) is not what it
    saw."""
    before = last_seen(ctx, real)
    if before is not None and before.digest != digest_of(data):
        raise changed_error(shown, before, data, verb)


@contextlib.contextmanager
def directory_lock(directory: Path, shown: str) -> Iterator[None]:
    """An exclusive advisory lock (``flock``) on ``directory`` itself: every file tool takes
    it around check-and-rename, in this process and any other.  A directory keeps its inode
    when files in it are renamed over, so all writers of one file meet on one lock."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if time.monotonic() > deadline:
                    raise ToolError(f"{shown} is being written by another program (its "
                                    f"directory stayed locked for {LOCK_WAIT:.0f} s); "
                                    "nothing was written. Try again.") from None
                time.sleep(0.002)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def current_bytes(real: Path) -> bytes | None:
    """The bytes of ``real`` now; None when it does not exist."""
    try:
        with open(real, "rb") as fh:
            return fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def as_seen(data: bytes | None) -> Seen | None:
    """``data`` as a :class:`Seen` record (for a diff against it)."""
    if data is None:
        return None
    return Seen(digest_of(data), len(data), data if len(data) <= DIFF_KEEP_BYTES else None)


def verify(target: Path, based_on: bytes | None, now: bytes | None, shown: str,
           verb: str) -> None:
    """Refuse (:func:`changed_error`) when ``target`` holds ``now`` and not ``based_on``.
    Call it under :func:`directory_lock`."""
    if digest_of(now) != digest_of(based_on):
        if based_on is None:
            raise ToolError(f"{shown} was created by another program or agent while this "
                            f"change was being made, so it was not {verb}; nothing was "
                            f"written. Read it and redo the change.")
        raise changed_error(shown, as_seen(based_on), now, verb)


@contextlib.contextmanager
def directories_locked(directories: list[Path], shown: str) -> Iterator[None]:
    """:func:`directory_lock` on several directories, always taken in one order (by path) so
    two writers of overlapping sets cannot wait on each other forever."""
    with contextlib.ExitStack() as stack:
        for directory in sorted(set(directories), key=str):
            stack.enter_context(directory_lock(directory, shown))
        yield


def commit_checked(ctx: ToolContext, real: Path, shown: str, based_on: bytes | None,
                   data: bytes, verb: str = "changed") -> None:
    """Replace ``real`` with ``data`` only if it still holds ``based_on`` (None: only if it
    still does not exist), atomically, and record ``data`` as seen.

    The content is staged first (written and synced beside the target); then, under the
    directory's lock, the target is compared and the staged file renamed over it.  On a
    mismatch the staged file is removed and :func:`changed_error` raised: the target is never
    touched.
    """
    try:
        staged = Staged(real, data, shown=shown, make_parents=True)
    except AtomicWriteError as exc:
        raise ToolError(str(exc)) from None
    with staged:
        with directory_lock(staged.target.parent, shown):
            now = current_bytes(staged.target)
            verify(staged.target, based_on, now, shown, verb)
            try:
                staged.commit()
            except AtomicWriteError as exc:
                raise ToolError(str(exc)) from None
    record(ctx, real, data)
