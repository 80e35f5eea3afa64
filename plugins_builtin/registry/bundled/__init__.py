"""The registry index shipped with agent: curated, versioned, read offline.

``index.json`` lists data-only plugin manifests (and skills) under this directory, each with
the sha256 of its file; entries are addressed as ``bundled:<path>``. The files are package
data, so an installed copy that was edited can always be checked against (and replaced by)
the one that shipped.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
SCHEME = "bundled:"
SOURCE = "bundled"


def index_bytes() -> bytes:
    return (HERE / "index.json").read_bytes()


def read(url: str) -> bytes:
    """The bytes of a ``bundled:<path>`` entry; a path may not leave this directory."""
    relative = url.removeprefix(SCHEME)
    path = (HERE / relative).resolve()
    if not relative or HERE.resolve() not in path.parents:
        raise FileNotFoundError(url)
    return path.read_bytes()
