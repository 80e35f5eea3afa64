"""What was installed from the registry, with the sha256 of each installed file.

``<config dir>/registry/installed.json``::

    {"plugin": {"terraform-guard": {"sha256": "...", "source": "bundled",
                                    "index_sha256": "..."}},
     "skill": {...}}

``sha256`` is the digest of the file as written; every load checks it, so a file changed after
its install (by hand, by another program, by a tool call) is refused and reported instead of
silently applying. ``index_sha256`` is the digest the index gave, which ``update`` compares.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agent import atomic_write

LOCK_NAME = "installed.json"


def lock_path(root: Path) -> Path:
    return Path(root) / LOCK_NAME


def load(root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The install record (empty when there is none or it cannot be read)."""
    try:
        data = json.loads(lock_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {kind: {n: r for n, r in table.items() if isinstance(r, dict)}
            for kind, table in data.items() if isinstance(table, dict)}


def _save(root: Path, data: dict[str, Any]) -> None:
    atomic_write(lock_path(root), json.dumps(data, indent=2, sort_keys=True) + "\n",
                 make_parents=True)


def record(root: Path, kind: str, name: str, text: str, *, source: str,
           index_sha256: str) -> None:
    data = load(root)
    data.setdefault(kind, {})[name] = {
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "source": source, "index_sha256": index_sha256}
    _save(root, data)


def forget(root: Path, kind: str, name: str) -> None:
    data = load(root)
    if data.get(kind, {}).pop(name, None) is not None:
        _save(root, data)


def problem(root: Path, kind: str, name: str, data: bytes) -> str | None:
    """Why the installed file ``data`` may not be used, or None when it is the one that was
    installed."""
    entry = load(root).get(kind, {}).get(name)
    if entry is None:
        return ("it is not in the install record (registry/installed.json); install it with "
                f"agent registry install {name}")
    got = hashlib.sha256(data).hexdigest()
    if got != entry.get("sha256"):
        return (f"it was changed after it was installed (sha256 {got[:12]}..., installed "
                f"{str(entry.get('sha256'))[:12]}...); refused - reinstall it with "
                f"agent registry install {name}")
    return None
