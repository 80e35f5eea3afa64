"""The one-time approval of a repository's Claude Code setup, remembered by content hash.

A repository's ``.mcp.json`` starts programs, its hooks run commands and its allow rules
pre-approve calls: none of it is used until the person approves the files once (``/trust``
or ``agent trust``).  The approval is the SHA-256 of the files' names and bytes
(:func:`plugins_builtin.compat.found.digest`), kept per workspace in the state directory
with mode 0600; any change to the files needs a new approval.  Deny and ask rules need none:
they only ever take permissions away.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

FILE = "compat-approved.json"


def _path(state_dir: Path) -> Path:
    return Path(state_dir) / FILE


def _load(state_dir: Path) -> dict[str, str]:
    try:
        data = json.loads(_path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def approved(state_dir: Path, workspace: Path, digest: str) -> bool:
    """True when ``digest`` is what the person approved for ``workspace``."""
    return bool(digest) and _load(state_dir).get(os.path.realpath(workspace)) == digest


def approve(state_dir: Path, workspace: Path, digest: str) -> None:
    """Remember ``digest`` as approved for ``workspace`` (atomically, mode 0600)."""
    data = _load(state_dir)
    data[os.path.realpath(workspace)] = digest
    directory = Path(state_dir)
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".compat-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, _path(state_dir))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
