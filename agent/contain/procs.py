"""Process trees on Linux, read from ``/proc``: who descends from whom, and ending them all.

A command's descendants can leave its process group (``setsid``, ``nohup … &`` followed by
``setsid``); the PID namespace of the sandbox ends them all when its first process dies, and
where there is no namespace (``sandbox = "off"``, or no sandbox available) these helpers find
them by parentage instead.  Elsewhere (no ``/proc``) only the process group is known.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgrp: int
    sid: int
    state: str
    comm: str


def snapshot() -> dict[int, ProcInfo]:
    """Every process visible in ``/proc`` now (empty where there is no ``/proc``)."""
    table: dict[int, ProcInfo] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        try:
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            table[int(name)] = ProcInfo(int(name), int(fields[1]), int(fields[2]),
                                        int(fields[3]), fields[0], comm)
        except (ValueError, IndexError):
            continue
    return table


def descendants(root: int, table: dict[int, ProcInfo] | None = None) -> list[int]:
    """Live descendants of ``root`` (not ``root`` itself), parents before children, plus
    every other live member of ``root``'s process group."""
    table = snapshot() if table is None else table
    children: dict[int, list[int]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    out: list[int] = []
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        if pid in out:
            continue
        out.append(pid)
        stack.extend(children.get(pid, ()))
    out += [p for p, info in table.items() if info.pgrp == root and p != root and p not in out]
    return [p for p in out if table[p].state != "Z"]


def alive(pid: int) -> bool:
    """Exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("utf-8", "replace")
        return stat[stat.rindex(")") + 2:].split()[0] != "Z"
    except (OSError, IndexError, ValueError):
        return True  # no /proc: kill(0) said it exists


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


SIGTERM = signal.SIGTERM
SIGKILL = signal.SIGKILL
