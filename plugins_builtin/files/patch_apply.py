"""Applying one file's Update hunks to its text (the matching half of ``apply_patch``).

Each hunk's context and ``-`` lines are looked for after the previous hunk: exactly first,
then with the tolerances of :mod:`.matching` (trailing whitespace, indentation, typographic
punctuation), each accepted only when it finds one place, or, under an ``@@ anchor`` line,
the first place after the anchor.  A hunk with only ``+`` lines is appended at the end of the
file (as Codex does), or inserted right after its ``@@ anchor`` line when it has one.  A hunk
marked ``*** End of File`` must match at the end when it can, else anywhere (as in Codex).

Lines keep their own line ends; added lines take the ending of the lines around them; a
missing final newline stays missing.
"""

from __future__ import annotations

import re

from agent import ToolError

from .matching import INDENTATION, PASSES, PUNCTUATION, find_lines, near_miss, reindent
from .patch_parse import Hunk
from .textfile import Layout

NOTHING = " Nothing was written."



def split_lines(raw: str, cr: bool) -> tuple[list[str], list[str]]:
    """(line contents, line ends) of ``raw``; the last line's end is "" when the file has no
    final newline.  A lone CR ends a line only when ``cr`` (a CR file)."""
    lines: list[str] = []
    ends: list[str] = []
    pattern = re.compile(r"(.*?)(\r\n|\n|\r|$)" if cr else r"(.*?)(\r\n|\n|$)", re.S)
    at = 0
    while at < len(raw):
        match = pattern.match(raw, at)
        assert match is not None  # the pattern always matches, at worst up to the end
        lines.append(match.group(1))
        ends.append(match.group(2))
        at = match.end()
    return lines, ends


def _locate_anchor(lines: list[str], anchor: str, pos: int) -> int | None:
    """The first line at or after ``pos`` that is the anchor, exactly or by a tolerance."""
    for same in (None, *(s for _, s in PASSES)):
        hits = find_lines(lines, [anchor], pos, same)
        if hits:
            return hits[0]
    return None


def apply_hunks(raw: str, layout: Layout, hunks: list[Hunk], path: str
                ) -> tuple[str, list[str]]:
    """The file's new text after ``hunks`` and a note per hunk that needed a tolerance;
    raises :class:`ToolError` naming the failed hunk and the closest region."""
    lines, ends = split_lines(raw, layout.eol == "\r")
    final_newline = raw == "" or ends[-1] != ""
    default = layout.eol or "\n"
    pos = 0
    notes: list[str] = []
    placed: list[tuple[int, Hunk, list[str]]] = []  # (where, hunk, its + lines as written)
    for number, hunk in enumerate(hunks, start=1):
        start = pos
        if hunk.anchor is not None:
            found_at = _locate_anchor(lines, hunk.anchor, pos)
            if found_at is None:
                raise ToolError(f'{path}: hunk {number}: the @@ line "{hunk.anchor}" was not '
                                f"found{' after the previous hunk' if pos else ''}.{NOTHING}\n"
                                + near_miss(lines, [hunk.anchor], pos,
                                            final_newline=final_newline, path=path))
            # The search includes the anchor line itself: models often repeat it as the
            # hunk's first context line (Codex would start below it and miss it).
            start = found_at
        old = hunk.old
        added = [body for kind, body in hunk.lines if kind == "+"]
        if not old:
            at = len(lines) if hunk.at_eof or hunk.anchor is None else start + 1
            placed.append((at, hunk, added))
            pos = at
            continue
        hits: list[int] = []
        tolerance = None
        for name, same in ((None, None), *PASSES):
            hits = find_lines(lines, old, start, same)
            if hunk.at_eof:
                # Codex too prefers the end, then takes the lines wherever they are.
                hits = [i for i in hits if i + len(old) == len(lines)] or hits
            if hunk.anchor is not None:
                hits = hits[:1]
            if hits:
                tolerance = name
                break
        if not hits:
            raise ToolError(f"{path}: hunk {number} does not match the file.{NOTHING}\n"
                            + near_miss(lines, old, start, final_newline=final_newline,
                                        path=path))
        if len(hits) > 1:
            at = ", ".join(str(i + 1) for i in hits[:5])
            how = f" (ignoring {tolerance})" if tolerance else ""
            raise ToolError(f"{path}: hunk {number} matches {len(hits)} places{how} (lines "
                            f"{at}). Add context lines or an @@ anchor to make it unique."
                            f"{NOTHING}")
        hit = hits[0]
        if tolerance in (INDENTATION, PUNCTUATION):
            fitted = reindent(old, lines[hit:hit + len(old)], added)
            if fitted is None:
                raise ToolError(f"{path}: hunk {number} matches line {hit + 1} only ignoring "
                                f"{tolerance}, and its indentation differs from the file's in "
                                f"no consistent way.{NOTHING}\n"
                                + near_miss(lines, old, start, final_newline=final_newline,
                                        path=path))
            if fitted is not added:
                tolerance += "; its + lines were re-indented to match the file"
            added = fitted
        if tolerance:
            notes.append(f"hunk {number} matched ignoring {tolerance}")
        placed.append((hit, hunk, added))
        pos = hit + len(old)
    out: list[tuple[str, str]] = []
    cursor = 0
    for at, hunk, added in placed:
        out.extend(zip(lines[cursor:at], ends[cursor:at], strict=True))
        i = at
        fresh = iter(added)
        # New lines take the ending of the first line the hunk touches.
        eol = next((ends[k] for k in range(at, min(at + len(hunk.old), len(ends))) if ends[k]),
                   default)
        for kind, _ in hunk.lines:
            if kind == " ":
                out.append((lines[i], ends[i]))  # the file's own text, whitespace included
                i += 1
            elif kind == "-":
                i += 1
            else:
                out.append((next(fresh), eol))
        cursor = i
    out.extend(zip(lines[cursor:], ends[cursor:], strict=True))
    if not out:
        return "", notes
    text = "".join(body + (end or default) for body, end in out[:-1])
    last, last_end = out[-1]
    return text + last + ((last_end or default) if final_newline else ""), notes
