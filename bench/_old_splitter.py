"""The hand-written splitter agent.shell.parse used before tree-sitter-bash, kept only so
bench/shell_parsers.py and bench/shell_judgement.py can compare against it in the same run."""
# ruff: noqa

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
import os
import re
from dataclasses import dataclass, field


__all__ = ["MAX_DEPTH", "SHELLS", "Script", "SimpleCommand", "parse", "simple_commands",
           "split_commands", "split_words", "unwrap"]

#: Nested scripts (substitutions, subshells, ``bash -c``) deeper than this are not read.
MAX_DEPTH = 24
#: Nested scripts are re-read (``bash -c "$(...)"`` reads the substitution twice); the
#: characters re-read are capped at this multiple of the input plus a floor, so nesting
#: cannot make the work explode.  Past the cap the result is marked incomplete.
REREAD_FACTOR = 8
REREAD_MIN = 100_000

_BREAKS = frozenset(" \t\n;&|<>()")
# Runs of characters with no meaning to the scanner, copied in one step (speed on long input).
_PLAIN_IN_WORD = re.compile(r"[^ \t\n;&|<>()\\'\"$`]+")
_PLAIN_IN_QUOTES = re.compile(r"[^\\\"$`]+")


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command.

    ``words`` are the words as the shell would see them after quote removal (substitutions
    stay as written, e.g. ``$(date)``); ``argv`` is ``words`` without leading assignments,
    reserved words and wrapper programs, so ``argv[0]`` is what actually runs.
    ``redirects`` are ``(operator, target)`` pairs.  ``pipes`` places the command in every
    pipeline around it: ``(pipeline id, stage)`` pairs from the outermost in, so two commands
    share a pipeline when they share an id, and the lower stage feeds the higher.
    ``substituted`` are the commands whose output becomes part of this one's words.
    """

    argv: tuple[str, ...]
    words: tuple[str, ...] = ()
    redirects: tuple[tuple[str, str], ...] = ()
    pipes: tuple[tuple[int, int], ...] = ()
    substituted: tuple[SimpleCommand, ...] = ()

    @property
    def name(self) -> str:
        """The program's base name (``/usr/bin/rm`` → ``rm``), or ``""``."""
        return os.path.basename(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    def feeds(self, other: SimpleCommand) -> bool:
        """True when this command's output is piped (directly or not) into ``other``."""
        theirs = dict(other.pipes)
        return any(pid in theirs and stage < theirs[pid] for pid, stage in self.pipes)


@dataclass
class Script:
    """The result of :func:`parse`: every simple command, in the order the shell would run
    them, whether all of the text could be read (``complete``), and the bodies of
    here-documents (data, not commands)."""

    commands: list[SimpleCommand] = field(default_factory=list)
    complete: bool = True
    heredocs: list[str] = field(default_factory=list)


def parse(text: str) -> Script:
    """Every simple command in ``text`` (see the module docstring).  Never raises."""
    script = Script()
    try:
        counter = _Counter(REREAD_FACTOR * len(text) + REREAD_MIN)
        _Parser(text, script, counter, depth=0, outer=()).parse_list(None)
    except Exception:  # pathological input or a scanner bug: keep what was read, say partial
        script.complete = False
    return script


def simple_commands(text: str) -> list[SimpleCommand]:
    """Shorthand for ``parse(text).commands``."""
    return parse(text).commands


def split_commands(text: str) -> list[list[str]]:
    """The ``argv`` of every simple command in ``text`` (empty ones left out)."""
    return [list(c.argv) for c in parse(text).commands if c.argv]


class _Counter:
    """Pipeline ids and the re-reading budget shared by every nested parser of one
    :func:`parse` call."""

    def __init__(self, budget: int) -> None:
        self.value = 0
        self.budget = budget

    def next(self) -> int:
        self.value += 1
        return self.value

    def spend(self, chars: int) -> bool:
        """Charge re-reading ``chars`` characters; False once the budget is spent."""
        self.budget -= chars
        return self.budget >= 0


@dataclass
class _Pending:
    """A command being read."""

    words: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    first_output: int = 0  # index in the output where its substituted commands start


class _Parser:
    def __init__(self, text: str, script: Script, counter: _Counter, *, depth: int,
                 outer: tuple[tuple[int, int], ...]) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.script = script
        self.counter = counter
        self.depth = depth
        self.outer = outer
        # here-documents waiting for the end of the line: (delimiter, strip tabs, expand,
        # where the command that reads it sits)
        self.heredocs: list[tuple[str, bool, bool, tuple[tuple[int, int], ...]]] = []
        self.pipeline = counter.next()
        self.stage = 0
        self.brace_level = 0

    # ---- structure ------------------------------------------------------------------------

    def here(self) -> tuple[tuple[int, int], ...]:
        return self.outer + ((self.pipeline, self.stage),)

    def nested(self, text: str) -> None:
        """Parse ``text`` (a substitution, a ``-c`` script) as commands inside this stage."""
        if self.depth + 1 > MAX_DEPTH or not self.counter.spend(len(text)):
            self.script.complete = False
            return
        _Parser(text, self.script, self.counter, depth=self.depth + 1,
                outer=self.here()).parse_list(None)

    def parse_list(self, stop: str | None) -> None:
        """Read commands until ``stop`` (``)`` or a backtick) or the end of the text."""
        cmd = _Pending(first_output=len(self.script.commands))
        text = self.text
        while self.pos < self.n:
            c = text[self.pos]
            nxt = text[self.pos + 1] if self.pos + 1 < self.n else ""
            if stop is not None and c == stop:
                self.pos += 1
                self.finish(cmd)
                return
            if c in " \t":
                self.pos += 1
            elif c == "\\" and nxt == "\n":
                self.pos += 2
            elif c == "#" and not self._inside_word():
                end = text.find("\n", self.pos)
                self.pos = self.n if end < 0 else end
            elif c == "\n":
                self.pos += 1
                cmd = self.separate(cmd)
                self.read_heredocs()
            elif c == ";":
                self.pos += 2 if nxt in ";&" else 1
                cmd = self.separate(cmd)
            elif c == "&" and nxt == ">":
                self.pos += 3 if text.startswith("&>>", self.pos) else 2
                cmd.redirects.append(("&>", self.read_word_value()))
            elif c == "&":
                self.pos += 2 if nxt == "&" else 1
                cmd = self.separate(cmd)
            elif c == "|":
                if nxt == "|":
                    self.pos += 2
                    cmd = self.separate(cmd)
                else:
                    self.pos += 2 if nxt == "&" else 1
                    cmd = self.pipe(cmd)
            elif c in "<>" and nxt == "(":
                self.pos += 2
                self.group(")")
                cmd.words.append(f"{c}(...)")
            elif c in "<>":
                self.redirect(cmd, "")
            elif c == "(":
                self.pos += 1
                self.group(")")
            elif c == ")":
                # An unmatched ")" (a case pattern, stray input) separates like ";".
                self.pos += 1
                cmd = self.separate(cmd)
            else:
                value = self.read_word()
                if value.isdigit() and self.pos < self.n and text[self.pos] in "<>":
                    self.redirect(cmd, value)
                else:
                    cmd.words.append(value)
        self.finish(cmd)

    def _inside_word(self) -> bool:
        return self.pos > 0 and self.text[self.pos - 1] not in " \t\n;&|()<>"

    def group(self, stop: str) -> None:
        """A subshell or process substitution: its commands run inside the current stage."""
        if self.depth + 1 > MAX_DEPTH:
            self.script.complete = False
            self.pos = self.n
            return
        inner = _Parser(self.text, self.script, self.counter, depth=self.depth + 1,
                        outer=self.here())
        inner.pos = self.pos
        inner.parse_list(stop)
        self.pos = inner.pos

    def separate(self, cmd: _Pending) -> _Pending:
        self.finish(cmd)
        self.pipeline = self.counter.next()
        self.stage = 0
        return _Pending(first_output=len(self.script.commands))

    def pipe(self, cmd: _Pending) -> _Pending:
        self.finish(cmd)
        self.stage += 1
        return _Pending(first_output=len(self.script.commands))

    def redirect(self, cmd: _Pending, fd: str) -> None:
        text = self.text
        for op in ("<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", ">", "<"):
            if text.startswith(op, self.pos):
                break
        self.pos += len(op)
        if op in ("<<", "<<-"):
            start = self.pos
            delimiter = self.read_word_value()
            raw = text[start:self.pos]
            expand = not any(q in raw for q in "'\"\\")
            self.heredocs.append((delimiter, op == "<<-", expand, self.here()))
            cmd.redirects.append((fd + op, delimiter))
            return
        cmd.redirects.append((fd + op, self.read_word_value()))

    def read_heredocs(self) -> None:
        """Skip the bodies of here-documents started on the line just ended; an unquoted
        delimiter means the body's substitutions run, so those are read as commands."""
        pending, self.heredocs = self.heredocs, []
        for delimiter, strip_tabs, expand, where in pending:
            start = self.pos
            while self.pos < self.n:
                end = self.text.find("\n", self.pos)
                end = self.n if end < 0 else end
                line = self.text[self.pos:end]
                self.pos = min(end + 1, self.n)
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    body = self.text[start:end - len(line)]
                    break
            else:
                body = self.text[start:]
            self.script.heredocs.append(body)
            if expand:
                self.scan_substitutions(body, where)

    def scan_substitutions(self, body: str, where: tuple[tuple[int, int], ...]) -> None:
        if self.depth + 1 > MAX_DEPTH or not self.counter.spend(len(body)):
            self.script.complete = False
            return
        inner = _Parser(body, self.script, self.counter, depth=self.depth + 1, outer=where)
        inner.read_double_quoted(until_end=True)

    # ---- words ----------------------------------------------------------------------------

    def skip_blanks(self) -> None:
        while self.pos < self.n and self.text[self.pos] in " \t":
            self.pos += 1

    def read_word_value(self) -> str:
        self.skip_blanks()
        if self.pos < self.n and self.text[self.pos] not in _BREAKS:
            return self.read_word()
        return ""

    def read_word(self) -> str:
        """One word, quotes removed; substitutions are read as commands and kept as text."""
        text = self.text
        out: list[str] = []
        while self.pos < self.n:
            c = text[self.pos]
            if c in _BREAKS:
                break
            if c == "\\":
                if self.pos + 1 < self.n:
                    if text[self.pos + 1] != "\n":
                        out.append(text[self.pos + 1])
                    self.pos += 2
                else:
                    self.pos += 1
            elif c == "'":
                end = text.find("'", self.pos + 1)
                end = self.n if end < 0 else end
                out.append(text[self.pos + 1:end])
                self.pos = min(end + 1, self.n)
            elif c == '"':
                self.pos += 1
                out.append(self.read_double_quoted(until_end=False))
            elif c == "$" and text.startswith("$'", self.pos):
                out.append(self.read_ansi_c())
            elif c in "$`":
                out.append(self.read_dollar_or_backtick())
            else:
                plain = _PLAIN_IN_WORD.match(text, self.pos)
                out.append(plain.group())
                self.pos = plain.end()
        return "".join(out)

    def read_double_quoted(self, *, until_end: bool) -> str:
        text = self.text
        out: list[str] = []
        while self.pos < self.n:
            c = text[self.pos]
            if c == '"' and not until_end:
                self.pos += 1
                break
            if c == "\\" and self.pos + 1 < self.n:
                if text[self.pos + 1] in '$`"\\\n':
                    if text[self.pos + 1] != "\n":
                        out.append(text[self.pos + 1])
                else:
                    out.append(text[self.pos:self.pos + 2])
                self.pos += 2
            elif c in "$`":
                out.append(self.read_dollar_or_backtick())
            else:
                plain = _PLAIN_IN_QUOTES.match(text, self.pos)
                if plain is None:  # a lone backslash at the end, or '"' in a here-document
                    out.append(c)
                    self.pos += 1
                else:
                    out.append(plain.group())
                    self.pos = plain.end()
        return "".join(out)

    def read_dollar_or_backtick(self) -> str:
        """``$(...)``, ``$((...))``, ``${...}`` or a backtick substitution; returns its text."""
        text = self.text
        start = self.pos
        if text[self.pos] == "`":
            self.pos += 1
            body: list[str] = []
            while self.pos < self.n and text[self.pos] != "`":
                if text[self.pos] == "\\" and self.pos + 1 < self.n:
                    body.append(text[self.pos + 1])
                    self.pos += 2
                else:
                    body.append(text[self.pos])
                    self.pos += 1
            self.pos = min(self.pos + 1, self.n)
            self.nested("".join(body))
            return text[start:self.pos]
        nxt = text[self.pos + 1] if self.pos + 1 < self.n else ""
        if nxt == "(":
            self.pos += 2
            self.group(")")
            return text[start:self.pos]
        if nxt == "{":
            self.pos += 2
            self.read_braced()
            return text[start:self.pos]
        self.pos += 1
        return "$"

    def read_braced(self) -> None:
        """The rest of ``${...}``: skip to the matching brace, reading substitutions inside."""
        text = self.text
        self.brace_level += 1
        if self.brace_level > MAX_DEPTH:
            self.script.complete = False
            self.pos = self.n
        depth = 1
        while self.pos < self.n:
            c = text[self.pos]
            if c == "$" and text.startswith("${", self.pos):
                depth += 1
                self.pos += 2
            elif c == "}":
                depth -= 1
                self.pos += 1
                if depth == 0:
                    break
            elif c == "{":
                depth += 1
                self.pos += 1
            elif c == "\\":
                self.pos += 2
            elif c == "'":
                end = text.find("'", self.pos + 1)
                self.pos = self.n if end < 0 else end + 1
            elif c == '"':
                self.pos += 1
                self.read_double_quoted(until_end=False)
            elif c in "$`":
                self.read_dollar_or_backtick()
            else:
                self.pos += 1
        self.pos = min(self.pos, self.n)
        self.brace_level -= 1

    def read_ansi_c(self) -> str:
        """``$'...'`` with its backslash escapes decoded (``$'\\x72m'`` is ``rm``)."""
        text = self.text
        self.pos += 2
        out: list[str] = []
        while self.pos < self.n and text[self.pos] != "'":
            c = text[self.pos]
            if c == "\\" and self.pos + 1 < self.n:
                char, used = _ansi_escape(text, self.pos + 1)
                out.append(char)
                self.pos += 1 + used
            else:
                out.append(c)
                self.pos += 1
        self.pos = min(self.pos + 1, self.n)
        return "".join(out)

    # ---- finishing a command --------------------------------------------------------------

    def finish(self, cmd: _Pending) -> None:
        if not cmd.words and not cmd.redirects:
            return
        words = tuple(cmd.words)
        argv = unwrap(words)
        substituted = tuple(self.script.commands[cmd.first_output:])
        simple = SimpleCommand(argv, words, tuple(cmd.redirects), self.here(), substituted)
        self.script.commands.append(simple)
        self.expand_inner(simple)

    def expand_inner(self, simple: SimpleCommand) -> None:
        """Commands hidden in arguments: ``bash -c S``, ``eval S``, ``su -c S``,
        ``find ... -exec CMD ;``."""
        for script in inner_scripts(simple.argv):
            self.nested(script)
        for argv in find_exec(simple.argv):
            inner = unwrap(tuple(argv))
            self.script.commands.append(SimpleCommand(inner, tuple(argv), (), self.here()))


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_escape(text: str, i: int) -> tuple[str, int]:
    """Decode the escape at ``text[i]`` (after the backslash): (char, characters used)."""
    c = text[i]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], 1
    if c == "x":
        digits = re.match(r"[0-9a-fA-F]{1,2}", text[i + 1:i + 3])
        if digits:
            return chr(int(digits.group(), 16)), 1 + len(digits.group())
    if c in "uU":
        width = 4 if c == "u" else 8
        digits = re.match(f"[0-9a-fA-F]{{1,{width}}}", text[i + 1:i + 1 + width])
        if digits:
            code = int(digits.group(), 16)
            return (chr(code) if code <= 0x10FFFF else "?"), 1 + len(digits.group())
    digits = re.match(r"[0-7]{1,3}", text[i:i + 3])
    if digits:
        return chr(int(digits.group(), 8) & 0xFF), len(digits.group())
    return "\\" + c, 1
