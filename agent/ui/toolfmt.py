"""How a tool call and its outcome read in the transcript: the key arguments and a summary.

``details(name, args)`` gives the detail lines shown after ``* name`` (the first on the same
line); ``summary(name, output, is_error, given)`` the one-line outcome.  Unknown tools (plugin
and MCP tools) show their first string argument.
"""

from __future__ import annotations

import json
import re
from typing import Any

FIRST = 68   # the first detail shares the line with the tool name
MORE = 90    # further detail lines
RESULT = 78


def clip(text: str, limit: int) -> str:
    text = text.replace("\t", "  ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_line(text: Any) -> str:
    lines = str(text or "").splitlines()
    return lines[0] if lines else ""


def _count_lines(text: str) -> int:
    return len(text.splitlines()) if text else 0


def _get(args: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in args and args[name] not in (None, ""):
            return args[name]
    return None


def _lines_range(args: dict[str, Any]) -> str:
    offset, limit = _get(args, "offset"), _get(args, "limit")
    if offset and limit:
        return f"lines {offset}-{int(offset) + int(limit) - 1}"
    if offset:
        return f"lines {offset}+"
    if limit:
        return f"lines 1-{limit}"
    return ""


def _patch_ops(patch: str) -> list[str]:
    ops = []
    for line in patch.splitlines():
        m = re.match(r"\*\*\* (Add|Update|Delete) File: (.+)", line.strip())
        if m:
            ops.append(f"{m.group(1).lower()} {m.group(2).strip()}")
            continue
        m = re.match(r"\*\*\* Move to: (.+)", line.strip())
        if m:
            ops.append(f"move to {m.group(1).strip()}")
    return ops


def details(name: str, args: dict[str, Any]) -> list[str]:
    """Detail lines for a call (possibly empty); the first is clipped to FIRST chars."""
    out = _details(name, args or {})
    out = [d for d in out if d]
    return [clip(d, FIRST if i == 0 else MORE) for i, d in enumerate(out)]


def _details(name: str, args: dict[str, Any]) -> list[str]:
    path = _get(args, "path", "file_path", "file")
    if name == "read_file":
        return [f"{path}  {_lines_range(args)}".strip()]
    if name == "read_many_files":
        files = args.get("files") or []
        paths = [f.get("path", "?") if isinstance(f, dict) else str(f) for f in files]
        more = [f"... {len(paths) - 8} more"] if len(paths) > 8 else []
        return paths[:8] + more
    if name == "write_file":
        content = str(_get(args, "content") or "")
        return [f"{path}  {_count_lines(content)} lines, {len(content)} chars"]
    if name == "edit_file":
        old = str(_get(args, "oldString", "old_string", "old") or "")
        n = _count_lines(old)
        out = [str(path), f"- {_first_line(old)}" + (f"  (+{n - 1} lines)" if n > 1 else "")]
        if _get(args, "replaceAll", "replace_all"):
            out.append("every occurrence")
        return out
    if name == "multi_edit":
        edits = args.get("edits") or []
        out = [str(path)]
        for i, e in enumerate(edits[:5], 1):
            old = e.get("oldString", e.get("old_string", "")) if isinstance(e, dict) else ""
            out.append(f"{i}. - {_first_line(old)}")
        if len(edits) > 5:
            out.append(f"... {len(edits) - 5} more")
        return out
    if name == "apply_patch":
        ops = _patch_ops(str(_get(args, "patch", "input") or ""))
        return ops[:10] + ([f"... {len(ops) - 10} more"] if len(ops) > 10 else [])
    if name == "move_file":
        return [f"{_get(args, 'from', 'source', 'src')} -> {_get(args, 'to', 'dest', 'target')}"]
    if name == "delete_file":
        return [str(path)]
    if name == "bash":
        lines = str(_get(args, "command") or "").splitlines() or [""]
        out = lines[:4] + ([f"... {len(lines) - 4} more lines"] if len(lines) > 4 else [])
        timeout = _get(args, "timeout")
        if timeout:
            out.append(f"timeout {int(timeout) // 1000}s" if int(timeout) >= 1000
                       else f"timeout {timeout}ms")
        return out
    if name == "grep":
        parts = [f"/{_get(args, 'pattern') or ''}/"]
        if _get(args, "include", "glob"):
            parts.append(f"in {_get(args, 'include', 'glob')}")
        if _get(args, "ignoreCase", "ignore_case"):
            parts.append("case-insensitive")
        if _get(args, "includeIgnored", "include_ignored"):
            parts.append("including ignored files")
        return ["  ".join(parts)]
    if name == "glob":
        extra = "  including ignored files" if _get(args, "includeIgnored") else ""
        return [f"{_get(args, 'pattern') or ''}{extra}"]
    if name == "list_dir":
        depth = _get(args, "depth")
        return [f"{path or '.'}" + (f"  depth {depth}" if depth else "")]
    if name == "web_fetch":
        return [str(_get(args, "url") or "")]
    if name == "task":
        kind = _get(args, "kind") or "explore"
        writes = " (writes)" if kind == "worker" else ""
        return [f"{kind}{writes}: {_get(args, 'description') or ''}"]
    if name == "todo_write":
        todos = args.get("todos") or []
        out = [f"{t.get('status', '?')}: {t.get('content', '')}" for t in todos[:6]
               if isinstance(t, dict)]
        return out + ([f"... {len(todos) - 6} more"] if len(todos) > 6 else [])
    if name == "remember":
        return [f"{_get(args, 'kind') or 'note'}: {_get(args, 'text') or ''}"]
    if name in ("recall", "forget"):
        return [str(_get(args, "query", "text") or "")]
    if name == "skill":
        return [str(_get(args, "name") or "")]
    if name == "ask":
        return [_first_line(_get(args, "question"))]
    if name.startswith("git_"):
        bits = [str(v) for k, v in args.items() if isinstance(v, (str, int)) and v not in ("", 0)]
        return ["  ".join(bits)] if bits else []
    return _generic(args)


def _generic(args: dict[str, Any]) -> list[str]:
    for value in args.values():
        if isinstance(value, str) and value.strip():
            return [_first_line(value)]
    if not args:
        return []
    return [json.dumps(args, ensure_ascii=False, default=str)]


def summary(name: str, output: str, *, is_error: bool = False, given: str | None = None) -> str:
    """The one-line outcome: the tool's own summary, else one derived from the output."""
    if given:
        return clip(_first_line(given), RESULT)
    output = output or ""
    first = _first_line(output)
    if is_error:
        return clip(first or "failed", RESULT)
    if name in ("grep", "glob"):
        if first.startswith("No "):
            return clip(first, RESULT)
        n = sum(1 for line in output.splitlines() if line and not line.startswith("... ["))
        return f"{n} hits" if name == "grep" else f"{n} paths"
    if name in ("read_file", "read_many_files", "list_dir"):
        return f"{_count_lines(output)} lines"
    if name == "bash":
        m = re.match(r"exit:?\s*(-?\d+)", first)
        body = [ln for ln in output.splitlines()[1:]
                if ln.strip() not in ("stdout:", "stderr:")]
        code = m.group(1) if m else "?"
        return f"exit {code}, {len(body)} lines out"
    return clip(first, RESULT) if first else "done"
