"""Agent definition files: Markdown with a frontmatter block naming a subagent.

Claude Code's ``.claude/agents/*.md`` (and ``~/.claude/agents/``)::

    ---
    name: code-reviewer
    description: Reviews changed code. Use after every change.
    tools: Read, Grep, Glob
    model: sonnet
    ---
    You are a senior reviewer...

``tools`` is a comma-separated list, a flow list (``[Read, Grep]``) or a block list; left
out, the agent may use every tool.  The body is the agent's system prompt.  The frontmatter
is read leniently, as Claude Code reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agent.lib import frontmatter

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: files larger than this are not read (bytes)
FILE_CAP = 200_000


@dataclass(frozen=True)
class AgentFile:
    """One agent: ``tools`` is None when the file names none (every tool)."""

    name: str
    description: str
    tools: tuple[str, ...] | None
    model: str
    prompt: str
    path: Path


def _tools(text: str) -> tuple[str, ...] | None:
    """The ``tools`` key of the frontmatter as written, in any of the three list forms."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return None
        m = re.match(r"^tools\s*:\s*(.*)$", line)
        if m is None:
            continue
        value = m.group(1).strip()
        if not value:  # a block list on the lines that follow
            items = []
            for follow in lines[i + 1:]:
                item = re.match(r"^\s*-\s*(.+)$", follow)
                if item is None:
                    break
                items.append(item.group(1))
            return tuple(frontmatter.unquote(x.strip()) for x in items if x.strip())
        value = value.strip("[]")
        return tuple(frontmatter.unquote(x.strip()) for x in value.split(",") if x.strip())
    return None


def read_agent(path: Path) -> AgentFile | str:
    """The agent in ``path``, or why it is not one."""
    try:
        if path.stat().st_size > FILE_CAP:
            return f"larger than {FILE_CAP:,} bytes"
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read: {exc}"
    doc = frontmatter.parse(text, lenient=True)
    if not doc.has_frontmatter:
        return "no --- frontmatter"
    name = doc.meta.get("name", "").strip() or path.stem
    if not NAME_RE.match(name):
        return f"name {name!r} is not a simple name (letters, digits, . _ -)"
    description = " ".join(doc.meta.get("description", "").split())
    if not description:
        return "frontmatter has no description"
    prompt = doc.body.strip()
    if not prompt:
        return "the system prompt (the body) is empty"
    return AgentFile(name, description, _tools(text), doc.meta.get("model", "").strip(),
                     prompt, path)


def read_dirs(dirs: list[Path]) -> tuple[dict[str, AgentFile], list[str]]:
    """Every agent of ``dirs`` by name (a later directory's wins) and the files skipped."""
    found: dict[str, AgentFile] = {}
    skipped: list[str] = []
    for directory in dirs:
        try:
            paths = sorted(p for p in directory.iterdir() if p.suffix == ".md" and p.is_file())
        except OSError:
            continue
        for path in paths:
            agent = read_agent(path)
            if isinstance(agent, str):
                skipped.append(f"{path}: {agent}")
            else:
                found[agent.name] = agent
    return found, skipped
