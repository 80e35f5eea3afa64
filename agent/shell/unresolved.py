"""What makes a simple command unresolved: facts about programs that :mod:`agent.shell.parse` uses.

A shell given a script file or reading standard input, an interpreter reading code from
standard input, and hazardous programs (``rm``, ``chmod``, ``git reset``...) whose options or
subcommand are only known when the command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.shell.git import read_git

if TYPE_CHECKING:
    from agent.shell.types import SimpleCommand


def shell_reads_file(argv: tuple[str, ...]) -> int | None:
    """``bash script.sh``: the index of the script file a shell is given, or None when it
    reads its commands from stdin (no operand, or ``-s``)."""
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if word == "--":
            return i + 1 if i + 1 < len(argv) else None
        if word.startswith(("-", "+")) and len(word) > 1:
            if word.startswith("-") and not word.startswith("--") and "s" in word[1:]:
                return None
            i += 1
            continue
        return i
    return None


#: Programs whose hazard depends on their options or subcommand: with a word only known at
#: run time (``rm $F x``, ``chmod $M f``, ``git $(echo reset) --hard``) what they do cannot
#: be judged, so the command is unresolved.
HAZARD_ARGUMENTS = frozenset({"rm", "chmod", "chown", "chgrp", "dd", "mkfs", "shred", "git",
                              "find", "truncate", "wipefs"})
_GIT_HAZARDS = frozenset({"reset", "clean", "push", "branch", "checkout", "restore", "stash",
                          "rebase", "filter-branch", "update-ref", "reflog", "gc", "prune",
                          "worktree", "tag", "switch", "rm", "config"})


def hazard_unresolved(cmd: SimpleCommand) -> str:
    """Why a hazardous program with run-time words cannot be judged ("" when it can:
    ``git commit -m "$(...)"`` only has a run-time message)."""
    if cmd.name == "git":
        call = read_git(cmd.argv, cmd.assignments)
        words = list(cmd.argv)
        sub_index = len(words) - len(call.args) - 1 if call.sub else len(words)
        if any(cmd.dynamic[:sub_index + 1]):
            return "git with a subcommand or option only known when it runs"
        if call.sub in _GIT_HAZARDS:
            return f"git {call.sub} with arguments only known when it runs"
        return ""
    if cmd.name == "find":
        return ""  # find's run-time words are paths and patterns; -exec is judged apart
    return f"{cmd.name} with arguments only known when it runs"


def interpreter_reads_stdin(argv: tuple[str, ...]) -> bool:
    """``python``, ``python -``, ``node`` with no script operand read code from stdin."""
    for word in argv[1:]:
        if word == "-":
            return True
        if not word.startswith("-"):
            return False
    return True
