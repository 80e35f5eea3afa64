"""Reading a command's options the way the program does (getopt_long), whatever the spelling.

``rm --recur``, ``rm -fr``, ``rm -r -- x``, ``git reset --har`` and ``sort -ofile`` all mean
something definite to the program: GNU getopt_long accepts any unambiguous prefix of a long
option, clusters short flags, and takes an option's value attached or from the next word.
:func:`parse_options` reads argv with a :class:`Spec` the same way and names every option by
one canonical name, so a judgement is made on meaning, not spelling.  Where the program would
see an ambiguous prefix or an option it does not know, the result says so, and callers treat
the command as one they cannot read (fail closed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

NONE, REQUIRED, OPTIONAL = 0, 1, 2
#: The word standing for the arguments ``xargs`` appends from its input (``ls | xargs rm`` runs
#: ``rm {xargs-input}``): only known when it runs, and it may be any option.
XARGS_INPUT = "{xargs-input}"


@dataclass(frozen=True)
class Spec:
    """What a program accepts.  ``short`` maps a letter to ``(canonical name, argument
    mode)``; ``long`` maps a long option (without ``--``) to the same; ``stop_at_operand``
    is True for programs whose options end at the first operand (wrappers: ``sudo -u x rm
    -rf y`` — the ``-rf`` belongs to ``rm``)."""

    short: dict[str, tuple[str, int]] = field(default_factory=dict)
    long: dict[str, tuple[str, int]] = field(default_factory=dict)
    stop_at_operand: bool = False
    numeric_short: bool = False  # ``nice -5``, ``head -20``: a number is an option value


@dataclass
class Parsed:
    """``options`` as ``(canonical, value)`` in order; ``operands``; where the operands begin
    in argv (``rest``, for wrappers); and why the reading is unsure (``problems``)."""

    options: list[tuple[str, str | None]] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    rest: int = 0
    problems: list[str] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(name == n for name, _ in self.options for n in names)

    def values(self, *names: str) -> list[str]:
        return [v for name, v in self.options if name in names and v is not None]


def resolve_long(spec: Spec, name: str) -> tuple[str, int] | str:
    """The option ``--name`` means, as getopt_long resolves it: an exact name, else the one
    option ``name`` is a prefix of.  Returns ``(canonical, mode)``, or a problem string."""
    if name in spec.long:
        return spec.long[name]
    hits = {key: value for key, value in spec.long.items() if key.startswith(name)}
    meanings = set(hits.values())
    if len(meanings) == 1:
        return meanings.pop()
    if not hits:
        return f"unknown option --{name}"
    return f"ambiguous option --{name} (" + ", ".join(f"--{h}" for h in sorted(hits)) + ")"


def parse_options(spec: Spec, argv: list[str] | tuple[str, ...],
                  dynamic: list[bool] | tuple[bool, ...] = ()) -> Parsed:
    """Read ``argv`` (without the program name) as the program would."""
    out = Parsed()
    i = 0
    n = len(argv)
    while i < n:
        word = argv[i]
        is_dynamic = i < len(dynamic) and dynamic[i]
        if word == "--":
            out.operands.extend(argv[i + 1:])
            if out.rest == 0 and spec.stop_at_operand:
                out.rest = i + 1
            i = n
            break
        if is_dynamic and (word.startswith(("$", "`")) or word == XARGS_INPUT):
            if spec.stop_at_operand:
                out.problems.append(f"an option only known when it runs ({word})")
                out.rest = i
                return out
            out.problems.append(f"an argument only known when it runs ({word})")
            out.operands.append(word)
            i += 1
            continue
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            meaning = resolve_long(spec, name)
            if isinstance(meaning, str):
                out.problems.append(meaning)
                out.options.append(("--" + name, value if eq else None))
                i += 1
                continue
            canonical, mode = meaning
            if eq:
                out.options.append((canonical, value))
            elif mode == REQUIRED:
                out.options.append((canonical, argv[i + 1] if i + 1 < n else ""))
                i += 1
            else:
                out.options.append((canonical, None))
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            if spec.numeric_short and word[1:].isdigit():
                out.options.append(("-number", word[1:]))
                i += 1
                continue
            j = 1
            while j < len(word):
                letter = word[j]
                letter_meaning = spec.short.get(letter)
                if letter_meaning is None:
                    out.problems.append(f"unknown option -{letter}")
                    out.options.append(("-" + letter, None))
                    j += 1
                    continue
                canonical, mode = letter_meaning
                if mode == NONE:
                    out.options.append((canonical, None))
                    j += 1
                    continue
                attached = word[j + 1:]
                if attached:
                    out.options.append((canonical, attached))
                elif mode == REQUIRED:
                    out.options.append((canonical, argv[i + 1] if i + 1 < n else ""))
                    i += 1
                else:
                    out.options.append((canonical, None))
                break
            i += 1
            continue
        if spec.stop_at_operand:
            out.rest = i
            out.operands.extend(argv[i:])
            return out
        out.operands.append(word)
        i += 1
    if spec.stop_at_operand and out.rest == 0:
        out.rest = n
    return out


def spec(short: str = "", short_args: str = "", long: dict[str, str] | None = None,
         long_args: dict[str, str] | None = None, long_optional: dict[str, str] | None = None,
         *, stop_at_operand: bool = False, numeric_short: bool = False,
         names: dict[str, str] | None = None) -> Spec:
    """Build a :class:`Spec`.  ``short`` are flag letters, ``short_args`` letters that take a
    value; ``long``/``long_args``/``long_optional`` map long names to canonical names;
    ``names`` gives short letters a canonical name (``{"r": "recursive"}``), else a letter's
    canonical name is ``-x``."""
    names = names or {}
    table: dict[str, tuple[str, int]] = {}
    for letter in short:
        table[letter] = (names.get(letter, "-" + letter), NONE)
    for letter in short_args:
        table[letter] = (names.get(letter, "-" + letter), REQUIRED)
    longs: dict[str, tuple[str, int]] = {}
    for mapping, mode in ((long, NONE), (long_args, REQUIRED), (long_optional, OPTIONAL)):
        for key, canonical in (mapping or {}).items():
            longs[key] = (canonical, mode)
    return Spec(table, longs, stop_at_operand, numeric_short)


def same(*names: str) -> dict[str, str]:
    """``{"force": "force", ...}``: long options that are their own canonical name."""
    return {n: n for n in names}
