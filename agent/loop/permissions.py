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

from agent.contract.tools import Effects
from agent.contract.verdict import DECISIONS, Verdict, strongest
from agent.lib.globmatch import glob_match

if TYPE_CHECKING:
    from agent.loop.permission_flags import FlagRules
    from agent.shell.analysis import Analysis

#: Reads refused by default: environment files and private keys (``.env.example`` is fine).
SECRET_READS: tuple[tuple[str, str], ...] = (
    ("*", "allow"),
    ("*.env", "deny"),
    ("*.env.*", "deny"),
    ("*.env.example", "allow"),
    ("*.pem", "deny"),
)


def matches(pattern: str, subject: str) -> bool:
    """Glob match of the whole ``subject`` (see :mod:`agent.lib.globmatch`): ``*`` is any run of
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
        rules: tuple[tuple[str, str], ...]
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


class Spellings(tuple):  # type: ignore[type-arg]
    """The spellings of one path (:func:`path_spellings`); ``resolved`` is where it really
    leads, which alone can make an allow rule apply."""

    resolved: str | None = None


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
    out = Spellings(dict.fromkeys((relative, folded, resolved)))
    out.resolved = resolved if workspace is not None else None
    return out


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
    the first spelling a rule matches decides, except that an allow must also hold where
    the path really leads (symlinks resolved).  A subject no rule matches is asked about, or
    skipped when ``unmatched`` is False (project rules, which only ever add restrictions).
    """
    verdicts: list[Verdict] = []
    for item in subjects or (None,):
        spellings = item if isinstance(item, tuple) else (item,)
        subject = spellings[0]
        hits = [h for h in (_last_hit(rules, s) for s in spellings) if h is not None]
        if isinstance(item, CommandPart):  # only the form that runs may allow or ask
            first = _last_hit(rules, subject)
            hits = [h for h in hits if h[1] == "deny"] + ([first] if first else [])
        hit = next((h for h in hits if h[1] == "deny"), hits[0] if hits else None)
        real = getattr(item, "resolved", None)
        if hit is not None and hit[1] == "allow" and real is not None:
            # An allow holds only where the path really leads (symlinks resolved):
            # src/link/x with src/link -> ../ci is judged as ci/x.
            hit = _last_hit(rules, real)
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
    if effects.command is not None:
        return read_only_command(effects, workspace)
    return Verdict.ask(f"{tool_name} may change files, run commands or reach the network",
                       "default")


class CommandPart(tuple[str, ...]):
    """The spellings of one part of a shell command: normalised (quotes removed, the
    program's path dropped, wrappers peeled but ``sudo`` and the like kept), then with every
    wrapper peeled, then as written.  A deny rule matching any spelling denies; only the
    first can allow, so ``sudo /bin/rm -rf x`` meets a deny for ``rm *``, an allow for
    ``timeout *`` never allows the ``rm`` behind it, and ``git *`` never allows ``sudo git``."""

    __slots__ = ()


def command_analysis(effects: Effects) -> Analysis | None:
    """The :class:`agent.shell.analysis.Analysis` of the call's command, or None."""
    if effects.command is None:
        return None
    from agent.shell.analysis import analyse

    return analyse(effects.command)


def unresolved_reason(effects: Effects) -> str:
    """Why the call's command cannot be judged statically ("" when it can, or when there is
    no command): what it runs is only known when it runs, or it cannot be parsed.  Such a
    command is never allowed by an allow rule, a grant or ``--yolo`` (see ``yolo_unresolved``)."""
    analysis = command_analysis(effects)
    return analysis.unresolved_reason if analysis is not None else ""


def command_subjects(command: str) -> tuple[tuple[str, ...], bool]:
    """Each simple command of a compound shell command in its normalised form (see
    :class:`CommandPart`), and whether the whole text could be read and resolved.

    Judging every part on its own means ``git status && rm -rf x`` is never allowed by a
    ``git status*`` rule, and ``a && b`` needs no new approval when ``a`` and ``b`` are
    allowed.
    """
    from agent.shell.analysis import analyse

    analysis = analyse(command)
    parts = tuple(dict.fromkeys(p.normal for p in analysis.parts if p.normal))
    return parts or (command.strip(),), not analysis.unresolved_reason


def _command_parts(command: str) -> tuple[CommandPart, ...]:
    from agent.shell.analysis import analyse

    analysis = analyse(command)
    parts = [CommandPart(dict.fromkeys((p.normal, p.runs, p.text))) for p in analysis.parts
             if p.normal]
    return tuple(dict.fromkeys(parts)) or (CommandPart((command.strip(),)),)


