"""Persistence walls: the workspace files that make a program run later, or change how an
agent behaves later, are read-only to every sandboxed process, whether they exist or not.

A command that may write the workspace could otherwise plant ``.git/hooks/pre-commit`` (git
runs it, outside any sandbox, at the user's next commit), ``core.fsmonitor`` in
``.git/config``, an ``.envrc`` (direnv runs it in the user's shell), ``.vscode/tasks.json``,
or the agent's own project config.  :data:`PERSISTENCE` lists them with what each does;
the file tools ask before writing any of them (the ``protect`` plugin) and the sandbox
mounts them read-only (:func:`mounts`).

The mechanism is bind mounts, because the kernel enforces them on every path the process
can take: an existing path is bound read-only over itself (``rename``, ``unlink`` and
``rmdir`` of a mount point fail with ``EBUSY``, so ``mv .git/hooks x`` cannot swap it out).
A path that does not exist yet needs a mount point to exist on the host: a *placeholder*
(an empty file or directory, created here, not by bubblewrap) that is removed again once
no sandbox of any agent process on this machine uses it.  Removing a mount point on the
host detaches the mount in every live sandbox, so removal waits for an exclusive lock that
every process holds shared while one of its sandboxes runs (:class:`Placeholders`).  ``.git``
itself is a mount point (a writable bind of itself), so ``mv .git .g; mkdir .git`` fails.
Landlock could not do this: it cannot refuse one name in a writable directory.

In the ``read-only`` sandbox nothing in the workspace is writable, so no wall is needed.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Persistent:
    """One persistence path: ``path`` relative to the workspace, ``folder`` True for a
    directory (walled whole), and ``does``: what it does, said to the user in the dialog."""

    path: str
    folder: bool
    does: str


#: The walls, in mount order (a folder before the paths inside it).
PERSISTENCE: tuple[Persistent, ...] = (
    Persistent(".git/hooks", True, "git runs the programs in .git/hooks on commit, checkout, "
               "merge and push"),
    Persistent(".git/config", False, "git reads this repository's settings from .git/config; "
               "some of them run programs (core.fsmonitor, core.pager, aliases)"),
    Persistent(".git/config.worktree", False, "git reads this worktree's settings from it; "
               "some of them run programs"),
    Persistent(".git/info", True, "git reads attributes and excludes from .git/info "
               "(attribute filters run programs)"),
    Persistent(".git/modules", True, "the submodules' git data: their hooks and settings run "
               "programs"),
    Persistent(".envrc", False, "direnv runs .envrc in your shell when you enter the folder"),
    Persistent(".vscode", True, "VS Code runs tasks and applies settings from .vscode"),
    Persistent(".idea", True, "JetBrains IDEs run configurations from .idea"),
    Persistent(".agent", True, "agent's own project config, skills and commands: they change "
               "what agent does here"),
    Persistent(".claude", True, "Claude Code's project settings, hooks and commands"),
    Persistent(".mcp.json", False, "MCP servers that agents start for this project"),
)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def persistent_entry(relative: str) -> Persistent | None:
    """The wall ``relative`` (a path relative to the workspace, ``/``-separated, folded)
    falls under, or None.  ``.git`` itself counts: rewriting it points git elsewhere."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts:
        return None
    text = "/".join(parts)
    if text == ".git":
        return Persistent(".git", False, "git's repository (or, as a file, where it is): "
                          "rewriting it points git at other hooks and settings")
    for entry in PERSISTENCE:
        if text == entry.path or (entry.folder and _inside(text, entry.path)):
            return entry
    return None


@dataclass(frozen=True)
class Wall:
    """One mount of the walls: ``kind`` is ``ro`` (bind read-only over itself) or ``rw``
    (bind writable over itself: only ``.git``, so it is a mount point)."""

    path: str
    kind: str


def plan(workspace: str, unwalled: tuple[str, ...] = ()) -> tuple[list[Wall], list[Persistent]]:
    """The walls for ``workspace`` and the persistence paths that are missing (each needs a
    placeholder before the walls can be mounted).  ``unwalled`` are paths relative to the
    workspace that the call was approved to write: the walls on them, under them, or over
    them are left out (``.git`` itself stays a mount point unless named)."""
    lifts = [os.path.normpath(u) for u in unwalled]

    def lifted(rel: str) -> bool:
        return any(_inside(rel, u) or (rel != ".git" and _inside(u, rel)) for u in lifts)

    walls: list[Wall] = []
    missing: list[Persistent] = []
    git = os.path.join(workspace, ".git")
    if not lifted(".git"):
        if os.path.islink(git) or (os.path.lexists(git) and not os.path.isdir(git)):
            # a worktree's or submodule's ".git" file (or a link): it says where the
            # repository is, so it is walled whole; what it points at is outside the
            # workspace, read-only anyway
            return [Wall(git, "ro")], missing
        if os.path.isdir(git):
            walls.append(Wall(git, "rw"))  # a mount point: cannot be renamed away
        else:
            missing.append(Persistent(".git", True, "git's repository"))
            walls.append(Wall(git, "ro"))
            return walls, missing + _missing_top(workspace, walls, lifted)
    for entry in PERSISTENCE:
        if lifted(entry.path):
            continue
        full = os.path.join(workspace, entry.path)
        if not os.path.lexists(full):
            missing.append(entry)
        walls.append(Wall(full, "ro"))
    return walls, missing


