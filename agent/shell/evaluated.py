"""Text bash evaluates as code although it is not a command: arithmetic and variable names.

Bash evaluates an arithmetic context (``$(( ))``, ``(( ))``, ``for (( ))``, ``let``, the
operands of ``[[ a -eq b ]]``, array subscripts, ``${x:offset}``) by expanding it and then
reading every variable it names as an arithmetic expression *again*; an array subscript in
that text runs its command substitutions.  So ``x='a[$(touch m)]'; echo $((x))`` runs
``touch``, and so do ``test -v 'a[$(touch m)]'``, ``printf -v 'a[$(touch m)]' v``,
``read 'a[$(touch m)]'``, ``declare -n r='a[$(touch m)]'; echo $r`` and ``${!x}``.

:class:`Evaluations` collects, while a script is walked, every such context and every
variable the script itself binds (with the value when it is a literal).  :meth:`reasons`
then says, for each context, why it cannot be proven harmless: a substitution or quote in
it, a name only known at run time, or a variable the script bound to something other than
an integer literal (a file name from a glob, a line from ``read``, command output).  The
environment the agent starts bash with is its own, so a variable the script never binds is
trusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_#.])[A-Za-z_][A-Za-z0-9_]*")
_INTEGER = re.compile(r"^\s*-?[0-9]+\s*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SUBSCRIPTED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\[(.*)\]$", re.DOTALL)
#: What makes arithmetic text run something or read a value bash evaluates again.
_CODE_IN_ARITHMETIC = re.compile(r"`|\$\(|['\"\\]")

#: Builtins whose operands (or option values) are variable names bash evaluates.
NAME_OPTIONS = {"printf": ("-v",), "read": ("-a",), "wait": ("-p",), "mapfile": (),
                "readarray": ()}
_READ_VALUE_OPTIONS = frozenset("dinNptu")
_MAPFILE_VALUE_OPTIONS = frozenset("dnOsuCc")
DECLARATIONS = frozenset({"declare", "typeset", "local", "export", "readonly"})


@dataclass
class Evaluations:
    """The arithmetic texts and variable names of one script, and what it binds."""

    arithmetic: list[str] = field(default_factory=list)
    names: list[tuple[str, bool]] = field(default_factory=list)  # (name, only known at run time)
    bound: dict[str, bool] = field(default_factory=dict)  # name -> every value an integer
    problems: list[str] = field(default_factory=list)

    def bind(self, name: str, value: str | None) -> None:
        """The script gives ``name`` a value: ``value`` when literal, None when not."""
        base = name.split("[", 1)[0]
        integer = value is not None and bool(_INTEGER.match(value))
        self.bound[base] = self.bound.get(base, True) and integer

    def bind_arithmetic(self, name: str) -> None:
        """``for ((i=0; ...))``, ``(( n += 1 ))``: the value is an integer."""
        self.bound.setdefault(name.split("[", 1)[0], True)

    def name(self, word: str, dynamic: bool) -> None:
        """A word bash reads as a variable name (``printf -v NAME``)."""
        self.names.append((word, dynamic))

    def problem(self, why: str) -> None:
        if why not in self.problems:
            self.problems.append(why)

    def reasons(self) -> list[str]:
        """Why each context cannot be proven harmless (empty when all can)."""
        out = list(self.problems)
        for text in self.arithmetic:
            why = self._arithmetic(text)
            if why:
                out.append(why)
        for word, dynamic in self.names:
            why = self._name(word, dynamic)
            if why:
                out.append(why)
        return list(dict.fromkeys(out))

    def _arithmetic(self, text: str) -> str:
        if _CODE_IN_ARITHMETIC.search(text):
            return f"bash evaluates {text.strip()[:60]!r} as arithmetic, and its value is " \
                "only known when it runs"
        for ident in _IDENTIFIER.findall(text):
            if self.bound.get(ident) is False:
                return f"bash evaluates ${ident} as arithmetic, and this command gives it " \
                    "a value that may hold code"
        return ""

    def _name(self, word: str, dynamic: bool) -> str:
        if dynamic:
            return f"bash evaluates the variable name {word[:60]!r}, only known when it runs"
        if _NAME.match(word):
            return ""
        sub = _SUBSCRIPTED.match(word)
        if sub:
            return self._arithmetic(sub.group(2))
        return f"bash evaluates the variable name {word[:60]!r}"


def names_in_command(argv: tuple[str, ...], dynamic: tuple[bool, ...]
                     ) -> list[tuple[str, bool, bool]]:
    """The words of a builtin that bash reads as variable names: ``(word, dynamic, binds)``
    (``binds``: the builtin gives that variable a value from its input)."""
    if not argv:
        return []
    name = argv[0]
    flags = list(dynamic) + [False] * len(argv)
    out: list[tuple[str, bool, bool]] = []
    args = list(enumerate(argv))[1:]
    if name in ("test", "["):
        for i, word in args:
            if word in ("-v", "-R") and i + 1 < len(argv):
                out.append((argv[i + 1], flags[i + 1], False))
        return out
    if name in ("printf", "wait"):
        option = NAME_OPTIONS[name][0]
        for i, word in args:
            if word == "--":
                break
            if word == option and i + 1 < len(argv):
                out.append((argv[i + 1], flags[i + 1], True))
            elif word.startswith(option) and len(word) > 2:
                out.append((word[2:], flags[i], True))
        return out
    if name in ("read", "mapfile", "readarray", "getopts", "unset"):
        values = _READ_VALUE_OPTIONS if name == "read" else _MAPFILE_VALUE_OPTIONS \
            if name != "getopts" else frozenset()
        skip = 1 if name == "getopts" else 0  # the option string
        i = 1
        while i < len(argv):
            word = argv[i]
            if word == "--":
                i += 1
                break
            if word.startswith("-") and len(word) > 1 and not flags[i] and name != "getopts":
                letters = word[1:]
                for j, letter in enumerate(letters):
                    if letter == "a" and name == "read":
                        value = letters[j + 1:] or (argv[i + 1] if i + 1 < len(argv) else "")
                        out.append((value, flags[i + 1] if not letters[j + 1:] and
                                    i + 1 < len(argv) else flags[i], True))
                        if not letters[j + 1:]:
                            i += 1
                        break
                    if letter in values:
                        if not letters[j + 1:]:
                            i += 1
                        break
                i += 1
                continue
            break
        operands = list(range(i, len(argv)))[skip:]
        if name == "getopts":
            operands = operands[:1]
        for k in operands:
            out.append((argv[k], flags[k], name != "unset"))
        return out
    return out


def arithmetic_words(argv: tuple[str, ...]) -> list[str]:
    """Operands of a builtin that bash evaluates as arithmetic (``let``)."""
    if argv and argv[0] == "let":
        return list(argv[1:])
    return []


def declaration(argv: tuple[str, ...]) -> tuple[set[str], list[str]]:
    """The attribute letters a ``declare``-like builtin sets (``-i``, ``-n``) and its
    operands."""
    letters: set[str] = set()
    operands: list[str] = []
    for word in argv[1:]:
        if word.startswith(("-", "+")) and len(word) > 1 and not operands:
            letters.update(word[1:])
        else:
            operands.append(word)
    return letters, operands