def subjects_of(effects: Effects) -> tuple[tuple[str, ...], bool]:
    """The subjects rules are matched against, and whether they are complete (a shell command
    too tangled to read, or not resolvable statically, is not).  For a command these are its
    normalised parts and its URLs; the files it writes are judged by the write tools' rules
    (:func:`decide`)."""
    if effects.command is None:
        return effects.subjects(), True
    parts, complete = command_subjects(effects.command)
    return parts + tuple(effects.urls), complete


def judged_subjects(effects: Effects, workspace: Path | str | None = None
                    ) -> tuple[tuple[Subject, ...], bool]:
    """:func:`subjects_of`, with every path given as its spellings (:func:`path_spellings`)
    and every command part as a :class:`CommandPart`."""
    if effects.command is not None:
        parts = _command_parts(effects.command)
        return parts + tuple(effects.urls), not unresolved_reason(effects)
    subjects, complete = subjects_of(effects)
    paths = set(effects.reads) | set(effects.writes) | set(effects.deletes)
    return tuple(path_spellings(s, workspace) if s in paths else s for s in subjects), complete


#: The tool whose rules judge the files a shell command writes (redirections, tee, -o ...).
WRITE_RULES_TOOL = "write_file"


def command_writes_verdict(effects: Effects, user_rules: dict[str, Rules],
                           project_rules: dict[str, Rules] | None,
                           workspace: Path | str | None,
                           flags: FlagRules | None = None) -> Verdict | None:
    """The files a command writes, judged by the rules of the write tools (``write_file``),
    so ``echo x > src/generated/a`` meets the same path rules as writing that file would.
    None when it writes nothing; without a ``write_file`` rule a write is asked about."""
    analysis = command_analysis(effects)
    if analysis is None:
        return None
    written = tuple(dict.fromkeys(analysis.writes + tuple(effects.writes)))
    if not written:
        return None
    subjects = tuple(path_spellings(p, workspace) for p in written)
    verdicts: list[Verdict] = []
    own = rules_for(WRITE_RULES_TOOL, user_rules)
    if own is not None:
        found = judge(own, subjects, WRITE_RULES_TOOL)
        if found is not None:
            verdicts.append(Verdict(found.decision, f"the command writes {written[0]}: "
                                    + found.reason, found.source))
    else:
        verdicts.append(Verdict.ask(f"the command writes {', '.join(written[:3])}",
                                    "default"))
    as_writes = Effects(writes=written)
    if flags is not None and verdicts:  # --allow/--deny on write_file cover these writes too
        verdicts[0] = flags.widen(WRITE_RULES_TOOL, as_writes, subjects, own, verdicts[0],
                                  workspace)
    project = rules_for(WRITE_RULES_TOOL, project_rules or {})
    tightened = judge(project, subjects, WRITE_RULES_TOOL, unmatched=False) if project else None
    if tightened is not None and tightened.decision != "allow":
        verdicts.append(Verdict(tightened.decision, "the command writes a file: "
                                + tightened.reason.replace("permission rule", "project rule"),
                                "project " + tightened.source))
    verdict = strongest(verdicts)
    if flags is not None and verdict is not None:
        verdict = flags.tighten(WRITE_RULES_TOOL, as_writes, subjects, verdict)
    return verdict


def read_only_command(effects: Effects, workspace: Path | str | None) -> Verdict:
    """The default policy for a command: allowed when the analysis proves every part only
    reads, inside the workspace, nothing that looks like a secret, and (for git) with a
    repository config that names no program to run; otherwise asked about."""
    from agent.shell.readonly import path_inside, repo_config_runs_programs

    analysis = command_analysis(effects)
    if analysis is None:
        return Verdict.ask("the command may change things (no command)", "default")
    why = analysis.not_read_only
    if not why and (effects.urls or effects.opaque or effects.writes or effects.deletes):
        why = "the tool says it does more than run the command"
    if not why and workspace is not None:
        for path in analysis.reads:
            if not path_inside(path, workspace):
                why = f"it reads {path}, outside the workspace"
                break
            secret = judge(Rules("default", SECRET_READS), (path_spellings(path, workspace),),
                           "bash")
            if secret is not None and secret.decision == "deny":
                why = f"it reads {path}, which may hold secrets"
                break
    if not why and workspace is not None and any(p.git for p in analysis.parts):
        why = repo_config_runs_programs(workspace, analysis.directories) or ""
    if why:
        return Verdict.ask(f"the command may change things ({why})", "default")
    return Verdict.allow("a read-only command", "default")


