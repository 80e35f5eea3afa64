"""What really runs: wrappers, assignments and scripts hidden in a simple command's words.

``sudo -u x env A=1 timeout 5 nice rm -rf y`` runs ``rm``; ``env -S 'rm -rf y'`` runs ``rm``;
``bash -c 'a; b'`` runs ``a`` and ``b``; ``find . -exec rm {} ;`` runs ``rm``; ``parallel
'rm {}' ::: x`` runs a shell script.  :func:`peel` reads each wrapper's options as the wrapper
itself does (:mod:`agent.shell.options`), so ``sudo --us=root rm`` and ``timeout -k5 9 rm``
both reach ``rm``; a wrapper option it cannot read makes the command unresolved rather than
guessed.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

from agent.shell.options import XARGS_INPUT, Parsed, Spec, parse_options, same, spec

#: Programs that run a script given as an argument (``-c SCRIPT``) or on standard input.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash",
                    "posh", "csh", "tcsh", "rbash"})
#: Programs that run code: with a code option (``python -c``) or from standard input.
INTERPRETERS = frozenset({"python", "python2", "python3", "pypy", "pypy3", "perl", "ruby",
                          "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh",
                          "wish", "Rscript", "R", "julia", "osascript", "pwsh", "powershell",
                          "awk", "gawk", "mawk", "nawk", "busybox-sh", "expect", "jshell",
                          "irb", "ipython", "ghci", "sqlite3", "psql", "mysql"})

# Words that start or continue a compound command (kept for :func:`unwrap`'s old callers).
_RESERVED = frozenset({"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until",
                       "fi", "done", "esac", "coproc"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


def split_words(text: str) -> list[str]:
    """``shlex.split`` that never raises: an unbalanced quote splits on whitespace instead."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# ---- the wrappers and their options ----------------------------------------------------------

WRAPPERS: dict[str, Spec] = {
    "sudo": spec("AbBEHiKklnPSsVv", "aCcDghprRTtUu",
                 long=same("askpass", "background", "bell", "preserve-env", "edit",
                           "set-home", "login", "remove-timestamp", "reset-timestamp",
                           "list", "non-interactive", "preserve-groups", "shell", "stdin",
                           "validate", "version", "help"),
                 long_args=same("auth-type", "chroot", "class", "close-from", "chdir",
                                "group", "host", "prompt", "role", "type",
                                "command-timeout", "other-user", "user"),
                 stop_at_operand=True),
    "doas": spec("nsL", "uC", stop_at_operand=True),
    "env": spec("i0v", "uCPS", long=same("ignore-environment", "null", "debug",
                                          "list-signal-handling", "help", "version"),
                long_args={"unset": "-u", "chdir": "-C", "split-string": "-S",
                           "argv0": "-a"},
                long_optional=same("block-signal", "default-signal", "ignore-signal"),
                stop_at_operand=True, names={"S": "-S", "u": "-u", "C": "-C"}),
    "nice": spec("", "n", long_args={"adjustment": "-n"}, stop_at_operand=True,
                 numeric_short=True),
    "nohup": spec("", "", long=same("help", "version"), stop_at_operand=True),
    "command": spec("pvV", "", stop_at_operand=True),
    "builtin": spec("", "", stop_at_operand=True),
    "exec": spec("cl", "a", stop_at_operand=True),
    "time": spec("pvqa", "fo", long=same("portability", "verbose", "quiet", "append"),
                 long_args={"format": "-f", "output": "-o"}, stop_at_operand=True,
                 names={"o": "-o"}),
    "xargs": spec("0oprtx", "adEILnPs", long=same("null", "open-tty", "interactive",
                                                  "no-run-if-empty", "verbose", "exit",
                                                  "show-limits", "help", "version"),
                  long_args=same("arg-file", "delimiter", "max-args", "max-procs",
                                 "max-chars", "process-slot-var"),
                  long_optional=same("eof", "replace", "max-lines"),
                  stop_at_operand=True),
    "timeout": spec("v", "sk", long=same("preserve-status", "foreground", "verbose", "help",
                                         "version"),
                    long_args={"signal": "-s", "kill-after": "-k"}, stop_at_operand=True),
    "stdbuf": spec("", "ioe", long_args={"input": "-i", "output": "-o", "error": "-e"},
                   stop_at_operand=True),
    "ionice": spec("t", "cnpPu", long=same("ignore", "help", "version"),
                   long_args=same("class", "classdata", "pid", "pgid", "uid"),
                   stop_at_operand=True),
    "setsid": spec("cfw", "", long=same("ctty", "fork", "wait", "help", "version"),
                   stop_at_operand=True),
    "chronic": spec("ev", "", stop_at_operand=True),
    "unbuffer": spec("p", "", stop_at_operand=True),
    "busybox": spec("", "", stop_at_operand=True),
    "pkexec": spec("", "", long=same("disable-internal-agent", "keep-cwd"),
                   long_args=same("user"), stop_at_operand=True),
    "chroot": spec("", "", long=same("skip-chdir", "help", "version"),
                   long_args=same("groups", "userspec"), stop_at_operand=True),
    "taskset": spec("acp", "", long=same("all-tasks", "cpu-list", "pid", "help", "version"),
                    stop_at_operand=True),
    "flock": spec("sxunoFv", "wEc", long=same("shared", "exclusive", "unlock", "nonblock",
                                               "close", "no-fork", "verbose", "help",
                                               "version"),
                  long_args={"timeout": "-w", "conflict-exit-code": "-E", "command": "-c"},
                  stop_at_operand=True, names={"c": "-c"}),
    "watch": spec("bcdegtpx", "nq", long=same("beep", "color", "no-color", "errexit",
                                               "chgexit", "no-title", "precise", "exec",
                                               "no-linewrap", "help", "version"),
                  long_args={"interval": "-n", "equexit": "-q"},
                  long_optional=same("differences"), stop_at_operand=True,
                  names={"x": "-x"}),
    "runuser": spec("lmpf", "ugcsw", long=same("login", "preserve-environment", "pty"),
                    long_args={"user": "-u", "group": "-g", "command": "-c", "shell": "-s",
                               "whitelist-environment": "-w", "supp-group": "-G"},
                    stop_at_operand=True, names={"c": "-c"}),
    "su": spec("lmpfP", "cgGsw", long=same("login", "preserve-environment", "pty", "fast"),
               long_args={"command": "-c", "group": "-g", "supp-group": "-G", "shell": "-s",
                          "whitelist-environment": "-w", "session-command": "-c"},
               stop_at_operand=True, names={"c": "-c"}),
    "sg": spec("", "c", stop_at_operand=True, names={"c": "-c"}),
    "parallel": spec("0kquvX", "aCdEIjLnNPsS",
                     long=same("null", "keep-order", "quote", "ungroup", "verbose",
                               "xargs", "dry-run", "group", "line-buffer", "tag", "progress",
                               "bar", "eta", "halt-on-error", "no-notice", "will-cite",
                               "shuf", "pipe", "pipepart", "plain", "silent", "colsep-all"),
                     long_args=same("arg-file", "colsep", "delimiter", "jobs", "joblog",
                                    "results", "tmpdir", "workdir", "env", "delay", "timeout",
                                    "halt", "tagstring", "basefile", "transferfile",
                                    "return", "retries", "memfree", "load", "nice",
                                    "max-procs", "sshlogin", "block", "recend", "recstart",
                                    "shebang", "max-args", "max-lines", "max-chars"),
                     stop_at_operand=True),
}

#: Wrappers whose first operand is a value, not the command (timeout's duration).
OPERANDS_BEFORE_COMMAND = {"timeout": 1, "chroot": 1, "taskset": 1, "flock": 1, "sg": 1,
                           "runuser": 0, "su": 0}
#: Wrappers that hand their command words to ``sh -c`` as one string.
RUN_AS_SCRIPT = frozenset({"watch", "parallel"})


@dataclass
class Peeled:
    """The command behind the wrappers: ``argv`` (with ``dynamic`` flags), the assignments
    and wrappers peeled off, why it cannot be known (``unresolved``), files a wrapper itself
    writes (``time -o f``), and more commands the wrappers run (``more``)."""

    argv: tuple[str, ...]
    dynamic: tuple[bool, ...]
    assignments: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
    unresolved: str = ""
    writes: tuple[str, ...] = ()
    more: tuple[tuple[str, ...], ...] = ()
    script: str | None = None  # a script the wrapper runs with a shell (``watch 'a; b'``)


def peel(values: list[str] | tuple[str, ...], dynamic: list[bool] | tuple[bool, ...]
         ) -> Peeled:
    """Strip leading assignments and wrapper programs so ``argv[0]`` is what runs."""
    argv = list(values)
    flags = list(dynamic) + [False] * (len(argv) - len(dynamic))
    assignments: list[str] = []
    wrappers: list[str] = []
    writes: list[str] = []
    for _ in range(len(values) + 16):  # each pass removes at least one word, or stops
        if argv and argv[0] == "coproc" and not flags[0]:  # a reserved word, then a command
            argv, flags = argv[1:], flags[1:]
        while argv and not flags[0] and _ASSIGNMENT.match(argv[0]):
            assignments.append(argv.pop(0))
            flags.pop(0)
        if not argv or flags[0]:
            break
        name = os.path.basename(argv[0])
        if name not in WRAPPERS:
            break
        if name == "command" and any(w in ("-v", "-V") or (w.startswith("-") and
                                     ("v" in w or "V" in w)) for w in argv[1:2]):
            break  # `command -v x` looks a name up; it runs nothing
        wrappers.append(name)
        parsed = parse_options(WRAPPERS[name], argv[1:], flags[1:])
        if parsed.problems:
            return Peeled(tuple(argv), tuple(flags), tuple(assignments), tuple(wrappers),
                          f"cannot tell what {name} runs: {parsed.problems[0]}")
        writes.extend(parsed.values("-o") if name == "time" else ())
        start = 1 + parsed.rest
        rest, rest_flags = argv[start:], flags[start:]
        if name == "env":
            split = parsed.values("-S")
            while rest and not rest_flags[0] and (_ASSIGNMENT.match(rest[0]) or rest[0] == "-"):
                if rest[0] != "-":
                    assignments.append(rest[0])
                rest, rest_flags = rest[1:], rest_flags[1:]
            if split:
                words = split_words(split[0])
                rest, rest_flags = words + rest, [False] * len(words) + rest_flags
                if any("$" in w for w in words):
                    return Peeled(tuple(rest), tuple(rest_flags), tuple(assignments),
                                  tuple(wrappers), "env -S expands variables in its string")
                argv, flags = rest, rest_flags
                continue
        if name in ("su", "runuser", "sg", "flock") and parsed.values("-c"):
            return Peeled((), (), tuple(assignments), tuple(wrappers),
                          writes=tuple(writes), script=parsed.values("-c")[0])
        skip = OPERANDS_BEFORE_COMMAND.get(name, 0)
        if name == "taskset" and parsed.has("-p", "pid"):
            return Peeled((), (), tuple(assignments), tuple(wrappers))
        if name in ("su", "runuser", "sg") and not parsed.values("-c"):
            rest = rest[1:] if name != "runuser" else rest  # su USER: an interactive shell
            return Peeled(tuple(rest[:0]), (), tuple(assignments), tuple(wrappers),
                          f"{name} starts a shell for another user")
        rest, rest_flags = rest[skip:], rest_flags[skip:]
        if name == "xargs" and not rest:
            rest, rest_flags = ["echo"], [False]
        if name == "xargs":
            token = next(iter(parsed.values("-I", "replace")), None)
            if token is None and parsed.has("replace", "-i"):
                token = "{}"
            if token and templated(rest, token):
                return Peeled(tuple(rest), tuple(rest_flags), tuple(assignments),
                              tuple(wrappers), "xargs puts its input into the program or "
                              "the script it runs")
            if token:  # each word holding the token gets a piece of the input
                rest_flags = [f or token in w for w, f in zip(rest, rest_flags, strict=True)]
            else:  # the input becomes extra arguments, which may be any option
                rest, rest_flags = rest + [XARGS_INPUT], rest_flags + [True]
        if name in RUN_AS_SCRIPT:
            return _run_as_script(name, parsed, rest, rest_flags, assignments, wrappers,
                                  writes)
        if any(rest_flags[:1]):
            return Peeled(tuple(rest), tuple(rest_flags), tuple(assignments),
                          tuple(wrappers), f"{name} runs a program only known when it runs")
        argv, flags = rest, rest_flags
    return Peeled(tuple(argv), tuple(flags), tuple(assignments), tuple(wrappers),
                  writes=tuple(writes))


def _run_as_script(name: str, parsed: Parsed, rest: list[str], rest_flags: list[bool],
                   assignments: list[str], wrappers: list[str], writes: list[str]) -> Peeled:
    """``watch 'a; b'``, ``parallel 'rm {}' ::: x``: the command words are a shell script."""
    def peeled(argv: tuple[str, ...] = (), dynamic: tuple[bool, ...] = (), *,
               unresolved: str = "", script: str | None = None) -> Peeled:
        return Peeled(argv, dynamic, tuple(assignments), tuple(wrappers), unresolved,
                      tuple(writes), script=script)

    if name == "watch" and parsed.has("-x", "exec"):
        return peeled(tuple(rest), tuple(rest_flags))
    command: list[str] = []
    inputs: list[str] = []
    for i, word in enumerate(rest):
        if word in (":::", "::::", ":::+", "::::+"):
            command, inputs = rest[:i], rest[i + 1:]
            break
    else:
        command = rest
    if any(rest_flags):
        return peeled(tuple(rest), tuple(rest_flags),
                      unresolved=f"{name} runs a command only known when it runs")
    if command:
        return peeled(script=" ".join(command))
    if name == "parallel" and inputs and ":::" in rest:
        return peeled(script="\n".join(w for w in inputs if w not in (":::", ":::+")))
    return peeled(unresolved=f"{name} runs commands read from its input")


def unwrap(words: tuple[str, ...]) -> tuple[str, ...]:
    """Strip assignments, reserved words and wrappers so ``argv[0]`` is what runs.

    ``sudo -u x env A=1 timeout 5 nice -n 5 rm -rf y`` → ``rm -rf y``.
    """
    argv = list(words)
    while argv and argv[0] in _RESERVED:
        argv.pop(0)
    return peel(argv, [False] * len(argv)).argv


# ---- scripts and code hidden in arguments ---------------------------------------------------

def script_operand(argv: tuple[str, ...], dynamic: tuple[bool, ...]
                   ) -> tuple[str, bool] | None:
    """The script a command runs from its arguments, and whether it is only known at run
    time: ``sh -c S``, ``eval S...``, ``trap S SIG``; None when there is none."""
    if not argv:
        return None
    name = os.path.basename(argv[0])
    args = list(argv[1:])
    flags = list(dynamic[1:]) + [False] * len(args)
    if name == "eval":
        return (" ".join(args), any(flags[:len(args)])) if args else None
    if name == "trap":
        words = [(w, d) for w, d in zip(args, flags, strict=False) if w != "--"]
        if words and not words[0][0].startswith("-") and len(words) >= 2:
            return words[0]
        return None
    if name not in SHELLS:
        return None
    saw_c = False
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            continue
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if len(word) > 1 and word[0] in "-+" and not flags[i]:
            if word[0] == "-" and not word.startswith("--") and "c" in word[1:]:
                saw_c = True
            i += 1
            continue
        if saw_c:
            return word, flags[i]
        return None
    return None


_CODE_OPTIONS = {
    "python": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "-p", "--eval",
                                                                       "--print"),
    "deno": ("eval",), "bun": ("-e", "--eval"), "php": ("-r",), "lua": ("-e",),
    "Rscript": ("-e",), "R": ("-e",), "julia": ("-e", "-E"), "osascript": ("-e",),
    "pwsh": ("-c", "-command", "-Command"), "powershell": ("-c", "-command", "-Command"),
    "tclsh": (), "expect": ("-c",), "ipython": ("-c",), "sqlite3": ("-cmd",),
}


def code_argument(name: str, argv: tuple[str, ...],
                  dynamic: tuple[bool, ...] = ()) -> str | None:
    """The code an interpreter is given on its command line (``python -c CODE``), or None.
    ``awk`` always takes its program as an argument: it is code unless it provably only
    reads and prints (:func:`awk_program`)."""
    family = re.sub(r"[\d.]+$", "", name)
    args = argv[1:]
    if family in ("awk", "gawk", "mawk", "nawk"):
        program, why = awk_program(argv, dynamic)
        if why:
            return why
        return program if program is not None and not _quiet_awk(program) else None
    if family in ("sqlite3", "psql", "mysql"):
        return None  # SQL clients: judged by the guard's SQL rule, not as code
    options = _CODE_OPTIONS.get(family, ())
    for i, word in enumerate(args):
        if word in options:
            return args[i + 1] if i + 1 < len(args) else ""
        for option in options:
            if option.startswith("-") and not option.startswith("--") and len(option) == 2:
                if word.startswith(option) and len(word) > 2 and not word.startswith("--"):
                    return word[2:]
                if word.startswith("-") and not word.startswith("--") and option[1] in word[1:]:
                    return args[i + 1] if i + 1 < len(args) else ""
        if not word.startswith("-"):
            return None  # a script file: the program's own business
    return None


_AWK_SAFE = re.compile(r"^[^|>@]*$")
#: awk options that only change how it reads (gawk, mawk, busybox, one-true-awk); the ones
#: that write files (``--profile``, ``-o``, ``-d``), load code (``-f``, ``-i``, ``-l``,
#: ``-E``) or are implementation-specific (``-W``) are left out, so they are refused.
_AWK_FLAGS = frozenset("bcCnNMOPrsStVhL")
_AWK_LONG_FLAGS = frozenset({"posix", "traditional", "compat", "re-interval", "sandbox",
                             "characters-as-bytes", "use-lc-numeric", "non-decimal-data",
                             "lint", "lint-old", "optimize", "no-optimize", "bignum",
                             "copyright", "version", "help", "usage", "csv"})


def awk_program(argv: tuple[str, ...], dynamic: tuple[bool, ...] = ()
                ) -> tuple[str | None, str]:
    """awk's options read as awk reads them: ``(program, why)``, ``why`` saying what makes
    the command more than a reader (a program file, ``-W``, an option that writes, a
    program only known when it runs), else ``""``."""
    name = os.path.basename(argv[0]) if argv else "awk"
    flags = list(dynamic) + [False] * len(argv)
    sources: list[str] = []
    i = 1
    while i < len(argv):
        word = argv[i]
        if flags[i] and word.startswith(("$", "`")):
            return None, f"{name} is given a program or option only known when it runs"
        if word == "--":
            i += 1
            break
        if word.startswith("--") and len(word) > 2:
            option, eq, value = word[2:].partition("=")
            full = [o for o in ("assign", "field-separator", "source", "file", "include",
                                "load", "exec") if o.startswith(option)]
            if option in _AWK_LONG_FLAGS and not eq:
                i += 1
                continue
            if len(full) == 1 and full[0] in ("assign", "field-separator", "source"):
                text = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
                if full[0] == "source":
                    sources.append(text)
                i += 1 if eq else 2
                continue
            return None, f"{name} {word} reads a program file or writes files"
        if word.startswith("-") and len(word) > 1:
            letter, rest = word[1], word[2:]
            if letter in "vFe":
                text = rest or (argv[i + 1] if i + 1 < len(argv) else "")
                if letter == "e":
                    sources.append(text)
                i += 1 if rest else 2
                continue
            if all(c in _AWK_FLAGS for c in word[1:]):
                i += 1
                continue
            return None, f"{name} {word} reads a program file, writes files or is " \
                "not an option every awk reads the same way"
        break
    if sources:
        return "\n".join(sources), ""
    if i >= len(argv):
        return None, ""
    if flags[i]:
        return None, f"{name} is given a program only known when it runs"
    return argv[i], ""


def _quiet_awk(program: str) -> bool:
    """An awk program that cannot write files or run commands (no ``system``, pipes,
    ``>`` redirection or ``getline`` from commands)."""
    return bool(_AWK_SAFE.match(program)) and "system" not in program and "getline" not in \
        program


def templated(argv: list[str] | tuple[str, ...], token: str) -> bool:
    """True when a replacement token (``{}`` of find -exec, xargs -I) would become the
    program, or part of a script a shell or interpreter runs (``sh -c 'rm {}'``,
    ``sh {}``): then its input decides what runs."""
    if not argv:
        return False
    if token in argv[0]:
        return True
    name = os.path.basename(argv[0])
    if name in SHELLS or name in INTERPRETERS or name in ("eval", "source", "."):
        return any(token in word for word in argv[1:])
    return False


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
