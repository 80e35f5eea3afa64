"""Whether a repository's own files can make a read-only git command run a program.

``git status`` runs ``core.fsmonitor``, ``git log`` a pager and ``diff.external``, ``git
diff`` textconv drivers, and ``git status`` the ``post-index-change`` hook when it refreshes
the index.  Those come from files inside the repository, which a command or a cloned project
controls.  :func:`keys` reads a git config file with git's own grammar (a key may follow a
section header on the same line, ``[core] fsmonitor = x``; values continue over
backslash-newlines; ``[a "b"]`` and ``[a.b]`` subsections; ``#``/``;`` comments outside
quotes), and :func:`repo_config_runs_programs` checks every config file git reads from the
repository (``config`` and ``config.worktree`` in the git directory and the common
directory) and the hooks a read-only command can trigger.  Anything it cannot read counts as
unsafe.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.shell.git import is_program_key

#: Hooks that git commands which only read can still run: refreshing the index
#: (``git status``, ``git diff``) writes it and runs ``post-index-change``; the rest run
#: when a ref or the object store is touched on the way.
READ_HOOKS = ("post-index-change", "reference-transaction", "pre-auto-gc",
              "fsmonitor-watchman")


class ConfigError(ValueError):
    """The text is not a config file git would read."""


def keys(text: str) -> list[tuple[str, str]]:
    """Every ``(section[.subsection].key, value)`` in a git config file, section and key
    lower-cased as git compares them.  Raises :class:`ConfigError` where git would refuse
    the file."""
    text = text.removeprefix("\ufeff")
    out: list[tuple[str, str]] = []
    section: str | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c in "#;":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif c == "[":
            section, i = _header(text, i + 1)
        elif c.isalpha():
            start = i
            while i < n and (text[i].isalnum() or text[i] == "-"):
                i += 1
            name = text[start:i].lower()
            while i < n and text[i] in " \t":
                i += 1
            value = "true"
            if i < n and text[i] == "=":
                value, i = _value(text, i + 1)
            elif i < n and text[i] not in "\r\n#;":
                raise ConfigError(f"a bad character after the key {name!r}")
            out.append((f"{section}.{name}" if section is not None else name, value))
        else:
            raise ConfigError(f"a bad character {c!r}")
    return out


def _header(text: str, i: int) -> tuple[str, int]:
    n = len(text)
    start = i
    while i < n and (text[i].isalnum() or text[i] in "-."):
        i += 1
    name = text[start:i].lower()
    if i < n and text[i] == "]":
        return name, i + 1
    while i < n and text[i] in " \t":
        i += 1
    if i >= n or text[i] != '"':
        raise ConfigError("a bad section header")
    i += 1
    sub: list[str] = []
    while i < n and text[i] != '"':
        if text[i] == "\n":
            raise ConfigError("a newline in a subsection name")
        if text[i] == "\\" and i + 1 < n:
            i += 1
        sub.append(text[i])
        i += 1
    if i + 1 >= n or text[i + 1] != "]":
        raise ConfigError("a bad section header")
    return f"{name}.{''.join(sub)}", i + 2


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


def _value(text: str, i: int) -> tuple[str, int]:
    n = len(text)
    out: list[str] = []
    quoted = False
    while i < n and text[i] in " \t" and not out:
        i += 1
    pending_space = ""
    while i < n:
        c = text[i]
        if c == "\n":
            if quoted:
                raise ConfigError("a newline inside a quoted value")
            return "".join(out), i + 1
        if not quoted and c in "#;":
            end = text.find("\n", i)
            return "".join(out), n if end < 0 else end + 1
        if not quoted and c in " \t":
            pending_space += c
            i += 1
            continue
        if pending_space:
            out.append(pending_space)
            pending_space = ""
        if c == "\\":
            nxt = text[i + 1] if i + 1 < n else ""
            if nxt == "\n":
                i += 2
                continue
            if nxt == "\r" and text[i + 2:i + 3] == "\n":
                i += 3
                continue
            if nxt not in _ESCAPES:
                raise ConfigError("a bad escape in a value")
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        if c == '"':
            quoted = not quoted
            i += 1
            continue
        out.append(c)
        i += 1
    if quoted:
        raise ConfigError("an unclosed quote")
    return "".join(out), n


def find_git_dir(start: Path) -> Path | None:
    """The ``.git`` (directory or file) git would find from ``start``, walking up as git
    does; None when there is none."""
    current = start
    while True:
        candidate = current / ".git"
        if candidate.exists() or candidate.is_symlink():
            return candidate
        if current.parent == current:
            return None
        current = current.parent


def _git_dirs(dot_git: Path) -> list[Path]:
    """The git directory a ``.git`` leads to, and its common directory."""
    git = dot_git
    if git.is_file():
        pointer = git.read_text(errors="replace").strip()
        if not pointer.startswith("gitdir:"):
            raise ConfigError(f"{git} is not a gitdir pointer")
        git = (dot_git.parent / pointer[7:].strip()).resolve()
    dirs = [git]
    common = git / "commondir"
    if common.is_file():
        dirs.append((git / common.read_text(errors="replace").strip()).resolve())
    return dirs


def repo_config_runs_programs(workspace: Path | str,
                              directories: tuple[str, ...] = ()) -> str | None:
    """Why a read-only git command run in the workspace (or in one of ``directories``, where
    the command changes to first) could run a program because of the repository's own files,
    or None.  ``""`` among ``directories`` is a directory only known at run time."""
    root = Path(workspace)
    starts = [root]
    for directory in directories:
        if not directory:
            return "git runs in a directory only known when it runs"
        starts.append(Path(os.path.join(root, os.path.expanduser(directory))))
    seen: set[Path] = set()
    try:
        for start in starts:
            dot_git = find_git_dir(start.resolve()) if start.exists() else None
            if dot_git is None or dot_git in seen:
                continue
            seen.add(dot_git)
            for git_dir in _git_dirs(dot_git):
                why = _runs_programs(git_dir)
                if why:
                    return why
    except (OSError, ConfigError) as exc:
        return f"the repository config cannot be read ({exc})"
    return None


def _runs_programs(git_dir: Path) -> str | None:
    for name in ("config", "config.worktree"):
        config = git_dir / name
        if not config.exists():
            continue
        for key, _value in keys(config.read_text(errors="replace")):
            if is_program_key(key):
                return f"{config} sets {key}, a program git may run"
    for hook in READ_HOOKS:
        if (git_dir / "hooks" / hook).exists():
            return f"{git_dir / 'hooks' / hook} is a hook git may run"
    return None
