"""The trash: deleted files are moved aside, per session, and can be restored.

Layout: ``<state_dir>/trash/<session id or "nosession">/<timestamp>-<n>/<relative path>``
holds the file; ``<state_dir>/trash/<session>/index.json`` lists the entries (id, original
absolute path, workspace, relative path, time, size).  An entry's id is its
``<timestamp>-<n>`` directory name; ``SESSION/ID`` picks one when two sessions share an id.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from agent import atomic_move, atomic_write

NO_SESSION = "nosession"
INDEX = "index.json"


@dataclass
class TrashEntry:
    """One trashed file."""

    id: str
    session: str
    original: str  # absolute path it was deleted from
    workspace: str
    relative: str  # posix path relative to the workspace
    time: float
    size: int

    def stored(self, state_dir: Path) -> Path:
        """Where the file sits in the trash."""
        return trash_root(state_dir) / self.session / self.id / self.relative


class TrashError(Exception):
    """A trash operation that cannot be done; the message says why."""


def trash_root(state_dir: Path) -> Path:
    return Path(state_dir) / "trash"


def _safe_session(session_id: str | None) -> str:
    name = "".join(ch for ch in (session_id or "") if ch.isalnum() or ch in "-_.")
    return name.strip(".") or NO_SESSION


def _read_index(session_dir: Path) -> list[dict]:
    try:
        data = json.loads((session_dir / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def _write_index(session_dir: Path, items: list[dict]) -> None:
    session_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(session_dir / INDEX, json.dumps(items, indent=1))


def _move(src: Path, dst: Path) -> None:
    """Move a file (or symlink) across filesystems if need be; all or nothing (a full disk
    leaves ``src`` where it was and no partial copy)."""
    atomic_move(src, dst, make_parents=True)


def move_to_trash(state_dir: Path, session_id: str | None, workspace: Path, real: Path,
                  relative: str) -> TrashEntry:
    """Move the file ``real`` (``relative`` to ``workspace``) into the session's trash."""
    return _store(state_dir, session_id, workspace, real, relative, real.lstat().st_size,
                  lambda stored: atomic_move(real, stored, shown=relative, make_parents=True),
                  moved=True)


def keep_copy(state_dir: Path, session_id: str | None, workspace: Path, real: Path,
              relative: str, data: bytes) -> TrashEntry:
    """Put ``data``, the content ``real`` had before it was overwritten, in the trash as if
    the old file had been deleted, so that restoring it brings the old content back."""
    return _store(state_dir, session_id, workspace, real, relative, len(data),
                  lambda stored: atomic_write(stored, data, shown=relative, make_parents=True),
                  moved=False)


def _store(state_dir: Path, session_id: str | None, workspace: Path, real: Path,
           relative: str, size: int, put: Callable[[Path], object], *,
           moved: bool) -> TrashEntry:
    """Claim an entry id, ``put`` the content at its place and list it in the index;
    ``moved`` says the file itself was moved there (and goes back if the index fails)."""
    session = _safe_session(session_id)
    session_dir = trash_root(state_dir) / session
    stamp = time.strftime("%Y%m%d-%H%M%S")
    session_dir.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:  # mkdir is the atomic claim on an id
        try:
            (session_dir / f"{stamp}-{n}").mkdir()
            break
        except FileExistsError:
            n += 1
    entry_id = f"{stamp}-{n}"
    entry = TrashEntry(entry_id, session, str(real), str(workspace), relative, time.time(), size)
    try:
        put(entry.stored(state_dir))
    except OSError:
        shutil.rmtree(session_dir / entry_id, ignore_errors=True)
        raise
    items = _read_index(session_dir)
    items.append(asdict(entry))
    try:
        _write_index(session_dir, items)
    except OSError:
        # A trashed file the index does not list could never be restored: put it back.
        if moved:
            atomic_move(entry.stored(state_dir), real, shown=relative)
        shutil.rmtree(session_dir / entry_id, ignore_errors=True)
        raise
    return entry


