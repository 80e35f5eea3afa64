"""What would have let a denied headless call through: the hint the model (and, through its
answer, the user) gets when a call that needs approval is denied because nobody can answer.

Each suggestion is tried before it is given: the call's effects are judged again by the same
rules (:func:`agent.loop.permissions.decide`) with the suggested ``--allow`` rules and
``--permission-mode`` added to this run's, and only a combination under which the call would
be allowed is named.  So ``touch made.txt`` denied under ``--allow 'bash:touch *'`` is told
that the write also needs ``--permission-mode accept-edits`` or ``--allow
'write_file:made.txt'``, instead of being sent back to the flag it already had.
"""

from __future__ import annotations

from pathlib import Path

from agent.contract.tools import Effects
from agent.loop import permissions
from agent.loop.permission_flags import FlagRules
from agent.loop.permissions import Rules

#: Longest pattern spelled out in a hint; longer ones point at the docs instead.
MAX_PATTERN = 60

Rule = tuple[str, str]


def _flag(rule: Rule) -> str:
    tool, pattern = rule
    return f"--allow {tool}" if pattern == "*" else f"--allow '{tool}:{pattern}'"


def _spellable(pattern: str) -> bool:
    return len(pattern) <= MAX_PATTERN and "'" not in pattern and "\n" not in pattern


def _tool_rules(tool_name: str, effects: Effects) -> list[Rule] | None:
    """The ``--allow`` rules naming this call itself (a command's parts, else the tool), or
    None when no rule can (a command that cannot be checked without running it)."""
    if effects.command is not None:
        grants = permissions.grant_patterns(tool_name, effects)
        if not grants:
            return None
        return [(tool_name, g) for g in grants]
    return [(tool_name, "*")]


def _path_rules(tool_name: str, paths: tuple[str, ...]) -> list[Rule]:
    return [(tool_name, p) for p in dict.fromkeys(paths)]


def _written_by_command(effects: Effects) -> tuple[str, ...]:
    analysis = permissions.command_analysis(effects)
    if analysis is None:
        return ()
    return tuple(dict.fromkeys(analysis.writes + tuple(effects.writes)))


def ways_through(tool_name: str, effects: Effects, user_rules: dict[str, Rules],
                 project_rules: dict[str, Rules] | None, flags: FlagRules | None,
                 workspace: Path | str | None) -> list[tuple[list[Rule], str]]:
    """Every tried combination of ``--allow`` rules and a permission mode under which the
    call would be allowed, most direct first: ``[(rules, mode), ...]`` (the mode is ``""``
    when this run's stays).  The rules include those this run already has that are needed."""
    current = flags or FlagRules()

    def allowed(extra: list[Rule], mode: str) -> bool:
        trial = FlagRules(tuple(dict.fromkeys(current.allow + tuple(extra))), current.deny,
                          mode or current.mode)
        verdict = permissions.decide(tool_name, effects, user_rules, project_rules,
                                     workspace=workspace, flags=trial)
        return verdict.decision == "allow"

    own = _tool_rules(tool_name, effects)
    if own is None:
        return []
    paths = _written_by_command(effects) if effects.command is not None else tuple(
        effects.changed_paths)
    path_rules = _path_rules(permissions.WRITE_RULES_TOOL if effects.command is not None
                             else tool_name, paths)
    candidates: list[tuple[list[Rule], str]] = []
    if effects.command is None and paths:
        candidates.append(([], "accept-edits"))
        candidates.append((path_rules, ""))
    candidates.append((own, ""))
    if effects.command is not None and paths:
        candidates.append((own, "accept-edits"))
        candidates.append((own + path_rules, ""))
    found: list[tuple[list[Rule], str]] = []
    for rules, mode in candidates:
        if mode == current.mode:
            mode = ""
        if any(rules == r and mode == m for r, m in found):
            continue
        if allowed(rules, mode):
            found.append((rules, mode))
    return found


def rerun_hint(tool_name: str, effects: Effects, user_rules: dict[str, Rules],
               project_rules: dict[str, Rules] | None, flags: FlagRules | None,
               workspace: Path | str | None, *, yolo_helps: bool = True) -> str:
    """``--allow 'bash:touch *' --permission-mode accept-edits (or ...), or --yolo``: every
    tried way this call would have been allowed, as flags to rerun with."""
    ways = []
    for rules, mode in ways_through(tool_name, effects, user_rules, project_rules, flags,
                                    workspace):
        if not all(_spellable(p) for _t, p in rules):
            continue
        words = [_flag(r) for r in rules]
        if mode:
            words.append(f"--permission-mode {mode}")
        if words:
            ways.append(" ".join(words))
    if not ways:
        return "--yolo" if yolo_helps else ""
    text = ways[0] + "".join(f" (or {w})" for w in ways[1:])
    return f"{text}, or --yolo" if yolo_helps else text
