"""Permission rules: per tool, ordered glob patterns over the call's subjects.

Config ``[permission]`` maps a tool name (or a tool pattern such as ``mcp__*``) to either
one decision or an ordered table ``pattern = decision``.  Patterns use ``*`` (any run of
characters, ``/`` and newlines included) and ``?`` (one character); the last matching rule
wins; a call with no matching rule is asked about.  Subjects come from the call's effects:
every path it reads, writes or deletes, its command, its URLs.  With several subjects each is
judged and the most restrictive decision stands, so one denied path denies the call.

Without a config entry for a tool, the default policy applies: reads of likely secrets are
denied, read-only calls are allowed, everything else is asked about.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.globmatch import glob_match
from agent.tools import Effects
from agent.verdict import DECISIONS, Verdict, strongest

if TYPE_CHECKING:
    from agent.permission_flags import FlagRules

#: Reads refused by default: environment files and private keys (``.env.example`` is fine).
SECRET_READS: tuple[tuple[str, str], ...] = (
    ("*", "allow"),
    ("*.env", "deny"),
    ("*.env.*", "deny"),
    ("*.env.example", "allow"),
    ("*.pem", "deny"),
)


def matches(pattern: str, subject: str) -> bool:
    """Glob match of the whole ``subject`` (see :mod:`agent.globmatch`): ``*`` is any run of
    characters, ``/`` and newlines included, ``?`` exactly one, everything else literal.
    No pattern can hang the agent."""
    return glob_match(pattern, subject)


@dataclass(frozen=True)
class Rules:
    """One tool's ordered rules: ``((pattern, decision), ...)`` and the config key they came
    from (the tool name, or a wildcard key like ``mcp__*``)."""

    key: str
    rules: tuple[tuple[str, str], ...]


def parse_rules(raw: Any) -> dict[str, Rules]:
    """Parse a ``[permission]`` table.  Invalid decisions are dropped (a typo never widens
    access); an entry left with no valid rule is dropped, so the tool keeps its default."""
    parsed: dict[str, Rules] = {}
    if not isinstance(raw, dict):
        return parsed
    for tool_key, value in raw.items():
        if isinstance(value, str):
            rules = (("*", value),) if value in DECISIONS else ()
        elif isinstance(value, dict):
            rules = tuple((str(p), d) for p, d in value.items() if d in DECISIONS)
        else:
            rules = ()
        if rules:
            parsed[str(tool_key)] = Rules(str(tool_key), rules)
    return parsed


def rules_for(tool_name: str, table: dict[str, Rules]) -> Rules | None:
    """The exact entry for the tool, else the first wildcard key matching its name."""
    if tool_name in table:
        return table[tool_name]
    for key, rules in table.items():
        if "*" in key or "?" in key:
            if matches(key, tool_name):
                return rules
    return None


#: A subject: one string, or the spellings of one path (see :func:`path_spellings`).
Subject = str | tuple[str, ...]


def path_spellings(path: str, workspace: Path | str | None = None) -> tuple[str, ...]:
    """The spellings of ``path`` that rules are matched against: relative to the workspace
    with ``.``, ``..`` and doubled slashes folded (``src/gen/a``); folded as written (an
    absolute path stays absolute); and, given the workspace, where the path really leads once
    symlinks are resolved, as the tools resolve it.

    So ``./src/gen/a``, ``src//gen/a``, ``lib/../src/gen/a``, ``/abs/workspace/src/gen/a``
    and ``link/a`` (``link`` pointing at ``src/gen``) all meet a rule for ``src/gen/*``: a
    rule cannot be side-stepped by spelling the path another way.
    """
    text = path.strip()
    if not text:
        return (path,)
    folded = posixpath.normpath(text)
    if folded.startswith("//"):  # POSIX keeps a leading "//"; the tools do not
        folded = "/" + folded.lstrip("/")
    relative = resolved = folded
    if workspace is not None:
        root = posixpath.normpath(str(workspace))
        if folded == root:
            relative = "."
        elif folded.startswith(root.rstrip("/") + "/"):
            relative = folded[len(root.rstrip("/")) + 1:]
        try:
            root_real = os.path.realpath(root)
            real = os.path.realpath(os.path.join(root_real, os.path.expanduser(text)))
        except (OSError, ValueError):  # a NUL byte: the tools refuse the path anyway
            real = ""
        if real == root_real:
            resolved = "."
        elif real.startswith(root_real.rstrip("/") + "/"):
            resolved = real[len(root_real.rstrip("/")) + 1:]
        elif real:
            resolved = real
    return tuple(dict.fromkeys((relative, folded, resolved)))


def _last_hit(rules: Rules, subject: str | None) -> tuple[str, str] | None:
    hit: tuple[str, str] | None = None
    for pattern, decision in rules.rules:
        if pattern == "*" or (subject is not None and matches(pattern, subject)):
            hit = (pattern, decision)
    return hit


def judge(rules: Rules, subjects: tuple[Subject, ...], tool_name: str, *,
          unmatched: bool = True) -> Verdict | None:
    """Apply ``rules`` to every subject; the most restrictive per-subject result wins.

    A path subject comes as its spellings: a deny matching any spelling denies; otherwise
    the first spelling a rule matches decides.  A subject no rule matches is asked about, or
    skipped when ``unmatched`` is False (project rules, which only ever add restrictions).
    """
    verdicts: list[Verdict] = []
    for item in subjects or (None,):
        spellings = item if isinstance(item, tuple) else (item,)
        subject = spellings[0]
        hits = [h for h in (_last_hit(rules, s) for s in spellings) if h is not None]
        hit = next((h for h in hits if h[1] == "deny"), hits[0] if hits else None)
        if hit is None:
            if not unmatched:
                continue
            verdicts.append(Verdict.ask(f"no rule for {tool_name} matches {subject!r}",
                                        f"rules for {rules.key}"))
            continue
        pattern, decision = hit
        source = f'{rules.key}: "{pattern}"'
        if decision == "deny":
            reason = (f'Refused by the permission rule {source} = deny.' if pattern != "*"
                      else f"Refused by the permission rules: {tool_name} is denied.")
        else:
            reason = f"{decision} by the rule {source}"
        verdicts.append(Verdict(decision, reason, source))  # type: ignore[arg-type]
    return strongest(verdicts)


def default_verdict(tool_name: str, effects: Effects,
                    workspace: Path | str | None = None) -> Verdict:
    """The policy for a tool with no configured rules."""
    if effects.reads:
        reads = tuple(path_spellings(p, workspace) for p in effects.reads)
        secret = judge(Rules("default", SECRET_READS), reads, tool_name)
        if secret is not None and secret.decision == "deny":
            pattern = secret.source.split('"')[1] if '"' in secret.source else "*"
            return Verdict.deny(
                f'Refused by the default permission rule {tool_name}: "{pattern}" = deny '
                "(the file may hold secrets). Ask the user for the values you need.",
                f'default: "{pattern}"')
    if effects.read_only:
        return Verdict.allow("read-only call", "default")
    return Verdict.ask(f"{tool_name} may change files, run commands or reach the network",
                       "default")


def command_subjects(command: str) -> tuple[tuple[str, ...], bool]:
    """Each simple command of a compound shell command, as written (prefixes such as
    ``sudo`` kept, redirections appended), and whether the whole text could be read.

    Judging every part on its own means ``git status && rm -rf x`` is never allowed by a
    ``git status*`` rule, and ``a && b`` needs no new approval when ``a`` and ``b`` are
    allowed.
    """
    from agent.shell import parse

    script = parse(command)
    parts = []
    for cmd in script.commands:
        words = list(cmd.words) + [f"{op} {target}" for op, target in cmd.redirects]
        if cmd.argv and words:
            parts.append(" ".join(words))
    return tuple(dict.fromkeys(parts)) or (command.strip(),), script.complete


def subjects_of(effects: Effects) -> tuple[tuple[str, ...], bool]:
    """The subjects rules are matched against, and whether they are complete (a shell command
    too tangled to read is not)."""
    if effects.command is None:
        return effects.subjects(), True
    parts, complete = command_subjects(effects.command)
    rest = tuple(s for s in effects.subjects() if s != effects.command)
    return parts + rest, complete


def judged_subjects(effects: Effects, workspace: Path | str | None = None
                    ) -> tuple[tuple[Subject, ...], bool]:
    """:func:`subjects_of`, with every path given as its spellings (:func:`path_spellings`)."""
    subjects, complete = subjects_of(effects)
    paths = set(effects.reads) | set(effects.writes) | set(effects.deletes)
    return tuple(path_spellings(s, workspace) if s in paths else s for s in subjects), complete


def decide(tool_name: str, effects: Effects, user_rules: dict[str, Rules],
           project_rules: dict[str, Rules] | None = None, *,
           workspace: Path | str | None = None, flags: FlagRules | None = None) -> Verdict:
    """The rules' verdict for one call: user config (or the default policy), widened by the
    run's ``--allow`` rules and permission mode, tightened by the project's
    ``.agent/config.toml`` rules (which may only deny or ask) and by ``--deny``/``plan``
    (:mod:`agent.permission_flags`).  ``workspace`` lets an absolute path inside it match the
    same rules as its relative spelling."""
    subjects, complete = judged_subjects(effects, workspace)
    own = rules_for(tool_name, user_rules)
    verdict = (judge(own, subjects, tool_name) if own else None) or default_verdict(
        tool_name, effects, workspace)
    if flags is not None:
        verdict = flags.widen(tool_name, effects, subjects, own, verdict, workspace)
    if not complete and verdict.decision == "allow":
        verdict = Verdict.ask("the command is too tangled to check part by part",
                              verdict.source)
    project = rules_for(tool_name, project_rules or {})
    tightened = judge(project, subjects, tool_name, unmatched=False) if project else None
    if tightened is not None and tightened.decision != "allow":
        marked = Verdict(tightened.decision,
                         tightened.reason.replace("permission rule", "project rule"),
                         "project " + tightened.source)
        verdict = strongest([verdict, marked]) or verdict
    if flags is not None:
        verdict = flags.tighten(tool_name, effects, subjects, verdict)
    return verdict


def strip_allows(table: dict[str, Rules]) -> dict[str, Rules]:
    """Project rules may only tighten: drop every ``allow`` from them."""
    out: dict[str, Rules] = {}
    for key, rules in table.items():
        kept = tuple(r for r in rules.rules if r[1] != "allow")
        if kept:
            out[key] = Rules(key, kept)
    return out


def grant_patterns(tool_name: str, effects: Effects) -> tuple[str, ...]:
    """What "always" grants: for a command, each part's first word and anything after
    (approving ``git status | head`` grants ``git *`` and ``head *``); else the whole tool."""
    if effects.command:
        parts, complete = command_subjects(effects.command)
        if not complete:
            return (effects.command,)  # only this exact command, never a family
        firsts = [p.split()[0] for p in parts if p.split()]
        return tuple(dict.fromkeys(f"{w} *" for w in firsts)) or ("*",)
    return ("*",)
