"""Diff renderer: numbered, coloured diffs with unchanged runs collapsed (approval dialog).

Renders ``diff`` blocks whose ``data["diff"]`` is an :class:`agent.ui.diffing.DiffSet`:
a header per file (``path +A -R``), rows `` NNN + text`` in green, red or dim, and
``... lines a-b unchanged`` for hidden runs.  Hunks in ``data["rejected"]`` are struck
through; ``data["selected"]`` marks the hunk the cursor is on.  ``data["limit"]`` caps the
rows (the transcript uses 40); the approval dialog scrolls instead.
"""

from __future__ import annotations

from typing import Any

from agent import hookimpl


def diff_markup(data: dict[str, Any]) -> list[Any]:
    ds = data["diff"]
    rejected = set(data.get("rejected") or ())
    selected = data.get("selected") or 0
    limit = data.get("limit")
    rows = ds.rows(rejected)
    width = max((len(str(r.number)) for r in rows if r.number is not None), default=1)
    out: list[Any] = []
    shown = rows if limit is None else rows[:limit]
    for row in shown:
        if out:
            out.append("\n")
        if row.kind == "head":
            out.append(("diff-head", row.text))
            continue
        marker = "▌" if selected and row.hunk == selected and row.kind != "gap" else " "
        out.append(("diff-sel" if marker != " " else "diff-num", marker))
        if row.kind == "gap":
            out.append(("diff-gap", " " * (width + 1) + row.text))
            continue
        sign = {"add": "+", "del": "-"}.get(row.kind, " ")
        style = {"add": "diff-add", "del": "diff-del"}.get(row.kind, "diff-ctx")
        if row.hunk in rejected and row.kind != "ctx":
            style = "diff-rejected"
        out.append(("diff-num", f"{row.number:>{width}} "))
        out.append((style, f"{sign} {row.text}"))
    if limit is not None and len(rows) > limit:
        out.append(("diff-gap", f"\n... {len(rows) - limit} more diff lines"))
    return out


@hookimpl
def agent_render_block(block, width, theme):
    if block.kind != "diff" or "diff" not in block.data:
        return None
    import urwid

    return urwid.Text(diff_markup(block.data))
