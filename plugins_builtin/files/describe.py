"""How each file tool's calls read to the user (``Tool.describe``): the transcript line's key
arguments and the approval dialog's question, from the arguments alone."""

from __future__ import annotations

import copy
import difflib
import re
from typing import Any

from agent import Change, Description

from . import patch_hunks

OLD = ("oldString", "old_string", "old")
NEW = ("newString", "new_string", "new")


def _get(args: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in args and args[name] not in (None, ""):
            return args[name]
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _first_line(text: str) -> str:
    lines = text.splitlines()
    return lines[0] if lines else ""


def _count(text: str) -> int:
    return len(text.splitlines()) if text else 0


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def changed_lines(old: str, new: str) -> tuple[int, int]:
    """(lines added, lines removed) turning ``old`` into ``new``."""
    a, b = old.splitlines(), new.splitlines()
    plus = minus = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            minus += i2 - i1
        if tag in ("replace", "insert"):
            plus += j2 - j1
    return plus, minus


def _counts(plus: int, minus: int) -> str:
    return f"+{plus} \u2212{minus}"  # a real minus sign, as diff tools print it


def _path(args: dict[str, Any]) -> str:
    return str(_get(args, "path", "file_path", "file") or "?")


def _key(d: dict[str, Any], *names: str) -> str:
    """The spelling of an argument the call used (the first one when it has none)."""
    return next((n for n in names if n in d), names[0])


def _with(args: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    out = copy.deepcopy(args)
    out[key] = value
    return out


def _lines_range(args: dict[str, Any]) -> str:
    offset, limit = _get(args, "offset"), _get(args, "limit")
    try:
        if offset and limit:
            return f"lines {offset}-{int(offset) + int(limit) - 1}"
    except (TypeError, ValueError):
        return ""
    if offset:
        return f"lines {offset}+"
    if limit:
        return f"lines 1-{limit}"
    return ""


def read_file(args: dict[str, Any]) -> Description:
    path = _path(args)
    return Description((f"{path}  {_lines_range(args)}".strip(),), f"Read {path}?")


def read_many_files(args: dict[str, Any]) -> Description:
    files = args.get("files") or []
    paths = [str(f.get("path", "?")) if isinstance(f, dict) else str(f) for f in files]
    more = [f"... {len(paths) - 8} more"] if len(paths) > 8 else []
    return Description(tuple(paths[:8] + more), f"Read {_plural(len(paths), 'file')}?")


def write_file(args: dict[str, Any]) -> Description:
    path, content = _path(args), _text(_get(args, "content"))
    lines = _count(content)
    changes = (Change(path, None, content),) if isinstance(args.get("content"), str) else ()
    return Description((f"{path}  {_plural(lines, 'line')}, {len(content)} chars",),
                       f"Write {path} ({_plural(lines, 'line')})?", changes,
                       lambda texts: _with(args, "content", texts[0]))


def edit_file(args: dict[str, Any]) -> Description:
    path = _path(args)
    old, new = _text(_get(args, *OLD)), _text(_get(args, *NEW))
    n = _count(old)
    details = [path, f"- {_first_line(old)}" + (f"  (+{n - 1} lines)" if n > 1 else "")]
    every = bool(_get(args, "replaceAll", "replace_all"))
    if every:
        details.append("every occurrence")
    plus, minus = changed_lines(old, new)
    where = ", every occurrence" if every else ""
    whole = isinstance(_get(args, *OLD), str) and isinstance(args.get(_key(args, *NEW)), str)
    return Description(tuple(details), f"Edit {path} ({_counts(plus, minus)}{where})?",
                       (Change(path, old, new),) if whole else (),
                       lambda texts: _with(args, _key(args, *NEW), texts[0]))


def multi_edit(args: dict[str, Any]) -> Description:
    path = _path(args)
    edits = [e for e in (args.get("edits") or []) if isinstance(e, dict)]
    details = [path]
    plus = minus = 0
    for i, e in enumerate(edits, 1):
        old, new = _text(_get(e, *OLD)), _text(_get(e, *NEW))
        p, m = changed_lines(old, new)
        plus, minus = plus + p, minus + m
        if i <= 5:
            details.append(f"{i}. - {_first_line(old)}")
    if len(edits) > 5:
        details.append(f"... {len(edits) - 5} more")
    raw = args.get("edits")
    whole = isinstance(raw, list) and all(
        isinstance(e, dict) and isinstance(_get(e, *OLD), str)
        and isinstance(e.get(_key(e, *NEW)), str) for e in raw)
    changes = tuple(Change(path, _text(_get(e, *OLD)), _text(e.get(_key(e, *NEW))),
                           f"(edit {i})" if len(edits) > 1 else "")
                    for i, e in enumerate(edits, 1)) if whole else ()

    def revise(texts: tuple[str, ...]) -> dict[str, Any]:
        out = copy.deepcopy(args)
        kept = []
        for e, text in zip(out["edits"], texts, strict=False):
            if text != _get(e, *OLD):  # a fully rejected edit is dropped
                e[_key(e, *NEW)] = text
                kept.append(e)
        out["edits"] = kept
        return out

    return Description(tuple(details), f"Edit {path}: {_plural(len(edits), 'edit')} "
                                       f"({_counts(plus, minus)})?", changes, revise)


_PATCH_HEADER = re.compile(r"\*\*\* (Add|Update|Delete) File: (.+)")


def apply_patch(args: dict[str, Any]) -> Description:
    patch = _text(_get(args, "patch", "input"))
    ops: list[str] = []
    files: list[str] = []
    plus = minus = 0
    for line in patch.splitlines():
        m = _PATCH_HEADER.match(line.strip())
        if m:
            ops.append(f"{m.group(1).lower()} {m.group(2).strip()}")
            files.append(m.group(2).strip())
        elif line.strip().startswith("*** Move to:"):
            ops.append(f"move to {line.split(':', 1)[1].strip()}")
        elif line.startswith("+") and not line.startswith("+++"):
            plus += 1
        elif line.startswith("-") and not line.startswith("---"):
            minus += 1
    details = ops[:10] + ([f"... {len(ops) - 10} more"] if len(ops) > 10 else [])
    target = files[0] if len(files) == 1 else _plural(len(files), "file")
    key = _key(args, "patch", "input")
    raw = args.get(key)
    changes = tuple(c.change() for c in patch_hunks.chunks(raw)) if isinstance(raw, str) else ()

    def revise(texts: tuple[str, ...]) -> dict[str, Any]:
        # every chunk is atomic: it was rejected when its text is not its new one
        rejected = {i for i, (c, text) in enumerate(zip(changes, texts, strict=False))
                    if text != c.new}
        return _with(args, key, patch_hunks.rebuild(str(raw), rejected))

    return Description(tuple(details), f"Patch {target} ({_counts(plus, minus)})?", changes,
                       revise)


def move_file(args: dict[str, Any]) -> Description:
    src = _get(args, "from", "source", "src") or "?"
    dst = _get(args, "to", "dest", "target") or "?"
    return Description((f"{src} -> {dst}",), f"Move {src} to {dst}?")


def delete_file(args: dict[str, Any]) -> Description:
    path = _path(args)
    return Description((path,), f"Delete {path} (it goes to the trash)?")


def grep(args: dict[str, Any]) -> Description:
    parts = [f"/{_get(args, 'pattern') or ''}/"]
    if _get(args, "include", "glob"):
        parts.append(f"in {_get(args, 'include', 'glob')}")
    if _get(args, "ignoreCase", "ignore_case"):
        parts.append("case-insensitive")
    if _get(args, "includeIgnored", "include_ignored"):
        parts.append("including ignored files")
    return Description(("  ".join(parts),), f"Search the files for {parts[0]}?")


def glob(args: dict[str, Any]) -> Description:
    pattern = str(_get(args, "pattern") or "")
    extra = "  including ignored files" if _get(args, "includeIgnored") else ""
    return Description((f"{pattern}{extra}",), f"List the files matching {pattern}?")


def list_dir(args: dict[str, Any]) -> Description:
    path = str(_get(args, "path") or ".")
    depth = _get(args, "depth")
    return Description((path + (f"  depth {depth}" if depth else ""),), f"List {path}?")


DESCRIBE = {"read_file": read_file, "read_many_files": read_many_files,
            "write_file": write_file, "edit_file": edit_file, "multi_edit": multi_edit,
            "apply_patch": apply_patch, "move_file": move_file, "delete_file": delete_file,
            "grep": grep, "glob": glob, "list_dir": list_dir}


def attach(tools: Any) -> None:
    """Give each file tool its ``describe``."""
    for tool in tools:
        if tool.describe is None and tool.name in DESCRIBE:
            tool.describe = DESCRIBE[tool.name]