def _missing_top(workspace: str, walls: list[Wall], lifted) -> list[Persistent]:  # type: ignore[no-untyped-def]
    """The walls outside ``.git`` (when ``.git`` is walled whole)."""
    missing = []
    for entry in PERSISTENCE:
        if entry.path.startswith(".git/") or lifted(entry.path):
            continue
        full = os.path.join(workspace, entry.path)
        if not os.path.lexists(full):
            missing.append(entry)
        walls.append(Wall(full, "ro"))
    return missing


def _lock_dir() -> str:
    """A folder of this user's, shared by every agent process on the machine."""
    folder = os.path.join(tempfile.gettempdir(), f"agent-walls-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    import stat

    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{folder} is not a private folder of this user; the sandbox's walls "
                      "cannot be coordinated")
    return folder


class Placeholders:
    """The placeholders of one workspace, shared by every agent process on the machine.

    :meth:`acquire` takes the workspace's lock shared, creates what is missing (an empty
    file or directory, recorded with its inode in a manifest next to the lock), and returns
    a token; :meth:`release` drops the token and, when it can take the lock exclusively (no
    sandbox of any process still uses the walls), removes the recorded placeholders that
    are still empty and still the same inode (a real file put there since is kept).
    """

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        digest = hashlib.sha256(workspace.encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self._base = os.path.join(_lock_dir(), digest)
        self._mutex = threading.Lock()
        self._users = 0
        self._fd: int | None = None
        atexit.register(self.close)

    def acquire(self, missing: list[Persistent]) -> None:
        """Hold the walls for one sandboxed process, creating the placeholders it needs."""
        with self._mutex:
            if self._fd is None:
                self._fd = os.open(self._base + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                                   0o600)
                fcntl.flock(self._fd, fcntl.LOCK_SH)
            self._users += 1
            if missing:
                self._create(missing)

    def _edit_lock(self) -> int:
        """An exclusive lock around reading and rewriting the manifest (processes holding
        the walls' lock shared may add placeholders at the same time)."""
        fd = os.open(self._base + ".edit", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def _create(self, missing: list[Persistent]) -> None:
        lock = self._edit_lock()
        try:
            self._create_locked(missing)
        finally:
            os.close(lock)

    def _create_locked(self, missing: list[Persistent]) -> None:
        made = self._manifest()
        for entry in missing:
            full = os.path.join(self.workspace, entry.path)
            try:
                if entry.folder:
                    os.mkdir(full, 0o755)
                else:
                    os.close(os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
                                     | os.O_NOFOLLOW, 0o644))
            except FileExistsError:
                continue  # made meanwhile (by the user, or another process): walled as is
            except FileNotFoundError:
                # its folder is missing too (.git/hooks without .git): the folder's wall
                # covers it
                continue
            made.append([full, os.lstat(full).st_ino])
        self._write_manifest(made)

    def _manifest(self) -> list[list[Any]]:
        try:
            with open(self._base + ".json", encoding="utf-8") as handle:
                data = json.load(handle)
            return [item for item in data if isinstance(item, list) and len(item) == 2]
        except (OSError, ValueError):
            return []

    def _write_manifest(self, items: list[list[Any]]) -> None:
        temp = self._base + f".json.{os.getpid()}"
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(items, handle)
        os.replace(temp, self._base + ".json")

    def release(self) -> None:
        """One sandboxed process ended; tidy up when it was the last on the machine."""
        with self._mutex:
            self._users -= 1
            if self._users > 0 or self._fd is None:
                return
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass  # another process's sandbox still runs: it tidies up
            else:
                self._remove_all()
            os.close(self._fd)
            self._fd = None

    def _remove_all(self) -> None:
        kept = []
        for full, inode in reversed(self._manifest()):
            try:
                info = os.lstat(full)
            except FileNotFoundError:
                continue
            if info.st_ino != inode:
                continue  # not ours any more
            try:
                if os.path.isdir(full) and not os.path.islink(full):
                    os.rmdir(full)  # fails when something was put inside: then it stays
                elif info.st_size == 0:
                    os.unlink(full)
            except OSError:
                kept.append([full, inode])
        self._write_manifest(kept)

    def close(self) -> None:
        """At exit: release whatever is still held (a long-running sandboxed server)."""
        with self._mutex:
            held = self._users
        if held:
            with self._mutex:
                self._users = 1
            self.release()
