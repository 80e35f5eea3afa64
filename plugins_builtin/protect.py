"""Refuses writes to files a tool owns: .git, lockfiles, node_modules, vendor, caches; and
asks, in every permission mode, before a write to a file that acts later (.envrc, .vscode/,
the agent's project config: agent.contain.walls).

The set is exactly the one docs/permissions.md lists.  Directory names people make by hand
for their own output (``build/``, ``dist/``, ``out/``, ``coverage/``) are not in it: ``mkdir
-p out/a`` and ``mkdir -p build && touch build/x`` are everyday commands, not edits of
another tool's files."""

from __future__ import annotations

import os

from agent import Verdict, hookimpl
from agent.lib.pathparts import segments

ADVICE = "Regenerate it with the tool that owns it rather than editing it."

LOCKFILES = frozenset({
    "bun.lock", "bun.lockb", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "cargo.lock",
    "poetry.lock", "uv.lock", "composer.lock", "go.sum", "gemfile.lock",
})

# Directories whose contents belong to a tool, with the reason given to the model.
DIRECTORIES: dict[str, str] = {
    ".git": "git's own data; change it with git commands",
    "node_modules": "installed dependencies; use the package manager",
    "vendor": "vendored dependencies; use the package manager",
    **{name: "a framework's build output; rebuild it instead"
       for name in (".next", ".nuxt", ".svelte-kit")},
    **{name: "a tool's cache or virtual environment"
       for name in (".venv", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".turbo",
                    ".parcel-cache")},
}


def why_protected(parts: list[str]) -> str | None:
    """Why a path made of ``parts`` (lower-cased segments) is generated, or None."""
    if not parts:
        return None
    if parts[-1] in LOCKFILES:
        return "a lockfile written by the package manager"
    if parts[-1] == ".git":
        # The repository itself, or the ".git" file of a worktree or submodule: rewriting
        # it points git at another repository.
        return DIRECTORIES[".git"]
    directories = parts[:-1]
    for i, directory in enumerate(directories):
        if directory in DIRECTORIES:
            return DIRECTORIES[directory]
        if directory == "target" and i + 1 < len(directories) and \
                directories[i + 1] in ("debug", "release"):
            return "build output; rebuild it instead"
    return None


def _real_parts(path: str, workspace) -> list[str] | None:
    """The segments of where ``path`` really leads (symlinks resolved), relative to the
    workspace when inside it; None when it cannot be resolved."""
    if workspace is None:
        return None
    root = os.path.realpath(workspace)
    try:
        real = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    except (OSError, ValueError):
        return None
    return segments(real, root)


def acts_later(parts: list[str]) -> str | None:
    """What the persistence file at ``parts`` does later (a program it makes run, how it
    changes an agent), or None when it is none (:mod:`agent.contain.walls`)."""
    from agent.contain.walls import persistent_entry

    entry = persistent_entry("/".join(parts))
    return entry.does if entry is not None else None


@hookimpl
def agent_guard_tool_call(call, effects, session):
    """Deny any call that would write or delete a protected path, whatever the tool: as
    written, or where a symlink on the way leads.  Ask, in every permission mode, about one
    that would write a persistence file (``.envrc``, ``.vscode/``, the agent's own project
    config ...): the question says what the file does."""
    workspace = getattr(session, "workspace", None)
    denial = _generated(effects, workspace)
    if denial is not None:
        return denial
    for path in effects.changed_paths:
        does = acts_later(segments(path, workspace))
        if does is None:
            real = _real_parts(path, workspace)
            does = acts_later(real) if real is not None else None
        if does is not None:
            return Verdict.ask(f"{path} acts later, outside this call: {does}", "protect")
    return None


def _generated(effects, workspace):
    """The denial of a write to a generated path, or None."""
    for path in effects.changed_paths:
        why = why_protected(segments(path, workspace))
        if why is None:
            real = _real_parts(path, workspace)
            why = why_protected(real) if real is not None else None
            if why:
                target = "/".join(real or [])
                return Verdict.deny(f"refusing to write {path}, which leads to {target} "
                                    f"({why}). {ADVICE}", "protect")
        if why:
            return Verdict.deny(f"refusing to write {path} ({why}). {ADVICE}", "protect")
    return None
