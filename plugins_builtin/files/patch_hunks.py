"""An ``apply_patch`` call as the approval dialog's changes: each Add or Delete section and
each ``@@`` chunk of an Update section is one atomic change, and a patch keeping only some of
them can be rebuilt (the user rejected the others)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent import Change

_HEADER = re.compile(r"\*\*\* (Add|Update|Delete) File: (.+)")


@dataclass
class PatchChunk:
    """One hunk of a patch: an Add or Delete section, or one ``@@`` chunk of an Update."""

    kind: str
    path: str
    header: list[str]   # the section's header lines (kept while any chunk of it is kept)
    lines: list[str]
    section: int

    def change(self) -> Change:
        if self.kind == "Add":
            new = "".join(ln[1:] + "\n" for ln in self.lines if ln.startswith("+"))
            return Change(self.path, "", new, "(new file)", atomic=True)
        if self.kind == "Delete":
            return Change(self.path, None, "", "(deleted)", atomic=True)
        # A blank line inside a hunk is an empty context line (models drop the space).
        old = "".join(ln[1:] + "\n" for ln in self.lines if ln[:1] in ("-", " ") or ln == "")
        new = "".join(ln[1:] + "\n" for ln in self.lines if ln[:1] in ("+", " ") or ln == "")
        moved = [h for h in self.header if h.startswith("*** Move to:")]
        label = f"(move to {moved[0].split(':', 1)[1].strip()})" if moved else ""
        return Change(self.path, old, new, label, atomic=True)


def chunks(patch: str) -> list[PatchChunk]:
    out: list[PatchChunk] = []
    section = -1
    current: PatchChunk | None = None
    for raw in patch.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip("\r")
        m = _HEADER.match(line.strip())
        if m:
            section += 1
            current = PatchChunk(m.group(1), m.group(2).strip(), [line], [], section)
            out.append(current)
            continue
        if current is None or line.strip() in ("*** Begin Patch", "*** End Patch"):
            continue
        if line.startswith("*** Move to:") and not current.lines:
            current.header.append(line)
            continue
        if line.startswith("@@") and current.kind == "Update":
            if current.lines:  # a new chunk of the same section
                current = PatchChunk("Update", current.path, current.header, [], section)
                out.append(current)
            current.lines.append(line)
            continue
        current.lines.append(line)
    return out


def rebuild(patch: str, rejected: set[int]) -> str:
    """``patch`` without the chunks numbered in ``rejected`` (0-based)."""
    kept_sections: dict[int, list[PatchChunk]] = {}
    for i, chunk in enumerate(chunks(patch)):
        if i not in rejected:
            kept_sections.setdefault(chunk.section, []).append(chunk)
    out = ["*** Begin Patch"]
    for section in sorted(kept_sections):
        parts = kept_sections[section]
        out.extend(parts[0].header)
        for part in parts:
            out.extend(part.lines)
    out.append("*** End Patch")
    return "\n".join(out) + "\n"
