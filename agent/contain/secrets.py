"""The secrets policy: which paths hold credentials, judged the same way for every tool.

One definition serves every reader and writer: the file tools (``read_file``,
``read_many_files``, ``grep``), the git tools (a secret path's content is cut out of their
output), the ``secrets`` guard (any tool's effects, reads and writes alike) and the sandbox,
which hides the same files from commands (:func:`find_secret_paths`).

A path is secret when any of its segments is a secret name: so a directory named like a secret
file (``.env/``) hides everything under it, as ``.ssh/`` does.  Matching is case-insensitive
(``.ENV``), both separators count, ``.`` and ``..`` are folded, and the path is judged twice:
as written, and where it really leads once symlinks are resolved (``notes.txt`` pointing at
``.env`` is ``.env``; a link to ``~/.ssh/id_rsa`` is an SSH key).  Only the user's own config
can open a secret path: ``secrets_allow`` lists globs (workspace-relative, matched against
every spelling that makes the path secret); a project's ``.agent/config.toml`` cannot.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.lib.globmatch import glob_match
from agent.lib.pathparts import segments

#: Directories whose whole content is credentials.
SECRET_DIRS = frozenset({".aws", ".ssh", ".gnupg"})
#: Extensions of keys and certificates.
KEY_EXTENSIONS = (".pem", ".key", ".p12", ".pfx", ".jks", ".keystore")
#: Dotfiles that hold registry or database credentials.
CREDENTIAL_DOTFILES = frozenset({".npmrc", ".pypirc", ".netrc", ".pgpass", ".git-credentials"})
#: Environment-file templates: meant to be committed and read, never hold real values.
ENV_TEMPLATES = (".example", ".sample", ".template")

_SSH_KEYS = re.compile(r"^id_(rsa|ed25519|ecdsa|dsa)(\.pub)?$")
_CREDENTIAL_FILES = re.compile(r"^(credentials|secrets?)\.(json|ya?ml|toml|ini)$")

#: The same rules as case-insensitive globs over one path segment, for tools that take
#: patterns (the sandbox's hide list, ripgrep ``--iglob``, documentation).  Templates
#: (``.env.example``) are the exception :func:`why_secret_name` makes.
SECRET_NAME_GLOBS: tuple[str, ...] = (
    ".env", "*.env", "*.env.*",
    *(f"*{ext}" for ext in KEY_EXTENSIONS),
    "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa",
    "id_rsa.pub", "id_ed25519.pub", "id_ecdsa.pub", "id_dsa.pub",
    *sorted(CREDENTIAL_DOTFILES),
    *(f"{stem}.{ext}" for stem in ("credentials", "secret", "secrets")
      for ext in ("json", "yaml", "yml", "toml", "ini")),
    *sorted(SECRET_DIRS),
)


@functools.lru_cache(maxsize=16384)
def why_secret_name(name: str) -> str | None:
    """Why one lower-cased path segment (a file or directory name) is a secret, or None.
    (Cached: a walk asks about the same directory names again and again.)"""
    if name in SECRET_DIRS:
        return f"{name} holds credentials"
    if _is_env_file(name):
        return "environment files hold secrets"
    if name.endswith(KEY_EXTENSIONS):
        return "keys and certificates are secrets"
    if _SSH_KEYS.match(name):
        return "SSH keys are secrets"
    if name in CREDENTIAL_DOTFILES:
        return f"{name} holds registry or database credentials"
    if _CREDENTIAL_FILES.match(name):
        return "credentials files hold secrets"
    return None


def _is_env_file(name: str) -> bool:
    if not (name == ".env" or name.endswith(".env") or ".env." in name):
        return False
    return not name.endswith(ENV_TEMPLATES)


#: Every secret name contains one of these (keep in step with :func:`why_secret_name`): a
#: path without any is not secret, which one regex search decides for the great majority of
#: the paths a walk meets.  Factored by prefix, since ``re`` scans an alternation of plain
#: literals one by one.
_MAYBE_SECRET = re.compile(r"\.(?:env|pem|key|p12|pfx|jks|npmrc|pypirc|pgpass|netrc|gnupg|aws"
                           r"|ssh|git-credentials)|id_(?:rsa|ed25519|ecdsa|dsa)|credentials\.|secret")


def why_secret(parts: list[str]) -> str | None:
    """Why a path made of ``parts`` (lower-cased segments, see
    :func:`agent.lib.pathparts.segments`) holds secrets, or None.

    Every segment counts: ``.ssh/known_hosts`` and ``.env/prod`` are secret because of the
    directory they are in.
    """
    if not _MAYBE_SECRET.search("/".join(parts)):
        return None
    for i, part in enumerate(parts):
        why = why_secret_name(part)
        if why is None:
            continue
        if i < len(parts) - 1:
            return f"everything under {part}/ is secret ({why})"
        return why
    return None


@dataclass(frozen=True)
class SecretVerdict:
    """A refused path: the spelling that made it secret, and why."""

    path: str
    spelling: str
    why: str

    def message(self, verb: str = "read") -> str:
        """The sentence the model reads."""
        via = "" if self.spelling == self.path else f" (it leads to {self.spelling})"
        return (f"refusing to {verb} {self.path}{via}: {self.why}. Ask the user for the values "
                "you need, or to add the path to secrets_allow in their config.")


class SecretsPolicy:
    """The secrets policy of one workspace, with the user's ``secrets_allow`` globs."""

    def __init__(self, workspace: Path | str | None, allow: Iterable[str] = ()) -> None:
        self.workspace = Path(workspace) if workspace is not None else None
        self.root_real = (Path(os.path.realpath(self.workspace))
                          if self.workspace is not None else None)
        self.allow = tuple(str(p).replace("\\", "/").lower() for p in allow if str(p).strip())

    def spellings(self, path: str) -> list[str]:
        """The spellings a path is judged by: as written (folded, workspace-relative when
        inside) and its real target (workspace-relative when inside, else absolute)."""
        parts = segments(path, self.workspace)
        written = "/".join(parts) or "."
        stripped = path.replace("\\", "/").strip()
        if stripped.startswith("/") and not (self.workspace is not None and _inside(
                Path(str(self.workspace)), posixpath.normpath(stripped))):
            written = "/" + written  # absolute and outside: keep it absolute for allow globs
        out = [written]
        if self.root_real is not None:
            try:
                real = os.path.realpath(self.root_real / os.path.expanduser(path))
            except (OSError, ValueError):  # a NUL byte: the tools refuse the path anyway
                real = ""
            if real:
                out.append("/".join(segments(real, self.root_real)) if _inside(
                    self.root_real, real) else real.replace("\\", "/").lower())
        return list(dict.fromkeys(out))

    def _allowed(self, spelling: str) -> bool:
        return any(glob_match(pattern, spelling.lower()) for pattern in self.allow)

    def check(self, path: str) -> SecretVerdict | None:
        """The reason ``path`` may not be read or written, or None when it may.

        Each spelling that is secret must be allowed by ``secrets_allow`` on its own, so a
        link the user allowed cannot open the key it points at.
        """
        for spelling in self.spellings(path):
            why = why_secret(segments(spelling))
            if why is not None and not self._allowed(spelling):
                return SecretVerdict(path, spelling, why)
        return None

    def is_secret(self, path: str) -> bool:
        """Whether :meth:`check` refuses ``path``."""
        return self.check(path) is not None

    def is_secret_entry(self, rel: str, is_symlink: bool) -> bool:
        """:meth:`is_secret` for a path a walker found under the real workspace root: a path
        that is no link (and, the walker not entering linked directories, has none on the
        way) leads where it says, so its name alone decides, without touching the disk."""
        if is_symlink:
            return self.is_secret(rel)
        low = rel.lower()
        if not _MAYBE_SECRET.search(low):
            return False
        parts = low.split("/")
        return why_secret(parts) is not None and not self._allowed("/".join(parts))


