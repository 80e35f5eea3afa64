"""The installed plugins' entry points, without reading every distribution's metadata.

``importlib.metadata.entry_points()`` lists every ``sys.path`` folder and reads the
``entry_points.txt`` of every distribution it finds (about 150 in a plain virtualenv), and
importing ``importlib.metadata`` pulls in ``email``, ``zipfile`` and ``csv``: about 40 ms of
every start, ``--help`` included, spent finding the same few plugins.  So the result is kept
per ``sys.path`` entry in a small file in the state dir and re-read only where something
changed.

What is kept for an entry: the stat (mtime, ctime, inode, size) of the folder, which changes
whenever a distribution is added or removed there (``pip install``, an editable install's new
``.dist-info``, a plugin dropped on ``PYTHONPATH``), and for each distribution in it the stat
of its metadata folder and of its ``entry_points.txt`` (rewritten in place by
``setup.py egg_info``), plus the files its name and version come from when they are needed.
Any difference re-reads that one entry with ``importlib.metadata`` itself, so the result is
always what ``importlib.metadata.entry_points()`` would say.  A file modified less than two
seconds before it was read is not trusted (another write in the same clock tick would leave
its mtime equal): the next start reads that entry again.  The file is 0600 and only trusted
when it is this user's and nobody else's (:func:`agent.contain.private.read_private`); a
corrupt or foreign file is rebuilt.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from functools import reduce
from pathlib import Path
from typing import Any

#: Bumped when the file's shape changes, so an old file is rebuilt, never misread.
FORMAT = 1

#: A stat this recent may hide a change made in the same clock tick: read again next time.
RACY_NS = 2_000_000_000

#: How many ``sys.path`` entries of other runs (other working directories) are kept.
KEEP_OTHERS = 32

#: ``importlib.metadata.EntryPoint.pattern``: what ``module:attr [extras]`` may look like
#: (compiled on first use: ``--help`` loads no entry point).
_PATTERN = r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"

#: Folder names importlib.metadata takes for distribution metadata (lower-cased).
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg")


class EntryPoint:
    """One entry point of an installed distribution: what agent needs of
    :class:`importlib.metadata.EntryPoint`, plus its distribution's name and version."""

    __slots__ = ("name", "value", "group", "dist_name", "dist_version")

    def __init__(self, name: str, value: str, group: str, dist_name: str = "",
                 dist_version: str = "") -> None:
        self.name = name
        self.value = value
        self.group = group
        self.dist_name = dist_name
        self.dist_version = dist_version

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    def _match(self) -> re.Match[str]:
        match = re.match(_PATTERN, self.value)  # re caches the compiled pattern
        if match is None:
            raise ValueError(f"entry point {self.name} = {self.value!r} is not "
                             "'module:attribute'")
        return match

    @property
    def module(self) -> str:
        return self._match().group("module")

    @property
    def attr(self) -> str | None:
        return self._match().group("attr")

    def load(self) -> Any:
        """Import the module and return the named attribute (as importlib.metadata does)."""
        match = self._match()
        module = importlib.import_module(match.group("module"))
        attrs = filter(None, (match.group("attr") or "").split("."))
        return reduce(getattr, attrs, module)


