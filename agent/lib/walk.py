"""The ignore-aware workspace walker behind glob, grep, list_dir and the ``@`` file picker.

It honours ``.gitignore`` and ``.agentignore`` files at every level the way git does: a file's
rules apply to its own directory and below, paths are matched relative to that directory, a
deeper file overrides a shallower one, and within one directory later rules win
(``.agentignore`` is read after ``.gitignore``, so it can re-include what git ignores).
Patterns use gitignore syntax (``!`` negation, trailing ``/`` for directories, leading ``/``
anchoring, ``*``, ``?``, ``**``) through :class:`pathspec.GitIgnoreSpec`.

``.git`` and ``node_modules`` are never entered, even with ``include_ignored``; pipes,
sockets and devices are left out.  Symlinked
directories are reported as directories but never descended, so a walk cannot leave the
workspace or loop.  Entries come in breadth-first order, sorted by name within a directory.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pathspec

#: Directory names the walker never enters.
SKIP_NAMES = frozenset({".git", "node_modules"})

#: Ignore files read in every directory, in this order (later rules win).
IGNORE_FILES = (".gitignore", ".agentignore")


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """One path found by the walker."""

    path: str  # posix, relative to the walk root
    is_dir: bool  # a directory, or a symlink to one
    is_symlink: bool
    depth: int  # 1 for the root's children


def _load_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    """The combined rules of ``directory``'s ignore files, or None when it has none."""
    import pathspec  # ~10 ms: paid on the first ignore file, not at startup

    lines: list[str] = []
    for name in IGNORE_FILES:
        try:
            text = (directory / name).read_text(encoding="utf-8", errors="replace")
        except OSError:  # missing, unreadable, or a directory by that name
            continue
        lines.extend(text.splitlines())
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:
        # One malformed line must not void the whole file: keep the lines that parse.
        good = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except Exception:
                continue
            good.append(line)
        return pathspec.GitIgnoreSpec.from_lines(good) if good else None


# A chain of (base dir relative to root with trailing "/" or "", spec), shallowest first.
_Rules = tuple[tuple[str, Any], ...]


def _ignored(rules: _Rules, rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` is ignored: the deepest ignore file with an opinion decides."""
    for base, spec in reversed(rules):
        sub = rel[len(base):] + ("/" if is_dir else "")
        decision = spec.check_file(sub).include
        if decision is not None:
            return bool(decision)
    return False


def _with_rules(rules: _Rules, directory: Path, rel: str) -> _Rules:
    spec = _load_spec(directory)
    if spec is None:
        return rules
    return (*rules, (rel + "/" if rel else "", spec))


def walk_entries(root: str | os.PathLike[str], *, start: str = "", include_dirs: bool = False,
                 include_ignored: bool = False, max_count: int | None = None,
                 max_depth: int | None = None) -> Iterator[WalkEntry]:
    """Yield the entries under ``root`` (or under its subdirectory ``start``).

    Files only unless ``include_dirs``; ignored paths are skipped unless ``include_ignored``;
    at most ``max_count`` entries; entries deeper than ``max_depth`` below ``start`` are not
    visited.  A ``start`` that leaves ``root``, passes through a symlink, an ignored or a
    skipped directory, or is not a directory yields nothing, exactly as a full walk would
    never reach it.  Paths in the entries are always relative to ``root``.
    """
    if max_count is not None and max_count <= 0:
        return
    root_path = Path(os.path.realpath(root))
    rules: _Rules = ()
    if not include_ignored:
        rules = _with_rules(rules, root_path, "")
    rel = ""
    parts = [p for p in Path(start).as_posix().split("/") if p not in ("", ".")] if start else []
    for part in parts:
        if part == ".." or part in SKIP_NAMES:
            return
        here = root_path / rel / part if rel else root_path / part
        if here.is_symlink() or not here.is_dir():
            return
        rel = f"{rel}/{part}" if rel else part
        if not include_ignored:
            if _ignored(rules, rel, True):
                return
            rules = _with_rules(rules, here, rel)
    count = 0
    queue: deque[tuple[str, _Rules, int]] = deque([(rel, rules, 0)])
    while queue:
        dir_rel, dir_rules, depth = queue.popleft()
        directory = root_path / dir_rel if dir_rel else root_path
        try:
            with os.scandir(directory) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in children:
            name = entry.name
            if name in SKIP_NAMES:
                continue
            child_rel = f"{dir_rel}/{name}" if dir_rel else name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir()  # follows links: a link to a directory is a directory
                # Pipes, sockets and devices are not files: reading one could block forever.
                # (A symlink is kept even when dangling; readers check its target.)
                if not (is_dir or is_link or entry.is_file(follow_symlinks=False)):
                    continue
            except OSError:
                continue
            if dir_rules and _ignored(dir_rules, child_rel, is_dir):
                continue
            if is_dir:
                if include_dirs:
                    yield WalkEntry(child_rel, True, is_link, depth + 1)
                    count += 1
                    if max_count is not None and count >= max_count:
                        return
                if not is_link and (max_depth is None or depth + 1 < max_depth):
                    child_rules = (_with_rules(dir_rules, directory / name, child_rel)
                                   if not include_ignored else dir_rules)
                    queue.append((child_rel, child_rules, depth + 1))
            else:
                yield WalkEntry(child_rel, False, is_link, depth + 1)
                count += 1
                if max_count is not None and count >= max_count:
                    return


def walk(root: str | os.PathLike[str], *, include_dirs: bool = False,
         include_ignored: bool = False, max_count: int | None = None,
         start: str = "") -> Iterator[str]:
    """The relative posix paths :func:`walk_entries` finds (files only unless asked)."""
    for entry in walk_entries(root, start=start, include_dirs=include_dirs,
                              include_ignored=include_ignored, max_count=max_count):
        yield entry.path