def entries(state_dir: Path) -> list[TrashEntry]:
    """Every entry in the trash, newest first."""
    found: list[TrashEntry] = []
    root = trash_root(state_dir)
    if not root.is_dir():
        return found
    for session_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for item in _read_index(session_dir):
            try:
                found.append(TrashEntry(**item))
            except TypeError:
                continue
    found.sort(key=lambda e: (e.time, e.id), reverse=True)
    return found


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)}K"
    return f"{size / (1024 * 1024):.1f}M"


def _shown(entry: TrashEntry, workspace: Path | None) -> str:
    if workspace is not None:
        try:
            return Path(entry.original).relative_to(os.path.realpath(workspace)).as_posix()
        except ValueError:
            pass
    return entry.original


def list_text(state_dir: Path, workspace: Path | None, *, show_all: bool = False,
              session_id: str | None = None, limit: int = 50) -> str:
    """The listing ``/trash`` and ``agent trash list`` print."""
    items = entries(state_dir)
    root = os.path.realpath(workspace) if workspace is not None else None
    if not show_all and root is not None:
        items = [e for e in items if e.original == root or e.original.startswith(root + os.sep)]
    if not items:
        where = "" if show_all or root is None else " for this workspace"
        return f"The trash is empty{where}."
    current = _safe_session(session_id) if session_id else None
    lines = [f"{len(items)} deleted file(s), newest first:"]
    for entry in items[:limit]:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.time))
        mark = "  (this session)" if entry.session == current else ""
        lines.append(f"  {entry.id}  {_shown(entry, None if show_all else workspace)}  "
                     f"{_human_size(entry.size)}  {when}  session {entry.session}{mark}")
    if len(items) > limit:
        lines.append(f"  ... {len(items) - limit} more")
    lines.append("Restore one with: restore ID")
    return "\n".join(lines)


def find(state_dir: Path, ident: str) -> TrashEntry:
    """The entry named ``ID`` or ``SESSION/ID``."""
    session, _, entry_id = ident.rpartition("/")
    hits = [e for e in entries(state_dir)
            if e.id == entry_id and (not session or e.session == session)]
    if not hits:
        raise TrashError(f"No trash entry {ident}. List them with: trash list --all")
    if len(hits) > 1:
        options = ", ".join(f"{e.session}/{e.id}" for e in hits)
        raise TrashError(f"{ident} is in several sessions' trash; name one of: {options}")
    return hits[0]


def restore(state_dir: Path, ident: str) -> str:
    """Put a trashed file back where it was; never overwrites."""
    entry = find(state_dir, ident)
    target = Path(entry.original)
    if os.path.lexists(target):
        raise TrashError(f"Not restored: {target} already exists. Move it away first, then "
                         f"restore {ident} again (it would go back to {target}).")
    stored = entry.stored(state_dir)
    if not os.path.lexists(stored):
        raise TrashError(f"The trashed copy of {target} is gone from {stored}.")
    try:
        _move(stored, target)
    except OSError as exc:
        raise TrashError(f"Cannot restore to {target}: {exc.strerror or exc}") from None
    session_dir = trash_root(state_dir) / entry.session
    items = [i for i in _read_index(session_dir) if i.get("id") != entry.id]
    _write_index(session_dir, items)
    shutil.rmtree(session_dir / entry.id, ignore_errors=True)
    return f"Restored {target} ({entry.size} bytes)"


USAGE = "usage: trash [list [--all] | restore ID]"


def command_text(state_dir: Path, workspace: Path | None, args: str | list[str],
                 session_id: str | None = None) -> tuple[str, bool]:
    """Run ``list``/``restore`` from words; returns (text, ok).  Shared by ``/trash`` and
    ``agent trash``."""
    words = args.split() if isinstance(args, str) else list(args)
    if not words or words[0] == "list":
        rest = words[1:]
        if rest and rest != ["--all"]:
            return USAGE, False
        return list_text(state_dir, workspace, show_all=bool(rest),
                         session_id=session_id), True
    if words[0] == "restore":
        if len(words) != 2:
            return USAGE, False
        try:
            return restore(state_dir, words[1]), True
        except TrashError as exc:
            return str(exc), False
    return USAGE, False
