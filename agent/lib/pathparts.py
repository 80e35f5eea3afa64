"""Paths as guards see them: segments, lower-cased, with both separators understood.

Path guards (secrets, protect, registry manifests) match rules like "a segment named
``.git``" or "a file named ``.env``".  :func:`segments` turns whatever the model wrote
(``src\\.git\\config``, ``./a/../.ENV``, an absolute path inside the workspace) into the same
list of segments, so a rule cannot be dodged by spelling and a lookalike
(``src/gitignore-parser.ts``) never matches by accident.
"""

from __future__ import annotations

import posixpath
from pathlib import Path


def segments(path: str, workspace: Path | str | None = None) -> list[str]:
    """The lower-cased segments of ``path``.

    Backslashes count as separators; ``.`` and ``..`` are folded; an absolute path inside
    ``workspace`` is made relative to it (so a workspace that itself lives under ``build/``
    does not make every path look like build output).
    """
    text = path.replace("\\", "/").strip()
    if workspace is not None:
        root = str(workspace).replace("\\", "/").rstrip("/")
        low_text, low_root = text.lower(), root.lower()
        if root and (low_text == low_root or low_text.startswith(low_root + "/")):
            text = text[len(root):].lstrip("/") or "."
    # Folding is textual (nothing is resolved on disk); a path that climbs out of the
    # workspace keeps its leading ".." segments.
    folded = posixpath.normpath(text) if text else "."
    return [p for p in folded.lower().split("/") if p and p != "."]
