"""Which simple commands only read, and which paths any command writes, deletes or reads.

The default policy runs a command without a prompt when every part of it is proven to only
read (``ls``, ``cat f``, ``git status``, ``grep -rn x src``, ``find . -name '*.py'``): the
program is one we know, found on ``PATH`` or in a system directory (never ``./ls``), its
options are ones that do not write or run other programs (``sort -o``, ``find -delete``,
``rg --pre``, ``git diff --output`` are refused), no assignment changes how it runs
(``PATH=``, ``LD_PRELOAD=``, ``GIT_*``), and nothing is redirected into a file.
:func:`classify` says so, with the reason when not; :func:`paths` lists the files a command
writes (redirections, ``tee``, ``-o``/``--output``, ``cp``/``mv`` targets, ...), deletes
and reads, so the path rules of the write tools judge them too.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable
from pathlib import Path

from agent.shell.git import BUILTINS, read_git
from agent.shell.gitconfig import repo_config_runs_programs
from agent.shell.options import parse_options, same, spec
from agent.shell.parse import DYNAMIC_TARGET, SimpleCommand

__all__ = ["READ_ONLY", "classify", "directories", "path_inside", "paths",
           "repo_config_runs_programs", "writes_by_redirect"]

#: Directories a program may be named in and still count as the system's own.
SYSTEM_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
#: Wrappers that change nothing about what a read-only command does.
NEUTRAL_WRAPPERS = frozenset({"command", "builtin", "time", "nice", "timeout", "stdbuf",
                              "env", "xargs", "ionice", "chronic", "unbuffer"})
#: Assignments that change which program runs or what it does.
_RISKY_ASSIGNMENT = re.compile(r"^(PATH|LD_[A-Z_]*|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|IFS|"
                               r"PS4|PROMPT_COMMAND|GIT_[A-Z_]*|PAGER|EDITOR|VISUAL|"
                               r"LESS[A-Z]*|MANPAGER|PYTHON[A-Z_]*|NODE_OPTIONS|PERL5?OPT|"
                               r"PERL5LIB|RUBYOPT|HOME|TMPDIR|DYLD_[A-Z_]*|XDG_[A-Z_]*|"
                               r"RIPGREP_CONFIG_PATH|AWKPATH|AWKLIBPATH|PIP_[A-Z_]*|"
                               r"CDPATH|GLIBC_TUNABLES|TAR_OPTIONS|GREP_OPTIONS)\+?=")
_HARMLESS_TARGETS = re.compile(r"^(/dev/(null|stdout|stderr|tty|fd/[0-9]+)|&?-?[0-9]*-?)$")

Check = Callable[[SimpleCommand], str | None]


def writes_by_redirect(cmd: SimpleCommand) -> list[str]:
    """Files the command's redirections create or change (``>``, ``>>``, ``&>``, ``<>``,
    ``>|``); duplicating a descriptor (``2>&1``) and ``/dev/null`` write nothing."""
    out = []
    for op, target in cmd.redirects:
        if ">" not in op or op.endswith(("<<", "<<<")):
            continue
        if op.endswith(">&") and (target.isdigit() or target == "-"):
            continue
        if _HARMLESS_TARGETS.match(target):
            continue
        out.append(target)
    return out


# ---- per-program checks (None: read-only; else why not) ------------------------------------

def _no_operands_or(limit: int) -> Check:
    def check(cmd: SimpleCommand) -> str | None:
        operands = [a for a in cmd.args if not a.startswith("-") or a == "-"]
        return None if len(operands) <= limit else f"{cmd.name} with an operand changes things"
    return check


def _refuse_options(*bad: str, long_table: dict[str, str] | None = None) -> Check:
    """Read-only unless one of ``bad`` options (short letters or long names, long ones
    matched by prefix as getopt_long does) is given."""
    shorts = {b for b in bad if len(b) == 1}
    longs = {b for b in bad if len(b) > 1}

    def check(cmd: SimpleCommand) -> str | None:
        for word in cmd.args:
            if word == "--":
                break
            if word.startswith("--"):
                name = word[2:].split("=", 1)[0]
                if name and any(b.startswith(name) or name.startswith(b) for b in longs):
                    return f"{cmd.name} {word} writes files or runs programs"
            elif word.startswith("-") and shorts & set(word[1:]):
                return f"{cmd.name} {word} writes files or runs programs"
        return None
    return check


def _find(cmd: SimpleCommand) -> str | None:
    for word in cmd.args:
        if word in ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
                    "-fprintf", "-fls"):
            return f"find {word} runs programs or changes files"
    return None


def _date(cmd: SimpleCommand) -> str | None:
    for word in cmd.args:
        if word.startswith(("-f", "--f")):
            return "date -f reads dates from a file and shows its lines"
        if word.startswith(("-s", "--set")) or (not word.startswith(("-", "+"))):
            if word.startswith(("-d", "--date", "-r", "--reference", "-u", "-R", "-I")):
                continue
            return "date with that operand sets the clock"
    return None


_SED_PRINT = re.compile(r"^\s*((\d+|\$|/[^/]*/)(\s*,\s*(\d+|\$|/[^/]*/))?)?\s*!?\s*[pdq=]?\s*$")
_SED_SUBSTITUTE = re.compile(r"^\s*((\d+|\$|/[^/]*/)(\s*,\s*(\d+|\$|/[^/]*/))?)?\s*"
                             r"s(.)(?:(?!\5)[^\\]|\\.)*\5(?:(?!\5)[^\\]|\\.)*\5[gpiI0-9]*\s*$")


def _sed(cmd: SimpleCommand) -> str | None:
    """sed only reads when it edits nothing in place and its script only prints,
    deletes or substitutes (no ``w``, ``r``, ``e`` commands or flags)."""
    parsed = parse_options(spec("nrsEuz", "efl", long=same("quiet", "silent", "regexp-extended",
                                                           "separate", "unbuffered",
                                                           "null-data", "posix", "debug",
                                                           "sandbox"),
                                long_args={"expression": "-e", "file": "-f",
                                           "line-length": "-l"},
                                long_optional={"in-place": "-i"}, names={"e": "-e"}),
                           list(cmd.args))
    if parsed.problems or parsed.has("-i", "-f"):
        return "sed edits files in place or reads a script"
    scripts = parsed.values("-e") or parsed.operands[:1]
    for script in scripts:
        for piece in re.split(r"[;\n]", script):
            if not (_SED_PRINT.match(piece) or _SED_SUBSTITUTE.match(piece)):
                return "the sed script may write files or run commands"
    return None


def _git(cmd: SimpleCommand) -> str | None:
    call = read_git(cmd.argv, cmd.assignments)
    if call.scripts or call.problems:
        return "git is told to run other programs"
    if any(g in ("-c", "-C", "--git-dir", "--work-tree", "--exec-path", "--config-env",
                 "--namespace", "--super-prefix", "--attr-source") for g in call.globals):
        return "git options point it at other settings or another repository"
    if call.alias or call.sub not in BUILTINS:
        return f"git {call.sub or '?'} is not a read-only git command"
    check = GIT_READ_ONLY.get(call.sub)
    if check is None:
        return f"git {call.sub} can change the repository"
    return check(call.args)


def _git_refuse(*bad: str, allow_operands: bool = True,
                listing_words: tuple[str, ...] = ()) -> Callable[[tuple[str, ...]], str | None]:
    def check(args: tuple[str, ...]) -> str | None:
        for i, word in enumerate(args):
            if word == "--":
                break
            name = word[2:].split("=", 1)[0] if word.startswith("--") else ""
            if name and any(b.startswith(name) or name.startswith(b) for b in bad
                            if len(b) > 1):
                return f"git {word} writes files or runs programs"
            if word.startswith("-") and not word.startswith("--") and any(
                    len(b) == 1 and b in word[1:] for b in bad):
                return f"git {word} writes files or runs programs"
            if not allow_operands and not word.startswith("-"):
                if i == 0 and word in listing_words:
                    continue
                return "with an operand this git command changes things"
        return None
    return check


_GIT_OUTPUT = ("output", "ext-diff", "open-files-in-pager", "O", "exec", "upload-pack",
               "receive-pack", "textconv", "edit")

GIT_READ_ONLY: dict[str, Callable[[tuple[str, ...]], str | None]] = {
    "status": _git_refuse(*_GIT_OUTPUT),
    "diff": _git_refuse(*_GIT_OUTPUT),
    "log": _git_refuse(*_GIT_OUTPUT),
    "show": _git_refuse(*_GIT_OUTPUT),
    "shortlog": _git_refuse(*_GIT_OUTPUT),
    "whatchanged": _git_refuse(*_GIT_OUTPUT),
    "blame": _git_refuse(*_GIT_OUTPUT),
    "grep": _git_refuse(*_GIT_OUTPUT),
    "ls-files": _git_refuse(*_GIT_OUTPUT),
    "ls-tree": _git_refuse(*_GIT_OUTPUT),
    "cat-file": _git_refuse(*_GIT_OUTPUT, "filters"),
    "rev-parse": _git_refuse(*_GIT_OUTPUT),
    "rev-list": _git_refuse(*_GIT_OUTPUT),
    "describe": _git_refuse(*_GIT_OUTPUT),
    "name-rev": _git_refuse(*_GIT_OUTPUT),
    "merge-base": _git_refuse(*_GIT_OUTPUT),
    "for-each-ref": _git_refuse(*_GIT_OUTPUT),
    "show-ref": _git_refuse(*_GIT_OUTPUT),
    "count-objects": _git_refuse(*_GIT_OUTPUT),
    "version": _git_refuse(),
    "help": _git_refuse("web", "w", "man", "m", "info", "i"),
    "branch": _git_refuse(*_GIT_OUTPUT, "d", "D", "m", "M", "c", "C", "f", "u", "delete",
                          "move", "copy", "force", "set-upstream-to", "unset-upstream",
                          "edit-description", "track", "create-reflog",
                          allow_operands=False),
    "tag": _git_refuse(*_GIT_OUTPUT, "d", "a", "s", "f", "m", "F", "u", "delete",
                       "annotate", "sign", "force", "message", "file", "local-user",
                       allow_operands=False),
    "remote": _git_refuse(*_GIT_OUTPUT, allow_operands=False, listing_words=()),
    "stash": lambda args: None if args[:1] in (("list",), ("show",)) else
    "git stash without list or show changes the working tree",
    "worktree": _git_refuse(allow_operands=False, listing_words=("list",)),
}


_SORT_SPEC = spec("bcCdfghiMmnrRsuVz", "koStT",
                  long=same("ignore-leading-blanks", "dictionary-order", "ignore-case",
                            "general-numeric-sort", "ignore-nonprinting", "month-sort",
                            "human-numeric-sort", "numeric-sort", "random-sort", "reverse",
                            "version-sort", "merge", "stable", "unique", "zero-terminated",
                            "debug", "help", "version"),
                  long_args={"key": "-k", "output": "-o", "buffer-size": "-S",
                             "field-separator": "-t", "temporary-directory": "-T",
                             "parallel": "parallel", "batch-size": "batch-size",
                             "random-source": "random-source", "files0-from": "files0-from",
                             "compress-program": "compress-program", "sort": "sort"},
                  long_optional={"check": "check"})


def _sort(cmd: SimpleCommand) -> str | None:
    """sort writes with ``-o``, runs ``--compress-program``, writes temporary files where
    ``-T`` says and reads the files ``--files0-from`` names."""
    parsed = parse_options(_SORT_SPEC, list(cmd.args))
    if parsed.problems:
        return f"sort: {parsed.problems[0]}"
    for option in ("-o", "-T", "compress-program", "files0-from"):
        if parsed.has(option):
            return f"sort {option} writes files, runs a program or reads unlisted files"
    return None


_UNIQ_SPEC = spec("cdDiuzf s w".replace(" ", ""), "",
                  long=same("count", "repeated", "ignore-case", "unique", "zero-terminated",
                            "help", "version"),
                  long_args={"skip-fields": "-f", "skip-chars": "-s", "check-chars": "-w"},
                  long_optional={"all-repeated": "all-repeated", "group": "group"})
_UNIQ_SPEC.short.update({k: (f"-{k}", 1) for k in "fsw"})


def _uniq(cmd: SimpleCommand) -> str | None:
    """``uniq [INPUT [OUTPUT]]``: a second operand is a file it writes."""
    parsed = parse_options(_UNIQ_SPEC, list(cmd.args))
    if parsed.problems:
        return f"uniq: {parsed.problems[0]}"
    return "uniq writes its second operand" if len(parsed.operands) > 1 else None


_TREE = _refuse_options("o", "R", "output")
_RG_REFUSED = _refuse_options("pre", "pre-glob", "z", "search-zip", "hostname-bin")


def _rg(cmd: SimpleCommand) -> str | None:
    """rg runs ``--pre`` programs and decompressors, and reads more options from the file
    ``RIPGREP_CONFIG_PATH`` names (unless ``--no-config``)."""
    if os.environ.get("RIPGREP_CONFIG_PATH") and "--no-config" not in cmd.args:
        return "rg reads options from RIPGREP_CONFIG_PATH"
    return _RG_REFUSED(cmd)


_CHECKSUMS = _refuse_options("c", "check")
_FILES0 = _refuse_options("files0-from")


def _hostname(cmd: SimpleCommand) -> str | None:
    return _refuse_options("F", "file", "b", "boot")(cmd) or _no_operands_or(0)(cmd)
_FILE = _refuse_options("C", "compile")

READ_ONLY: dict[str, Check | None] = {
    # name: None (always read-only with any options) or a check
    **{n: None for n in (
        "ls", "dir", "vdir", "pwd", "stat", "wc", "head", "cat", "tac", "nl", "echo",
        "printf", "true", "false", "test", "[", "whoami", "id", "uname", "uptime", "du",
        "df", "basename", "dirname", "realpath", "readlink", "md5sum", "sha1sum",
        "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "cmp",
        "diff", "comm", "cut", "tr", "column", "fold", "fmt", "expand", "unexpand", "paste",
        "join", "od", "hexdump", "strings", "rev", "seq", "sleep", "printenv", "locale",
        "getconf", "nproc", "arch", "tty", "groups", "ps", "pgrep", "jq", "grep", "egrep",
        "fgrep", "which", "whereis", "type", "cd", "pushd", "popd", "dirs", "lsof", "free",
        "lscpu", "lsblk", "env", "wait", "look", "numfmt", "tsort", "base64", "base32",
        "basenc", "iconv", "xxd", "file", "tail", "zcat", "bzcat", "xzcat", "lz4cat",
        "zstdcat", "md5", "shasum", "pathchk", "factor", "expr", "hash", "help", "times",
        "ulimit", "umask", "shopt", "set", "export", "local", "declare", "readonly", "read",
        "alias", "jobs", ":", "awk", "gawk", "mawk", "nawk")},
    "find": _find,
    "sort": _sort,
    "tree": _TREE,
    "rg": _rg,
    "file": _FILE,
    "date": _date,
    "sed": _sed,
    "git": _git,
    "hostname": _hostname,
    "uniq": _uniq,
    "wc": _FILES0,
    "du": _FILES0,
    **{n: _CHECKSUMS for n in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
                               "sha512sum", "b2sum", "shasum", "cksum")},
    "xxd": _no_operands_or(1),
    "iconv": _refuse_options("o", "output"),
    "hash": _refuse_options("p", "d", "r"),
    "set": _no_operands_or(0),
    "export": _no_operands_or(0),
    "declare": _no_operands_or(0),
    "readonly": _no_operands_or(0),
    "local": _no_operands_or(0),
    "alias": _no_operands_or(0),
    "umask": _no_operands_or(0),
    "ulimit": _no_operands_or(0),
    "shopt": _no_operands_or(0),
    "base64": _no_operands_or(1),
}
#: Programs that take a file name operand as nothing but a file to read (or a string to
#: print): a loop variable standing for one file name (``for f in src/*.py; do wc -l
#: "$f"; done``) may reach them.  Programs that read an operand as code, a script or an
#: expression (awk, sed, jq, find, test, eval, shells, interpreters) are left out.
FILE_OPERANDS = frozenset({"cat", "head", "tail", "wc", "nl", "tac", "stat", "file", "ls",
                           "du", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
                           "sha512sum", "b2sum", "cksum", "basename", "dirname", "realpath",
                           "readlink", "echo", "od", "hexdump", "strings", "cmp", "diff",
                           "comm", "cut", "fold", "fmt", "rev", "column", "expand",
                           "unexpand", "sort", "uniq", "grep", "egrep", "fgrep", "base64",
                           "xxd", "iconv", "zcat", "bzcat", "xzcat", "tree"})
#: Programs whose ``--version``/``--help`` alone is read-only.
VERSION_ONLY = frozenset({"python", "python3", "node", "npm", "npx", "pip", "pip3", "go",
                          "cargo", "rustc", "java", "javac", "ruby", "perl", "gcc", "g++",
                          "cc", "clang", "make", "cmake", "uv", "poetry", "pytest", "ruff",
                          "mypy", "deno", "bun", "yarn", "pnpm", "docker", "kubectl", "rg",
                          "tsc", "black", "bash", "sh", "zsh"})
_PIP_READS = frozenset({"list", "show", "freeze", "check", "--version", "-V"})
#: Options of pip's reading subcommands that do nothing but choose what is shown; any other
#: (``--log F`` writes F, ``--python X`` runs X, ``--cache-dir``...) makes pip ask.
_PIP_SAFE_FLAGS = frozenset({"-l", "--local", "--user", "--not-required", "--exclude-editable",
                             "--include-editable", "-e", "--editable", "-v", "--verbose",
                             "-q", "--quiet", "--no-color", "--disable-pip-version-check",
                             "--isolated", "--no-input", "-f", "--files", "--all",
                             "--no-python-version-warning", "--pre", "-vv", "-vvv", "-qq"})
_PIP_SAFE_VALUES = frozenset({"--format", "--path", "--exclude"})


def _pip_reads(args: tuple[str, ...]) -> bool:
    """``pip list|show|freeze|check`` with only options that choose what is shown."""
    if not args or args[0] not in _PIP_READS:
        return False
    i = 1
    while i < len(args):
        word = args[i]
        name = word.split("=", 1)[0]
        if name in _PIP_SAFE_VALUES:
            i += 1 if "=" in word else 2
            continue
        if word.startswith("-") and word not in _PIP_SAFE_FLAGS:
            return False
        i += 1
    return True


def classify(cmd: SimpleCommand) -> str | None:
    """None when ``cmd`` provably only reads; else why it might do more."""
    if cmd.unresolved:
        return cmd.unresolved
    if not cmd.argv:
        if any(_RISKY_ASSIGNMENT.match(a) for a in cmd.assignments):
            return "it changes how later commands are found or run"
        return None if not writes_by_redirect(cmd) else "it writes a file"
    bound = [i < len(cmd.bound) and cmd.bound[i] for i in range(len(cmd.argv))]
    unknown = [d and not b for d, b in zip(cmd.dynamic, bound, strict=False)]
    if any(unknown) and (cmd.name not in READ_ONLY or READ_ONLY[cmd.name] is not None
                         or cmd.name in _READS_OPERANDS):
        # A run-time word could be a writing option (sort $X) or a file to read that the
        # policy cannot check (cat "$f"); echo $PATH is fine.
        return "an argument is only known when it runs"
    if any(bound) and cmd.name not in FILE_OPERANDS:
        return f"{cmd.name} is given a file name from a loop, which it may read as more " \
            "than a file (code, a pattern, a name bash evaluates)"
    if any(t == DYNAMIC_TARGET for _op, t in cmd.redirects):
        return "it reads a file only known when it runs"
    if any(_RISKY_ASSIGNMENT.match(a) for a in cmd.assignments) and cmd.name != "git":
        return "an assignment changes how it runs"
    if any(w not in NEUTRAL_WRAPPERS for w in cmd.wrappers):
        return f"{cmd.wrappers[0]} changes who or how it runs"
    if "xargs" in cmd.wrappers and any(w.startswith(("-a", "--a")) for w in
                                       cmd.words[:len(cmd.words) - len(cmd.argv)]):
        return "xargs -a reads its arguments from a file"
    if cmd.wrapper_writes or writes_by_redirect(cmd):
        return "it writes a file"
    program = cmd.argv[0]
    if "/" in program and os.path.dirname(program) not in SYSTEM_DIRS:
        return f"{program} is not a system program"
    name = cmd.name
    if name in VERSION_ONLY and cmd.args in (("--version",), ("-V",), ("--help",),
                                              ("version",)):
        return None
    if name in ("pip", "pip3") and _pip_reads(cmd.args):
        return None
    if name in ("python", "python3") and cmd.args[:2] in (("-m", "pip"),) and \
            _pip_reads(cmd.args[2:]):
        return None
    if name == "command" and cmd.args[:1] and cmd.args[0].startswith("-"):
        return None  # `command -v x`: a lookup (peel leaves it in place)
    if name not in READ_ONLY:
        return f"{name} is not known to be read-only"
    check = READ_ONLY[name]
    return check(cmd) if check is not None else None


# ---- paths a command touches ------------------------------------------------------------------

_OUTPUT_OPTION = {"sort": ("o", "output"), "tree": ("o",), "curl": ("o", "output"),
                  "wget": ("O", "output-document", "o", "output-file", "a", "append-output"),
                  "gcc": ("o",), "cc": ("o",), "clang": ("o",), "g++": ("o",),
                  "shuf": ("o", "output"), "iconv": ("o", "output"), "tar": ("f", "file"),
                  "git": ("output",), "pandoc": ("o", "output"), "jq": (),
                  "diff": ("output",)}
_READS_OPERANDS = frozenset({"cat", "head", "tail", "tac", "nl", "wc", "less", "more", "od",
                             "hexdump", "strings", "xxd", "base64", "md5sum", "sha1sum",
                             "sha256sum", "sha512sum", "cksum", "cut", "sort", "uniq",
                             "diff", "cmp", "comm", "paste", "join", "fold", "fmt", "rev",
                             "zcat", "bzcat", "xzcat", "file", "stat", "grep", "egrep",
                             "fgrep", "rg", "jq", "awk", "sed", "cp", "tee", "iconv",
                             "look", "column", "expand", "unexpand", "tsort", "b2sum",
                             "sha224sum", "sha384sum", "sum", "shasum", "md5", "base32",
                             "basenc", "lz4cat", "zstdcat", "gawk", "mawk", "nawk", "cd",
                             "pushd", "date", "xargs"})
#: Programs that take a pattern or program before their files: every word they are given
#: (patterns, option values, files) is counted as a path they may read, so a file named by
#: ``grep -f F`` or ``--file=F`` is judged too (a pattern that looks like a path outside
#: the workspace then asks, which errs on the safe side).
_READS_EVERY_WORD = frozenset({"grep", "egrep", "fgrep", "rg", "sed", "awk", "gawk", "mawk",
                               "nawk", "jq", "look", "date", "file", "diff", "cmp"})


def _option_values(args: tuple[str, ...], names: tuple[str, ...]) -> list[str]:
    out = []
    shorts = [n for n in names if len(n) == 1]
    longs = [n for n in names if len(n) > 1]
    for i, word in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            if name and any(long.startswith(name) for long in longs):
                out.append(value if eq else nxt)
        elif word.startswith("-") and len(word) > 1:
            for j, letter in enumerate(word[1:], 1):
                if letter in shorts:
                    out.append(word[j + 1:] or nxt)
                    break
    return [v for v in out if v and v != "-"]


def paths(cmd: SimpleCommand) -> tuple[list[str], list[str], list[str]]:
    """(writes, deletes, reads) of one simple command, as far as they can be told."""
    writes = writes_by_redirect(cmd) + list(cmd.wrapper_writes)
    deletes: list[str] = []
    reads: list[str] = [t for op, t in cmd.redirects if op in ("<", "0<") and t
                        and t != DYNAMIC_TARGET]
    name = cmd.name
    args = cmd.args
    operands = [a for a in args if not a.startswith("-")]
    if name == "tee":
        writes += operands
    elif name in ("cp", "mv", "install", "ln", "rsync") and len(operands) >= 2:
        writes.append(operands[-1])
        if name == "mv":
            deletes += operands[:-1]
        else:
            reads += operands[:-1]
    elif name in ("touch", "mkdir", "truncate", "chmod", "chown", "chgrp", "mkfifo",
                  "setfacl"):
        skip = 1 if name in ("chmod", "chown", "chgrp", "setfacl") else 0
        writes += operands[skip:]
    elif name in ("rm", "rmdir", "unlink", "shred"):
        deletes += operands
    elif name == "dd":
        writes += [a[3:] for a in args if a.startswith("of=")]
        reads += [a[3:] for a in args if a.startswith("if=")]
    elif name == "sed" and any(a.startswith(("-i", "--in-place")) or
                               (a.startswith("-") and not a.startswith("--") and "i" in a)
                               for a in args):
        writes += operands[1:]
    elif name in ("cd", "pushd"):
        reads += operands[:1] or ["~"]  # a later relative path is read from there
    elif name == "uniq":
        parsed = parse_options(_UNIQ_SPEC, list(args))
        reads += parsed.operands[:1]
        writes += [w for w in parsed.operands[1:2] if w != "-"]
    elif name in _READS_EVERY_WORD:
        reads += _every_value(args)
    elif name in _READS_OPERANDS:
        reads += operands
    elif name == "git":
        reads += _git_reads(cmd)
    if name in _OUTPUT_OPTION:
        writes += _option_values(args, _OUTPUT_OPTION[name])
    return writes, deletes, reads


def _every_value(args: tuple[str, ...]) -> list[str]:
    """Every word that is not an option flag, and the value of ``--opt=value`` and of a
    short option with a path attached (``-f/etc/x``)."""
    out = []
    for word in args:
        if not word.startswith("-") or word == "-":
            out.append(word)
        elif word.startswith("--") and "=" in word:
            out.append(word.split("=", 1)[1])
        elif not word.startswith("--") and "/" in word[2:]:
            out.append(word[2:])
    return [w for w in out if w and w != "-"]


def _git_reads(cmd: SimpleCommand) -> list[str]:
    """``git diff --no-index A B`` compares two files anywhere: both are read."""
    call = read_git(cmd.argv, cmd.assignments)
    if call.sub == "diff" and "--no-index" in call.args:
        return [a for a in call.args if not a.startswith("-")]
    return []


def directories(cmd: SimpleCommand) -> list[str]:
    """Where ``cd``, ``pushd``, ``popd`` or ``env -C`` take the commands after them (""
    for a directory only known at run time)."""
    if cmd.name in ("cd", "pushd", "popd"):
        if cmd.any_dynamic:
            return [""]
        operands = [a for a in cmd.args if not a.startswith("-")]
        return operands[:1] or (["~"] if cmd.name == "cd" else [""])
    if "env" not in cmd.wrappers:
        return []
    out = []
    for i, word in enumerate(cmd.words[:len(cmd.words) - len(cmd.argv)]):
        if word in ("-C", "--chdir"):
            out.append(cmd.words[i + 1] if i + 1 < len(cmd.words) else "")
        elif word.startswith("--chdir="):
            out.append(word.split("=", 1)[1])
        elif word.startswith("-C"):
            out.append(word[2:])
    return out


def path_inside(path: str, workspace: Path | str) -> bool:
    """True when ``path`` (relative to the workspace, ``~`` expanded) resolves inside it; a
    glob when it and every file it matches now do (``src/*/x`` through a symlinked dir)."""
    try:
        root = os.path.realpath(str(workspace))
        joined = os.path.join(root, os.path.expanduser(path))
        found = [joined] + (glob.glob(joined)[:1000] if glob.has_magic(joined) else [])
        reals = [os.path.realpath(p) for p in found]
    except (OSError, ValueError):
        return False
    return all(real == root or real.startswith(root.rstrip("/") + "/") for real in reals)
