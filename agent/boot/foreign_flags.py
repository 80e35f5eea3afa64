"""Command-line spellings people bring from Claude Code, read as ours.

``--permission-mode acceptEdits`` is ``accept-edits``; ``bypassPermissions`` is ``--yolo`` (which
still leaves deny rules and guards in force); ``--allowedTools``/``--disallowedTools`` (and their
dashed forms) take Claude Code's rule syntax (``Bash(git diff:*)``, ``Edit``, ``mcp__srv``),
space- or comma-separated.  Those rules are kept on the config as written
(:attr:`agent.boot.config.Config.foreign_tool_rules`) for a plugin that reads that syntax (the
``compat`` plugin) to translate; a run where no plugin took them stops with exit 2 rather than
ignore a deny the user typed.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Claude Code's permission modes -> ours (None: not a mode here, see :func:`normalise`)
MODE_SPELLINGS = {"acceptEdits": "accept-edits", "default": "default", "plan": "plan",
                  "bypassPermissions": None}
RULE_FLAGS = {"--allowedTools": "allow", "--allowed-tools": "allow",
              "--disallowedTools": "deny", "--disallowed-tools": "deny"}


def split_rules(value: str) -> list[str]:
    """``"Bash(git diff:*),Edit Read"`` -> the rules, split at commas and blanks outside
    parentheses (a Bash specifier may hold both)."""
    out: list[str] = []
    depth, word = 0, ""
    for ch in value:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (ch == "," or ch.isspace()):
            if word:
                out.append(word)
            word = ""
            continue
        word += ch
    if word:
        out.append(word)
    return out


def normalise(argv: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``argv`` with Claude Code's spellings made ours, and the rules of its tool flags by
    decision (``{"allow": [...], "deny": [...]}``, empty when none were given)."""
    out: list[str] = []
    rules: dict[str, list[str]] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name == "--permission-mode":
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
            i += 1 if eq else 2
            mode = MODE_SPELLINGS.get(value, value)
            if mode is None:  # bypassPermissions: everything asked is approved
                out.append("--yolo")
            else:
                out += ["--permission-mode", mode]
            continue
        if name in RULE_FLAGS:
            which = RULE_FLAGS[name]
            values = [inline] if eq else []
            i += 1
            if not eq:  # the rules run up to the next option
                while i < len(args) and not args[i].startswith("-"):
                    values.append(args[i])
                    i += 1
            for value in values:
                rules.setdefault(which, []).extend(split_rules(value))
            continue
        out.append(arg)
        i += 1
    return out, rules