def _inside(root_real: Path, real: str) -> bool:
    root = str(root_real).rstrip("/")
    return real == root or real.startswith(root + "/")


def policy_for(config: Any, workspace: Path | str | None = None) -> SecretsPolicy:
    """The policy for a config (its ``workspace`` and ``secrets_allow``); works with a
    missing config too (no allows)."""
    if workspace is None:
        workspace = getattr(config, "workspace", None)
    allow: Any = ()
    if config is not None:
        getter = getattr(config, "get", None)
        allow = (getter("secrets_allow") if callable(getter) else None) or ()
    if isinstance(allow, str):
        allow = (allow,)
    return SecretsPolicy(workspace, allow)


def find_secret_paths(root: Path | str, policy: SecretsPolicy | None = None, *,
                      limit: int = 100_000) -> list[Path]:
    """Every secret file or directory under ``root`` (ignored files included), for the
    sandbox to hide.  A secret directory is listed once and not entered; ``.git`` and
    symlinked directories are not entered; a symlink named like a secret is listed (hide
    the link) and a link pointing at a secret inside ``root`` is not needed (its target is
    listed).  At most ``limit`` entries are visited, so a huge tree costs a bounded walk.
    """
    policy = policy or SecretsPolicy(root)
    base = Path(os.path.realpath(root))
    found: list[Path] = []
    visited = 0
    stack = [base]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            visited += 1
            if visited > limit:
                return found
            rel = os.path.relpath(entry.path, base).replace(os.sep, "/")
            if why_secret_name(entry.name.lower()) is not None and not policy._allowed(rel):
                found.append(Path(entry.path))
                continue
            try:
                if entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
            except OSError:
                continue
    return found


