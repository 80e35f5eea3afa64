"""Finding the workspace's secret files, so the sandbox can hide them from every command.

Which names are secret is not decided here: the core's secrets policy (:mod:`agent.contain.secrets`,
with the user's ``secrets_allow``) plus any plugin's ``agent_secret_matchers``.  This module
walks the
workspace and remembers what it found per directory with the directory's mtime, so a later
call only stats the directories it knows and re-lists the ones whose entries changed (a new
``.env`` changes its directory's mtime).  For a repository of a few hundred directories a
re-check costs well under a millisecond.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

#: A matcher gets a path's lower-cased segments (relative to the workspace) and says why it
#: holds secrets, or returns None.
Matcher = Callable[[Sequence[str]], "str | None"]

#: Directories never descended into: version control internals, dependency trees and
#: virtualenvs (a virtualenv's ``cacert.pem`` is what TLS needs, not a secret).
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                       ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
#: A walk stops after this many entries; the rest of a huge tree is re-tried next call.
MAX_ENTRIES = 200_000


@dataclass
class _Dir:
    mtime: int
    subdirs: tuple[str, ...]
    secrets: tuple[str, ...]


class SecretScanner:
    """Secret paths under one workspace, kept current cheaply between calls."""

    def __init__(self, workspace: str, matchers: Iterable[Matcher],
                 allow: Sequence[str] = ()) -> None:
        from agent.contain.secrets import SecretsPolicy, why_secret

        self.workspace = workspace.rstrip("/") or "/"
        self.matchers = [why_secret, *matchers]
        self.policy = SecretsPolicy(self.workspace, allow)  # the user's secrets_allow
        self.dirs: dict[str, _Dir] = {}
        self.truncated = False

    def _why(self, rel_parts: list[str]) -> str | None:
        for matcher in self.matchers:
            try:
                why = matcher(rel_parts)
            except Exception:  # a broken matcher must not open anything: treat as secret
                return "the secrets check failed"
            if why:
                return why
        return None

    def _opened(self, rel: str) -> bool:
        """The user's ``secrets_allow`` opens the path (every spelling that makes it
        secret must be allowed, as for the file tools)."""
        return bool(self.policy.allow) and not self.policy.is_secret(rel)

    def _list(self, path: str, rel: list[str]) -> _Dir | None:
        try:
            mtime = os.stat(path).st_mtime_ns
            entries = list(os.scandir(path))
        except OSError:
            return None
        subdirs: list[str] = []
        secrets: list[str] = []
        for entry in entries:
            parts = [*rel, entry.name.lower()]
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            rel_path = "/".join([*rel, entry.name]) if rel else entry.name
            secret = self._why(parts) is not None and not self._opened(rel_path)
            if not secret and entry.is_symlink():
                # Judge where a link leads as well as its name: notes.txt -> .env
                target = os.path.realpath(entry.path)
                secret = self._why([os.path.basename(target).lower()]) is not None \
                    and not self._opened(rel_path)
                if secret:
                    secrets.append(target)
            if secret:
                secrets.append(entry.path)
            elif is_dir and entry.name.lower() not in SKIP_DIRS:
                subdirs.append(entry.name)
        return _Dir(mtime, tuple(subdirs), tuple(secrets))

    def scan(self) -> tuple[str, ...]:
        """Every secret path (absolute) in the workspace now."""
        found: list[str] = []
        seen = 0
        stack: list[tuple[str, list[str]]] = [(self.workspace, [])]
        fresh: dict[str, _Dir] = {}
        self.truncated = False
        while stack:
            path, rel = stack.pop()
            known = self.dirs.get(path)
            record = known
            try:
                if known is None or os.stat(path).st_mtime_ns != known.mtime:
                    record = self._list(path, rel)
            except OSError:
                record = None
            if record is None:
                continue
            fresh[path] = record
            found.extend(record.secrets)
            seen += len(record.subdirs) + len(record.secrets) + 1
            if seen > MAX_ENTRIES:
                self.truncated = True
                break
            for name in record.subdirs:
                stack.append((os.path.join(path, name), [*rel, name.lower()]))
        self.dirs = fresh
        return tuple(dict.fromkeys(found))
