"""Every simple command a shell command line would run, read with the tree-sitter bash grammar.

Guards, permission rules, the "always" grant and registry manifests judge a command by the
programs it starts.  A command line hides those behind operators (``a && b``, ``a | b``),
substitutions (``$(...)``, backticks, ``<(...)``), compound commands (``( )``, ``{ }``, ``if``,
``while``, ``for``, ``case``, function bodies, ``!``), nested shells (``bash -c '...'``,
``eval``, a here-document fed to ``sh``) and wrappers (``sudo``, ``env X=1``, ``timeout 5``).
:func:`parse` finds every simple command anywhere in the tree, removes quotes the way the shell
does, peels the wrappers (:mod:`agent.shell.wrappers`) so ``argv[0]`` is what really runs, and
records which commands feed which through a pipe.

What cannot be known without running the command is *unresolved*, never guessed: a variable or
substitution in command position, a call of a function defined in the same text, ``eval`` or
``source`` of something that is not a literal, an interpreter given code (``python -c``),
a shell or interpreter reading a script from a pipe.  Text the grammar cannot parse marks the
script incomplete.  Callers treat both as "ask a person".

The parser is tree-sitter-bash (MIT, maintained, wheels for every platform we run on): it was
measured against bashlex and the old hand-written scanner by ``bench/shell_parsers.py``.  If
it cannot be imported every command is incomplete, so nothing is allowed by a rule.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agent.shell.evaluated import (
    DECLARATIONS,
    Evaluations,
    arithmetic_words,
    declaration,
    names_in_command,
)
from agent.shell.git import read_git
from agent.shell.types import Script, SimpleCommand
from agent.shell.unresolved import (
    HAZARD_ARGUMENTS,
    hazard_unresolved,
    interpreter_reads_stdin,
    shell_reads_file,
)
from agent.shell.words import (
    backtick_body,
    decode_ansi_c,
    join_continuations,
    loose_backticks,
    unescape_bare,
    unescape_double,
)
from agent.shell.wrappers import (
    INTERPRETERS,
    SHELLS,
    Peeled,
    code_argument,
    find_exec,
    peel,
    script_operand,
    split_words,
    templated,
    unwrap,
)

__all__ = ["DYNAMIC_TARGET", "MAX_DEPTH", "SHELLS", "Script", "SimpleCommand", "parse",
           "simple_commands", "split_commands", "split_words", "unwrap"]

#: A loop body is read once per value when it has at most this many.
MAX_LOOP_VALUES = 16
#: The redirection target recorded for a file only known at run time (``cat < "$f"``).
DYNAMIC_TARGET = "$(only known when it runs)"
#: Nested scripts (substitutions, subshells, ``bash -c``) deeper than this are not read.
MAX_DEPTH = 24
#: Nested scripts are parsed again (``bash -c "$(...)"``); the characters re-read are capped at
#: this multiple of the input plus a floor.  Past the cap the result is marked incomplete.
REREAD_FACTOR = 8
REREAD_MIN = 100_000
#: Longer input is not parsed at all (incomplete): nobody reviews a 1 MB command line.
MAX_INPUT = 1_000_000
#: Parsing gives up (incomplete) after this long plus this much per byte of input.
PARSE_SECONDS = 0.25
PARSE_SECONDS_PER_BYTE = 10e-6

_ASCII_ONLY = bytes(range(128)) + b"a" * 128
_GLOB = re.compile(r"(?<!\\)[*?\[]")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


def parse(text: str) -> Script:
    """Every simple command in ``text`` (see the module docstring).  Never raises."""
    script = Script()
    if len(text) > MAX_INPUT:
        script.incomplete(f"the command is longer than {MAX_INPUT} characters")
        return script
    try:
        parser = _parser()
    except Exception as exc:  # no parser: nothing can be proven, so nothing is allowed
        script.incomplete(f"the shell parser is unavailable ({exc})")
        return script
    try:
        walker = _Walker(script, parser, REREAD_FACTOR * len(text) + REREAD_MIN)
        walker.script_text(text, depth=0, outer=(), redirects=())
        walker.mark_function_calls()
        for why in walker.evaluated.reasons():
            script.note_unresolved(why)
    except RecursionError:
        script.incomplete("the command is nested too deeply to check")
    except Exception as exc:  # a walker bug: keep what was read, say partial
        script.incomplete(f"the command could not be read ({type(exc).__name__})")
    return script


def simple_commands(text: str) -> list[SimpleCommand]:
    """Shorthand for ``parse(text).commands``."""
    return parse(text).commands


def split_commands(text: str) -> list[list[str]]:
    """The ``argv`` of every simple command in ``text`` (empty ones left out)."""
    return [list(c.argv) for c in parse(text).commands if c.argv]


_DYNAMIC_NODES = frozenset({"simple_expansion", "expansion", "command_substitution",
                            "process_substitution", "arithmetic_expansion"})
_ARITHMETIC_NODES = frozenset({"arithmetic_expansion", "c_style_for_statement", "subscript"})
#: ``[[ a -eq b ]]`` evaluates both operands as arithmetic.
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


# ---- the walker -------------------------------------------------------------------------------

@dataclass
class _Where:
    """Where a node sits: nesting depth, enclosing pipeline stages, enclosing redirects."""

    depth: int
    outer: tuple[tuple[int, int], ...]
    redirects: tuple[tuple[str, str], ...]


class _Walker:
    def __init__(self, script: Script, parser: Any, budget: int) -> None:
        self.script = script
        self.parser = parser
        self.budget = budget
        self.pipeline_ids = 0
        self.evaluated = Evaluations()
        self.loop_values: dict[str, str] = {}  # loop variables bound to one file name each

    def next_pipeline(self) -> int:
        self.pipeline_ids += 1
        return self.pipeline_ids

    # -- scripts --

    def script_text(self, text: str, *, depth: int, outer: tuple[tuple[int, int], ...],
                    redirects: tuple[tuple[str, str], ...]) -> None:
        """Parse ``text`` as a script and walk it."""
        if depth > MAX_DEPTH:
            self.script.incomplete("the command is nested too deeply to check")
            return
        self.budget -= len(text)
        if self.budget < 0:
            self.script.incomplete("the command re-reads too much nested text to check")
            return
        data = text.encode("utf-8", "surrogatepass")
        root = self.parse_bytes(data)
        for _ in range(8):  # joining can turn a "comment" back into a word: join again
            if root is None or b"\\\n" not in data:
                break
            joined = join_continuations(data, _protected(root, data))
            if joined == data:
                break
            data = joined
            root = self.parse_bytes(data)
        if root is None:
            return
        if root.has_error:
            self.script.incomplete("the shell cannot parse it: " + _first_error(root, data))
        _SOURCE.stack.append(data)
        try:
            self.walk(root, _Where(depth, outer, redirects))
        finally:
            _SOURCE.stack.pop()

    def parse_bytes(self, data: bytes) -> Any:
        """The syntax tree of ``data``, or None (marked incomplete) when the grammar's error
        recovery would take longer than :data:`PARSE_SECONDS` plus a little per byte
        (tree-sitter's recovery is quadratic on some garbage)."""
        deadline = time.monotonic() + PARSE_SECONDS + PARSE_SECONDS_PER_BYTE * len(data)

        # Every byte of a non-ASCII character becomes "a": to bash those are word characters
        # like "a" (no operator or blank is non-ASCII), the byte offsets stay those of
        # ``data`` (node text is cut from the original), and tree-sitter-bash 0.25's scanner
        # crashes on some astral characters (``{`` followed by U+B38EF).
        ascii_data = data.translate(_ASCII_ONLY) if not data.isascii() else data

        def read(offset: int, _point: Any) -> bytes:
            return ascii_data[offset:offset + 65536]

        def too_slow(_offset: int, _has_error: bool) -> bool:
            return time.monotonic() > deadline

        try:
            tree = self.parser.parse(read, progress_callback=too_slow)
        except ValueError:  # cancelled by too_slow
            self.parser.reset()
            self.script.incomplete("the command is too convoluted to parse in time")
            return None
        return tree.root_node

    def walk(self, node: Any, where: _Where) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, where)
        elif kind == "pipeline":
            pid = self.next_pipeline()
            stage = 0
            for child in node.children:
                if not child.is_named:
                    if child.type in ("|", "|&"):
                        stage += 1
                    continue
                self.walk(child, _Where(where.depth, where.outer + ((pid, stage),),
                                        where.redirects))
        elif kind == "redirected_statement":
            self.redirected(node, where)
        elif kind == "function_definition":
            name = node.child_by_field_name("name")
            if name is not None:
                self.script.functions.add(_text(name))
            for child in node.named_children:
                if child != name:
                    self.walk(child, where)
        elif kind == "variable_assignment" or kind == "declaration_command":
            self.assignment_statement(node, where)
        elif kind in ("heredoc_body", "heredoc_content"):
            self.heredoc_text(node, where)
        elif kind == "command_substitution" and node.children and \
                node.children[0].type == "`":
            self.backticks(_text(node)[1:-1] if _text(node).endswith("`") else
                           _text(node)[1:], where)
        elif kind == "word":
            self.loose_word(node, where)
        elif kind in _ARITHMETIC_NODES or (kind == "compound_statement" and node.children
                                           and node.children[0].type == "(("):
            self.arithmetic(node, where)
        elif kind == "test_command":
            self.test_command(node, where)
        elif kind == "expansion":
            self.expansion(node, where)
        elif kind == "for_statement":
            self.for_statement(node, where)
        elif kind == "subshell":
            self.script.subshell = True
            for child in node.named_children:
                self.walk(child, where)
        elif kind == "unset_command":
            for child in node.named_children:
                self.walk(child, where)
        else:
            for child in node.named_children:
                self.walk(child, where)

    def redirected(self, node: Any, where: _Where) -> None:
        body = node.child_by_field_name("body")
        redirects = list(where.redirects)
        stdin: list[tuple[str, str, bool]] = []  # (kind, text, literal)
        for child in node.named_children:
            if child == body:
                continue
            self.collect_redirect(child, where, redirects, stdin)
        inner = _Where(where.depth, where.outer, tuple(redirects))
        if body is None:
            if redirects != list(where.redirects):  # a bare redirection: `> file`
                self.emit(_Built([], [], [], tuple(redirects)), inner, "")
            return
        if body.type == "command":
            self.command(body, inner, stdin)
        else:
            self.walk(body, inner)

    def collect_redirect(self, node: Any, where: _Where, redirects: list[tuple[str, str]],
                         stdin: list[tuple[str, str, bool]]) -> None:
        kind = node.type
        if kind == "file_redirect":
            fd = op = target = ""
            for child in node.children:
                if child.type == "file_descriptor":
                    fd = _text(child)
                elif not child.is_named:
                    op = child.type
                else:
                    value, dynamic = self.word(child, where)
                    stands_for = self.loop_value(child)
                    target = value if not dynamic else stands_for or _text(child)
                    if dynamic and ">" in op:
                        self.script.note_unresolved(
                            f"writes to a path only known when it runs ({_text(child)})")
                    elif dynamic and stands_for is None:
                        target = DYNAMIC_TARGET
            redirects.append((fd + op, target))
            if op == "<" and not fd:
                stdin.append(("file", target, True))
        elif kind == "heredoc_redirect":
            start = node.child_by_field_name("start") or _first_of(node, "heredoc_start")
            raw = _text(start) if start is not None else ""
            quoted = any(q in raw for q in "'\"\\")
            body_text = ""
            for child in node.named_children:
                if child.type == "heredoc_body":
                    body_text = _text(child)
                    self.script.heredocs.append(body_text)
                    if not quoted:
                        self.walk(child, where)
                elif child.type == "file_redirect":
                    self.collect_redirect(child, where, redirects, stdin)
                elif child.type not in ("heredoc_start", "heredoc_end"):
                    self.walk(child, where)
            redirects.append(("<<", raw))
            literal = quoted or not any(c in body_text for c in "$`")
            stdin.append(("heredoc", body_text, literal))
        elif kind == "herestring_redirect":
            value, dynamic = "", False
            for child in node.named_children:
                value, dynamic = self.word(child, where)
            redirects.append(("<<<", value))
            stdin.append(("herestring", value, not dynamic))
        else:
            self.walk(node, where)

    def heredoc_text(self, node: Any, where: _Where) -> None:
        """An unquoted here-document: its substitutions run.  The grammar reads ``$(...)``
        but leaves backticks as text, so those are parsed here."""
        if node.type == "heredoc_content" or not node.named_children:
            body = _text(node)
            for match in re.finditer(r"`((?:\\.|[^`\\])*)`", body):
                self.script_text(unescape_double(match.group(1)), depth=where.depth + 1,
                                 outer=where.outer, redirects=())
            return
        for child in node.named_children:
            self.walk(child, where)

    def backticks(self, body: str, where: _Where) -> None:
        """```...```: bash unescapes the body and runs it as a script, so backticks nested
        as ``\\``` are read at every depth (the grammar reads only the outermost pair)."""
        self.script_text(backtick_body(body), depth=where.depth + 1, outer=where.outer,
                         redirects=())

    def loose_word(self, node: Any, where: _Where) -> bool:
        """Substitutions the grammar left inside a plain word (``${x:-`cmd`}``): backticks
        are read as scripts; a ``$(`` or ``${`` it did not parse is unresolved.  True when
        the word holds any of them (its value is only known at run time)."""
        text = _text(node)
        if "`" not in text and "$" not in text:
            return False
        dynamic = False
        if "`" in text:
            bodies = loose_backticks(text)
            if bodies is None:
                self.script.incomplete(f"an unmatched backtick in {text[:40]!r}")
                return True
            for body in bodies:
                self.backticks(body, where)
            dynamic = bool(bodies)
        if re.search(r"(?<!\\)\$[({]", text):
            self.script.note_unresolved(f"a substitution the shell parser could not read "
                                        f"({text[:40]!r})")
            dynamic = True
        return dynamic or bool(re.search(r"(?<!\\)\$[A-Za-z_0-9@*#?$!-]", text))

    def arithmetic(self, node: Any, where: _Where) -> None:
        """``$(( ))``, ``(( ))``, ``for (( ))``, a subscript: bash evaluates the text."""
        text = _text(node)
        if node.type == "subscript":
            index = node.child_by_field_name("index")
            text = _text(index) if index is not None else text.partition("[")[2][:-1]
        elif node.type == "c_style_for_statement":
            body = node.child_by_field_name("body")
            end = body.start_byte - node.start_byte if body is not None else len(text)
            text = text[:end]
            text = text[text.find("((") + 2:text.rfind("))")]
        else:
            text = text[text.find("((") + 2:text.rfind("))")]
        self.evaluated.arithmetic.append(text)
        for name in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|"
                               r"(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)|"
                               r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\+\+|--)", text):
            for part in name:
                if part:
                    self.evaluated.bind_arithmetic(part)
        for child in node.named_children:
            if node.type == "subscript" and child.type == "variable_name":
                continue
            self.walk(child, where)

    def test_command(self, node: Any, where: _Where) -> None:
        """``[[ -v NAME ]]`` evaluates a name; ``[[ a -eq b ]]`` evaluates arithmetic."""
        stack = list(node.named_children)
        while stack:
            child = stack.pop()
            operator = _first_of(child, "test_operator")
            operands = [c for c in child.named_children if c.type != "test_operator"]
            if operator is not None and child.type == "unary_expression" and \
                    _text(operator) in ("-v", "-R") and operands:
                value, dynamic = self.word(operands[0], where)
                self.evaluated.name(value, dynamic)
            elif operator is not None and _text(operator) in _ARITHMETIC_TESTS:
                self.evaluated.arithmetic.extend(_text(o) for o in operands)
            if not _text(node).startswith("[["):  # `[ $x ]`: $x may split into -v NAME
                self.evaluated.arithmetic.extend(_text(o) for o in operands if _splits(o))
            stack.extend(c for c in child.named_children if c.type in (
                "unary_expression", "binary_expression", "parenthesized_expression"))
        for child in node.named_children:
            self.walk(child, where)

    def expansion(self, node: Any, where: _Where) -> None:
        """``${!name}`` reads a name from a value; ``${x:offset:length}`` evaluates
        arithmetic; an expansion the grammar cut short is unresolved."""
        text = _text(node)
        if not text.endswith("}"):
            self.script.note_unresolved(f"a parameter expansion the shell parser could not "
                                        f"read ({text[:40]!r})")
        if text.startswith("${!"):
            self.evaluated.arithmetic.append(text[3:-1])
        kinds = [c.type for c in node.children]
        if ":" in kinds:
            self.evaluated.arithmetic.append(text[text.index(":", 2) + 1:-1])
        for child in node.named_children:
            self.walk(child, where)

    def for_statement(self, node: Any, where: _Where) -> None:
        """``for NAME in WORDS``: NAME takes each value of WORDS."""
        variable = node.child_by_field_name("variable")
        values = node.children_by_field_name("value")
        words = [self.word(value, where) for value in values]
        name = _text(variable) if variable is not None else ""
        for value, (text, dynamic) in zip(values, words, strict=True):
            literal = not dynamic and not _GLOB.search(_text(value))
            self.evaluated.bind(name, text if literal else None)
        if variable is not None and not values:  # ``for x; do``: the positional parameters
            self.evaluated.bind(name, None)
        body = [c for c in node.named_children if c.type != "variable_name" and c not in values]
        # The body is read once per value, the loop variable standing for it, when every
        # value is one known word or glob whose matches cannot start with "-": then "$f"
        # is one file name the program reads, never an option (see :meth:`loop_value`).
        bindable = bool(words) and len(words) <= MAX_LOOP_VALUES and all(
            not dynamic and _names_one_file(text) for text, dynamic in words)
        saved = self.loop_values.get(name)
        for text, _dynamic in words if bindable else [("", False)]:
            if bindable:
                self.loop_values[name] = text
            for child in body:
                self.walk(child, where)
        if saved is None:
            self.loop_values.pop(name, None)
        else:
            self.loop_values[name] = saved

    def loop_value(self, node: Any) -> str | None:
        """``"$f"`` or ``"${f}"`` as a whole word, ``f`` a loop variable bound to a glob or
        word: the glob or word it stands for; else None."""
        if node.type != "string" or len(node.named_children) != 1:
            return None
        inner = node.named_children[0]
        text = _text(inner)
        match = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", text)
        if inner.type not in ("simple_expansion", "expansion") or not match or (
                text.startswith("${") != text.endswith("}")):
            return None
        return self.loop_values.get(match.group(1))

    def assigned(self, node: Any, where: _Where) -> str:
        """One ``NAME=value``/``NAME[i]=value``: the value (walked), bound to the name;
        returns ``NAME=value``."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        text, dynamic = self.word(value, where) if value is not None else ("", False)
        if name is not None and name.type == "subscript":
            self.arithmetic(name, where)
        target = _text(name) if name is not None else "?"
        self.evaluated.bind(target, None if dynamic or (
            value is not None and value.type == "array") else text)
        return f"{target}={text}"

    def assignment_statement(self, node: Any, where: _Where) -> None:
        """``X=1``, ``export X=$(...)``: substitutions in the values run; assigning a
        variable that changes how later commands resolve is noted."""
        words: list[str] = []
        keyword = node.children[0].type if node.type == "declaration_command" else ""
        for child in [node] if node.type == "variable_assignment" else node.named_children:
            if child.type == "variable_assignment":
                words.append(self.assigned(child, where))
            else:
                value, dynamic = self.word(child, where)
                words.append(value)
                if keyword and not value.startswith(("-", "+")):
                    self.evaluated.name(value, dynamic)
        if keyword in DECLARATIONS:
            letters, _ = declaration((keyword, *words))
            if letters & {"i", "n"}:
                self.evaluated.problem(f"{keyword} -{''.join(sorted(letters & set('in')))} "
                                       "makes bash evaluate later values as code")
        self.emit(_Built([keyword] if keyword else [], [False] if keyword else [], words, ()),
                  where, "")

    # -- words --

    def word(self, node: Any, where: _Where) -> tuple[str, bool]:
        """The value of one word node after quote removal, and whether it is only known when
        the command runs.  Substitutions inside it are walked (their commands run)."""
        kind = node.type
        if kind in ("word", "number"):
            return unescape_bare(_text(node)), kind == "word" and self.loose_word(node, where)
        if kind == "raw_string":
            return _text(node)[1:-1], False
        if kind == "ansi_c_string":
            return decode_ansi_c(_text(node)[2:-1]), False
        if kind in ("string", "translated_string"):
            parts: list[str] = []
            dynamic = False
            for child in node.named_children:
                if child.type == "string_content":
                    parts.append(unescape_double(_text(child)))
                elif child.type == "string":
                    value, dyn = self.word(child, where)
                    parts.append(value)
                    dynamic = dynamic or dyn
                else:
                    self.walk(child, where)
                    parts.append(_text(child))
                    dynamic = True
            return "".join(parts), dynamic
        if kind == "concatenation":
            parts = []
            dynamic = False
            for child in node.children:
                if not child.is_named:
                    parts.append(_text(child))
                    continue
                value, dyn = self.word(child, where)
                parts.append(value)
                dynamic = dynamic or dyn
            return "".join(parts), dynamic
        if kind in _DYNAMIC_NODES:
            self.walk(node, where)
            return _text(node), True
        # anything else (arrays, test expressions, extglob patterns): walk it, keep its text
        self.walk(node, where)
        return _text(node), _contains(node, _DYNAMIC_NODES)

    # -- commands --

    def command(self, node: Any, where: _Where,
                stdin: list[tuple[str, str, bool]] | None = None) -> None:
        redirects = list(where.redirects)
        stdin = list(stdin or [])
        assignments: list[str] = []
        values: list[str] = []
        dynamic: list[bool] = []
        splits: list[bool] = []
        bound: list[bool] = []
        first = len(self.script.commands)
        for child in node.named_children:
            kind = child.type
            if kind == "variable_assignment":
                value = child.child_by_field_name("value")
                value_text = self.word(value, where)[0] if value is not None else ""
                name = child.child_by_field_name("name")
                self.assigned(child, where)
                assignments.append((_text(name) if name is not None else "?") + "="
                                   + value_text)
            elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.collect_redirect(child, where, redirects, stdin)
            elif kind == "command_name":
                inner = child.named_children[0] if child.named_children else child
                value, dyn = self.word(inner, where)
                values.append(value)
                dynamic.append(dyn or _expands(inner))
                splits.append(_splits(inner))
                bound.append(False)
            elif kind == "subshell" or kind == "compound_statement":
                self.walk(child, where)
            else:
                value, dyn = self.word(child, where)
                stands_for = self.loop_value(child)
                values.append(value if stands_for is None else stands_for)
                dynamic.append(dyn)
                splits.append(_splits(child))
                bound.append(stands_for is not None)
        substituted = tuple(self.script.commands[first:])
        built = _Built(values, dynamic, assignments, tuple(redirects), substituted, stdin,
                       splits, bound)
        self.emit(built, _Where(where.depth, where.outer, tuple(redirects)), "")

    def emit(self, built: _Built, where: _Where, why: str) -> None:
        peeled = peel(built.values, built.dynamic)
        unresolved = why or peeled.unresolved
        if not unresolved and peeled.argv and peeled.dynamic[:1] == (True,):
            unresolved = f"the program to run is only known when it runs ({peeled.argv[0]})"
        words = tuple(built.assignments) + tuple(built.values)
        offset = len(built.values) - len(peeled.argv)
        aligned = offset >= 0 and tuple(built.values[offset:]) == peeled.argv and len(
            built.bound) == len(built.values)
        simple = SimpleCommand(
            argv=peeled.argv, words=words, redirects=built.redirects,
            pipes=where.outer, substituted=built.substituted, dynamic=peeled.dynamic,
            assignments=tuple(built.assignments) + peeled.assignments,
            wrappers=peeled.wrappers, unresolved=unresolved,
            stdin=built.stdin[-1][0] if built.stdin else "", wrapper_writes=peeled.writes,
            bound=tuple(built.bound[offset:]) if aligned else ())
        self.evaluated_words(peeled, built)
        index = len(self.script.commands)
        self.script.commands.append(simple)
        if peeled.script is not None and not unresolved:
            self.script_text(peeled.script, depth=where.depth + 1, outer=where.outer,
                             redirects=())
        else:  # even an unresolved command's literal scripts are read (and judged)
            simple = self.inner(simple, peeled, built, where)
            self.script.commands[index] = simple
        if simple.unresolved:
            self.script.note_unresolved(simple.unresolved)
        for extra in peeled.more:  # commands a wrapper runs besides the main one
            self.emit(_Built(list(extra), [False] * len(extra), [], built.redirects), where, "")

    def evaluated_words(self, peeled: Peeled, built: _Built) -> None:
        """Variable names and arithmetic that builtins evaluate (``printf -v``, ``read``,
        ``test -v``, ``let``); an unquoted run-time word given to ``test`` may split into
        ``-v NAME``."""
        argv = (os.path.basename(peeled.argv[0]),) + peeled.argv[1:] if peeled.argv else ()
        for word, dynamic, binds in names_in_command(argv, peeled.dynamic):
            self.evaluated.name(word, dynamic)
            if binds:
                self.evaluated.bind(word, None)
        self.evaluated.arithmetic.extend(arithmetic_words(argv))
        if argv[:1] in (("test",), ("[",)):
            offset = len(built.values) - len(argv)
            aligned = offset >= 0 and tuple(built.values[offset:]) == peeled.argv
            for i, word in enumerate(argv):
                if peeled.dynamic[i] if i < len(peeled.dynamic) else False:
                    splits = built.splits[offset + i] if aligned and offset + i < len(
                        built.splits) else True
                    if splits:
                        self.evaluated.arithmetic.append(word)

    def inner(self, simple: SimpleCommand, peeled: Peeled, built: _Built,
              where: _Where) -> SimpleCommand:
        """Scripts hidden in the command: ``sh -c S``, ``eval S``, a here-document or a pipe
        fed to a shell, ``find -exec``; code given to an interpreter is unresolved."""
        name = simple.name
        deeper = _Where(where.depth + 1, where.outer, ())
        unresolved = ""
        script = script_operand(simple.argv, simple.dynamic)
        if script is not None:
            text, dynamic = script
            if dynamic:
                unresolved = f"{name} runs a script only known when it runs"
            else:
                self.script_text(text, depth=deeper.depth, outer=deeper.outer, redirects=())
        elif name in SHELLS or name in ("source", "."):
            operand = shell_reads_file(simple.argv)
            if name in ("source", "."):
                unresolved = f"{name} runs the commands in a file"
            elif operand is None:
                unresolved = self.shell_stdin(simple, built, deeper)
            elif simple.is_dynamic(operand):
                unresolved = f"{name} runs a script only known when it runs " \
                    f"({simple.argv[operand]})"
        elif name == "alias" and any("=" in a for a in simple.args):
            unresolved = "alias defines a command whose meaning is only known when it runs"
        elif name in HAZARD_ARGUMENTS and simple.any_dynamic:
            unresolved = hazard_unresolved(simple)
        elif name == "chmod" and any(a.startswith("--ref") for a in simple.args):
            unresolved = "chmod --reference copies a mode only known when it runs"
        elif name in INTERPRETERS:
            code = code_argument(name, simple.argv, simple.dynamic)
            if code is not None:
                unresolved = f"{name} is given code to run ({code[:60]!r})"
            elif interpreter_reads_stdin(simple.argv) and (
                    built.stdin or simple.piped_into):
                unresolved = f"{name} runs code from its standard input"
        elif name == "git":
            call = read_git(simple.argv, simple.assignments)
            for program in call.scripts:  # -c core.pager=..., GIT_PAGER=..., !aliases
                self.script_text(program, depth=deeper.depth, outer=deeper.outer,
                                 redirects=())
            if call.problems:
                unresolved = call.problems[0]
        elif name in self.script.functions:
            unresolved = f"{name} calls a shell function defined in the same command"
        for argv in find_exec(simple.argv):
            if templated(peel(argv, [False] * len(argv)).argv, "{}"):
                unresolved = unresolved or "find puts file names into the program or the " \
                    "script it runs"
            self.emit(_Built(list(argv), [False] * len(argv), [], ()), where, "")
        if unresolved and not simple.unresolved:
            from dataclasses import replace
            return replace(simple, unresolved=unresolved)
        return simple

    def shell_stdin(self, simple: SimpleCommand, built: _Built, deeper: _Where) -> str:
        """A shell with no script operand runs its standard input."""
        if built.stdin:
            kind, text, literal = built.stdin[-1]
            if kind == "file":
                return f"{simple.name} runs the commands in {text}"
            if not literal:
                return f"{simple.name} runs a {kind} only known when it runs"
            self.script_text(text, depth=deeper.depth, outer=deeper.outer, redirects=())
            return ""
        if simple.piped_into:
            return f"{simple.name} runs commands piped into it"
        return ""

    def mark_function_calls(self) -> None:
        """A call of a function defined anywhere in the text runs its body, not the program
        of that name (``git() { rm -rf d; }; git status``)."""
        if not self.script.functions:
            return
        from dataclasses import replace

        for i, cmd in enumerate(self.script.commands):
            if cmd.name in self.script.functions and not cmd.unresolved:
                why = f"{cmd.name} calls a shell function defined in the same command"
                self.script.commands[i] = replace(cmd, unresolved=why)
                self.script.note_unresolved(why)


@dataclass
class _Built:
    values: list[str]
    dynamic: list[bool]
    assignments: list[str]
    redirects: tuple[tuple[str, str], ...]
    substituted: tuple[SimpleCommand, ...] = ()
    stdin: list[tuple[str, str, bool]] = field(default_factory=list)
    splits: list[bool] = field(default_factory=list)  # an unquoted expansion in the word
    bound: list[bool] = field(default_factory=list)  # "$f" of a loop over a glob or words


class _Sources(threading.local):
    """The texts being walked, innermost last (``node.text`` is slow on large trees)."""

    def __init__(self) -> None:
        self.stack: list[bytes] = [b""]


_SOURCE = _Sources()


def _text(node: Any) -> str:
    if node is None:
        return ""
    return _SOURCE.stack[-1][node.start_byte:node.end_byte].decode("utf-8", "surrogatepass")


def _first_of(node: Any, kind: str) -> Any:
    for child in node.children:
        if child.type == kind:
            return child
    return None


def _contains(node: Any, kinds: frozenset[str]) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in kinds:
            return True
        stack.extend(current.children)
    return False


def _expands(node: Any) -> bool:
    """True when an unquoted command name would be changed by globbing or brace
    expansion (``/bin/r?``, ``{rm,-rf,x}``)."""
    if node.type not in ("word", "concatenation"):
        return False
    bare = "".join(_text(c) for c in ([node] if node.type == "word" else node.children)
                   if c.type == "word" or not c.is_named)
    return bool(_GLOB.search(bare) or _BRACE.search(_text(node)))


def _names_one_file(text: str) -> bool:
    """True when a loop over ``text`` gives its variable values that are each one file name
    that cannot start with "-" (an option): a literal word, or a glob whose first character
    is a literal one other than "-" (``src/*.py``, ``./*``; not ``*`` or ``-*``)."""
    return bool(text) and text[0] not in "-*?[{\\" and "{" not in text and "$" not in text \
        and "`" not in text and not text[0].isspace()


def _splits(node: Any) -> bool:
    """True when the word holds an unquoted expansion (bash splits and globs its value)."""
    if node.type in _DYNAMIC_NODES:
        return True
    return node.type == "concatenation" and any(c.type in _DYNAMIC_NODES
                                                for c in node.children)


def _protected(root: Any, data: bytes) -> list[tuple[int, int]]:
    """Byte ranges where a backslash-newline is text, not a line continuation: single-quoted
    and ``$'...'`` strings, comments, and the bodies of quoted here-documents."""
    out: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ("raw_string", "ansi_c_string", "comment"):
            out.append((node.start_byte, node.end_byte))
            continue
        if node.type == "heredoc_redirect":
            start = _first_of(node, "heredoc_start")
            raw = data[start.start_byte:start.end_byte] if start is not None else b""
            if any(q in raw for q in b"'\"\\"):
                out.extend((c.start_byte, c.end_byte) for c in node.children
                           if c.type == "heredoc_body")
        stack.extend(node.children)
    return out


def _first_error(root: Any, data: bytes) -> str:
    """Where the first syntax error is (descending only into subtrees that hold one)."""
    node = root
    while True:
        if node.is_error or node.is_missing:
            line = node.start_point[0] + 1
            snippet = data[node.start_byte:node.start_byte + 40].decode("utf-8", "replace")
            what = "missing " + node.type if node.is_missing else f"near {snippet!r}"
            return f"{what} (line {line})"
        for child in node.children:
            if child.has_error or child.is_missing:
                node = child
                break
        else:
            return "a syntax error"
