"""What the approval dialog shows for a call, and the partial answer when hunks are rejected.

A tool that edits text declares the changes a call would make (``Description.changes``, see
:class:`agent.Change`); the dialog shows them as a :class:`~agent.ui.diffing.DiffSet`.  When
the user rejects some hunks, :func:`partial` asks the tool (``Description.revise``) for the
arguments that keep only the accepted ones, and writes the note the model gets with the
tool's result, naming what was left out.  No tool is named here: a third-party edit tool
gets the same dialog by describing its calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.contain import paths
from agent.contract.tools import Description
from agent.lib.visible import hidden_count, visible
from agent.ui.diffing import DiffSet, FileDiff

READ_LIMIT = 2_000_000  # bytes of an existing file read to show a diff against


@dataclass
class Partial:
    """Arguments with the rejected hunks left out, and what to tell the model."""

    arguments: dict[str, Any]
    note: str


def _read(workspace: Path, path: str) -> str | None:
    try:
        real = paths.jail(workspace, path)
        if not real.is_file() or real.stat().st_size > READ_LIMIT:
            return None
        data = real.read_bytes()
    except Exception:
        return None
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _snippet_line(text: str | None, snippet: str) -> int:
    """1-based line where ``snippet`` starts in ``text`` (1 when unknown or ambiguous)."""
    if not text or not snippet:
        return 1
    at = text.find(snippet)
    if at < 0 or text.find(snippet, at + 1) >= 0:
        return 1
    return text.count("\n", 0, at) + 1


def _description(tool: Any, args: Any) -> Description | None:
    if tool is None or not isinstance(args, dict):
        return None
    found = tool.description_of(args)
    return found if isinstance(found, Description) else None


def diffs_for(tool: Any, args: Any, workspace: Path) -> DiffSet | None:
    """The diffs a call of ``tool`` would make (from the changes it declares), or None."""
    description = _description(tool, args)
    if description is None or not description.changes:
        return None
    texts: dict[str, str | None] = {}
    diffs = []
    for change in description.changes:
        if change.path not in texts:
            texts[change.path] = _read(workspace, change.path)
        text = texts[change.path]
        label = change.label
        if change.old is not None:
            old, first = change.old, _snippet_line(text, change.old)
        elif text is not None:
            old, first = text, 1
        elif change.new:  # the whole file, and there is none yet
            old, first, label = "", 1, label or "(new content)"
        else:  # removing a file that cannot be read: still one hunk to answer
            old, first = "(file contents)\n", 1
        diffs.append(FileDiff(change.path, old, change.new, label, first,
                              atomic=change.atomic))
    return DiffSet(diffs)


# ---- partial approval ------------------------------------------------------------------------


def partial(tool: Any, args: dict[str, Any], ds: DiffSet, rejected: set[int],
            workspace: Path) -> Partial | None:
    """Arguments keeping only the accepted hunks (None if that is not possible)."""
    if not rejected or len(rejected) >= len(ds.hunks):
        return None
    description = _description(tool, args)
    if description is None or description.revise is None \
            or len(description.changes) != len(ds.diffs):
        return None
    texts = tuple(diff.apply(ds.rejected_groups(i, rejected))
                  for i, diff in enumerate(ds.diffs))
    try:
        new_args = description.revise(texts)
    except Exception:  # a broken revise denies the call rather than running it whole
        return None
    if not isinstance(new_args, dict):
        return None
    return Partial(new_args, rejection_note(tool.name, ds, rejected))


def rejection_note(name: str, ds: DiffSet, rejected: set[int]) -> str:
    total = len(ds.hunks)
    lines = [f"Note: the user rejected {len(rejected)} of {total} hunks of this {name} call; "
             "only the other hunks were applied. Rejected:"]
    for hunk in ds.hunks:
        if hunk.number in rejected:
            lines.append(f"{hunk.describe(ds)}:")
            lines.append(ds.excerpt(hunk))
    lines.append("Do not re-apply the rejected changes unless the user asks for them.")
    return "\n".join(lines)


def detail_lines(name: str, args: dict[str, Any], tool: Any = None,
                 command: str | None = None) -> list[str]:
    """What a call without a diff shows, never cut (the dialog scrolls): every line of the
    command it runs (its effects say), else the tool's own detail lines, followed by the
    arguments in full unless those lines already show every argument value.  Characters a
    terminal would hide or reorder are spelled out (``⟨U+202E⟩``)."""
    if command:
        return visible(command).split("\n")
    described = _description_lines(tool, args)
    shown = "\n".join(described)
    if described and all(visible(value) in shown for value in _values(args)):
        return described
    if not args:
        return described
    full = json.dumps(args, indent=2, ensure_ascii=False, default=str)
    return described + visible(full).splitlines()


def _description_lines(tool: Any, args: dict[str, Any]) -> list[str]:
    try:
        described = tool.description_of(args or {}) if tool is not None else None
    except Exception:  # a tool that cannot describe this call: its arguments show instead
        return []
    details = getattr(described, "details", ()) or ()
    return [line for d in details if d for line in visible(str(d)).split("\n")]


def _values(value: Any) -> list[str]:
    """Every scalar argument value, as text."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _values(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _values(v)]
    return [] if value is None else [str(value)]


def hidden_chars(name: str, args: dict[str, Any], tool: Any = None,
                 command: str | None = None, diffs: DiffSet | None = None) -> int:
    """How many characters of what the dialog shows are spelled out as ``⟨U+XXXX⟩``."""
    if diffs is not None:
        return diffs.hidden_chars()
    if command:
        return hidden_count(command)
    return sum(hidden_count(str(v)) for v in _strings(args))


def _strings(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []
