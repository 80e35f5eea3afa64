"""What really runs: wrappers, assignments and scripts hidden in a simple command's words.

``sudo -u x env A=1 timeout 5 nice rm -rf y`` runs ``rm``; ``bash -c 'a; b'`` runs ``a`` and
``b``; ``find . -exec rm {} ;`` runs ``rm``.  :mod:`agent.shell` uses these helpers on every
simple command it finds.
"""

from __future__ import annotations

import os
import re
import shlex

#: Programs that run a script given as an argument (``-c SCRIPT``).
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})

# Words that start or continue a compound command; the command proper follows them.
_RESERVED = frozenset({"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until",
                       "fi", "done", "esac", "coproc"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


def split_words(text: str) -> list[str]:
    """``shlex.split`` that never raises: an unbalanced quote splits on whitespace instead."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# For each wrapper: options that take a separate argument (short and long).  A long option
# written ``--opt=value`` never consumes the next word.
_WRAPPER_ARGS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user",
                       "--group", "--close-from", "--chdir", "--host", "--prompt", "--role",
                       "--type", "--command-timeout", "--other-user"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-P", "--unset", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "xargs": frozenset({"-n", "-L", "-I", "-P", "-d", "-s", "-E", "-a", "--max-args",
                        "--max-lines", "--max-procs", "--delimiter", "--max-chars",
                        "--arg-file", "--eof", "--process-slot-var"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
    "setsid": frozenset(),
    "chronic": frozenset(),
    "unbuffer": frozenset(),
    "busybox": frozenset(),  # `busybox rm -rf x` runs busybox's rm
}

# Wrappers whose first operand is not the command but a value (timeout's duration).
_OPERAND_FIRST = {"timeout": 1}


def unwrap(words: tuple[str, ...]) -> tuple[str, ...]:
    """Strip assignments, reserved words and wrappers so ``argv[0]`` is what runs.

    ``sudo -u x env A=1 timeout 5 nice -n 5 rm -rf y`` → ``rm -rf y``.  ``env -S 'a b'``
    splits its string, like env does.
    """
    argv = list(words)
    for _ in range(len(words) + 8):  # every pass removes at least one word, or stops
        while argv and (argv[0] in _RESERVED or _ASSIGNMENT.match(argv[0])):
            argv.pop(0)
        if not argv:
            break
        name = os.path.basename(argv[0])
        if name == "time" or name in _WRAPPER_ARGS:
            argv = _skip_options(name, argv[1:])
            continue
        break
    return tuple(argv)


def _skip_options(name: str, args: list[str]) -> list[str]:
    """The words after ``name``'s options (and its leading operand, for ``timeout``)."""
    takes_arg = _WRAPPER_ARGS.get(name, frozenset())
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        if name == "env" and (word == "-" or _ASSIGNMENT.match(word)):
            i += 1
            continue
        if name == "env" and (word == "-S" or word.startswith("--split-string")
                              or (word.startswith("-S") and len(word) > 2)):
            if word.startswith("--split-string="):
                script, used = word.split("=", 1)[1], 1
            elif word in ("-S", "--split-string"):
                script, used = (args[i + 1] if i + 1 < len(args) else ""), 2
            else:
                script, used = word[2:], 1
            return split_words(script) + args[i + used:]
        if not word.startswith("-") or word == "-":
            break
        if name == "nice" and re.fullmatch(r"-\d+", word):
            i += 1
            continue
        if word.startswith("--") and "=" in word:
            i += 1
            continue
        if word in takes_arg:
            i += 2
            continue
        # A short option with its value attached (-n5, -oL, -uroot) or a flag cluster (-Eu).
        i += 1
    rest = args[i:]
    skip = _OPERAND_FIRST.get(name, 0)
    return rest[skip:]


def inner_scripts(argv: tuple[str, ...]) -> list[str]:
    """Scripts passed as arguments: ``sh -c S``, ``eval S...``, ``su -c S``."""
    if not argv:
        return []
    name = os.path.basename(argv[0])
    args = list(argv[1:])
    if name == "eval":
        return [" ".join(args)] if args else []
    if name == "su":
        for i, word in enumerate(args):
            if word in ("-c", "--command") and i + 1 < len(args):
                return [args[i + 1]]
            if word.startswith("--command="):
                return [word.split("=", 1)[1]]
        return []
    if name not in SHELLS:
        return []
    saw_c = False
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            continue
        if word in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if len(word) > 1 and word[0] in "-+":
            if word[0] == "-" and not word.startswith("--") and "c" in word[1:]:
                saw_c = True
            i += 1
            continue
        return [word] if saw_c else []
    return []


def find_exec(argv: tuple[str, ...]) -> list[list[str]]:
    """The commands ``find`` runs with ``-exec``/``-execdir``/``-ok``/``-okdir``."""
    if not argv or os.path.basename(argv[0]) != "find":
        return []
    found: list[list[str]] = []
    i = 1
    while i < len(argv):
        if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                found.append(list(argv[i + 1:j]))
            i = j
        i += 1
    return found
