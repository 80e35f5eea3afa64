"""The workspace jail: every path a tool touches resolves inside the workspace root."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from agent.tools import ToolError


def jail(root: Path, path: str) -> Path:
    """Resolve ``path`` against ``root`` and refuse anything that lands outside it.

    Symlinks are resolved too, so a link inside the workspace that points outside is an
    escape.  The error text is the one the model sees: ``Path escapes workspace: <p>``.
    """
    if not isinstance(path, str) or path == "":
        raise ToolError("A path is required.")
    if "\x00" in path:
        raise ToolError(f"Path escapes workspace: {path!r} (contains a NUL byte)")
    # NFC so that visually identical names compare equal; odd Unicode never changes the jail.
    cleaned = unicodedata.normalize("NFC", path)
    root_real = Path(os.path.realpath(root))
    candidate = Path(os.path.realpath(root_real / os.path.expanduser(cleaned)))
    if candidate != root_real and root_real not in candidate.parents:
        raise ToolError(f"Path escapes workspace: {path}")
    return candidate


def relative(root: Path, path: Path) -> str:
    """The posix form of ``path`` relative to ``root`` (``.`` for the root itself)."""
    rel = os.path.relpath(path, os.path.realpath(root))
    return Path(rel).as_posix()
