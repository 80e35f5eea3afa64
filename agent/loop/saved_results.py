"""Large tool results are kept, not cut.

A result longer than the model's cap (:data:`agent.contract.tools.RESULT_CAP`, 30,000 characters) is
saved whole under the state dir, ``<state dir>/results/<session id>/<call id>.txt`` (the
directory 0700, the file 0600: results quote files and command output), and the model gets
its head and its tail with a pointer between them::

    ... [41,200 lines, 2,310,000 chars in all; 2,282,000 chars not shown are saved in
    /home/me/.local/state/agent/results/0193.../call_7.txt: read_file that path, with
    offset and limit to page through it] ...

The read tools (``read_file``, ``read_many_files``) accept that path although it is
outside the workspace, through :func:`resolve_saved`: only a regular file directly in the
results directory of the running session (or of the session it was forked from), never a
symlink, never anything else under the state dir.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path
from typing import Any

from agent.contract.tools import RESULT_CAP

log = logging.getLogger("agent.results")

RESULTS_DIR = "results"
#: Characters of the head and of the tail shown; the note between them takes the rest.
HEAD_CHARS = 14_000
TAIL_CHARS = 14_000
#: How far back from a cut to look for a line break, so lines are not split when avoidable.
LINE_SLACK = 2_000

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def _safe(name: str) -> str:
    cleaned = _SAFE.sub("_", name).strip(".") or "result"
    return cleaned[:120]


def results_dir(state_dir: Path | str, session_id: str) -> Path:
    """Where the results of ``session_id`` are saved."""
    return Path(state_dir) / RESULTS_DIR / _safe(session_id)


def _head(text: str, size: int) -> str:
    head = text[:size]
    cut = head.rfind("\n", size - LINE_SLACK)
    return head[:cut + 1] if cut > 0 else head


def _tail(text: str, size: int) -> str:
    tail = text[-size:]
    cut = tail.find("\n", 0, LINE_SLACK)
    return tail[cut + 1:] if cut >= 0 else tail


def _save(text: str, state_dir: Path, session_id: str, call_id: str) -> Path:
    from agent.lib.atomic import atomic_write

    directory = results_dir(state_dir, session_id)
    directory.mkdir(parents=True, exist_ok=True)
    for path in (directory.parent, directory):
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
    target = directory / f"{_safe(call_id)}.txt"
    n = 1
    while target.exists():  # a call id reused (a replayed history): never overwrite
        n += 1
        target = directory / f"{_safe(call_id)}-{n}.txt"
    step = 1 << 20  # encoded a slice at a time: a 50 MB result is not copied whole
    chunks = (text[i:i + step].encode("utf-8", errors="surrogateescape")
              for i in range(0, len(text), step))
    atomic_write(target, chunks, mode=0o600)
    return target


def keep_large(text: str, *, state_dir: Path | str | None, session_id: str | None,
               call_id: str, limit: int = RESULT_CAP) -> str:
    """``text`` itself when it fits in ``limit`` characters; otherwise its head and tail
    around a note pointing at the saved whole (or saying why it could not be saved)."""
    if len(text) <= limit:
        return text
    head_size = min(HEAD_CHARS, limit * 7 // 15)
    tail_size = min(TAIL_CHARS, limit * 7 // 15)
    head, tail = _head(text, head_size), _tail(text, tail_size)
    hidden = len(text) - len(head) - len(tail)
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    where = f"{lines:,} lines, {len(text):,} chars in all; {hidden:,} chars not shown"
    if state_dir is None or not session_id:
        note = f"[{where}; the whole result could not be kept (no state dir)]"
    else:
        try:
            path = _save(text, Path(state_dir), session_id, call_id)
        except OSError as exc:
            log.warning("could not save a large tool result: %s", exc)
            note = f"[{where}; the whole result could not be saved: {exc}]"
        else:
            note = (f"[{where} are saved in {path}: read_file that path, with offset and "
                    "limit to page through it]")
    return f"{head.rstrip(chr(10))}\n\n... {note} ...\n\n{tail.lstrip(chr(10))}"


def resolve_saved(path: str, state_dir: Path | str | None, session: Any) -> Path | None:
    """The real path of a saved result ``path`` names, when it is one the running session
    may read: a regular file (not a symlink) directly in its own results directory or in
    that of an id the conversation was saved under before (``session.earlier_ids``:
    it was forked to a new id).  None for anything else."""
    if state_dir is None or session is None or not isinstance(path, str) or "\x00" in path:
        return None
    if not os.path.isabs(os.path.expanduser(path)):
        return None
    candidate = Path(os.path.expanduser(path))
    if candidate.is_symlink():
        return None
    real = Path(os.path.realpath(candidate))
    ids = [getattr(session, "id", None), *(getattr(session, "earlier_ids", None) or ())]
    for sid in ids:
        if not isinstance(sid, str) or not sid:
            continue
        allowed = Path(os.path.realpath(results_dir(state_dir, sid)))
        if real.parent == allowed and real == candidate.parent.resolve() / candidate.name \
                and real.is_file():
            return real
    return None
