"""Permissions typed for one run: ``--allow RULE``, ``--deny RULE`` and ``--permission-mode``.

A RULE is ``TOOL`` (every call of the tool) or ``TOOL:PATTERN`` (calls whose subjects match
the pattern, in the config's rule syntax: ``bash:pytest *``, ``write_file:src/*``,
``mcp__*``).  They layer over the config and the default policy
(:func:`agent.loop.permissions.decide`):

- ``--deny`` adds denials.  It wins over everything but a guard's deny (which is a deny too).
- ``--allow`` turns an *ask* into *allow* when every subject of the call is matched by an
  ``--allow`` rule (or by an allow rule of the config).  It never lifts a deny: not a config
  rule's, a project rule's, a guard's, nor the default secret-read denials; and a command too
  tangled to check part by part is never allowed by it.  So a flag adds exactly what was typed.
- ``--permission-mode accept-edits`` allows writes and deletes of paths inside the workspace
  (symlinks resolved) for tools the config has no rules for; commands, URLs and opaque calls
  still ask (headless: denied).
- ``--permission-mode plan`` is read-only: every call that would write, delete, run a command
  or do something unknowable is denied, under ``--yolo`` too, except a command the default
  policy proves read-only (no rule allowed it: the judge did), which runs in the read-only
  sandbox.

Project rules still only tighten; nothing here can be set by a project's ``.agent/config.toml``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent.contract.tools import Effects
from agent.contract.verdict import Verdict

if TYPE_CHECKING:
    from agent.loop.permissions import Rules, Subject

MODES: tuple[str, ...] = ("default", "accept-edits", "plan")


class FlagRuleError(ValueError):
    """A ``--allow``/``--deny`` value that is not a rule; the message says how to write it."""


def parse_flag_rule(text: str, flag: str = "--allow") -> tuple[str, str]:
    """Split one flag value: ``"bash:pytest *"`` gives ``("bash", "pytest *")`` and
    ``"edit_file"`` gives ``("edit_file", "*")``."""
    raw = str(text)
    tool, sep, pattern = raw.partition(":")
    tool = tool.strip()
    if not tool:
        raise FlagRuleError(f"{flag} {raw!r}: name a tool before the pattern, as in "
                            f"{flag} 'bash:pytest *' or {flag} edit_file")
    if any(c.isspace() for c in tool):
        raise FlagRuleError(f"{flag} {raw!r}: {tool!r} is not a tool name; write TOOL or "
                            "TOOL:PATTERN, as in 'bash:pytest *'")
    if sep and not pattern:
        raise FlagRuleError(f"{flag} {raw!r}: the pattern after ':' is empty; write {tool!r} "
                            f"for every call, or '{tool}:PATTERN'")
    if any(ord(c) < 32 for c in pattern) and "\n" not in pattern:
        raise FlagRuleError(f"{flag} {raw!r}: the pattern contains control characters")
    return tool, pattern if sep else "*"


@dataclass(frozen=True)
class FlagRules:
    """The run's ``--allow``/``--deny`` rules (by tool key, as written) and permission mode."""

    allow: tuple[tuple[str, str], ...] = ()
    deny: tuple[tuple[str, str], ...] = ()
    mode: str = "default"
    #: ``(which, tool, pattern)`` of the rules among ``allow``/``deny`` that came from another
    #: agent's settings rather than this command line: not checked against the tools (a
    #: disabled plugin's tool is no typo) and not echoed as typed flags
    imported: tuple[tuple[str, str, str], ...] = ()
    _tables: dict[str, dict[str, Rules]] = field(default_factory=dict, compare=False,
                                                 repr=False)

    @classmethod
    def parse(cls, allow: Iterable[str] = (), deny: Iterable[str] = (),
              mode: str | None = None) -> FlagRules:
        """Parse flag values; raises :class:`FlagRuleError` naming the bad one."""
        chosen = mode or "default"
        if chosen not in MODES:
            raise FlagRuleError(f"--permission-mode {chosen!r}: expected one of "
                                f"{', '.join(MODES)}")
        return cls(tuple(parse_flag_rule(a, "--allow") for a in allow),
                   tuple(parse_flag_rule(d, "--deny") for d in deny), chosen)

    def with_imported(self, allow: Iterable[tuple[str, str]] = (),
                      deny: Iterable[tuple[str, str]] = ()) -> FlagRules:
        """These rules plus ``allow``/``deny`` translated from another agent's settings: they
        judge exactly as typed flags do (an allow only turns an ask into allow, a deny wins
        over everything but a guard)."""
        allow, deny = tuple(allow), tuple(deny)
        marks = tuple(("allow", t, p) for t, p in allow) + tuple(("deny", t, p) for t, p in deny)
        return FlagRules(self.allow + allow, self.deny + deny, self.mode, self.imported + marks)

    @property
    def empty(self) -> bool:
        return not (self.allow or self.deny) and self.mode == "default"

    def describe(self) -> str:
        """One line for the UI header: the mode and the rules, as typed."""
        parts = {"accept-edits": ["accept-edits (edits inside the workspace run)"],
                 "plan": ["plan mode (read-only)"]}.get(self.mode, [])
        for which in ("allow", "deny"):
            for tool, pattern in getattr(self, which):
                if (which, tool, pattern) in self.imported:
                    continue
                parts.append(f"--{which} {tool}" if pattern == "*"
                             else f"--{which} '{tool}:{pattern}'")
        if self.imported:
            parts.append(f"{len(self.imported)} rules from another agent's settings "
                         "(docs/compat.md)")
        return "permissions for this run: " + ", ".join(parts)

    def tools(self) -> list[tuple[str, str]]:
        """``(flag, tool key)`` of every rule, for checking the names against the tools."""
        return [(f"--{which}", t) for which in ("allow", "deny")
                for t, p in getattr(self, which) if (which, t, p) not in self.imported]

    def table(self, which: str) -> dict[str, Rules]:
        """The rules of ``--allow`` or ``--deny`` as a permission table (cached)."""
        from agent.loop.permissions import Rules

        if which not in self._tables:
            decision = "allow" if which == "allow" else "deny"
            grouped: dict[str, list[tuple[str, str]]] = {}
            for tool, pattern in getattr(self, which):
                grouped.setdefault(tool, []).append((pattern, decision))
            self._tables[which] = {t: Rules(f"--{which} {t}", tuple(r))
                                   for t, r in grouped.items()}
        return self._tables[which]

    # ---- layering over the rules' verdict -----------------------------------------------------

    def widen(self, tool_name: str, effects: Effects, subjects: tuple[Subject, ...],
              own: Rules | None, verdict: Verdict, workspace: Path | str | None) -> Verdict:
        """An *ask* that ``--allow`` or ``accept-edits`` turns into *allow* (else unchanged)."""
        from agent.loop.permissions import judge, rules_for

        # An allow of the default policy alone is widened too: the flag then says the user
        # approved the call (agent.contract.tools.AllowedBy), not only the judge.
        if verdict.decision == "deny" or (verdict.decision == "allow"
                                          and verdict.source != "default"):
            return verdict
        flagged = rules_for(tool_name, self.table("allow"))
        if flagged is not None:
            # judge() allows a path only by where it really leads (symlinks resolved).
            items = subjects or (None,)
            hits = [(s, judge(flagged, () if s is None else (s,), tool_name, unmatched=False))
                    for s in items]
            rest = tuple(s for s, hit in hits if _decision(hit) != "allow")
            source = next((_flag_source(hit.source) for _s, hit in hits
                           if hit is not None and hit.decision == "allow"), flagged.key)
            if not rest:
                return Verdict.allow(f"allowed by {source}", source)
            if own is not None and all(s is not None for s in rest):
                others = judge(own, rest, tool_name)  # type: ignore[arg-type]
                if others is not None and others.decision == "allow":
                    return Verdict.allow(f"allowed by {source} and {others.source}", source)
        if verdict.decision == "allow":
            return verdict
        if (self.mode == "accept-edits" and own is None and _is_edit(effects)
                and all(_inside(p, workspace) for p in effects.changed_paths)):
            return Verdict.allow("an edit inside the workspace (--permission-mode "
                                 "accept-edits)", "--permission-mode accept-edits")
        return verdict

    def tighten(self, tool_name: str, effects: Effects, subjects: tuple[Subject, ...],
                verdict: Verdict) -> Verdict:
        """``--deny`` and ``plan`` denials on top of ``verdict``."""
        from agent.loop.permissions import judge, rules_for

        if verdict.decision == "deny":
            return verdict
        flagged = rules_for(tool_name, self.table("deny"))
        if flagged is not None:
            hit = judge(flagged, subjects, tool_name, unmatched=False)
            if hit is not None and hit.decision == "deny":
                typed = _flag_source(hit.source)
                _flag, _, rest = hit.source.partition(" ")
                tool, _, quoted = rest.partition(": ")
                if ("deny", tool, quoted.strip('"') or "*") in self.imported:
                    rule = f"{tool}:{quoted.strip(chr(34))}" if quoted else tool
                    return Verdict.deny(f"Refused by the deny rule {rule}, translated from "
                                        "another agent's settings (docs/compat.md).",
                                        f"imported deny {rule}")
                return Verdict.deny(f"Refused by {typed} (given on the command line for this "
                                    "run).", typed)
        if self.mode == "plan" and effects.mutating and not proven_read_only(effects, verdict):
            return Verdict.deny(
                f"Refused: this run is in plan mode (--permission-mode plan), which is "
                f"read-only, and {tool_name} {_what(effects)}. Read and plan; describe the "
                "changes instead of making them.", "--permission-mode plan")
        return verdict