def decide(tool_name: str, effects: Effects, user_rules: dict[str, Rules],
           project_rules: dict[str, Rules] | None = None, *,
           workspace: Path | str | None = None, flags: FlagRules | None = None) -> Verdict:
    """The rules' verdict for one call: user config (or the default policy), widened by the
    run's ``--allow`` rules and permission mode, tightened by the project's
    ``.agent/config.toml`` rules (which may only deny or ask) and by ``--deny``/``plan``
    (:mod:`agent.loop.permission_flags`).  ``workspace`` lets an absolute path inside it match the
    same rules as its relative spelling."""
    subjects, complete = judged_subjects(effects, workspace)
    own = rules_for(tool_name, user_rules)
    verdict = (judge(own, subjects, tool_name) if own else None) or default_verdict(
        tool_name, effects, workspace)
    if flags is not None:
        verdict = flags.widen(tool_name, effects, subjects, own, verdict, workspace)
    if effects.command is not None and verdict.decision != "deny":
        writes = command_writes_verdict(effects, user_rules, project_rules, workspace, flags)
        if writes is not None and verdict.decision == "allow" or (
                writes is not None and writes.decision == "deny"):
            verdict = strongest([verdict, writes]) or verdict
    if not complete and verdict.decision == "allow":
        why = unresolved_reason(effects) or "the command is too tangled to check part by part"
        verdict = Verdict.ask(f"it cannot be checked without running it: {why}",
                              "unresolved")
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
    """What "always" grants: for a command, the narrowest prefix of each part's normalised
    form that names what ran, and anything after it (approving ``git status | head -5``
    grants ``git status *`` and ``head *``; ``python3 x.py`` grants ``python3 x.py *``,
    never ``python3 *``), never a shell keyword; nothing for a command that cannot be
    resolved statically (answering "always" then approves this one call).  A grant
    ``P *`` also covers ``P`` alone.  Else the whole tool."""
    analysis = command_analysis(effects)
    if analysis is None or not effects.command:
        return ("*",)
    if analysis.unresolved_reason:
        return ()
    from agent.shell.analysis import KEYWORDS
    from agent.shell.grants import naming_words

    out: list[str] = []
    for part in analysis.parts:
        words = part.runs.split()
        if not words or words[0] in KEYWORDS:
            continue
        prefix = part.normal[:len(part.normal) - len(part.runs)]
        named = naming_words(words)
        # Nothing after the options names what runs (``python3``, ``make``): only that.
        out.append(prefix + " ".join(named or words) + (" *" if named else ""))
    return tuple(dict.fromkeys(out))


def _covers(pattern: str, subject: str) -> bool:
    return matches(pattern, subject) or (pattern.endswith(" *") and subject == pattern[:-2])


def grants_cover(patterns: list[str], effects: Effects) -> bool:
    """True when session grants ``patterns`` cover every subject of the call: each part of
    a command (in its normalised form) and every file it writes.  A command that cannot be
    resolved statically is never covered."""
    if not patterns:
        return False
    analysis = command_analysis(effects)
    if analysis is None:
        if "*" in patterns:
            return True
        subjects, _complete = subjects_of(effects)
        return all(any(matches(p, s) for p in patterns) for s in subjects or ("",))
    if analysis.unresolved_reason:
        return False
    if "*" in patterns:
        return True
    subjects = tuple(p.normal for p in analysis.parts if p.normal) + analysis.writes
    return bool(subjects) and all(any(_covers(p, s) for p in patterns) for s in subjects)


def explain_command(tool_name: str, effects: Effects, user_rules: dict[str, Rules],
                    workspace: Path | str | None = None) -> list[str]:
    """Lines for ``agent policy explain``: each part of the command as written, its
    normalised form, what keeps it from being read-only or resolvable, and what the rules
    (or the default policy) say about that part alone."""
    analysis = command_analysis(effects)
    if analysis is None:
        return []
    own = rules_for(tool_name, user_rules)
    lines = []
    if analysis.problems:
        lines.append(f"parse:    incomplete: {analysis.problems[0]}")
    for i, part in enumerate(analysis.parts, 1):
        if own is not None:
            found = judge(own, (CommandPart(dict.fromkeys((part.normal, part.runs,
                                                           part.text))),), tool_name)
            said = f"{found.decision} ({found.source})" if found else "ask (no rule)"
        else:
            said = "allow (default: read-only)" if part.read_only else "ask (default)"
        if part.unresolved:
            said = f"never allowed: unresolved ({part.unresolved})"
        lines.append(f"part {i}:   {part.text}")
        if part.normal != part.text:
            lines.append(f"  runs:   {part.normal}")
        if part.not_read_only and not part.unresolved:
            lines.append(f"  not read-only: {part.not_read_only}")
        if part.writes or part.deletes:
            lines.append("  touches: " + ", ".join(
                [f"writes {w}" for w in part.writes] + [f"deletes {d}" for d in part.deletes]))
        lines.append(f"  rules:  {said}")
    if analysis.writes:
        lines.append("writes:   judged by the write_file rules: " + ", ".join(analysis.writes))
    if analysis.unresolved_reason:
        lines.append(f"unresolved: {analysis.unresolved_reason}")
    return lines