def scan(groups: Sequence[str], cache_file: Path | None = None) -> list[EntryPoint]:
    """Every entry point of ``groups``, in the order ``importlib.metadata.entry_points()``
    lists them (``sys.path`` order, the first distribution of a name hiding later ones).
    With ``cache_file`` the unchanged ``sys.path`` entries are taken from it and the file is
    updated if anything was read anew; an entry this process read before and that has not
    changed since is not read again (:data:`_REMEMBERED`), with or without the file."""
    if not _only_path_finders():
        return _full_scan(groups)
    stored = _read(cache_file, groups) if cache_file is not None else {}
    remembered = _REMEMBERED.setdefault(tuple(groups), {})
    now = time.time_ns()
    fresh: dict[str, Any] = {}
    changed = False
    found: list[EntryPoint] = []
    seen: set[str] = set()
    wanted = set(groups)
    for entry in list(sys.path):
        if not isinstance(entry, str) or entry in fresh:
            continue  # importlib.metadata too looks at a repeated entry only the first time
        record = stored.get(entry)
        if record is None or not _current(record):
            record = remembered.get(entry)
            if record is None or not _current(record):
                try:
                    record = _read_entry(entry, groups, now)
                except _Unusual:
                    return _full_scan(groups)
            changed = True
        fresh[entry] = remembered[entry] = record
        for dist in record["dists"]:
            if dist["norm"] in seen:
                continue
            seen.add(dist["norm"])
            found.extend(EntryPoint(name, value, group, dist["name"], dist["version"])
                         for group, name, value in dist["eps"] if group in wanted)
    if cache_file is not None and changed:
        # entries of other runs' sys.path (python -m agent puts the working directory
        # first) are kept, the most recently used first, up to a bound
        others = [(e, r) for e, r in stored.items() if e not in fresh][:KEEP_OTHERS]
        _write(cache_file, {**fresh, **dict(others)}, groups)
    return found


#: The records this process has read, by groups and ``sys.path`` entry, checked by the same
#: stats as the file's: a second scan in one process (``make_boot`` and in-process CLI runs in
#: the test suite, hundreds per worker) reads only what changed since, file or no file.
_REMEMBERED: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {}


class _Unusual(Exception):
    """A distribution importlib.metadata found in a way this module cannot key a cache on."""


def _only_path_finders() -> bool:
    """Whether distributions come only from the standard path finder (another finder's
    distributions could change without any stat here changing: then nothing is cached)."""
    from importlib.machinery import PathFinder

    return all(finder is PathFinder or getattr(finder, "find_distributions", None) is None
               for finder in sys.meta_path)


def _full_scan(groups: Sequence[str]) -> list[EntryPoint]:
    import importlib.metadata as metadata

    found = []
    names: dict[int, tuple[str, str]] = {}
    everything = metadata.entry_points()
    for ep in (ep for group in groups for ep in everything.select(group=group)):
        dist = ep.dist
        if dist is not None and id(dist) not in names:
            names[id(dist)] = (dist.metadata["Name"] or "", dist.metadata["Version"] or "")
        name, version = names.get(id(dist), ("", "")) if dist is not None else ("", "")
        found.append(EntryPoint(ep.name, ep.value, ep.group, name, version))
    return found


# ---- one sys.path entry ----------------------------------------------------------------------

#: Recorded for a stat too recent to be trusted: never equal to a stat, always read again.
_RACY = [-1]


