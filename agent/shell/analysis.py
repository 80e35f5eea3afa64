"""One shell command, understood: its parts, each normalised, and what the whole may do.

:func:`analyse` is what the permission rules, the "always" grant, the guard and ``agent
policy explain`` share.  Each :class:`Part` is one simple command as written (``text``) and
as it runs (``normal``: wrappers peeled, quotes removed, the path of the program dropped, so
``sudo /bin/r'm' -rf x`` is ``rm -rf x``).  A part is *unresolved* when what it runs cannot
be known without running it; the command is *read-only* when every part is proven to only
read (:mod:`agent.shell.readonly`).  Files written through redirections, ``tee``, ``-o``
and the like are listed as ``writes`` so the write tools' path rules apply to them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from agent.shell.parse import Script, SimpleCommand, parse
from agent.shell.readonly import classify, directories, paths

#: Words that are never a grant by themselves (a grant for ``for *`` would allow anything).
KEYWORDS = frozenset({"!", "{", "}", "(", ")", "if", "then", "else", "elif", "fi", "do",
                      "done", "while", "until", "for", "in", "case", "esac", "select",
                      "function", "coproc", "time", "[[", "]]"})


@dataclass(frozen=True)
class Part:
    """One simple command of a command line."""

    text: str  # as written: assignments, wrappers and words (quotes removed)
    normal: str  # as it runs: privilege wrappers kept (``sudo``), others peeled
    runs: str  # the program's base name and its arguments, every wrapper peeled
    name: str
    unresolved: str  # why it cannot be known statically, or ""
    not_read_only: str  # why it may do more than read, or "" when read-only
    writes: tuple[str, ...]
    deletes: tuple[str, ...]
    reads: tuple[str, ...]
    git: bool = False
    directories: tuple[str, ...] = ()  # where cd/pushd/env -C take later commands

    @property
    def read_only(self) -> bool:
        return not self.not_read_only


@dataclass(frozen=True)
class Analysis:
    """Every part of one command line, and what the parse could not settle."""

    command: str
    parts: tuple[Part, ...]
    complete: bool
    problems: tuple[str, ...]
    unresolved: tuple[str, ...]
    subshell: bool = False

    @property
    def unresolved_reason(self) -> str:
        """Why the command cannot be judged statically ("" when it can): a parse problem
        or an unresolved part."""
        if self.problems:
            return self.problems[0]
        return self.unresolved[0] if self.unresolved else ""

    @property
    def read_only(self) -> bool:
        return not self.not_read_only

    @property
    def not_read_only(self) -> str:
        """Why the command is not proven read-only ("" when it is)."""
        if self.unresolved_reason:
            return self.unresolved_reason
        if self.subshell:
            # Read exactly, but a peer's published vectors (Codex) call a subshell unsafe,
            # and nothing a peer calls unsafe runs without a person's yes.
            return "a ( ... ) subshell is asked about"
        for part in self.parts:
            if part.not_read_only:
                return f"{part.normal}: {part.not_read_only}"
        return "" if self.parts else "no command"

    @property
    def writes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w for p in self.parts for w in p.writes))

    @property
    def deletes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d for p in self.parts for d in p.deletes))

    @property
    def reads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r for p in self.parts for r in p.reads))

    @property
    def directories(self) -> tuple[str, ...]:
        """Every directory the command changes to ("" for one only known at run time): a
        git command after ``cd sub`` reads the repository and config found there."""
        return tuple(dict.fromkeys(d for p in self.parts for d in p.directories))

    def grants(self) -> tuple[str, ...]:
        """What answering "always" grants: for each part, an exact prefix of its normalised
        form (program plus subcommand for tools that have them) followed by `` *``; never a
        shell keyword, never anything for an unresolved command (that grants only itself)."""
        if self.unresolved_reason:
            return ()
        out: list[str] = []
        for part in self.parts:
            words = part.runs.split()
            if not words or words[0] in KEYWORDS:
                continue
            depth = 2 if words[0] in _SUBCOMMAND_TOOLS and len(words) > 1 and not words[
                1].startswith("-") else 1
            prefix = part.normal[:len(part.normal) - len(part.runs)]
            out.append(prefix + " ".join(words[:depth]) + " *")
        return tuple(dict.fromkeys(out))


#: Programs whose first operand is a subcommand; "always" for ``git status`` grants
#: ``git status *``, not all of git.
_SUBCOMMAND_TOOLS = frozenset({"git", "npm", "pnpm", "yarn", "cargo", "go", "pip", "pip3",
                               "uv", "poetry", "docker", "kubectl", "make", "npx", "gh",
                               "systemctl", "apt", "apt-get", "brew", "dotnet", "mvn",
                               "gradle", "terraform", "helm"})


#: Wrappers that change who runs the command: an allow rule for ``git *`` must not allow
#: ``sudo git ...``, so these stay in the normalised form.
PRIVILEGE_WRAPPERS = ("sudo", "doas", "su", "runuser", "pkexec", "chroot", "sg")


def _runs(cmd: SimpleCommand) -> str:
    if not cmd.argv:
        return " ".join(cmd.assignments)
    return " ".join((os.path.basename(cmd.argv[0]),) + cmd.argv[1:])


def _normal(cmd: SimpleCommand) -> str:
    prefix = "".join(w + " " for w in cmd.wrappers if w in PRIVILEGE_WRAPPERS)
    return prefix + _runs(cmd)


def _part(cmd: SimpleCommand) -> Part:
    writes, deletes, reads = paths(cmd)
    why = classify(cmd)
    text = " ".join(cmd.words) + "".join(f" {op} {target}" for op, target in cmd.redirects
                                         if not op.endswith("<<"))
    return Part(text=text.strip(), normal=_normal(cmd), runs=_runs(cmd), name=cmd.name,
                unresolved=cmd.unresolved, not_read_only=why or "", writes=tuple(writes),
                deletes=tuple(deletes), reads=tuple(reads), git=cmd.name == "git",
                directories=tuple(directories(cmd)))


def from_script(command: str, script: Script) -> Analysis:
    parts = [_part(c) for c in script.commands if c.argv or c.assignments or c.redirects]
    unique: dict[tuple[str, str], Part] = {}
    for part in parts:
        unique.setdefault((part.text, part.normal), part)
    return Analysis(command, tuple(unique.values()), script.complete,
                    tuple(script.problems), tuple(script.unresolved), script.subshell)


@lru_cache(maxsize=512)
def analyse(command: str) -> Analysis:
    """The :class:`Analysis` of ``command`` (cached: the gate asks several times per call)."""
    return from_script(command, parse(command))


def command_paths(command: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(writes, deletes, reads) of a command line, for a shell tool's effects."""
    analysis = analyse(command)
    return analysis.writes, analysis.deletes, analysis.reads
