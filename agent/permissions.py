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

from dataclasses import dataclass
from typing import Any

from agent.tools import Effects
from agent.verdict import DECISIONS, Verdict, strongest

#: Reads refused by default: environment files and private keys (``.env.example`` is fine).
SECRET_READS: tuple[tuple[str, str], ...] = (
    ("*", "allow"),
    ("*.env", "deny"),
    ("*.env.*", "deny"),
    ("*.env.example", "allow"),
    ("*.pem", "deny"),
)


def matches(pattern: str, subject: str) -> bool:
    """Glob match of the whole ``subject``: ``*`` is any run of characters (``/`` and newlines
    included), ``?`` exactly one, everything else literal.

    A two-pointer matcher that backtracks only to the last ``*``: O(len(pattern) x
    len(subject)) at worst, never exponential, so no pattern can hang the agent (a regex
    translation would backtrack catastrophically on ``*a*a*a...b``).
    """
    p = s = 0
    star, mark = -1, 0
    plen, slen = len(pattern), len(subject)
    while s < slen:
        if p < plen and pattern[p] == "*":
            star, mark = p, s
            p += 1
        elif p < plen and (pattern[p] == "?" or pattern[p] == subject[s]):
            p += 1
            s += 1
        elif star >= 0:
            mark += 1
            s = mark
            p = star + 1
        else:
            return False
    while p < plen and pattern[p] == "*":
        p += 1
    return p == plen


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


def judge(rules: Rules, subjects: tuple[str, ...], tool_name: str, *,
          unmatched: bool = True) -> Verdict | None:
    """Apply ``rules`` to every subject; the most restrictive per-subject result wins.

    A subject no rule matches is asked about, or skipped when ``unmatched`` is False (project
    rules, which only ever add restrictions).
    """
    verdicts: list[Verdict] = []
    for subject in subjects or (None,):
        hit: tuple[str, str] | None = None
        for pattern, decision in rules.rules:
            if pattern == "*" or (subject is not None and matches(pattern, subject)):
                hit = (pattern, decision)
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


def default_verdict(tool_name: str, effects: Effects) -> Verdict:
    """The policy for a tool with no configured rules."""
    if effects.reads:
        secret = judge(Rules("default", SECRET_READS), effects.reads, tool_name)
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


def decide(tool_name: str, effects: Effects, user_rules: dict[str, Rules],
           project_rules: dict[str, Rules] | None = None) -> Verdict:
    """The rules' verdict for one call: user config (or the default policy), tightened by the
    project's ``.agent/config.toml`` rules, which may only deny or ask."""
    subjects, complete = subjects_of(effects)
    own = rules_for(tool_name, user_rules)
    verdict = (judge(own, subjects, tool_name) if own else None) or default_verdict(
        tool_name, effects)
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
