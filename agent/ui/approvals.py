"""What the approval dialog shows for a call, and the partial answer when hunks are rejected.

For the edit tools (``edit_file``, ``multi_edit``, ``write_file``, ``apply_patch``) the dialog
shows a :class:`~agent.ui.diffing.DiffSet`.  When the user rejects some hunks, :func:`partial`
rebuilds the call's arguments with only the accepted hunks and writes the note the model gets
with the tool's result, naming what was left out.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import paths
from agent.ui import toolfmt
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


def _arg(d: dict[str, Any], *names: str) -> Any:
    for n in names:
        if n in d:
            return d[n]
    return None


def _key(d: dict[str, Any], *names: str) -> str:
    return next((n for n in names if n in d), names[0])


OLD = ("oldString", "old_string", "old")
NEW = ("newString", "new_string", "new")


def _snippet_line(text: str | None, snippet: str) -> int:
    """1-based line where ``snippet`` starts in ``text`` (1 when unknown or ambiguous)."""
    if not text or not snippet:
        return 1
    at = text.find(snippet)
    if at < 0 or text.find(snippet, at + 1) >= 0:
        return 1
    return text.count("\n", 0, at) + 1


def diffs_for(name: str, args: dict[str, Any], workspace: Path) -> DiffSet | None:
    """The diffs a call would make, or None for tools without one."""
    path = str(_arg(args, "path", "file_path") or "")
    if name == "edit_file":
        old, new = _arg(args, *OLD), _arg(args, *NEW)
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        first = _snippet_line(_read(workspace, path), old)
        return DiffSet([FileDiff(path, old, new, first_line=first)])
    if name == "multi_edit":
        edits = args.get("edits")
        if not isinstance(edits, list):
            return None
        text = _read(workspace, path)
        diffs = []
        for i, e in enumerate(edits, 1):
            if not isinstance(e, dict):
                return None
            old, new = _arg(e, *OLD), _arg(e, *NEW)
            if not isinstance(old, str) or not isinstance(new, str):
                return None
            label = f"(edit {i})" if len(edits) > 1 else ""
            diffs.append(FileDiff(path, old, new, label, _snippet_line(text, old)))
        return DiffSet(diffs)
    if name == "write_file":
        content = _arg(args, "content")
        if not isinstance(content, str):
            return None
        existing = _read(workspace, path)
        if existing is None:
            return DiffSet([FileDiff(path, "", content, "(new content)")])
        return DiffSet([FileDiff(path, existing, content)])
    if name == "apply_patch":
        patch = _arg(args, "patch", "input")
        if not isinstance(patch, str):
            return None
        return DiffSet([s.diff(workspace) for s in parse_patch(patch)])
    return None


# ---- apply_patch sections ------------------------------------------------------------------

_HEADER = re.compile(r"\*\*\* (Add|Update|Delete) File: (.+)")


@dataclass
class PatchChunk:
    """One hunk of a patch: an Add or Delete section, or one ``@@`` chunk of an Update."""

    kind: str
    path: str
    header: list[str]   # the section's header lines (kept while any chunk of it is kept)
    lines: list[str]
    section: int

    def diff(self, workspace: Path) -> FileDiff:
        if self.kind == "Add":
            new = "".join(ln[1:] + "\n" for ln in self.lines if ln.startswith("+"))
            return FileDiff(self.path, "", new, "(new file)", atomic=True)
        if self.kind == "Delete":
            old = _read(workspace, self.path) or "(file contents)\n"
            return FileDiff(self.path, old, "", "(deleted)", atomic=True)
        # A blank line inside a hunk is an empty context line (models drop the space).
        old = "".join(ln[1:] + "\n" for ln in self.lines if ln[:1] in ("-", " ") or ln == "")
        new = "".join(ln[1:] + "\n" for ln in self.lines if ln[:1] in ("+", " ") or ln == "")
        moved = [h for h in self.header if h.startswith("*** Move to:")]
        label = f"(move to {moved[0].split(':', 1)[1].strip()})" if moved else ""
        text = _read(workspace, self.path)
        return FileDiff(self.path, old, new, label, _snippet_line(text, old), atomic=True)


def parse_patch(patch: str) -> list[PatchChunk]:
    chunks: list[PatchChunk] = []
    section = -1
    current: PatchChunk | None = None
    for raw in patch.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip("\r")
        m = _HEADER.match(line.strip())
        if m:
            section += 1
            current = PatchChunk(m.group(1), m.group(2).strip(), [line], [], section)
            chunks.append(current)
            continue
        if current is None or line.strip() in ("*** Begin Patch", "*** End Patch"):
            continue
        if line.startswith("*** Move to:") and not current.lines:
            current.header.append(line)
            continue
        if line.startswith("@@") and current.kind == "Update":
            if current.lines:  # a new chunk of the same section
                current = PatchChunk("Update", current.path, current.header, [], section)
                chunks.append(current)
            current.lines.append(line)
            continue
        current.lines.append(line)
    return chunks


def _rebuild_patch(patch: str, rejected_chunks: set[int]) -> str:
    chunks = parse_patch(patch)
    kept_sections: dict[int, list[PatchChunk]] = {}
    for i, chunk in enumerate(chunks):
        if i not in rejected_chunks:
            kept_sections.setdefault(chunk.section, []).append(chunk)
    out = ["*** Begin Patch"]
    for section in sorted(kept_sections):
        parts = kept_sections[section]
        out.extend(parts[0].header)
        for part in parts:
            out.extend(part.lines)
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


# ---- partial approval ------------------------------------------------------------------------


def partial(name: str, args: dict[str, Any], ds: DiffSet, rejected: set[int],
            workspace: Path) -> Partial | None:
    """Arguments keeping only the accepted hunks (None if that is not possible)."""
    if not rejected or len(rejected) >= len(ds.hunks):
        return None
    new_args = copy.deepcopy(args)
    if name == "edit_file":
        key = _key(args, *NEW)
        new_args[key] = ds.diffs[0].apply(ds.rejected_groups(0, rejected))
    elif name == "write_file":
        new_args["content"] = ds.diffs[0].apply(ds.rejected_groups(0, rejected))
    elif name == "multi_edit":
        kept = []
        for i, e in enumerate(new_args["edits"]):
            old = _arg(e, *OLD)
            e[_key(e, *NEW)] = ds.diffs[i].apply(ds.rejected_groups(i, rejected))
            if e[_key(e, *NEW)] != old:  # a fully rejected edit is dropped
                kept.append(e)
        new_args["edits"] = kept
    elif name == "apply_patch":
        key = _key(args, "patch", "input")
        # In a patch every diff is one atomic chunk, numbered like the chunks.
        chunk_numbers = {h.diff for h in ds.hunks if h.number in rejected}
        new_args[key] = _rebuild_patch(args[key], chunk_numbers)
    else:
        return None
    return Partial(new_args, rejection_note(name, ds, rejected))


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
    """What a call without a diff shows: the command it runs (its effects say), else its
    key arguments (up to 10 lines)."""
    if command:
        lines = command.splitlines()
        return lines[:10] + ([f"... {len(lines) - 10} more lines"] if len(lines) > 10 else [])
    return toolfmt.details(name, args, tool)[:10]
