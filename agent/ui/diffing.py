"""Line diffs split into hunks that can be accepted or rejected one by one.

A :class:`FileDiff` compares two texts (a whole file, or the snippet an edit replaces) and
groups the changes into hunks with two lines of context, like a unified diff.  A
:class:`DiffSet` numbers the hunks of several diffs (the edits of one call, the files
of a patch) from 1, renders them as rows, and rebuilds each text with some hunks rejected.
The ``diff`` renderer plugin draws the rows; the approval dialog toggles the hunks.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from agent.lib.visible import hidden_count, visible

CONTEXT = 2


@dataclass
class Row:
    """One display row: ``kind`` is ``head``, ``add``, ``del``, ``ctx`` or ``gap``."""

    kind: str
    text: str
    number: int | None = None
    hunk: int | None = None  # global 1-based hunk number


@dataclass
class FileDiff:
    """``old`` → ``new`` for ``path``.  ``first_line`` numbers the snippet inside its file;
    ``atomic`` makes the whole diff one hunk (a patch section)."""

    path: str
    old: str
    new: str
    label: str = ""
    first_line: int = 1
    atomic: bool = False
    groups: list[list[tuple[str, int, int, int, int]]] = field(init=False)

    def __post_init__(self) -> None:
        self.old_lines = self.old.splitlines(keepends=True)
        self.new_lines = self.new.splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(None, self.old_lines, self.new_lines, autojunk=False)
        # An atomic diff is one hunk: a context as wide as the texts never splits it.
        context = max(len(self.old_lines), len(self.new_lines)) if self.atomic else CONTEXT
        self.groups = [g for g in matcher.get_grouped_opcodes(context)
                       if any(op[0] != "equal" for op in g)]

    @property
    def added(self) -> int:
        return sum(j2 - j1 for g in self.groups for t, _, _, j1, j2 in g if t != "equal")

    @property
    def removed(self) -> int:
        return sum(i2 - i1 for g in self.groups for t, i1, i2, _, _ in g if t != "equal")

    def apply(self, rejected_groups: set[int]) -> str:
        """The new text with the changes of the given group indexes (0-based) left out."""
        out: list[str] = []
        changes: dict[tuple[int, int, int, int], bool] = {}
        for gi, group in enumerate(self.groups):
            for tag, i1, i2, j1, j2 in group:
                if tag != "equal":
                    changes[(i1, i2, j1, j2)] = gi in rejected_groups
        matcher = difflib.SequenceMatcher(None, self.old_lines, self.new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal" or changes.get((i1, i2, j1, j2), False):
                out.extend(self.old_lines[i1:i2])
            else:
                out.extend(self.new_lines[j1:j2])
        return "".join(out)


@dataclass
class Hunk:
    number: int  # 1-based, across the whole set
    diff: int    # index into DiffSet.diffs
    group: int   # index into that diff's groups

    def describe(self, ds: DiffSet) -> str:
        d = ds.diffs[self.diff]
        ops = [op for op in d.groups[self.group] if op[0] != "equal"]
        a = ops[0][1] + d.first_line
        b = ops[-1][2] + d.first_line - 1
        where = f"line {a}" if b <= a else f"lines {a}-{b}"
        label = f" {d.label}" if d.label else ""
        return f"hunk {self.number} ({d.path}{label}, old {where})"


class DiffSet:
    """Several diffs with their hunks numbered together."""

    def __init__(self, diffs: list[FileDiff]) -> None:
        self.diffs = diffs  # diffs without changes stay, so indexes match the call's parts
        self.hunks: list[Hunk] = []
        for di, d in enumerate(self.diffs):
            for gi in range(len(d.groups)):
                self.hunks.append(Hunk(len(self.hunks) + 1, di, gi))

    def __bool__(self) -> bool:
        return bool(self.hunks)

    def rejected_groups(self, diff_index: int, rejected: set[int]) -> set[int]:
        return {h.group for h in self.hunks if h.diff == diff_index and h.number in rejected}

    def rows(self, rejected: frozenset[int] | set[int] = frozenset()) -> list[Row]:
        """Display rows: a header per diff, then its hunks; unchanged runs are collapsed.
        Characters a terminal would hide or reorder are spelled out (``⟨U+202E⟩``)."""
        rows = self._raw_rows(rejected)
        for row in rows:
            row.text = visible(row.text)
        return rows

    def hidden_chars(self) -> int:
        """How many characters the rows spell out because a terminal would hide them."""
        return sum(hidden_count(row.text) for row in self._raw_rows())

    def _raw_rows(self, rejected: frozenset[int] | set[int] = frozenset()) -> list[Row]:
        rows: list[Row] = []
        numbers = iter(self.hunks)
        for d in self.diffs:
            if not d.groups:
                continue
            label = f" {d.label}" if d.label else ""
            rows.append(Row("head", f"{d.path}{label}  +{d.added} -{d.removed}"))
            shown_to = 0  # new-line index shown so far (context and gaps use new numbers)
            for group in d.groups:
                hunk = next(numbers).number
                start = group[0][3]
                if start > shown_to:
                    rows.append(Row("gap", _gap(shown_to, start, d.first_line), hunk=hunk))
                for tag, i1, i2, j1, j2 in group:
                    if tag == "equal":
                        for k in range(j2 - j1):
                            rows.append(Row("ctx", _strip(d.new_lines[j1 + k]),
                                            j1 + k + d.first_line, hunk))
                        continue
                    for k in range(i1, i2):
                        rows.append(Row("del", _strip(d.old_lines[k]), k + d.first_line, hunk))
                    for k in range(j1, j2):
                        rows.append(Row("add", _strip(d.new_lines[k]), k + d.first_line, hunk))
                shown_to = group[-1][4]
            if d.groups and shown_to < len(d.new_lines):
                rows.append(Row("gap", _gap(shown_to, len(d.new_lines), d.first_line)))
        return rows

    def excerpt(self, hunk: Hunk, limit: int = 12) -> str:
        """The hunk's changed lines as ``-``/``+`` text, for telling the model."""
        d = self.diffs[hunk.diff]
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in d.groups[hunk.group]:
            if tag == "equal":
                continue
            lines += ["-" + _strip(x) for x in d.old_lines[i1:i2]]
            lines += ["+" + _strip(x) for x in d.new_lines[j1:j2]]
        if len(lines) > limit:
            lines = lines[:limit] + [f"... {len(lines) - limit} more lines"]
        return "\n".join(lines)


def _gap(start: int, end: int, first_line: int) -> str:
    a, b = start + first_line, end + first_line - 1
    return f"... line {a} unchanged" if a == b else f"... lines {a}-{b} unchanged"


def _strip(line: str) -> str:
    return line.rstrip("\r\n")
