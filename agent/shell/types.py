"""The results of reading a command line: :class:`SimpleCommand` and :class:`Script`.

Built by :func:`agent.shell.parse.parse`, read by the guard, the permission rules and registry
manifests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command.

    ``words`` are the words after quote removal (a substitution or variable stays as written,
    e.g. ``$(date)``); ``argv`` is ``words`` without leading assignments and wrapper programs,
    so ``argv[0]`` is what actually runs.  ``dynamic`` flags, per ``argv`` word, a value only
    known when the command runs.  ``assignments`` are the ``NAME=value`` words before the
    command and those a wrapper like ``env`` sets; ``wrappers`` the programs peeled off.
    ``redirects`` are ``(operator, target)`` pairs (also those of an enclosing compound
    command).  ``pipes`` places the command in every pipeline around it, outermost first, as
    ``(pipeline id, stage)``.  ``substituted`` are the commands whose output becomes part of
    this one's words.  ``unresolved`` says why what this command runs cannot be known
    statically ("" when it can).
    """

    argv: tuple[str, ...]
    words: tuple[str, ...] = ()
    redirects: tuple[tuple[str, str], ...] = ()
    pipes: tuple[tuple[int, int], ...] = ()
    substituted: tuple[SimpleCommand, ...] = ()
    dynamic: tuple[bool, ...] = ()
    assignments: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
    unresolved: str = ""
    stdin: str = ""  # "heredoc", "herestring", "file" or "" (a pipe shows in ``pipes``)
    wrapper_writes: tuple[str, ...] = ()  # files a wrapper itself writes (``time -o f``)
    #: per ``argv`` word: a loop variable (``"$f"`` of ``for f in src/*.py``) standing for
    #: one file name matching the word shown, which cannot start with "-"; still dynamic.
    bound: tuple[bool, ...] = ()

    @cached_property
    def name(self) -> str:
        """The program's base name (``/usr/bin/rm`` → ``rm``), or ``""``."""
        return os.path.basename(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    def is_dynamic(self, index: int) -> bool:
        """True when ``argv[index]`` is only known at run time."""
        return index < len(self.dynamic) and self.dynamic[index]

    @property
    def any_dynamic(self) -> bool:
        return any(self.dynamic)

    def feeds(self, other: SimpleCommand) -> bool:
        """True when this command's output is piped (directly or not) into ``other``."""
        theirs = dict(other.pipes)
        return any(pid in theirs and stage < theirs[pid] for pid, stage in self.pipes)

    @property
    def piped_into(self) -> bool:
        """True when something is piped into this command's standard input."""
        return any(stage > 0 for _pid, stage in self.pipes)


@dataclass
class Script:
    """The result of :func:`parse`: every simple command, in source order (substitutions
    before the command that uses them); whether all of the text could be read
    (``complete``); why parts of it cannot be known statically (``unresolved``); the bodies
    of here-documents; and the names of the shell functions it defines."""

    commands: list[SimpleCommand] = field(default_factory=list)
    complete: bool = True
    heredocs: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)  # why the script is incomplete
    subshell: bool = False  # a ``( ... )`` group anywhere

    def incomplete(self, why: str) -> None:
        self.complete = False
        if why not in self.problems:
            self.problems.append(why)

    def note_unresolved(self, why: str) -> None:
        if why not in self.unresolved:
            self.unresolved.append(why)
