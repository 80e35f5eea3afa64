"""Finding and reading skills: markdown files with a name and a description.

Four places, later overriding earlier by name: the bundled skills, the registry's installs
(``<config dir>/registry/skills``), the user's (``<config dir>/skills``) and the project's
(``<workspace>/.agent/skills``).  A :class:`Library` re-reads them when a file appears,
changes or goes, so a skill installed from ``/registry`` is usable from the next step.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from agent.lib import frontmatter

log = logging.getLogger("agent.skills")

#: Bodies longer than this are cut (characters).
BODY_CAP = 20_000
#: Descriptions longer than this are cut in the catalogue (characters).
DESCRIPTION_CAP = 300
#: Files larger than this are not read at all (bytes).
FILE_CAP = 1_000_000
#: A skill name: what the model passes to the ``skill`` tool.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"

CATALOGUE_HEADER = (
    "Skills available through the skill tool. Load one when its description matches the "
    "task, before you start working, and follow it as if the user had written it:")


@dataclass(frozen=True)
class Skill:
    """One skill: ``origin`` is ``builtin``, ``registry``, ``user`` or ``project``."""

    name: str
    description: str
    body: str
    origin: str
    path: str = ""


@dataclass(frozen=True)
class Skipped:
    """A file that is not a usable skill, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Catalogue:
    """The skills in effect (by name, sorted) and the files that were skipped."""

    skills: dict[str, Skill] = field(default_factory=dict)
    skipped: tuple[Skipped, ...] = ()

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def prompt_text(self) -> str:
        """The system prompt's catalogue: names and descriptions only, never bodies."""
        if not self.skills:
            return ""
        lines = [CATALOGUE_HEADER]
        lines += [f"- {s.name}: {s.description}" for s in self.skills.values()]
        return "\n".join(lines)


def parse_skill(text: str, origin: str, path: str = "") -> Skill | str:
    """The skill in ``text``, or the reason it is not one."""
    doc = frontmatter.parse(text, lenient=origin in CLAUDE_ORIGINS)
    if not doc.has_frontmatter:
        return "no --- frontmatter"
    if doc.problem:
        return doc.problem
    name = doc.meta.get("name", "").strip()
    description = " ".join(doc.meta.get("description", "").split())
    if not name:
        return "frontmatter has no name"
    if not description:
        return "frontmatter has no description"
    if not NAME_RE.match(name):
        return f"name {name!r} is not a simple name (letters, digits, . _ -; at most 64)"
    if len(description) > DESCRIPTION_CAP:
        description = description[:DESCRIPTION_CAP - 3].rstrip() + "..."
    body = doc.body.strip()[:BODY_CAP].rstrip()
    if not body:
        return "the body is empty"
    return Skill(name, description, body, origin, path)


#: origins whose skills are Claude Code's: one directory per skill holding ``SKILL.md``
CLAUDE_ORIGINS = frozenset({"claude user", "claude project"})


def locations(config_dir: Path, workspace: Path,
              home: Path | None = None) -> list[tuple[str, Path]]:
    """``(origin, directory)`` in override order (later wins).  ``home`` adds Claude Code's
    ``~/.claude/skills`` and the project's ``.claude/skills`` (ours win over theirs)."""
    dirs = [("builtin", BUNDLED_DIR), ("registry", config_dir / "registry" / "skills")]
    if home is not None:
        dirs.append(("claude user", home / ".claude" / "skills"))
    dirs.append(("user", config_dir / "skills"))
    if home is not None:
        dirs.append(("claude project", workspace / ".claude" / "skills"))
    dirs.append(("project", workspace / ".agent" / "skills"))
    return dirs


def _markdown_files(directory: Path, origin: str = "") -> list[os.DirEntry[str]]:
    try:
        if origin in CLAUDE_ORIGINS:  # <name>/SKILL.md
            with os.scandir(directory) as it:
                subdirs = sorted(e.path for e in it if e.is_dir())
            found = []
            for sub in subdirs:
                with os.scandir(sub) as inner:
                    found += [e for e in inner if e.name == "SKILL.md" and e.is_file()]
            return found
        with os.scandir(directory) as it:
            return sorted((e for e in it if e.name.endswith(".md") and e.is_file()),
                          key=lambda e: e.name)
    except OSError:  # missing or unreadable directory: no skills there
        return []


def load(dirs: list[tuple[str, Path]]) -> Catalogue:
    """Read every ``*.md`` in ``dirs``; a later directory's skill replaces an earlier one of
    the same name.  Broken files are skipped (and logged), never fatal."""
    found: dict[str, Skill] = {}
    skipped: list[Skipped] = []
    for origin, directory in dirs:
        for entry in _markdown_files(directory, origin):
            path = Path(entry.path)
            try:
                if entry.stat().st_size > FILE_CAP:
                    raise ValueError(f"larger than {FILE_CAP:,} bytes")
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                result: Skill | str = f"cannot be read: {exc}"
            else:
                result = parse_skill(text, origin, str(path))
            if isinstance(result, str):
                log.warning("skill file %s skipped: %s", path, result)
                skipped.append(Skipped(str(path), result))
                continue
            found[result.name] = result
    return Catalogue(dict(sorted(found.items())), tuple(skipped))


def _signature(dirs: list[tuple[str, Path]]) -> tuple[object, ...]:
    """What changes when a skill file is added, edited or removed (bundled ones never are)."""
    sig: list[object] = []
    for origin, directory in dirs:
        if origin == "builtin":
            continue
        for entry in _markdown_files(directory, origin):
            try:
                st = entry.stat()
            except OSError:
                continue
            sig.append((entry.path, st.st_mtime_ns, st.st_size))
    return tuple(sig)


class Library:
    """The skills of one workspace and config dir, re-read when their files change.

    :meth:`current` costs a directory listing per location, so it is called freely (once per
    model step and per ``skill`` call).
    """

    def __init__(self, config_dir: Path, workspace: Path,
                 dirs: list[tuple[str, Path]] | None = None, home: Path | None = None) -> None:
        self.dirs = dirs if dirs is not None else locations(config_dir, workspace, home)
        self._signature: tuple[object, ...] | None = None
        self._catalogue = Catalogue()

    def current(self) -> Catalogue:
        sig = _signature(self.dirs)
        if sig != self._signature:
            self._catalogue = load(self.dirs)
            self._signature = sig
        return self._catalogue