def proven_read_only(effects: Effects, verdict: Verdict) -> bool:
    """True for a command the default policy allowed because the judge proved it read-only
    and the tool says nothing more: plan mode lets it run (the tool runs such a call in the
    read-only sandbox, so a misjudgement still cannot write)."""
    return (verdict.decision == "allow" and verdict.source == "default"
            and effects.command is not None
            and not (effects.writes or effects.deletes or effects.opaque or effects.urls))


def _flag_source(source: str) -> str:
    """A judged flag rule's source (``--allow bash: "pytest *"``) as it was typed
    (``--allow 'bash:pytest *'``)."""
    flag, _, rest = source.partition(" ")
    tool, _, quoted = rest.partition(": ")
    pattern = quoted.strip('"')
    return f"{flag} {tool}" if pattern in ("", "*") else f"{flag} '{tool}:{pattern}'"


def _decision(verdict: Verdict | None) -> str | None:
    return verdict.decision if verdict is not None else None


def _is_edit(effects: Effects) -> bool:
    """Writes or deletes of files, and nothing else that needs asking."""
    return bool(effects.changed_paths) and not (effects.command is not None or effects.urls
                                                or effects.opaque)


def _inside(path: str, workspace: Path | str | None) -> bool:
    """True when ``path`` leads inside the workspace once ``~``, ``..`` and symlinks are
    resolved (the workspace itself is not a file to edit)."""
    if workspace is None or not path.strip():
        return False
    try:
        root = os.path.realpath(str(workspace))
        real = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    except (OSError, ValueError):
        return False
    return real != root and real.startswith(root.rstrip("/") + "/")


def _what(effects: Effects) -> str:
    if effects.command is not None:
        return "runs a command"
    if effects.changed_paths:
        return "changes files"
    return "may change things"