# ---- diffs ---------------------------------------------------------------------------------

_SECTION = re.compile(r"^diff (?:--git|--cc|--combined) (.*)$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _unquote(text: str) -> str:
    """A path git quoted C-style (``"a/x\\ty"``), as text."""
    raw = text.encode("latin-1", "backslashreplace")
    try:
        return raw.decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text


def diff_header_paths(rest: str) -> list[str]:
    """Every path a ``diff --git``/``--cc`` header line (after the keyword) may name.

    An unquoted ``a/x b/y`` is ambiguous when the names hold `` b/``; every way of reading
    it is returned, so a judge that refuses any of them fails closed.
    """
    quoted = _QUOTED.findall(rest)
    if quoted:
        paths = [_strip_prefix(_unquote(q)) for q in quoted]
    elif rest.startswith("a/"):
        paths = []
        for match in re.finditer(r" b/", rest):
            paths += [rest[match.end():], rest[2:match.start()]]
        if not paths:
            paths.append(rest)  # no split fits: judge the whole line
    else:  # diff --cc / --combined name one path, unprefixed
        paths = [rest]
    return list(dict.fromkeys(p for p in paths if p))


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def redact_diff(text: str, is_secret: Any) -> tuple[str, list[str]]:
    """``text`` (git diff, show or log -p output) without the file sections of secret paths,
    and the paths left out.  ``is_secret(path)`` judges a repository-relative path.

    A section runs from its ``diff --git`` header to the next header or the next
    ``commit <id>`` line (``git log -p``); content lines always start with a space, ``+``,
    ``-``, ``@`` or ``\\``, so neither can be forged from inside a file.
    """
    lines = text.split("\n")
    kept: list[str] = []
    dropped: list[str] = []
    skipping = False
    for line in lines:
        header = _SECTION.match(line)
        if header:
            paths = diff_header_paths(header.group(1))
            secret = [p for p in paths if is_secret(p)]
            skipping = bool(secret)
            if skipping:
                dropped.append(secret[0])
                kept.append(f"[secrets policy: the change to {secret[0]} is left out]")
                continue
        elif skipping and line.startswith("commit "):
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept), list(dict.fromkeys(dropped))