def _stat(path: str) -> list[int] | None:
    """What identifies ``path``'s present state (None when it is absent)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_size]


def _recorded_stat(path: str, now: int) -> list[int] | None:
    """:func:`_stat` as recorded: :data:`_RACY` when modified less than :data:`RACY_NS` ago
    (another write later in the same clock tick would leave the mtime equal).  The inode
    change time is compared but not aged: it moves with every write and with every ``utime``
    that puts an old mtime back (``cp -p``, ``tar``), which it exists to catch."""
    known = _stat(path)
    if known is not None and now - known[0] < RACY_NS:
        return _RACY
    return known


def _current(record: dict[str, Any]) -> bool:
    """Whether nothing ``record`` was read from has changed since."""
    if record["stat"] == _RACY or _stat(record["path"]) != record["stat"]:
        return False
    for dist in record["dists"]:
        for path, known in dist["stats"]:
            if known == _RACY or _stat(path) != known:
                return False
    return True


def _read_entry(entry: str, groups: Sequence[str], now: int) -> dict[str, Any]:
    """The distributions ``importlib.metadata`` finds in the ``sys.path`` entry ``entry``,
    with the stats that say when to read it again."""
    folder = entry or "."
    record: dict[str, Any] = {"path": folder, "stat": _recorded_stat(folder, now),
                              "dists": []}
    if record["stat"] is None:
        return record  # nothing there: importlib.metadata finds nothing either
    try:
        names = os.listdir(folder)
    except NotADirectoryError:
        names = None  # a zip file: let importlib.metadata read it
    except OSError:
        return record
    if names is not None and not folder.lower().endswith(".egg") \
            and not any(n.lower().endswith(_METADATA_SUFFIXES) for n in names):
        return record  # a folder of modules only (a project, bin/): no distributions
    import importlib.metadata as metadata

    for dist in metadata.distributions(path=[entry]):
        where = getattr(dist, "_path", None)
        if where is None:
            raise _Unusual(repr(dist))
        base = str(where)
        # stat before reading: a change after the stat shows as a different stat next time
        files = [[path, _recorded_stat(path, now)] for path in (
            base, os.path.join(base, "entry_points.txt"), os.path.join(base, "METADATA"),
            os.path.join(base, "PKG-INFO"))]
        norm = getattr(dist, "_normalized_name", None)
        if not isinstance(norm, str):
            raise _Unusual(repr(dist))
        eps = [[ep.group, ep.name, ep.value] for ep in dist.entry_points if ep.group in groups]
        name = version = ""
        if eps or not os.path.basename(base).lower().endswith((".dist-info", ".egg-info")):
            # its name and version (shown), or its name (which hides later ones of the same
            # name), come from its metadata file: that file is part of the key then
            meta = dist.metadata
            name, version = meta["Name"] or "", meta["Version"] or ""
        else:
            files = files[:2]
        record["dists"].append({"norm": norm, "name": name, "version": version, "eps": eps,
                                "stats": files})
    return record


# ---- the file --------------------------------------------------------------------------------

def _key(groups: Iterable[str]) -> dict[str, Any]:
    return {"shape": FORMAT, "python": sys.version, "executable": sys.executable,
            "groups": sorted(groups)}


def _read(path: Path, groups: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The stored records by ``sys.path`` entry; empty when the file is missing, not ours,
    malformed or written for another interpreter or other groups."""
    from agent.contain.private import read_private

    raw = read_private(path)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
        entries = data["entries"]
        if data["key"] != _key(groups) or not isinstance(entries, dict):
            return {}
        return {entry: record for entry, record in entries.items() if _well_formed(record)}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def _well_formed(record: Any) -> bool:
    def stat_ok(value: Any) -> bool:
        return value is None or (isinstance(value, list)
                                 and all(isinstance(n, int) for n in value))

    try:
        assert isinstance(record["path"], str) and stat_ok(record["stat"])
        for dist in record["dists"]:
            assert isinstance(dist["norm"], str) and isinstance(dist["name"], str)
            assert isinstance(dist["version"], str)
            for group, name, value in dist["eps"]:
                assert isinstance(group, str) and isinstance(name, str)
                assert isinstance(value, str)
            for path, known in dist["stats"]:
                assert isinstance(path, str) and stat_ok(known)
    except (AssertionError, KeyError, TypeError, ValueError):
        return False
    return True


#: The records last written, their groups and the text: a process writing the very same
#: records again (each in-process run with a new state dir) reuses the text.  Records are
#: never changed once read (a changed entry is read into a new one).
_last_written: tuple[dict[str, Any], tuple[str, ...], str] | None = None


def _write(path: Path, entries: dict[str, Any], groups: Sequence[str]) -> None:
    """Replace the file (0600, atomically); a failure only costs the next start a scan."""
    from agent.contain.private import private_dir
    from agent.lib.atomic import AtomicWriteError, atomic_write

    global _last_written
    last = _last_written
    if last is not None and last[1] == tuple(groups) and list(last[0]) == list(entries) \
            and all(last[0][entry] is record for entry, record in entries.items()):
        payload = last[2]
    else:
        payload = json.dumps({"key": _key(groups), "entries": entries}, separators=(",", ":"))
        _last_written = dict(entries), tuple(groups), payload
    try:
        private_dir(path.parent)
        atomic_write(path, payload, mode=0o600, fsync=False)
    except (OSError, AtomicWriteError):
        pass
