"""Installed manifests in force: read from disk when they change, judged against effects.

A rule applies to a call when the call's tool matches one of the rule's ``tools`` globs; the
rule then checks every path the call reads, writes or deletes against ``pathPattern`` and
every simple command in its shell command against ``commandPattern``.

Tool names in a rule also stand for what those tools do, so a rule cannot be side-stepped
by a different tool with the same effect: naming any file-changing tool (``write_file``,
``edit_file``, ``multi_edit``, ``apply_patch``, ``move_file``, ``delete_file``) covers the paths
*every* tool would create, change or delete; naming a reading tool covers every tool's reads;
naming ``bash`` covers every tool's shell command.

Matching is case-insensitive.  Paths are compared in several spellings, all with ``/``
separators: relative to the workspace with ``.`` and ``..`` folded (``secrets/a.txt``), as
written, folded (``/abs/ws/secrets/a.txt``), and where the path really leads once symlinks
are resolved (``link/a`` with ``link -> secrets``), so ``secrets/*`` and ``/etc/*`` both work
and a symlink cannot walk around them.

A read that is a file glob (grep's ``include``, the glob tool's pattern: ``**``, ``*.env``)
is denied when some file it could reach matches the rule's ``pathPattern``, so a rule on
``secrets/*`` holds against a grep over the whole workspace; narrowing ``include`` to paths
outside it lets the search run.
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from agent import Verdict
from agent.contract.tools import Effects
from agent.lib.pathparts import segments
from agent.loop import permissions
from agent.shell.parse import parse as parse_shell

from . import bundled, lock
from .globs import GLOB_CHARS, glob_match, globs_overlap
from .manifest import DenyRule, Manifest, ManifestError, parse_manifest

log = logging.getLogger("agent.registry")

CHANGING_TOOLS = frozenset({"write_file", "edit_file", "multi_edit", "apply_patch",
                            "move_file", "delete_file"})
READING_TOOLS = frozenset({"read_file", "read_many_files", "list_dir", "glob", "grep",
                           "git_blame", "git_diff", "git_log", "git_show", "git_status",
                           "git_branch"})
COMMAND_TOOLS = frozenset({"bash"})

#: Installed manifests larger than this are refused (bytes); the registry caps entries lower.
FILE_CAP = 256 * 1024


@dataclass(frozen=True)
class Scope:
    """What a rule looks at for one call: which path lists, and whether the command."""

    reads: bool = False
    changes: bool = False
    command: bool = False

    @property
    def empty(self) -> bool:
        return not (self.reads or self.changes or self.command)


def rule_scope(rule: DenyRule, tool_name: str) -> Scope:
    """What ``rule`` inspects in a call of ``tool_name`` (see the module docstring)."""
    if any(glob_match(t, tool_name) for t in rule.tools):
        return Scope(reads=True, changes=True, command=True)

    def names(known: frozenset[str]) -> bool:
        return any(glob_match(t, k) for t in rule.tools for k in known)

    return Scope(reads=names(READING_TOOLS), changes=names(CHANGING_TOOLS),
                 command=names(COMMAND_TOOLS))


def path_spellings(path: str, workspace: Path | None) -> tuple[str, ...]:
    """The lower-cased forms a path pattern is matched against (see the module docstring)."""
    if not path.strip():
        return ()
    relative = "/".join(segments(path, workspace))
    text = path.replace("\\", "/").strip()
    written = posixpath.normpath(text).lower() if text else ""
    resolved = permissions.path_spellings(text, workspace)[-1].lower() if workspace else ""
    return tuple(dict.fromkeys(s for s in (relative, written, resolved) if s))


def _reaches(pattern: str, path: str, workspace: Path | None) -> bool:
    """True when ``path`` (a path, or a file glob) can lead to a file matching ``pattern``."""
    spellings = path_spellings(path, workspace)
    if any(glob_match(pattern, s) for s in spellings):
        return True
    if not GLOB_CHARS.intersection(path):
        return False
    globs = [s for s in spellings if GLOB_CHARS.intersection(s)]
    if pattern.startswith("/"):  # an absolute pattern meets the glob's absolute spelling
        root = str(workspace or "").replace("\\", "/").rstrip("/").lower()
        globs = [s if s.startswith("/") else
                 f"{root}/{'' if '/' in s.rstrip('/') else '**/'}{s}" for s in globs]
    else:
        globs = [s for s in globs if not s.startswith("/")] or globs
    return any(globs_overlap(pattern, s) for s in globs)


def command_spellings(command: str) -> tuple[tuple[str, ...], bool]:
    """Every simple command (as run, wrappers stripped, and as written) plus the whole line,
    lower-cased; and whether the whole line could be read."""
    script = parse_shell(command)
    out: list[str] = [command.strip().lower()]
    for simple in script.commands:
        out.append(" ".join(simple.argv).lower())
        out.append(" ".join(simple.words).lower())
    return tuple(dict.fromkeys(s for s in out if s)), script.complete


def judge(manifests: tuple[Manifest, ...], tool_name: str, effects: Effects,
          workspace: Path | None) -> Verdict | None:
    """The first denial any installed manifest gives this call, or None."""
    commands: tuple[str, ...] | None = None
    complete = True
    for manifest in manifests:
        for rule in manifest.deny:
            scope = rule_scope(rule, tool_name)
            if scope.empty:
                continue
            if rule.path_pattern is not None:
                pattern = rule.path_pattern.lower()
                paths = ((effects.reads if scope.reads else ())
                         + (effects.changed_paths if scope.changes else ()))
                for path in paths:
                    if not _reaches(pattern, path, workspace):
                        continue
                    if GLOB_CHARS.intersection(path) and not any(
                            glob_match(pattern, s) for s in path_spellings(path, workspace)):
                        return _deny(manifest, rule, f"{path} could reach files matching "
                                                     f"{rule.path_pattern}; narrow it to "
                                                     "paths outside")
                    return _deny(manifest, rule, f"{path} matches {rule.path_pattern}")
            if rule.command_pattern is not None and scope.command and effects.command:
                if commands is None:
                    commands, complete = command_spellings(effects.command)
                if not complete:
                    return _deny(manifest, rule, "the command is too convoluted to check "
                                                 "against this rule")
                pattern = rule.command_pattern.lower()
                for command in commands:
                    if glob_match(pattern, command):
                        return _deny(manifest, rule,
                                     f"{_short(command)!r} matches {rule.command_pattern}")
    return None


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _deny(manifest: Manifest, rule: DenyRule, why: str) -> Verdict:
    return Verdict.deny(f"{rule.reason} ({why})", manifest.name)


# ---- the installed directory -------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    """Manifests in force (sorted by name) and files that were refused, with the reason."""

    manifests: tuple[Manifest, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()


def read_installed(directory: Path) -> Installed:
    """Validate every ``*.json`` in ``directory``; a bad file is reported and skipped.

    Each file must be the one the install record names (same sha256): a manifest changed
    after its install is refused. When the changed file is a bundled one, the copy that
    shipped with agent stays in force (a guard cannot be switched off by editing it), and
    the change is still reported."""
    manifests: list[Manifest] = []
    problems: list[tuple[str, str]] = []
    root = Path(directory).parent
    for entry in _json_files(directory):
        path = Path(entry.path)
        expected = path.name[:-len(".json")]
        try:
            if entry.stat().st_size > FILE_CAP:
                raise ManifestError([f"larger than {FILE_CAP // 1024} KB"])
            data = path.read_bytes()
            changed = lock.problem(root, "plugin", expected, data)
            shipped = _shipped_copy(root, expected) if changed is not None else None
            if shipped is not None:
                manifests.append(parse_manifest(shipped, expected_name=expected))
                changed = f"{changed}; the bundled copy stays in force"
            manifest = parse_manifest(data, expected_name=expected)  # its own faults first
            if changed is not None:
                raise ManifestError([changed])
            manifests.append(manifest)
        except ManifestError as exc:
            problems.append((str(path), str(exc)))
        except OSError as exc:
            problems.append((str(path), f"cannot be read: {exc}"))
    for path, problem in problems:
        log.warning("installed plugin %s skipped: %s", path, problem)
    return Installed(tuple(sorted(manifests, key=lambda m: m.name)), tuple(problems))


def _shipped_copy(root: Path, name: str) -> bytes | None:
    """The bundled manifest ``name`` as shipped, when the install record says it came from
    the bundled index and the shipped file is still the one recorded."""
    entry = lock.load(root).get("plugin", {}).get(name)
    if entry is None or entry.get("source") != bundled.SOURCE:
        return None
    try:
        data = bundled.read(f"{bundled.SCHEME}plugins/{name}.json")
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == entry.get("index_sha256") else None


def _json_files(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted((e for e in it if e.name.endswith(".json") and e.is_file()),
                          key=lambda e: e.name)
    except OSError:
        return []


@dataclass
class InstalledPlugins:
    """The manifests under ``directory``, re-read whenever a file there is added, changed or
    removed: an install or removal takes effect at the next tool call, without a restart."""

    directory: Path
    _signature: tuple[object, ...] | None = None
    _installed: Installed = field(default_factory=Installed)

    def signature(self) -> tuple[object, ...]:
        sig: list[object] = []
        for entry in _json_files(self.directory):
            try:
                st = entry.stat()
            except OSError:
                continue
            sig.append((entry.name, st.st_mtime_ns, st.st_size, st.st_ino))
        try:  # a reinstall rewrites the record: the verdict on each file may change
            st = lock.lock_path(Path(self.directory).parent).stat()
            sig.append((lock.LOCK_NAME, st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            pass
        return tuple(sig)

    def current(self) -> Installed:
        sig = self.signature()
        if sig != self._signature:
            self._installed = read_installed(self.directory)
            self._signature = sig
        return self._installed
