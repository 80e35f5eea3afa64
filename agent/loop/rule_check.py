"""Refusing permission rules that can never match, at startup, with the file and line.

A pattern rule on a tool whose calls carry no path, command, URL or target
(:attr:`agent.contract.tools.Tool.subjectless`: the clock, the todo list, memory) would be accepted
and silently ignored, so the user would believe in a rule that does nothing.  Those rules stop the
run instead (exit code 2), naming where they were written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def unmatchable_rule(config: Any, tools: dict[str, Any]) -> str:
    """A message naming the first rule that can never match, or ``""`` when there is none."""
    sources = ((Path(config.config_file), config.get("permission", {})),
               (Path(config.workspace) / ".agent" / "config.toml",
                config.project_permission))
    for path, table in sources:
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            tool = tools.get(str(key))
            if tool is None or not getattr(tool, "subjectless", False) \
                    or not isinstance(value, dict):
                continue
            for pattern in value:
                if pattern != "*":
                    line = line_of(path, str(key), str(pattern))
                    where = f"{path} line {line}" if line else str(path)
                    return f"{where}: {_why(str(key), str(pattern))}"
    flags = config.permission_flags
    for which in ("allow", "deny"):
        for key, pattern in getattr(flags, which, ()):
            tool = tools.get(key)
            if tool is not None and getattr(tool, "subjectless", False) and pattern != "*":
                return f"--{which} '{key}:{pattern}': {_why(key, pattern)}"
    return ""


def _why(key: str, pattern: str) -> str:
    return (f'the permission rule {key} "{pattern}" can never match: {key} calls carry no '
            "path, command, URL or target for a pattern to match. Give the whole tool one "
            f'decision instead ({key} = "allow", "ask" or "deny").')


def line_of(path: Path, key: str, pattern: str) -> int | None:
    """The line (1-based) where ``pattern`` is written for ``key`` in the TOML file, or the
    key's own line; None when neither can be found."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    name = re.escape(key)
    key_line = re.compile(rf'^\s*(permission\.)?["\']?{name}["\']?\s*=|'
                          rf'^\s*\[\s*permission\.["\']?{name}["\']?\s*\]')
    quoted = (f'"{pattern}"', f"'{pattern}'")
    start = next((n for n, text in enumerate(lines) if key_line.search(text)), None)
    if start is None:
        return None
    for n in range(start, len(lines)):
        if n > start and lines[n].lstrip().startswith("["):
            break  # the next table: the pattern is not written under this key
        if any(q in lines[n] for q in quoted) or (n > start and re.match(
                rf"^\s*{re.escape(pattern)}\s*=", lines[n])):
            return n + 1
    return start + 1
